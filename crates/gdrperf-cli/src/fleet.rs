//! `gdrperf fleet`: judge the gathered rows of a job (which NIC port, GPU, node or link is slow),
//! or prove the judge on a simulated fleet. The work is in the `gdrperf-fleet` library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use gdrperf_cluster::schedule::Schedule;
use gdrperf_fleet::base::{compare, BaseComparison};
use gdrperf_fleet::judge::{judge_with_switches, JudgeConfig};
use gdrperf_fleet::node_names::groups_from_names;
use gdrperf_fleet::read::read_gathered;
use gdrperf_fleet::report;
use gdrperf_fleet::simulate::{self, Fault, Plan, SimConfig};
use gdrperf_fleet::simulate_files;
use gdrperf_fleet::switch_map::SwitchMap;

const JUDGE_HELP: &str = "\
Examples:
  gdrperf fleet judge gdrperf-slurm-1234.0/results.csv --json fleet.json
  gdrperf fleet judge job1/results.csv job2/results.csv
  gdrperf fleet judge --base last-week/results.csv gdrperf-slurm-1234.0/results.csv
  gdrperf fleet judge --topology /etc/slurm/topology.conf gdrperf-slurm-1234.0/results.csv

Rows are compared within a class (test, size, memory kinds, QPs, direction). A plan.json beside a
results file adds the job's node list, so a node with no rows is named. Method, assumptions and
detection limit: docs/methodology.md, \"Fleet judgement\".

--base: each port (node and RDMA device) and class is compared with the earlier job's: a port
that moved 15 % (--min-deficit) or more within its class, surely, is named slower or faster; a
class whose level moved, class slower or faster. A port whose rows' nic_node_guid differs is
\"NIC replaced\", whose gpu_local_uuid (else gpu_local_bus_id) differs \"GPU replaced\": not
compared, so a swapped card reads as replaced, not as a regression or a recovery. Rows without
nic_node_guid or gpu_local_uuid (files from before those columns, or a GPU without CUDA) key the
port by node, device and GPU bus id only: a card swapped in the same slot then reads as its
speed change, if any.

The report: INPUT (every row read: kept, or dropped and why), each class, NAMED (the exit code),
WATCH (surely slower than the class by --watch-deficit but under --min-deficit: not named),
TRANSIENT (rows that dipped in no named part: counted, not named) and RETEST (pairs whose rows
are mostly low but too few to name a link: run them again; the JSON lists them all). A link is
named only from agreeing low rows, against the class's transient rate.

