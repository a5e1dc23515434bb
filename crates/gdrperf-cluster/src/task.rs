//! One task's part of a run: for each round, wait until the peer is free, run the bench binary
//! as server or client, record how it ended; then (rank 0) wait for everyone and gather.
//!
//! Tasks never talk to each other directly: they meet through the shared output folder
//! (progress files) and through the bench's own TCP exchange. That keeps a dead node from
//! hanging the job: a peer that never shows up costs one `--round-timeout`, and its pair is
//! recorded as failed with the reason. A rank that is waiting beats a heartbeat in its progress
//! file, so that its own waiters do not take it for dead: one dead rank fails its own pairs only,
//! not, one timeout later, those of the ranks stuck behind it.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{write_error, ClusterError, Result};
use crate::gather::{gather, Gathered};
use crate::layout::{read_json_if_present, write_json, write_text, OutputDir, PairRecord, Progress, RunPlan};
use crate::plan::{BenchPair, Role};
use crate::step::SlurmStep;
use crate::summary::{summarize, Summary};

/// Flags that `gdrperf slurm` sets for each pair and the user must leave out.
const RESERVED_FLAGS: [(&str, &str); 5] = [
    ("-p", "the TCP port is chosen per pair (--base-port)"),
    ("--port", "the TCP port is chosen per pair (--base-port)"),
    ("--csv", "each pair's CSV goes to the output folder (--out)"),
    ("--json", "each pair's JSON goes to the output folder (--out)"),
    ("--loopback", "gdrperf slurm runs server and client on two tasks"),
];

/// The placeholders a bench argument may hold, expanded per task.
pub const PLACEHOLDERS: &str = "{rank} {local} {node} {peer} {peer_rank} {role} {gpu_bus_id} {nic}";

/// The bench binary and the arguments every pair shares.
#[derive(Clone)]
pub struct BenchCommand {
    pub program: PathBuf,
    /// `gdr-write-bw`: names the run in files and the summary.
    pub name: String,
    /// The arguments, without any `--token`: see [`BenchCommand::new`].
    pub args: Vec<String>,
    /// A `--token` taken out of the arguments, handed to each bench in `GDRPERF_TOKEN`.
    token: Option<String>,
}

/// Written by hand so that the token never reaches a log line.
impl std::fmt::Debug for BenchCommand {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BenchCommand")
            .field("program", &self.program)
            .field("name", &self.name)
            .field("args", &self.args)
            .field("token", &self.token.as_ref().map(|_| gdrperf_command_line::REDACTED))
            .finish()
    }
}

impl BenchCommand {
    /// The bench `program` run with `args`, a `--token` among them taken out: a child's command
    /// line is readable by every user of the node (`ps`, `/proc/PID/cmdline`, Slurm's
    /// accounting), so the token reaches each bench in its environment (`GDRPERF_TOKEN`).
    pub fn new(program: PathBuf, name: String, args: &[String]) -> BenchCommand {
        let (args, token) = gdrperf_command_line::take_secret(args);
        BenchCommand { program, name, args, token }
    }

