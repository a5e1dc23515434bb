//! One task's part of a run: for each round, wait until the peer is free, run the bench binary
//! as server or client, record how it ended; then (rank 0) wait for everyone and gather.
//!
//! Tasks never talk to each other directly: they meet through the shared output folder (one
//! progress file per rank, see `wait.rs`) and through the bench's own TCP exchange. That
//! keeps a dead node from hanging the job: a peer that never shows up costs one
//! `--round-timeout`, and its pair is recorded as failed with the reason. A rank that is waiting
//! or running a bench beats a heartbeat in its progress file, so that its own waiters do not take
//! it for dead: one dead rank fails its own pairs only, not, one timeout later, those of the ranks
//! stuck behind it. Each pair's record, rows and console output are appended to the rank's own
//! files ([`crate::layout`]): a job writes a few files per rank, however many pairs it runs.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::coordinate::{Job, Located, Rounds};
use crate::error::{write_error, ClusterError, Result};
use crate::gather::{gather, Gathered};
use crate::layout::{
    append_json_line, create_append_only, write_json, write_streamed, OutputDir, PairLine, PairRecord,
    Progress, RunPlan,
};
use crate::options::TaskOptions;
use crate::plan::{BenchPair, Plan, Role};
use crate::step::SlurmStep;
use crate::summary::Summary;
use crate::wait::{wait_for_finish, wait_for_peer, Beat, POLL};

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

/// How a server may keep running after its client finished: it is then waiting for a
/// client that will not come (the bench's accept has no timeout of its own).
const SERVER_GRACE: Duration = Duration::from_secs(30);

/// What a task did.
#[derive(Debug)]
pub struct TaskReport {
    /// This task's bench runs that did not exit 0.
    pub failed_runs: usize,
    /// Rank 0's gathered run and its summary.
    pub gathered: Option<(Gathered, Summary)>,
    /// Rank 0 of a `locate` job: what locating cost and found.
    pub located: Option<Located>,
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

/// Runs this task's rounds of `plan` (`run` is what rank 0 writes to `plan.json`); rank 0 then
/// gathers. `extra` resolves the placeholders that need the machine (`{gpu_bus_id}`, `{nic}`);
/// `say` prints a progress line. The task asks the plan for its own pair round by round and
/// never lists the job's pairs: what it holds does not grow with them.
pub fn run_task(
    step: &SlurmStep,
    run: &RunPlan,
    mut plan: Plan,
    bench: &BenchCommand,
    options: &TaskOptions,
    extra: &dyn Fn(&str) -> Option<Result<String>>,
    say: &mut dyn FnMut(&str),
) -> Result<TaskReport> {
    let out = &options.out;
    out.create()?;
    out.check_not_foreign(&run.run_id)?;
    let rank = step.rank;
    let node = step.node_of(rank).to_string();
    if rank == 0 {
        write_json(&out.plan(), run)?;
    }
    let mut run = run.clone();
    let progress = Progress {
        run_id: run.run_id.clone(),
        rank,
        node: node.clone(),
        rounds_done: 0,
        heartbeat: 0,
        finished: false,
    };
    let mut beat = Beat::start(out, progress, options.round_timeout / 4)?;
    let mut files = RankFiles {
        records: create_append_only(&out.records(rank))?,
        log: create_append_only(&out.log(rank))?,
    };
    let mut rounds = match &options.locate {
        Some(locate) => Rounds::locate(step, &plan, locate, options.retest.as_ref()),
        None => Rounds::Fixed,
    };

    let mut failed_runs = 0;
    if options.locate.is_none() && plan.assignments(step, rank).next().is_none() {
        say(&format!(
            "rank {rank} ({node}): no partner in the {} schedule; nothing to measure",
            plan.schedule()
        ));
    }
    let mut round = 0;
    loop {
        if round == plan.rounds() {
            let job = Job { step, plan: &mut plan, run: &mut run, beat: &mut beat, options, say: &mut *say };
            if !rounds.next(job)? {
                break;
            }
        }
        if let Some(pair) = plan.pair_of(step, round, rank) {
            let (role, peer_rank, peer_node) = pair.side_of(rank).expect("assignments hold this rank");
            let record = match wait_for_peer(&mut beat, round, peer_rank, options.round_timeout)? {
                Ok(()) => run_pair(step, &pair, bench, options, &mut beat, &mut files, extra)?,
                Err(error) => PairLine::not_run(&run.run_id, &pair, role, error.to_string()),
            };
            if record.record.exit_code != Some(0) {
                failed_runs += 1;
            }
            let ending = match (record.record.exit_code, &record.record.note) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(note)) => note.clone(),
                (None, None) => "no exit status".into(),
            };
            say(&format!(
                "rank {rank} ({node}) round {round}: {} with {peer_node} (rank {peer_rank}) on port {}: {ending}, {:.1} s",
                role.name(),
                pair.port,
                record.record.seconds
            ));
            append_json_line(&mut files.records, &out.records(rank), &record)?;
        }
        round += 1;
        beat.rounds_done(round, false)?;
    }
    beat.rounds_done(round, true)?;

    let gathered = match options.gather_timeout {
        Some(timeout) if rank == 0 => {
            let missing = wait_for_finish(out, &run.run_id, 0..step.tasks, timeout);
            if !missing.is_empty() {
                say(&format!(
                    "ranks {} did not finish within {} s; gathering what is there",
                    join(&missing),
                    timeout.as_secs()
                ));
            }
            let run = gather(out)?;
            let summary = run.summary();
            write_streamed(&out.summary(), &mut |writer| summary.write_to(writer))?;
            Some((run, summary))
        }
        _ => None,
    };
    Ok(TaskReport { failed_runs, gathered, located: rounds.located() })
}