--topology: the fabric's switches, in Slurm's topology.conf format (SwitchName=leaf1
Nodes=node[01-16], SwitchName=spine1 Switches=leaf[1-4]). A switch whose rows towards the rest
of the fabric are surely 15 % below the others, with most of its nodes low, is named once as a
group with its members (a switch with half the fleet behind it included), instead of its nodes
one by one; a little below: watched. Without it, where the rows' node names follow a rack or
leaf scheme (r03n07, gpu-a12-03, node-rack2-14: a number before the node's last), those groups
are tested the same way (a GROUPS FROM NODE NAMES line says which; --no-name-groups: not), and
groups are also inferred from the pair matrix among the nodes named. Each group says where it
came from (grouped by the topology file, the node names, or the pair matrix).

Exit codes (--json's verdict spells them pass, undecided, fail, error):
  0  pass: nothing named (and, with --base, nothing moved); parts to watch do not count;
     undecided: nothing named, but pairs to retest (more rows would decide them)
  1  fail: at least one part (or a class below its ceiling) named, or with --base a part moved
  2  an input could not be read, or was refused (mixed column sets, over the limits): no JSON";

/// Flags shared by judge and simulate: the judge's thresholds.
#[derive(Debug, clap::Args)]
struct Thresholds {
    /// A part is named only this many percent below its class.
    #[arg(long, default_value_t = 15.0, value_name = "PERCENT")]
    min_deficit: f64,
    /// Family-wise probability of naming a healthy part, per class (Bonferroni).
    #[arg(long, default_value_t = 0.001)]
    alpha: f64,
    /// A part surely this many percent below its class, but less than --min-deficit, is listed
    /// to watch (not named; the exit code does not change).
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT")]
    watch_deficit: f64,
    /// A class level this many percent below its median path ceiling is a finding.
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    ceiling_shortfall: f64,
}

impl Thresholds {
    fn config(&self) -> anyhow::Result<JudgeConfig> {
        let percent = |value: f64, name: &str| -> anyhow::Result<f64> {
            if !(value > 0.0 && value < 100.0) {
                bail!("--{name} {value}: give a percentage above 0 and below 100");
            }
            Ok(value / 100.0)
        };
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            bail!("--alpha {}: give a probability above 0 and below 1", self.alpha);
        }
        if self.watch_deficit >= self.min_deficit {
            bail!(
                "--watch-deficit {} is not under --min-deficit {}: the watch bar is the lower one",
                self.watch_deficit,
                self.min_deficit
            );
        }
        Ok(JudgeConfig {
            min_deficit: percent(self.min_deficit, "min-deficit")?,
            watch_deficit: percent(self.watch_deficit, "watch-deficit")?,
            alpha: self.alpha,
            ceiling_shortfall: percent(self.ceiling_shortfall, "ceiling-shortfall")?,
        })
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = JUDGE_HELP)]
pub struct JudgeArgs {
    /// Gathered results files (results.csv of `gdrperf slurm`).
    #[arg(value_name = "RESULTS.csv", required = true)]
    files: Vec<PathBuf>,
    /// Also write the verdict as JSON to this file (default: none).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// An earlier job's gathered results file to compare with, part by part (repeat for a job
    /// in several files; default: none).
    #[arg(long, value_name = "EARLIER.csv")]
    base: Vec<PathBuf>,
    /// The fabric's switch map, Slurm's topology.conf format (default: none; groups from the
    /// node names where they give some, and inferred from the pair matrix).
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// Without --topology, do not test the groups the node names give (r03n07: rack r03).
    #[arg(long = "no-name-groups")]
    no_name_groups: bool,
    #[command(flatten)]
    thresholds: Thresholds,
}

/// The JSON of `judge`: the exit-code contract's word, the judgement, and with `--base` the
/// comparison under `base`.
#[derive(serde::Serialize)]
struct JudgeOutput<'a> {
    verdict: gdrperf_command_line::Verdict,
    #[serde(flatten)]
    judgement: &'a gdrperf_fleet::judge::Verdict,
    input: &'a gdrperf_fleet::read::InputCount,
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<&'a BaseComparison>,
}

/// `--schedule` of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ScheduleArg {
    Pairs,
    Ring,
    AllPairs,
    Random,
    Locate,
}

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    #[arg(long, default_value_t = 64)]
    nodes: usize,
    /// NIC ports (one GPU each) per node; lane k meets lane k.
    #[arg(long, default_value_t = 8)]
    lanes: usize,
    #[arg(long, value_enum, default_value_t = ScheduleArg::Locate)]
    schedule: ScheduleArg,
    /// Rounds of the `random` schedule.
    #[arg(long, default_value_t = 2)]
    random_rounds: usize,
    /// SD of log bandwidth per row (0.03: about 3 %).
    #[arg(long, default_value_t = 0.03)]
    noise: f64,
    /// Student-t noise of this many degrees of freedom (3 or more; heavy tails), scaled to
    /// --noise's SD (default: normal noise).
    #[arg(long, value_name = "DEGREES")]
    tails: Option<f64>,
    /// The share of pair runs dipped to 50-70 % on every lane at once, at random (0.02: 2 %).
    #[arg(long, default_value_t = 0.0, value_name = "SHARE")]
    dips: f64,
    /// Do not run again the pairs the judge lists to retest (by default they run again, as many
    /// times as it takes, up to 16, as a job would before it finishes).
    #[arg(long)]
    no_retest: bool,
    /// Faults to plant, each on its own node: slow-port, bad-link, gpu-x8, dead-node,
    /// slow-sending, slow-rail, near-miss, intermittent, slow-group, slow-half (comma-separated;
    /// default the first five).
    #[arg(long, value_delimiter = ',', default_value = "slow-port,bad-link,gpu-x8,dead-node,slow-sending")]
    fault: Vec<String>,
    /// How many seeds (fleets), from --first-seed on.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// The first seed (to split a long sweep over processes).
    #[arg(long, default_value_t = 1)]
    first_seed: u64,
    /// Give the judge the simulated fabric's switch map (leaves of nodes/16 nodes, 3 to 16, under
    /// two spines), as `fleet judge --topology` would (default: none; groups inferred).
    #[arg(long)]
    switch_map: bool,
    /// Name the nodes by that fabric (su0r003n07: spine, leaf, node) instead of node0000, so
    /// that without --switch-map the judge tests the groups the names give, as `fleet judge`
    /// does; a slow group is then a leaf.
    #[arg(long)]
    rack_names: bool,
    /// Print every seed's verdict.
    #[arg(long)]
    verbose: bool,
    /// Also write the simulated job's results.csv, matrix.csv and plan.json (the node list)
    /// into this folder, as a gathered job would, and with --switch-map its topology.conf
    /// (needs --seeds 1; default: none).
    #[arg(long, value_name = "DIR")]
    write: Option<PathBuf>,
    #[command(flatten)]
    thresholds: Thresholds,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Name the slow parts of a job from its gathered rows.
    Judge(JudgeArgs),
    /// Plan, measure (synthetic rows) and judge a simulated fleet with planted faults.
    Simulate(SimulateArgs),
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Judge(args) => run_judge(args),
        Action::Simulate(args) => run_simulate(args),
    }
}