    /// Refuses arguments that `gdrperf slurm` sets itself.
    pub fn check_args(args: &[String]) -> Result<()> {
        for argument in args {
            for (flag, reason) in RESERVED_FLAGS {
                let attached = flag.len() == 2 && argument.starts_with(flag) && argument.len() > 2;
                if argument == flag || argument.starts_with(&format!("{flag}=")) || attached {
                    return Err(ClusterError::BenchArgument {
                        argument: argument.clone(),
                        reason: reason.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// How a task runs its rounds.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    pub out: OutputDir,
    /// The host name a client connects to, `{node}` standing for the server's Slurm node name
    /// (`{node}-ib` where the RDMA network has its own names).
    pub peer_host: String,
    /// How long to wait for a peer to finish its previous round.
    pub round_timeout: Duration,
    /// Kill a bench running longer than this.
    pub pair_timeout: Duration,
    /// How long rank 0 waits for the other ranks before gathering; `None`: rank 0 does not gather.
    pub gather_timeout: Option<Duration>,
}

/// How long a server may keep running after its client finished: it is then waiting for a
/// client that will not come (the bench's accept has no timeout of its own).
const SERVER_GRACE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(200);

/// What a task did.
#[derive(Debug)]
pub struct TaskReport {
    /// This task's bench runs that did not exit 0.
    pub failed_runs: usize,
    /// Rank 0's gathered run and its summary.
    pub gathered: Option<(Gathered, Summary)>,
}

/// Expands `{name}` placeholders of one argument through `value`.
pub fn expand_placeholders(argument: &str, value: &dyn Fn(&str) -> Option<Result<String>>) -> Result<String> {
    let mut out = String::new();
    let mut rest = argument;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if after[..close].bytes().all(|b| b.is_ascii_lowercase() || b == b'_') && close > 0 =>
            {
                let name = &after[..close];
                let expanded = value(name).ok_or_else(|| ClusterError::UnknownPlaceholder {
                    name: name.to_string(),
                    argument: argument.to_string(),
                    known: PLACEHOLDERS,
                })??;
                out.push_str(&expanded);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Runs this task's rounds; rank 0 then gathers. `extra` resolves the placeholders that need
/// the machine (`{gpu_bus_id}`, `{nic}`); `say` prints a progress line.
pub fn run_task(
    step: &SlurmStep,
    plan: &RunPlan,
    bench: &BenchCommand,
    options: &TaskOptions,
    extra: &dyn Fn(&str) -> Option<Result<String>>,
    say: &mut dyn FnMut(&str),
) -> Result<TaskReport> {
    let out = &options.out;
    out.create()?;
    out.check_not_foreign(&plan.run_id)?;
    let rank = step.rank;
    let node = step.node_of(rank).to_string();
    let progress = |rounds_done: usize| Progress {
        run_id: plan.run_id.clone(),
        rank,
        node: node.clone(),
        rounds_done,
        heartbeat: 0,
    };
    if rank == 0 {
        write_json(&out.plan(), plan)?;
    }
    write_json(&out.progress(rank), &progress(0))?;

    let mut failed_runs = 0;
    let mine: Vec<&BenchPair> = plan.plan.assignments(rank).collect();
    if mine.is_empty() {
        say(&format!(
            "rank {rank} ({node}): no partner in the {} schedule; nothing to measure",
            plan.plan.schedule
        ));
    }
    for round in 0..plan.plan.rounds {
        if let Some(pair) = mine.iter().find(|pair| pair.round == round) {
            let (role, peer_rank, peer_node) = pair.side_of(rank).expect("assignments hold this rank");
            let waiting = progress(round);
            let record = match wait_for_peer(out, waiting, peer_rank, options.round_timeout)? {
                Ok(()) => run_pair(step, pair, bench, options, &plan.run_id, extra)?,
                Err(error) => PairRecord {
                    run_id: plan.run_id.clone(),
                    pair: (*pair).clone(),
                    role,
                    exit_code: None,
                    note: Some(format!("not run: {error}")),
                    seconds: 0.0,
                    command: Vec::new(),
                },
            };
            if record.exit_code != Some(0) {
                failed_runs += 1;
            }
            let ending = match (record.exit_code, &record.note) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(note)) => note.clone(),
                (None, None) => "no exit status".into(),
            };
            say(&format!(
                "rank {rank} ({node}) round {round}: {} with {peer_node} (rank {peer_rank}) on port {}: {ending}, {:.1} s",
                role.name(),
                pair.port,
                record.seconds
            ));
            write_json(&out.record(pair, role), &record)?;
        }
        write_json(&out.progress(rank), &progress(round + 1))?;
    }
    write_json(&out.done(rank), &progress(plan.plan.rounds))?;

    let gathered = match options.gather_timeout {
        Some(timeout) if rank == 0 => {
            let missing = wait_for_all(out, &plan.run_id, step.tasks, timeout);
            if !missing.is_empty() {
                say(&format!(
                    "ranks {} did not finish within {} s; gathering what is there",
                    join(&missing),
                    timeout.as_secs()
                ));
            }
            let run = gather(out)?;
            let summary = summarize(&run);
            write_text(&out.summary(), &summary.text)?;
            Some((run, summary))
        }
        _ => None,
    };
    Ok(TaskReport { failed_runs, gathered })
}

/// How often a waiting rank beats its heartbeat; a waiter sees it within its next poll.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// Waits until `peer_rank` has finished `waiting.rounds_done` rounds (so it is free for this
/// one), beating this rank's heartbeat meanwhile. The timeout counts from the peer's last sign of
/// life (its progress file changing): a peer itself waiting for a rank of its own beats its
/// heartbeat and is waited for; one that shows nothing for `timeout` (never started, died, or
/// busy with a bench for that long) is given up. Such chains end: a rank waits only for a peer
/// in an earlier round. `Ok(Err(_))`: the pair cannot run; `Err(_)`: the own file cannot be written.
fn wait_for_peer(
    out: &OutputDir,
    mut waiting: Progress,
    peer_rank: usize,
    timeout: Duration,
) -> Result<std::result::Result<(), ClusterError>> {
    let round = waiting.rounds_done;
    let beat_every = HEARTBEAT.min(timeout / 4).max(POLL);
    let mut last_sign = Instant::now();
    let mut last_beat = Instant::now();
    let mut seen: Option<(usize, u64)> = None;
    loop {
        let peer = read_json_if_present::<Progress>(&out.progress(peer_rank))
            .ok()
            .flatten()
            .filter(|peer| peer.run_id == waiting.run_id);
        if let Some(peer) = &peer {
            if peer.rounds_done >= round {
                return Ok(Ok(()));
            }
            if seen != Some((peer.rounds_done, peer.heartbeat)) {
                seen = Some((peer.rounds_done, peer.heartbeat));
                last_sign = Instant::now();
            }
        }
        if last_sign.elapsed() >= timeout {
            return Ok(Err(ClusterError::PeerWait {
                peer_rank,
                peer_node: peer.map_or_else(|| "never started".into(), |peer| peer.node),
                round,
                seconds: timeout.as_secs(),
            }));
        }
        if last_beat.elapsed() >= beat_every {
            waiting.heartbeat += 1;
            write_json(&out.progress(waiting.rank), &waiting)?;
            last_beat = Instant::now();
        }
        std::thread::sleep(POLL);
    }
}

/// Ranks whose `done` file is not there after `timeout`.
fn wait_for_all(out: &OutputDir, run_id: &str, tasks: usize, timeout: Duration) -> Vec<usize> {
    let start = Instant::now();
    loop {
        let missing: Vec<usize> = (0..tasks)
            .filter(|&rank| !matches!(read_json_if_present::<Progress>(&out.done(rank)), Ok(Some(done)) if done.run_id == run_id))
            .collect();
        if missing.is_empty() || start.elapsed() >= timeout {
            return missing;
        }
        std::thread::sleep(POLL);
    }
}

/// The bench command line of `rank`'s side of `pair`: the shared arguments with placeholders
/// expanded, the pair's port, and for the client its result files and the server's host.
pub fn bench_command_line(
    step: &SlurmStep,
    pair: &BenchPair,
    bench: &BenchCommand,
    out: &OutputDir,
    peer_host: &str,
    extra: &dyn Fn(&str) -> Option<Result<String>>,
) -> Result<(Role, Vec<String>)> {
    let rank = step.rank;
    let (role, peer_rank, peer_node) = pair
        .side_of(rank)
        .ok_or_else(|| ClusterError::StepShape(format!("rank {rank} is not in pair {}", pair.label())))?;
    let placement = step.placement(rank);
    let value = |name: &str| -> Option<Result<String>> {
        match name {
            "rank" => Some(Ok(rank.to_string())),
            "local" => Some(Ok(placement.local.to_string())),
            "node" => Some(Ok(step.nodes[placement.node].clone())),
            "peer" => Some(Ok(peer_node.to_string())),
            "peer_rank" => Some(Ok(peer_rank.to_string())),
            "role" => Some(Ok(role.name().to_string())),
            other => extra(other),
        }
    };
    let mut command: Vec<String> = vec![bench.program.display().to_string()];
    for argument in &bench.args {
        command.push(expand_placeholders(argument, &value)?);
    }
    command.extend(["-p".to_string(), pair.port.to_string()]);
    if role == Role::Client {
        command.extend(["--csv".to_string(), out.csv(pair).display().to_string()]);
        command.extend(["--json".to_string(), out.json(pair).display().to_string()]);
        command.push(peer_host.replace("{node}", &pair.server_node));
    }
    Ok((role, command))
}

/// Runs the bench for one pair on this side and records how it ended.
fn run_pair(
    step: &SlurmStep,
    pair: &BenchPair,
    bench: &BenchCommand,
    options: &TaskOptions,
    run_id: &str,
    extra: &dyn Fn(&str) -> Option<Result<String>>,
) -> Result<PairRecord> {
    let out = &options.out;
    let (role, command) = bench_command_line(step, pair, bench, out, &options.peer_host, extra)?;
    let log_path = out.log(pair, role);
    let log = File::create(&log_path).map_err(|source| write_error(&log_path, source))?;
    let log_err = log.try_clone().map_err(|source| write_error(&log_path, source))?;
    let start = Instant::now();
    let record = |exit_code: Option<i32>, note: Option<String>| PairRecord {
        run_id: run_id.to_string(),
        pair: pair.clone(),
        role,
        exit_code,
        note,
        seconds: start.elapsed().as_secs_f64(),
        command: gdrperf_command_line::redact_command_line(&command),
    };
    let mut child = match Command::new(&bench.program)
        .args(&command[1..])
        .envs(bench.token.as_deref().map(|token| ("GDRPERF_TOKEN", token)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
    {
        Ok(child) => child,
        Err(source) => {
            let error = ClusterError::Spawn { program: bench.program.display().to_string(), source };
            return Ok(record(None, Some(error.to_string())));
        }
    };
    let mut client_done_at: Option<Instant> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let note = status.code().is_none().then(|| format!("ended by a signal ({status})"));
                return Ok(record(status.code(), note));
            }
            Ok(None) => {}
            Err(error) => return Ok(record(None, Some(format!("lost track of the bench: {error}")))),
        }
        let mut kill_reason = None;
        if start.elapsed() >= options.pair_timeout {
            kill_reason = Some(format!("killed after --pair-timeout {} s", options.pair_timeout.as_secs()));
        } else if role == Role::Server {
            if client_done_at.is_none() && out.record(pair, Role::Client).exists() {
                client_done_at = Some(Instant::now());
            }
            if client_done_at.is_some_and(|at| at.elapsed() >= SERVER_GRACE) {
                kill_reason = Some(format!(
                    "killed: still waiting {} s after its client had finished",
                    SERVER_GRACE.as_secs()
                ));
            }
        }
        if let Some(reason) = kill_reason {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(record(None, Some(reason)));
        }
        std::thread::sleep(POLL);
    }
}

fn join(ranks: &[usize]) -> String {
    ranks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_and_unknown_ones_are_named() {
        let value = |name: &str| match name {
            "local" => Some(Ok("3".to_string())),
            "nic" => Some(Ok("mlx5_3".to_string())),
            _ => None,
        };
        assert_eq!(expand_placeholders("--gpu={local}", &value).unwrap(), "--gpu=3");
        assert_eq!(expand_placeholders("{nic}", &value).unwrap(), "mlx5_3");
        assert_eq!(expand_placeholders("a{b", &value).unwrap(), "a{b");
        assert_eq!(expand_placeholders("{}x{1}", &value).unwrap(), "{}x{1}");
        let error = expand_placeholders("{gpuu}", &value).unwrap_err().to_string();
        assert!(error.contains("unknown placeholder {gpuu}") && error.contains("{gpu_bus_id}"), "{error}");
    }

    fn scratch(name: &str) -> OutputDir {
        let out =
            OutputDir::new(std::env::temp_dir().join(format!("gdrperf-task-{name}-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&out.root);
        out.create().unwrap();
        out
    }

    fn progress(rank: usize, rounds_done: usize, heartbeat: u64) -> Progress {
        Progress { run_id: "1.0".into(), rank, node: format!("n{}", rank + 1), rounds_done, heartbeat }
    }

    #[test]
    fn a_peer_waiting_for_a_rank_of_its_own_is_waited_for_past_the_timeout() {
        let out = scratch("beating");
        // Rank 1 is held up in round 0 for 1.2 s (three timeouts), beating its heartbeat, then
        // finishes the round.
        write_json(&out.progress(1), &progress(1, 0, 0)).unwrap();
        let peer_out = out.clone();
        let peer = std::thread::spawn(move || {
            for beat in 1..=12 {
                std::thread::sleep(Duration::from_millis(100));
                write_json(&peer_out.progress(1), &progress(1, 0, beat)).unwrap();
            }
            write_json(&peer_out.progress(1), &progress(1, 1, 0)).unwrap();
        });
        let start = Instant::now();
        let waited = wait_for_peer(&out, progress(0, 1, 0), 1, Duration::from_millis(400)).unwrap();
        peer.join().unwrap();
        assert!(waited.is_ok(), "{waited:?}");
        assert!(start.elapsed() >= Duration::from_millis(1200), "{:?}", start.elapsed());
        // This rank beat its own heartbeat meanwhile (every 200 ms: at least 4 times in 1.2 s).
        let own: Progress = read_json_if_present(&out.progress(0)).unwrap().unwrap();
        assert!(own.heartbeat >= 4 && own.rounds_done == 1, "{own:?}");
        let _ = std::fs::remove_dir_all(&out.root);
    }

    #[test]
    fn a_silent_or_absent_peer_is_given_up_after_the_timeout() {
        let out = scratch("silent");
        write_json(&out.progress(1), &progress(1, 0, 7)).unwrap();
        let start = Instant::now();
        let error =
            wait_for_peer(&out, progress(0, 1, 0), 1, Duration::from_millis(400)).unwrap().unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(400) && start.elapsed() < Duration::from_secs(3));
        assert!(
            error.to_string().starts_with("rank 1 (n2) was not ready for round 1: no sign of it for 0 s"),
            "{error}"
        );
        let error =
            wait_for_peer(&out, progress(0, 1, 0), 2, Duration::from_millis(400)).unwrap().unwrap_err();
        assert!(error.to_string().starts_with("rank 2 (never started) was not ready for round 1"), "{error}");
        let _ = std::fs::remove_dir_all(&out.root);
    }

    #[test]
    fn reserved_flags_are_refused_in_every_spelling() {
        let check =
            |args: &[&str]| BenchCommand::check_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>());
        assert!(check(&["-a", "--validate", "-s", "64K", "-x", "3"]).is_ok());
        for bad in
            [&["-p", "1"][..], &["-p1234"], &["--port=1"], &["--csv", "x"], &["--json=y"], &["--loopback"]]
        {
            let error = check(bad).unwrap_err().to_string();
            assert!(error.starts_with("bench argument"), "{error}");
        }
    }
}