/// The files this rank appends to, open for the whole task.
struct RankFiles {
    records: File,
    log: File,
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
        command.extend(["--csv".to_string(), out.bench_csv(rank).display().to_string()]);
        command.extend(["--json".to_string(), out.bench_json(rank).display().to_string()]);
        command.push(peer_host.replace("{node}", &pair.server_node));
    }
    Ok((role, command))
}

/// Runs the bench for one pair on this side and records how it ended, with the client's rows.
fn run_pair(
    step: &SlurmStep,
    pair: &BenchPair,
    bench: &BenchCommand,
    options: &TaskOptions,
    beat: &mut Beat<'_>,
    files: &mut RankFiles,
    extra: &dyn Fn(&str) -> Option<Result<String>>,
) -> Result<PairLine> {
    let out = &options.out;
    let rank = step.rank;
    let run_id = beat.progress.run_id.clone();
    let (role, command) = bench_command_line(step, pair, bench, out, &options.peer_host, extra)?;
    let (csv_path, json_path) = (out.bench_csv(rank), out.bench_json(rank));
    for stale in [&csv_path, &json_path] {
        let _ = std::fs::remove_file(stale);
    }
    let log_path = out.log(rank);
    let redacted = gdrperf_command_line::redact_command_line(&command);
    let header = format!("== {} {}: {}\n", pair.label(), role.name(), redacted.join(" "));
    std::io::Write::write_all(&mut files.log, header.as_bytes())
        .map_err(|source| write_error(&log_path, source))?;
    let log_start = files.log.metadata().map(|metadata| metadata.len()).unwrap_or(0);
    let log = files.log.try_clone().map_err(|source| write_error(&log_path, source))?;
    let log_err = files.log.try_clone().map_err(|source| write_error(&log_path, source))?;
    let start = Instant::now();
    let ended = |exit_code: Option<i32>, note: Option<String>| PairRecord {
        run_id: run_id.clone(),
        pair: pair.clone(),
        role,
        exit_code,
        note,
        seconds: start.elapsed().as_secs_f64(),
        command: redacted.clone(),
        last_line: last_line_since(&log_path, log_start),
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
            return Ok(PairLine::new(ended(None, Some(error.to_string()))));
        }
    };
    let mut client_done_at: Option<Instant> = None;
    let record = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let note = status.code().is_none().then(|| format!("ended by a signal ({status})"));
                break ended(status.code(), note);
            }
            Ok(None) => {}
            Err(error) => break ended(None, Some(format!("lost track of the bench: {error}"))),
        }
        let mut kill_reason = None;
        if start.elapsed() >= options.pair_timeout {
            kill_reason = Some(format!("killed after --pair-timeout {} s", options.pair_timeout.as_secs()));
        } else if role == Role::Server {
            // The client has finished when its rank finished this round.
            let client_done = || {
                crate::wait::progress_of(out, &run_id, pair.client_rank)
                    .is_some_and(|client| client.rounds_done > pair.round)
            };
            if client_done_at.is_none() && client_done() {
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
            break ended(None, Some(reason));
        }
        beat.beat()?;
        std::thread::sleep(POLL);
    };
    let mut line = PairLine::new(record);
    if role == Role::Client {
        line.take_bench_files(&csv_path, &json_path);
    }
    Ok(line)
}

/// The last non-empty line written to the log after `start` (its last 4 KiB at most).
fn last_line_since(path: &std::path::Path, start: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).ok()?;
    let end = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(start.max(end.saturating_sub(4096)))).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().rev().map(str::trim).find(|line| !line.is_empty()).map(str::to_string)
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
