//! `gdrperf slurm`: run a bench between node pairs of a Slurm step, with no host names typed.
//!
//! ```text
//! srun gdrperf slurm [--schedule pairs|ring|all-pairs|random|locate] [--out DIR] -- gdr-write-bw -a --validate
//! gdrperf slurm gather DIR     # merge the per-rank files again (rank 0 does it at the end)
//! gdrperf slurm summary DIR    # pass/fail per pair and the failing nodes; exit 1 if any failed
//! gdrperf slurm hostnames LIST # one node name per line, as `scontrol show hostnames` prints them
//! ```
//!
//! Every task reads Slurm's environment, computes the same plan (gdrperf-cluster), and runs its
//! part: the bench as server (no HOST) or as client of the peer's node, one TCP port per pair,
//! each pair's record and the client's rows appended to the rank's own file under DIR/status.
//! With `--schedule locate` the plan is only the first pass; rank 0 then decides each further
//! round from the last one's rows and the others read it from DIR/locate.json; once locating has
//! settled, rank 0 judges the rows so far and runs again the pairs the judge lists to retest
//! (one-off deficits), through the same file, until it lists none (at most 16 passes; no node in
//! two pairs of a round; `--no-retest`: none). Rank 0 waits for all tasks, writes DIR/results.csv,
//! DIR/results.json and DIR/summary.txt, and prints the summary; then it judges the gathered rows
//! as `gdrperf fleet judge DIR/results.csv` would (gdrperf-fleet, default thresholds, the
//! `--topology` switch map where given, else the groups the node names give) into
//! DIR/fleet.txt and DIR/fleet.json and prints that too, with what each retest came to. The
//! step's exit status stays the thresholds' (a pair failed or not): parts slower than their peers
//! but passing are named for a person to read, and `gdrperf fleet judge` gives them an exit
//! status of their own.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use gdrperf_cluster::gather::gather;
use gdrperf_cluster::layout::{OutputDir, RunPlan};
use gdrperf_cluster::options::{LocateOptions, PortPair, Retests, TaskOptions};
use gdrperf_cluster::plan::{PairBy, Plan, Role};
use gdrperf_cluster::schedule::Schedule;
use gdrperf_cluster::step::SlurmStep;
use gdrperf_cluster::summary::Summary;
use gdrperf_cluster::task::{bench_command_line, run_task, BenchCommand};
use gdrperf_cluster::ClusterError;
use gdrperf_fleet::judge::{judge_with_switches, JudgeConfig};
use gdrperf_fleet::node_names::groups_from_names;
use gdrperf_fleet::read::read_gathered;
use gdrperf_fleet::report as fleet_report;
use gdrperf_fleet::retested;
use gdrperf_fleet::switch_map::SwitchMap;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,

    /// Who meets whom: pairs (0-1, 2-3, ...), ring (each node serves the next: tells a bad node
    /// from its peer), all-pairs (every pair once, in rounds: a fabric sweep), random (--rounds
    /// seeded random perfect matchings: each node meets about that many peers, for any count),
    /// locate (a ring over a --seed shuffle, then rank 0 re-pairs each node of a low pair with
    /// nodes seen healthy, round by round, until two healthy peers agree about it).
    #[arg(long, value_enum, default_value_t = ScheduleArg::Pairs)]
    schedule: ScheduleArg,

    /// Rounds of the random schedule.
    #[arg(long, default_value_t = 4, value_name = "K")]
    rounds: usize,

    /// Seed of the random schedule (every task computes the same rounds from it).
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Pair nodes (local task k meets local task k of the peer node: one task per GPU) or tasks
    /// (rank 0 with rank 1, even on one node).
    #[arg(long = "pair-by", value_enum, default_value_t = PairByArg::Node)]
    pair_by: PairByArg,

    /// Output folder, on a file system all nodes share [default: gdrperf-slurm-JOB.STEP].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// TCP port of the first pair of a round; pair i uses base + i.
    #[arg(long = "base-port", default_value_t = 18515, value_name = "PORT")]
    base_port: u16,

    /// Host name a client connects to; {node} is the server's Slurm node name ("{node}-ib").
    #[arg(long = "peer-host", default_value = "{node}", value_name = "TEMPLATE")]
    peer_host: String,

    /// Seconds to wait for a peer still busy with its previous round, counted from its last sign
    /// of life (a peer itself waiting for another shows one every second).
    #[arg(long = "round-timeout", default_value_t = 600, value_name = "SECONDS", value_parser = crate::accept::timeout_seconds())]
    round_timeout: u64,

    /// Seconds after which a bench still running is killed and its pair failed.
    #[arg(long = "pair-timeout", default_value_t = 3600, value_name = "SECONDS", value_parser = crate::accept::timeout_seconds())]
    pair_timeout: u64,

    /// Seconds rank 0 waits for the other tasks before gathering.
    #[arg(long = "gather-timeout", default_value_t = 600, value_name = "SECONDS", value_parser = crate::accept::timeout_seconds())]
    gather_timeout: u64,

    /// Rank 0 does not gather (run `gdrperf slurm gather DIR` afterwards).
    #[arg(long = "no-gather")]
    no_gather: bool,

    /// Print this task's pairs and bench command lines, run nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,

    /// The fabric's switch map (Slurm's topology.conf format) for the fleet judgement at the
    /// job's end, as `gdrperf fleet judge --topology` (default: none; groups from the node names
    /// where they give some). Read by every rank before it runs anything: a file that cannot be
    /// read, or names none of the job's nodes, stops the step (exit 2).
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,

    /// `locate`: do not run again the pairs the fleet judge lists to retest before the job ends
    /// (by default they run, until it lists none, at most 16 passes).
    #[arg(long = "no-retest")]
    no_retest: bool,

    /// Where {gpu_bus_id} and {nic} are looked up (a sysfs fixture in tests).
    #[arg(long = "sysfs-root", default_value = "/", value_name = "DIR", hide = true)]
    sysfs_root: PathBuf,

    /// The bench and its arguments, after `--`. Placeholders, expanded per task: {rank} {local}
    /// {node} {peer} {role}; {gpu_bus_id} (the GPU of this local task, PCI order) and {nic}
    /// (the RDMA device nearest to it, as `gdrperf doctor` pairs them). Required (no default).
    #[arg(last = true, value_name = "BENCH ARGS")]
    bench: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Merge a run's per-rank files into DIR/results.csv and DIR/results.json.
    Gather {
        /// The run's output folder.
        dir: PathBuf,
    },
    /// Pass/fail per pair and the failing nodes (exit 1 if any pair failed).
    Summary {
        /// The run's output folder.
        dir: PathBuf,
    },
    /// Expand a Slurm hostlist (node[01-04,07]) one name per line, as `scontrol show hostnames`
    /// does, where scontrol is not installed [default: $SLURM_JOB_NODELIST].
    Hostnames {
        /// The hostlist.
        list: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ScheduleArg {
    Pairs,
    Ring,
    AllPairs,
    Random,
    Locate,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PairByArg {
    Node,
    Task,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match &args.action {
        Some(Action::Gather { dir }) => {
            let run = gather(&OutputDir::new(dir))?;
            say!(
                "gathered {} pairs into {} and {}",
                run.pairs(),
                dir.join("results.csv").display(),
                dir.join("results.json").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Action::Summary { dir }) => {
            let run = gather(&OutputDir::new(dir))?;
            print_summary(&run.summary());
            Ok(if run.failed() == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Some(Action::Hostnames { list }) => {
            let list = match list.clone().or_else(|| std::env::var("SLURM_JOB_NODELIST").ok()) {
                Some(list) => list,
                None => anyhow::bail!(
                    "give a hostlist (node[01-04]), or run inside a job where SLURM_JOB_NODELIST is set"
                ),
            };
            for name in gdrperf_cluster::hostlist::expand(&list)? {
                say!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
        None => run_step(args),
    }
}

fn run_step(args: Args) -> anyhow::Result<ExitCode> {
    let Some((name, bench_args)) = args.bench.split_first() else {
        anyhow::bail!("name the bench after `--`: srun gdrperf slurm -- gdr-write-bw -a --validate");
    };
    BenchCommand::check_args(bench_args)?;
    // The bench's own rule for a GPU listed twice, checked here once: every pair would refuse it.
    gdrperf::options::check_bench_arguments(bench_args)
        .with_context(|| format!("{name}'s arguments, as every pair's bench would read them"))?;
    let step = SlurmStep::from_env()?;
    let switches = read_topology(args.topology.as_deref(), &step.nodes)?.map(std::sync::Arc::new);
    if matches!(args.schedule, ScheduleArg::Random) && args.rounds == 0 {
        anyhow::bail!("--rounds 0: the random schedule needs at least one round");
    }
    let pair_by = match args.pair_by {
        PairByArg::Node => PairBy::Node,
        PairByArg::Task => PairBy::Task,
    };
    let fixed = |schedule: Schedule| Plan::new(&step, schedule, pair_by, args.base_port);
    let (plan, locate) = match args.schedule {
        ScheduleArg::Pairs => (fixed(Schedule::Pairs)?, None),
        ScheduleArg::Ring => (fixed(Schedule::Ring)?, None),
        ScheduleArg::AllPairs => (fixed(Schedule::AllPairs)?, None),
        ScheduleArg::Random => (fixed(Schedule::Random { rounds: args.rounds, seed: args.seed })?, None),
        ScheduleArg::Locate => {
            let plan = Plan::locate(&step, args.seed, pair_by, args.base_port)?;
            (plan, Some(LocateOptions { pair_by, base_port: args.base_port, seed: args.seed }))
        }
    };
    let run =
        RunPlan::new(&step, &plan, bench_name(name), gdrperf_command_line::redact_command_line(bench_args));
    let bench = BenchCommand::new(bench_program(name), run.bench.clone(), bench_args);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("gdrperf-slurm-{}", step.run_id())));
    let sysfs_root = args.sysfs_root.clone();
    let local = step.placement(step.rank).local;
    let machine = move |name: &str| -> Option<Result<String, ClusterError>> {
        match name {
            "gpu_bus_id" => Some(gpu_bus_id(&sysfs_root, local)),
            "nic" => {
                Some(gpu_bus_id(&sysfs_root, local).and_then(|bus_id| nearest_nic(&sysfs_root, &bus_id)))
            }
            _ => None,
        }
    };
    if args.dry_run {
        return dry_run(&step, &run, &plan, &bench, &out, &args.peer_host, &machine);
    }
    let retest = match (&locate, args.no_retest, step.rank) {
        (Some(_), false, 0) => Some(retest_judge(switches.clone())),
        _ => None,
    };
    let options = TaskOptions {
        out: OutputDir::new(&out),
        peer_host: args.peer_host.clone(),
        round_timeout: Duration::from_secs(args.round_timeout),
        pair_timeout: Duration::from_secs(args.pair_timeout),
        gather_timeout: (!args.no_gather).then(|| Duration::from_secs(args.gather_timeout)),
        locate,
        retest,
    };
    let mut say = |line: &str| say!("gdrperf slurm: {line}");
    let report = run_task(&step, &run, plan, &bench, &options, &machine, &mut say)
        .with_context(|| format!("rank {} on {}", step.rank, step.node_of(step.rank)))?;
    let mut failed = report.failed_runs > 0;
    if let Some(located) = &report.located {
        say_raw!("{}", located.text());
    }
    if let Some((run, summary)) = &report.gathered {
        print_summary(summary);
        say!(
            "gdrperf slurm: results in {} and {}",
            out.join("results.csv").display(),
            out.join("results.json").display()
        );
        failed |= run.failed() > 0;
        judge_fleet(&out, report.located.as_ref(), switches.as_deref(), args.topology.as_deref());
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The summary on stdout, streamed (millions of pairs are millions of lines); a closed stdout
/// is not an error, as for every other line this command prints.
fn print_summary(summary: &Summary) {
    let _ = summary.write_to(&mut std::io::BufWriter::new(std::io::stdout().lock()));
}

/// The `--topology` map, read and checked against the step's nodes before anything runs: every
/// rank reads it, so a file that cannot be read stops every rank at once (exit 2), not rank 0
/// alone at the job's end.
fn read_topology(path: Option<&Path>, nodes: &[String]) -> anyhow::Result<Option<SwitchMap>> {
    let Some(path) = path else { return Ok(None) };
    let shown = gdrperf_files::printable(&path.display().to_string());
    let map = SwitchMap::read(path).map_err(|error| {
        anyhow::anyhow!(
            "--topology {}; nothing was run (give a switch map in Slurm's topology.conf format, or leave --topology out)",
            gdrperf_files::printable(&error.to_string())
        )
    })?;
    if map.covered(nodes) == 0 {
        anyhow::bail!(
            "--topology {shown}: none of the job's {} nodes is under a switch of it (the map's node names must be \
             Slurm's node names, as in SLURM_JOB_NODELIST); nothing was run",
            nodes.len()
        );
    }
    Ok(Some(map))
}

/// The judge's switch map for `rows`: the user's, else the groups the node names give.
fn groups_of(rows: &gdrperf_fleet::observation::Stored, switches: Option<&SwitchMap>) -> Option<SwitchMap> {
    match switches {
        Some(map) => Some(map.clone()),
        None => groups_from_names(&rows.catalog.nodes),
    }
}

/// Rank 0 of a `locate` job: the pairs the fleet judge lists to retest in the rows so far (the
/// judge of the job's end: default thresholds, the same switch map or name groups).
fn retest_judge(switches: Option<std::sync::Arc<SwitchMap>>) -> Retests {
    Retests::new(move |results: &Path| {
        let rows = read_gathered(&[results.to_path_buf()]).map_err(|error| error.to_string())?;
        let map = groups_of(&rows, switches.as_deref());
        let verdict = judge_with_switches(&rows, &JudgeConfig::default(), map.as_ref());
        Ok(verdict
            .retest
            .iter()
            .filter_map(|finding| {
                Some(PortPair {
                    node: finding.node.clone(),
                    device: finding.device.clone(),
                    peer_node: finding.peer_node.clone()?,
                    peer_device: finding.peer_device.clone(),
                })
            })
            .collect())
    })
}

/// Rank 0, after the gather: the fleet judgement of the job's rows into DIR/fleet.txt and
/// DIR/fleet.json, printed; a `locate` job's retests (what each came to) and its rounds and pair
/// runs end fleet.txt. A job whose rows cannot be judged (a latency test: no bandwidth column)
/// says why in one line; the job's results stand either way.
fn judge_fleet(
    out: &Path,
    located: Option<&gdrperf_cluster::coordinate::Located>,
    switches: Option<&SwitchMap>,
    topology: Option<&Path>,
) {
    let results = out.join("results.csv");
    let (text_path, json_path) = (out.join("fleet.txt"), out.join("fleet.json"));
    let rows = match read_gathered(std::slice::from_ref(&results)) {
        Ok(rows) => rows,
        Err(error) => {
            say!("gdrperf slurm: no fleet judgement: {error}");
            return;
        }
    };
    let map = groups_of(&rows, switches);
    let verdict = judge_with_switches(&rows, &JudgeConfig::default(), map.as_ref());
    let input = &rows.input;
    let mut text = fleet_report::input_text(input);
    match (&map, topology) {
        (Some(map), Some(path)) => text += &fleet_report::switch_map_text(map, &rows.catalog, path),
        (Some(map), None) => text += &fleet_report::name_groups_text(map),
        _ => {}
    }
    text += &fleet_report::text(&verdict);
    let retests = located.and_then(|located| located.retests.as_ref());
    let outcomes = retests.map(|retests| retested::outcomes(&verdict, retests));
    if let (Some(retests), Some(outcomes)) = (retests, &outcomes) {
        text += &retested::text(retests, outcomes);
    }
    // A verdict that does not encode (it cannot, today: plain numbers and text) is said like a
    // failed write, never written as an empty fleet.json that a reader would take for a verdict.
    // Through a new temporary file and a rename: the folder is shared, and a link planted at
    // either name is refused, never followed.
    let located_text = located.map(|located| located.text()).unwrap_or_default();
    let written =
        gdrperf_files::write_file(&text_path, format!("{text}{located_text}").as_bytes()).and_then(|()| {
            let mut json = serde_json::to_value(&verdict).map_err(std::io::Error::other)?;
            if let Some(object) = json.as_object_mut() {
                object.insert(
                    "verdict".into(),
                    serde_json::to_value(verdict.contract()).map_err(std::io::Error::other)?,
                );
                object.insert("input".into(), serde_json::to_value(input).map_err(std::io::Error::other)?);
                if let (Some(retests), Some(outcomes)) = (retests, &outcomes) {
                    let value = serde_json::json!({
                        "passes": retests.passes,
                        "rounds": retests.rounds,
                        "pair_runs": retests.pair_runs,
                        "stopped": retests.stopped,
                        "pairs": outcomes,
                    });
                    object.insert("retested".into(), value);
                }
            }
            let json = serde_json::to_string_pretty(&json).map_err(std::io::Error::other)?;
            gdrperf_files::write_file(&json_path, (json + "\n").as_bytes())
        });
    say_raw!("{text}");
    match written {
        Ok(()) => say!(
            "gdrperf slurm: fleet judgement (as `gdrperf fleet judge {}{}`) in {} and {}",
            topology
                .map(|path| format!("--topology {} ", gdrperf_files::printable(&path.display().to_string())))
                .unwrap_or_default(),
            results.display(),
            text_path.display(),
            json_path.display()
        ),
        Err(error) => say!(
            "gdrperf slurm: the fleet judgement above could not be written under {}: {error}",
            out.display()
        ),
    }
}

/// Prints what this task would do, for checking a layout before spending an allocation on it.
fn dry_run(
    step: &SlurmStep,
    run: &RunPlan,
    plan: &Plan,
    bench: &BenchCommand,
    out: &Path,
    peer_host: &str,
    machine: &dyn Fn(&str) -> Option<Result<String, ClusterError>>,
) -> anyhow::Result<ExitCode> {
    let rank = step.rank;
    say!(
        "rank {rank} of {} on {} (local task {}): schedule {} by {}, {} rounds, {} pairs, nodes {}",
        step.tasks,
        step.node_of(rank),
        step.placement(rank).local,
        run.plan.schedule,
        run.plan.pair_by,
        run.plan.rounds,
        run.plan.pair_runs,
        step.nodes.join(",")
    );
    let out = OutputDir::new(out);
    for pair in plan.assignments(step, rank) {
        let (role, line) = bench_command_line(step, &pair, bench, &out, peer_host, machine)?;
        let (peer_rank, peer_node) = match role {
            Role::Server => (pair.client_rank, &pair.client_node),
            Role::Client => (pair.server_rank, &pair.server_node),
        };
        say!(
            "round {}: {} with {peer_node} (rank {peer_rank}): {}",
            pair.round,
            role.name(),
            gdrperf_command_line::redact_command_line(&line).join(" ")
        );
    }
    for left in &run.plan.left_out {
        say!("left out: {left}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `gdr-write-bw` from `gdr-write-bw` or `/path/to/gdr-write-bw`.
fn bench_name(given: &str) -> String {
    Path::new(given)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| given.to_string())
}

/// A bare name is looked up next to this gdrperf first (the bench binaries are built and
/// installed together), then on PATH; a path is taken as it is.
fn bench_program(given: &str) -> PathBuf {
    if given.contains('/') {
        return PathBuf::from(given);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(given)))
        .filter(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(given))
}

/// The PCI address of the `local`-th NVIDIA GPU in PCI order (what CUDA numbers as device
/// `local` under CUDA_DEVICE_ORDER=PCI_BUS_ID).
fn gpu_bus_id(sysfs_root: &Path, local: usize) -> Result<String, ClusterError> {
    let problem =
        |reason: String| ClusterError::StepShape(format!("{{gpu_bus_id}} for local task {local}: {reason}"));
    let sys = gdrperf_doctor::SysRoot::open(sysfs_root).map_err(|error| problem(error.to_string()))?;
    let mut gpus: Vec<String> = gdrperf_doctor::pci::scan(&sys)
        .into_iter()
        .filter(|device| device.is_nvidia_gpu())
        .map(|device| device.address)
        .collect();
    gpus.sort();
    gpus.get(local).cloned().ok_or_else(|| {
        problem(format!(
            "this node has {} NVIDIA GPUs; run at most that many tasks per node (--ntasks-per-node)",
            gpus.len()
        ))
    })
}

/// The RDMA device `gdrperf doctor` pairs with the GPU at `bus_id`.
fn nearest_nic(sysfs_root: &Path, bus_id: &str) -> Result<String, ClusterError> {
    let problem = |reason: String| ClusterError::StepShape(format!("{{nic}} for GPU {bus_id}: {reason}"));
    match gdrperf_doctor::recommend_nic(sysfs_root, bus_id) {
        Ok(Some(nic)) => Ok(nic),
        Ok(None) => Err(problem("this node has no RDMA device (see `gdrperf doctor`)".into())),
        Err(error) => Err(problem(error.to_string())),
    }
}