fn run_judge(args: JudgeArgs) -> anyhow::Result<ExitCode> {
    let config = args.thresholds.config()?;
    let switches = args.topology.as_deref().map(SwitchMap::read).transpose()?;
    let rows = read_gathered(&args.files)?;
    if rows.rows.is_empty() {
        bail!(
            "no bandwidth rows to judge in {} file(s): fleet judge compares bandwidth rows ({})",
            args.files.len(),
            report::input_text(&rows.input).trim_end()
        );
    }
    let base = if args.base.is_empty() {
        None
    } else {
        let earlier = read_gathered(&args.base)?;
        if earlier.rows.is_empty() {
            bail!("no bandwidth rows in the {} --base file(s): nothing to compare with", args.base.len());
        }
        Some(compare(&earlier, &rows, &config))
    };
    if let (Some(map), Some(path)) = (&switches, &args.topology) {
        if map.coverage(&rows.catalog).0 == 0 {
            bail!(
                "--topology {}: none of the rows' {} nodes is under a switch of it (the map's node names must be \
                 the rows' server_node and client_node)",
                gdrperf_files::printable(&path.display().to_string()),
                rows.catalog.nodes.len()
            );
        }
    }
    let named_groups = match (&switches, args.no_name_groups) {
        (None, false) => groups_from_names(&rows.catalog.nodes),
        _ => None,
    };
    let verdict = judge_with_switches(&rows, &config, switches.as_ref().or(named_groups.as_ref()));
    print!("{}", report::input_text(&rows.input));
    if let (Some(map), Some(path)) = (&switches, &args.topology) {
        print!("{}", report::switch_map_text(map, &rows.catalog, path));
    }
    if let Some(map) = &named_groups {
        print!("{}", report::name_groups_text(map));
    }
    print!("{}", report::text(&verdict));
    if let Some(base) = &base {
        print!("{}", report::base_text(base));
    }
    let moved = base.as_ref().is_some_and(|base| !base.movements.is_empty());
    let contract = if moved { gdrperf_command_line::Verdict::Fail } else { verdict.contract() };
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&JudgeOutput {
            verdict: contract,
            judgement: &verdict,
            input: &rows.input,
            base: base.as_ref(),
        })?;
        gdrperf_files::write_file(path, (text + "\n").as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from(contract.exit_code()))
}

fn run_simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let config = args.thresholds.config()?;
    if args.nodes < 4 || args.lanes == 0 || args.seeds == 0 {
        bail!(
            "--nodes {} --lanes {} --seeds {}: simulate needs 4 or more nodes, a lane and a seed",
            args.nodes,
            args.lanes,
            args.seeds
        );
    }
    if args.write.is_some() && args.seeds != 1 {
        bail!("--write with --seeds {}: one seed's fleet is written; give --seeds 1", args.seeds);
    }
    if !(0.0..1.0).contains(&args.dips) {
        bail!("--dips {}: give a share of pair runs, 0 to below 1 (0.02 is 2 %)", args.dips);
    }
    if args.tails.is_some_and(|freedom| !(3.0..=1000.0).contains(&freedom)) {
        bail!("--tails {:?}: give 3 to 1000 degrees of freedom (4: heavy tails)", args.tails);
    }
    if !(0.0..1.0).contains(&args.noise) {
        bail!("--noise {}: give the SD of log bandwidth, 0 to below 1 (0.03 is about 3 %)", args.noise);
    }
    let faults = args
        .fault
        .iter()
        .filter(|name| !name.is_empty())
        .map(|name| {
            Fault::parse(name).with_context(|| {
                let names: Vec<&str> =
                    Fault::ALL.iter().chain(&[Fault::SlowHalf]).map(|fault| fault.name()).collect();
                format!("--fault {name}: one of {}", names.join(", "))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if 2 * faults.len() + 2 > args.nodes {
        bail!("--nodes {}: too few for {} faults on their own nodes", args.nodes, faults.len());
    }
    let plan = match args.schedule {
        ScheduleArg::Pairs => Plan::Fixed(Schedule::Pairs),
        ScheduleArg::Ring => Plan::Fixed(Schedule::Ring),
        ScheduleArg::AllPairs => Plan::Fixed(Schedule::AllPairs),
        ScheduleArg::Random => Plan::Fixed(Schedule::Random { rounds: args.random_rounds, seed: 0 }),
        ScheduleArg::Locate => Plan::Locate,
    };
    let all_pairs = args.nodes * (args.nodes - 1) / 2;
    println!(
        "# gdrperf fleet simulate: {} nodes x {} lanes, schedule {:?}, noise {} ({}), dips {}, retest {}, switch map {}{}, faults {}, seeds {}-{}",
        args.nodes,
        args.lanes,
        args.schedule,
        args.noise,
        args.tails.map_or("normal".to_string(), |freedom| format!("Student-t, {freedom} degrees of freedom")),
        args.dips,
        if args.no_retest { "no" } else { "yes" },
        if args.switch_map { "yes" } else { "no" },
        if args.rack_names { ", node names by rack" } else { "" },
        args.fault.join(","),
        args.first_seed,
        args.first_seed + args.seeds - 1
    );
    println!(
        "seed,all_named,false_named,rounds,pair_runs,rows,judge_s,findings,judge_cpu_s,sweeps,\
         retest_runs,false_watched,transient_rows,watch,retest,missed"
    );
    let (mut all_named, mut false_named, mut false_watched) = (0u64, 0u64, 0u64);
    let mut missed: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    let mut runs = Vec::new();
    let mut rounds = Vec::new();
    let mut judge_seconds: Vec<f64> = Vec::new();
    for seed in args.first_seed..args.first_seed + args.seeds {
        let plan = match plan {
            Plan::Fixed(Schedule::Random { rounds, .. }) => Plan::Fixed(Schedule::Random { rounds, seed }),
            other => other,
        };
        let mut sim = SimConfig::new(args.nodes, args.lanes, plan, args.noise, faults.clone(), seed);
        sim.tails = args.tails;
        sim.dips = args.dips;
        sim.switch_map = args.switch_map;
        sim.rack_names = args.rack_names;
        let mut fleet = simulate::run(&sim);
        // Each judgement timed, the last one's time kept: the verdict of every row, retests
        // included (judging it again would cost as much once more).
        let (mut seconds, mut cpu_seconds) = (0.0, 0.0);
        let mut timed_judge = |fleet: &simulate::SimFleet| {
            let start = Instant::now();
            let cpu_start = thread_cpu_seconds();
            let verdict = judge_with_switches(fleet, &config, fleet.switches.as_ref());
            cpu_seconds = thread_cpu_seconds() - cpu_start;
            seconds = start.elapsed().as_secs_f64();
            verdict
        };
        let verdict = match args.no_retest {
            true => timed_judge(&fleet),
            false => simulate::retest_with(&mut fleet, &mut timed_judge),
        };
        let score = simulate::score_named(&verdict, &fleet.planted, fleet.naming);
        all_named += u64::from(score.all_named);
        false_named += u64::from(score.false_named);
        false_watched += u64::from(score.false_watched);
        for fault in &score.missed {
            *missed.entry(fault.name()).or_default() += 1;
        }
        let rows = verdict.classes.iter().map(|class| class.rows).sum::<u64>();
        let missed_names: Vec<&str> = score.missed.iter().map(|fault| fault.name()).collect();
        println!(
            "{seed},{},{},{},{},{rows},{seconds:.3},{},{cpu_seconds:.3},{},{},{},{},{},{},{}",
            score.all_named,
            score.false_named,
            fleet.rounds,
            fleet.pair_runs(),
            verdict.findings.len(),
            verdict.sweeps,
            fleet.retest_runs,
            score.false_watched,
            verdict.transient_rows,
            verdict.watch.len(),
            verdict.retest.len(),
            missed_names.join("+")
        );
        if args.verbose || !score.all_named || score.false_named || score.false_watched {
            println!("#   planted: {:?}", fleet.planted);
            for finding in &verdict.findings {
                println!("#   {}", report::finding_line(finding));
            }
            for finding in &verdict.watch {
                println!("#   watch: {}", report::finding_line(finding));
            }
            for finding in verdict.retest.iter().take(5) {
                println!("#   retest: {}", report::finding_line(finding));
            }
        }
        if let Some(dir) = &args.write {
            simulate_files::write_job(&fleet, dir)
                .with_context(|| format!("writing into {}", dir.display()))?;
            if args.switch_map {
                let path = dir.join("topology.conf");
                gdrperf_files::write_file(&path, simulate::fabric_conf(fleet.naming).as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            println!(
                "# wrote {}/results.csv, matrix.csv, plan.json{}",
                dir.display(),
                if args.switch_map { ", topology.conf" } else { "" }
            );
        }
        runs.push(fleet.pair_runs());
        rounds.push(fleet.rounds);
        judge_seconds.push(seconds);
    }
    judge_seconds.sort_by(f64::total_cmp);
    let seeds = args.seeds as f64;
    println!(
        "# every planted part named: {:.1} % of seeds; anything else named: {:.1} % of seeds; anything else watched: {:.1} % of seeds",
        100.0 * all_named as f64 / seeds,
        100.0 * false_named as f64 / seeds,
        100.0 * false_watched as f64 / seeds
    );
    for fault in &faults {
        let count = missed.get(fault.name()).copied().unwrap_or(0);
        println!(
            "# {}: named as its kind in {:.1} % of seeds",
            fault.name(),
            100.0 * (seeds - count as f64) / seeds
        );
    }
    println!(
        "# rounds: mean {:.1}, max {}; pair runs: mean {:.0}, max {} ({:.2} % of all-pairs' {all_pairs})",
        rounds.iter().sum::<usize>() as f64 / seeds,
        rounds.iter().max().unwrap_or(&0),
        runs.iter().sum::<usize>() as f64 / seeds,
        runs.iter().max().unwrap_or(&0),
        100.0 * *runs.iter().max().unwrap_or(&0) as f64 / all_pairs as f64
    );
    println!(
        "# judge wall time: median {:.3} s, max {:.3} s; peak resident memory of the process: {}",
        judge_seconds[judge_seconds.len() / 2],
        judge_seconds.last().unwrap_or(&0.0),
        peak_memory().unwrap_or_else(|| "unknown".into())
    );
    Ok(ExitCode::SUCCESS)
}

/// CPU time of this thread (the judge runs on one), in seconds: on a shared host the wall time
/// counts the other processes' turns too. 0 where the clock cannot be read.
fn thread_cpu_seconds() -> f64 {
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `time` is, and reads nothing else.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if status != 0 {
        return 0.0;
    }
    time.tv_sec as f64 + time.tv_nsec as f64 * 1e-9
}

/// VmHWM of /proc/self/status: the most memory this process held at once.
fn peak_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .map(|line| line["VmHWM:".len()..].trim().to_string())
}
