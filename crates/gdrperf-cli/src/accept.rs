//! `gdrperf accept`: does this node pass? For every GPU and the NIC `gdrperf doctor` pairs it
//! with, the profile's bandwidth and latency tests in host, cuda and cuda-staged memory (in
//! loopback, or across the link with `--peer`), held against the thresholds of an acceptance
//! profile; one summary (table, CSV, JSON) with a PASS/FAIL per row and overall. The dry run's
//! plan is `accept_plan`'s.
//!
//! The plan and the verdicts are in `gdrperf_report::acceptance` (pure, tested there); this
//! module asks the doctor about the node, runs the bench binaries one at a time with a
//! watchdog, and writes the summary.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use gdrperf_files::columns as column;
use gdrperf_report::acceptance::{self, AcceptanceRow, Gpu, Nic, Node, PlannedRun, Step};
use gdrperf_report::{Profile, ResultFile, Verdict, MEMORY_MODES};

const AFTER_HELP: &str = "\
Examples:
  gdrperf accept --profile ndr-400g
  gdrperf accept --profile ./my-cluster.toml --mem host,cuda --out results/node7/acceptance
  gdrperf accept --profile ndr-400g --soak r3     (then each lane for 15 minutes, in intervals:
                                                   bandwidth or latency, NIC errors, PCIe AER and
                                                   links re-read; judged on stability, soak.json)
  gdrperf accept --profile hdr-200g --dry-run     (print the plan, run nothing: every command,
                                                   threshold and source, a time estimate; exit 2
                                                   if a row cannot run, as for a real run)
  gdrperf accept --profile ngc-ndr-400g --serve   (on node B, then on node A:)
  gdrperf accept --profile ngc-ndr-400g --peer B  (every run across the link A -> B, not in loopback)
  gdrperf accept --profile azure-h100             (8 MiB GPUDirect writes on every NIC at once;
                                                   with --serve/--peer: every NIC pair at once,
                                                   between the two nodes)

Built-in profiles (profiles/*.toml in the repository; each value names its source):
  ngc-ndr-400g, ngc-hdr-200g  NVIDIA ngc_multinode_perf's shape: write/read/send bandwidth
                              bidirectional and 2-byte latency, between two nodes (--peer);
                              run in loopback, every row says so (its deviation)
  azure-h100, azure-h200      Azure's GPUDirect health check: 8 MiB writes, every NIC at once,
                              380 / 360 Gb/s per NIC, a warning within 5 % above
  ndr-400g, hdr-200g          write bandwidth and read latency in loopback, one NIC at a time
  softroce-smoke              a smoke test of gdrperf itself on Soft-RoCE (no standard)

Results go to ./acceptance-HOST-DATE/ unless --out says where: summary.csv, summary.json,
inventory.json (what it ran on), report.html (one self-contained page to read and sign) and
each bench's CSV/JSON; the last line names the folder. A node without a GPU gets SKIP for the
GPU modes; a GPU mode that cannot run (no CUDA driver, no GPUDirect path) is an ERROR with the
bench's message.

Exit codes of gdrperf accept (--dry-run: as the real run would end before measuring). The
screen and summary.csv say PASS, SKIP, FAIL, ERROR; summary.json and soak.json spell every
verdict as all gdrperf tools' JSON does: pass, undecided, fail, error:
  0  pass: every row passed; undecided: no row missed, but a row was skipped (summary.json
     calls it \"undecided\", its reason in \"detail\")
  1  fail: at least one row missed its threshold, or a soak lane was unstable
  2  error: at least one row could not be measured, or the profile or doctor failed; with
     --serve, a server that could not be started or ended with an error";

/// Flags of `gdrperf accept`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Acceptance profile (required): a built-in name (see below) or a TOML file.
    #[arg(long, value_name = "NAME|PATH")]
    profile: String,
    /// Folder for the summary and each bench's result files [default: acceptance-HOST-DATE].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Only these memory modes (comma-separated) [default: every mode the profile has].
    #[arg(long, value_delimiter = ',', value_name = "MODES")]
    mem: Vec<String>,
    /// Run everything on this RDMA device instead of the one the doctor pairs with each GPU
    /// (default: none, the doctor's pairs).
    #[arg(short = 'd', long = "ib-dev", value_name = "DEVICE")]
    ib_dev: Option<String>,
    /// Folder holding the gdr-* bench binaries [default: beside gdrperf, else PATH].
    #[arg(long, value_name = "DIR")]
    bench_dir: Option<PathBuf>,
    /// Longest a single bench run may take before it is stopped and counted an error.
    #[arg(long, default_value_t = 600, value_name = "SECONDS", value_parser = timeout_seconds())]
    run_timeout: u64,
    /// Print the plan and exit without running anything: every run with the command of each node
    /// (--peer/--serve), the soak's intervals (--soak), each row's threshold, source and deviation
    /// from it, and an estimate of the wall time.
    #[arg(long)]
    dry_run: bool,
    /// Examine this sysfs root instead of / (passed to gdrperf doctor; for --dry-run on fixtures).
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
    /// After the rows, repeat each bandwidth and latency lane for a soak: a level of the profile (r1..r4)
    /// or a duration (20m); judged on stability, written to soak.json (default: no soak).
    #[arg(long, value_name = "LEVEL|DURATION")]
    soak: Option<String>,
    /// Run every bench as a client of `gdrperf accept --serve` on HOST, across the link, instead
    /// of in loopback on this node (default: loopback): the rows and the soak then measure the
    /// path between the two nodes, and what happens on the wire reaches them.
    #[arg(long, value_name = "HOST", conflicts_with = "serve")]
    peer: Option<String>,
    /// Be the other end of a `gdrperf accept --peer THIS_HOST`: run the server of each of its
    /// runs, in the same order (give the same profile, --soak and device flags); judges nothing.
    #[arg(long)]
    serve: bool,
    /// With --peer or --serve: the TCP port of the plan's first run; run N uses this + N on
    /// both sides.
    #[arg(long, default_value_t = 18515, value_name = "TCP_PORT")]
    peer_port: u16,
    /// Also write the verdicts and figures as a Prometheus textfile-collector file (name it
    /// NAME.prom in node_exporter's --collector.textfile.directory): a state set per row, the
    /// node's verdict and exit code, values in bytes per second and seconds (default: none).
    #[arg(long, value_name = "PATH")]
    prom: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(unknown) = args.mem.iter().find(|mode| !MEMORY_MODES.contains(&mode.as_str())) {
        bail!("--mem {unknown}: not a memory mode (modes: {})", MEMORY_MODES.join(", "));
    }
    let profile = Profile::load(&args.profile)?;
    if let Some(path) = &args.prom {
        // Written at the end: a folder that is not there fails now, not after the runs.
        let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !folder.is_dir() {
            bail!("--prom {}: the folder {} does not exist", path.display(), folder.display());
        }
    }
    let soak = args.soak.as_deref().map(|asked| crate::soak_run::resolve(&profile, asked)).transpose()?;
    let doctor = crate::doctor::examine(&args.sysfs_root, false)?;
    let node = node_from_doctor(&doctor, args.ib_dev.as_deref())?;
    let side = match (&args.peer, args.serve) {
        (Some(host), _) => crate::accept_peer::Side::Client(host.clone()),
        (None, true) => crate::accept_peer::Side::Server,
        (None, false) => crate::accept_peer::Side::Loopback,
    };
    let mut steps = acceptance::plan(&profile, &node, &args.mem);
    if side == crate::accept_peer::Side::Loopback {
        acceptance::note_loopback(&profile, &mut steps);
    } else {
        // A section on every NIC at once runs across the link too: every NIC pair at once, the
        // other node serving its runs together (accept_peer::serve).
        acceptance::note_across(&mut steps);
    }
    let warnings = acceptance::port_rate_warnings(&profile, &node);
    say!("gdrperf accept: profile {} ({})", profile.name, profile.description);
    if args.ib_dev.as_deref().is_some_and(gdrperf::verbs::simulated::is_simulated) {
        say!("gdrperf accept: SIMULATED NIC (-d simulated0): these verdicts test the harness, they are not measurements");
    }
    for warning in &warnings {
        say!("{warning}");
    }

    let token = std::env::var("GDRPERF_TOKEN").ok();
    if let Some(warning) = crate::accept_peer::token_warning(&side, token.as_deref()) {
        eprintln!("{warning}");
    }
    let ports = crate::accept_peer::Ports::new(args.peer_port);
    if args.dry_run {
        let host = hostname();
        let plan = crate::accept_plan::Plan {
            profile: &profile,
            steps: &steps,
            side: &side,
            first_port: args.peer_port,
            soak: soak.as_ref(),
            run_timeout: args.run_timeout,
            host: &host,
        };
        say_raw!("{}", plan.render()?);
        // The exit code says whether the plan itself can be carried out: 2 when a row is
        // already an ERROR (no NIC), as the real run would end.
        let decided = steps.iter().filter_map(|step| match step {
            Step::Decided(row, _) => Some(row.verdict),
            Step::Run(_) => None,
        });
        return Ok(ExitCode::from(Verdict::overall(decided.chain([Verdict::Pass])).exit_code()));
    }
    if args.serve {
        return serve(&args, &steps, soak.as_ref(), &ports, &side);
    }

    let host = hostname();
    let date = gdrperf_provenance::utc_timestamp();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("acceptance-{host}-{}", date.replace(':', ""))));
    std::fs::create_dir_all(&out).with_context(|| format!("creating the output folder {}", out.display()))?;
    say!("writing results to {}/", out.display());
    crate::inventory::write(&out, &args.sysfs_root, &doctor)?;
    // Every bandwidth and latency run is a lane of the soak.
    let soak_lanes = planned_runs(&steps);
    let total = soak_lanes.len();
    let mut rows = Vec::new();
    let mut done = 0;
    let mut steps = steps.into_iter().peekable();
    while let Some(step) = steps.next() {
        let run = match step {
            Step::Decided(row, _) => {
                rows.push(row);
                continue;
            }
            Step::Run(run) => run,
        };
        // The runs that start together with this one (a section with all_nics_at_once).
        let mut batch = vec![run];
        while let Some(Step::Run(next)) = steps.peek() {
            if batch[0].together.is_none() || next.together != batch[0].together {
                break;
            }
            let Some(Step::Run(next)) = steps.next() else { unreachable!("peeked a run") };
            batch.push(next);
        }
        let first = done + 1;
        done += batch.len();
        let places: Vec<String> = batch.iter().map(place_of).collect();
        let counter = if batch.len() == 1 { format!("{done}") } else { format!("{first}-{done}") };
        say!("[{counter}/{total}] {} --mem {} ({}) ...", batch[0].binary, batch[0].mode, places.join(", "));
        let started = Instant::now();
        let shortfall = |run: &PlannedRun| {
            profile
                .bandwidth
                .iter()
                .find(|check| check.test == run.test)
                .and_then(|check| check.shortfall_percent())
        };
        let placed: Vec<anyhow::Result<PlannedRun>> =
            batch.iter().map(|run| ports.place(run, &side, args.run_timeout)).collect();
        let judged: Vec<AcceptanceRow> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .zip(&placed)
                .map(|(run, placed)| {
                    let (args, out, shortfall) = (&args, &out, shortfall(run));
                    scope.spawn(move || match placed {
                        Ok(placed) => execute(args, placed, out, shortfall),
                        Err(error) => run.error(format!("{error:#}")),
                    })
                })
                .collect();
            handles
                .into_iter()
                .zip(&batch)
                .map(|(handle, run)| {
                    handle.join().unwrap_or_else(|_| run.error("the run's thread panicked".into()))
                })
                .collect()
        });
        for (row, place) in judged.iter().zip(&places) {
            say!(
                "      {}{} in {:.0} s{}",
                row.verdict,
                if judged.len() > 1 { format!(" ({place})") } else { String::new() },
                started.elapsed().as_secs_f64(),
                if row.detail.is_empty() { String::new() } else { format!(": {}", row.detail) }
            );
        }
        rows.extend(judged);
    }

    say!("\n{}", acceptance::render(&rows));
    say_raw!("{}", ceiling_lines(&rows));
    let metadata = serde_json::json!({
        "profile": profile.name,
        "profile_source": args.profile,
        "gdrperf_version": env!("CARGO_PKG_VERSION"),
        "git_commit": gdrperf_provenance::GIT_COMMIT,
        "command": gdrperf_provenance::command_line(&gdrperf_command_line::arguments()),
        "argv": gdrperf_command_line::redact_command_line(gdrperf_command_line::arguments()),
        "host": host,
        "peer": args.peer,
        "date": date,
        "warnings": warnings,
        "gpus": node.gpus.iter().map(|(gpu, nic)| serde_json::json!({"gpu": gpu, "nic": nic})).collect::<Vec<_>>(),
        "nics": node.nics,
    });
    let soak_verdict = match &soak {
        Some(plan) => {
            Some(crate::soak_run::run(plan, &soak_lanes, &out, &args.sysfs_root, &|run, folder| match ports
                .place(run, &side, args.run_timeout)
            {
                Ok(placed) => execute(&args, &placed, folder, None),
                Err(error) => run.error(format!("{error:#}")),
            })?)
        }
        None => None,
    };
    acceptance::write_summary(&out, metadata, &rows)?;
    say!("summary: {0}/summary.csv, {0}/summary.json", out.display());
    let overall = Verdict::overall(rows.iter().map(|row| row.verdict).chain(soak_verdict));
    if let Some(path) = &args.prom {
        let run = gdrperf_report::acceptance_metrics::AcceptRun {
            profile: &profile.name,
            host: &host,
            version: env!("CARGO_PKG_VERSION"),
            git_commit: gdrperf_provenance::GIT_COMMIT,
            timestamp_seconds: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |since| since.as_secs_f64()),
        };
        gdrperf_report::acceptance_metrics::exposition(&run, &rows, overall)
            .write(path)
            .with_context(|| format!("writing the Prometheus file {}", path.display()))?;
        say!("Prometheus textfile: {}", path.display());
    }
    let report = gdrperf_report::report_html::write(&out)?;
    say!("{}", report.describe());
    say!("results written to {}/", out.display());
    Ok(ExitCode::from(overall.exit_code()))
}

/// Where a run goes, in words: "GPU0 on mlx5_0", or the NIC alone for host memory.
fn place_of(run: &PlannedRun) -> String {
    run.gpu
        .as_ref()
        .map(|gpu| format!("{} on {}", gpu.label, run.nic.device))
        .unwrap_or_else(|| run.nic.device.clone())
}

/// The runs the plan makes (its steps less the rows decided without running).
fn planned_runs(steps: &[Step]) -> Vec<PlannedRun> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Run(run) => Some(run.clone()),
            Step::Decided(..) => None,
        })
        .collect()
}

/// `--serve`: the server of every run the client will make, in its order: the rows, then each
/// lane's soak intervals.
fn serve(
    args: &Args,
    steps: &[Step],
    soak: Option<&crate::soak_run::SoakPlan>,
    ports: &crate::accept_peer::Ports,
    side: &crate::accept_peer::Side,
) -> anyhow::Result<ExitCode> {
    // The rows' runs, which are also the soak's lanes.
    let lanes = planned_runs(steps);
    let rows = lanes.iter().cloned();
    let intervals = soak.into_iter().flat_map(|plan| {
        lanes.iter().flat_map(move |lane| {
            (0..plan.intervals()).map(move |index| crate::soak_run::interval_run(plan, lane, index))
        })
    });
    let runs = rows
        .chain(intervals)
        .map(|run| ports.place(&run, side, args.run_timeout))
        .collect::<anyhow::Result<Vec<PlannedRun>>>()?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("serve-{}", hostname())));
    crate::accept_peer::serve(&|name| find_bench(args.bench_dir.as_deref(), name), &runs, &out)
}

/// The NICs and GPUs to run on, from the doctor's report (a WARN or FAIL verdict in it, no GPU
/// say, does not stop the plan: the rows then say what could not run).
fn node_from_doctor(doctor: &gdrperf_doctor::Report, ib_dev: Option<&str>) -> anyhow::Result<Node> {
    let devices = &doctor.rdma_devices;
    let is_active = |port: &&gdrperf_doctor::rdma::Port| {
        port.state.as_deref().is_some_and(|state| state.contains("ACTIVE"))
    };
    let nic = |name: &str| -> Nic {
        let device = devices.iter().find(|device| device.name == name);
        let ports = device.map(|device| device.ports.as_slice()).unwrap_or_default();
        let port = ports.iter().find(is_active).or(ports.first());
        Nic {
            device: name.to_string(),
            port: port.map_or(1, |port| port.number),
            rate: port.and_then(|port| port.rate.clone()),
        }
    };
    // The simulated NIC is never in the doctor's list: it runs only where asked for by name.
    if let Some(name) = ib_dev.filter(|name| !gdrperf::verbs::simulated::is_simulated(name)) {
        if !devices.iter().any(|device| device.name == name) {
            let present: Vec<&str> = devices.iter().map(|device| device.name.as_str()).collect();
            bail!(
                "-d/--ib-dev {name}: no such RDMA device (devices present: {})",
                if present.is_empty() { "none".into() } else { present.join(", ") }
            );
        }
    }
    let gpus: Vec<(Gpu, Option<Nic>)> = doctor
        .gpus
        .iter()
        .map(|gpu| {
            let recommended = doctor
                .recommendations
                .iter()
                .find(|entry| entry.gpu_bus_id == gpu.bus_id)
                .map(|entry| entry.nic.as_str());
            let paired = ib_dev.or(recommended).map(nic);
            (Gpu { label: gpu.label.clone(), bus_id: gpu.bus_id.clone() }, paired)
        })
        .collect();
    // Host memory runs on each NIC a GPU uses; on a node without GPUs, on every NIC with an
    // active port (or the one asked for).
    let mut nics: Vec<Nic> = Vec::new();
    let names: Vec<String> = match (ib_dev, gpus.is_empty()) {
        (Some(name), _) => vec![name.to_string()],
        (None, false) => {
            gpus.iter().filter_map(|(_, nic)| nic.as_ref().map(|nic| nic.device.clone())).collect()
        }
        (None, true) => devices
            .iter()
            .filter(|device| device.ports.iter().any(|port| is_active(&port)))
            .map(|device| device.name.clone())
            .collect(),
    };
    for name in names {
        if !nics.iter().any(|known| known.device == name) {
            nics.push(nic(&name));
        }
    }
    Ok(Node { nics, gpus })
}

/// Runs one bench with its output files in `out`, and judges what it wrote.
/// `shortfall`: the profile's level for the ceiling's causes (see `add_ceiling`).
fn execute(args: &Args, run: &PlannedRun, out: &Path, shortfall: Option<f64>) -> AcceptanceRow {
    let Some(binary) = find_bench(args.bench_dir.as_deref(), &run.binary) else {
        return run.error(format!(
            "{} not found {}(build it: cargo build --release -p gdrperf-benches)",
            run.binary,
            args.bench_dir
                .as_ref()
                .map(|dir| format!("in {} ", dir.display()))
                .unwrap_or_else(|| "beside gdrperf or on PATH ".into())
        ));
    };
    let json = out.join(format!("{}.json", run.stem));
    let log = out.join(format!("{}.log", run.stem));
    let mut command = Command::new(&binary);
    command.args(&run.args).arg("--json").arg(&json).arg("--csv").arg(out.join(format!("{}.csv", run.stem)));
    if run.kind == acceptance::CheckKind::Latency {
        command.arg("--hdr-dir").arg(out.join(format!("{}-hdr", run.stem)));
    }
    let outcome = (|| -> anyhow::Result<std::process::ExitStatus> {
        let log_file =
            gdrperf_files::create_fresh(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let deadline = Instant::now() + Duration::from_secs(args.run_timeout);
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                child.kill().ok();
                child.wait().ok();
                bail!(
                    "{} ran longer than --run-timeout {} s and was stopped (log: {})",
                    run.binary,
                    args.run_timeout,
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })();
    let status = match outcome {
        Ok(status) => status,
        Err(error) => return run.error(format!("{error:#}")),
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last = text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("(no output)");
        return run.error(format!(
            "{} exited with {status}: {} (log: {})",
            run.binary,
            last.trim(),
            log.display()
        ));
    }
    match ResultFile::read(&json) {
        Ok(result) => {
            let file_name =
                json.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            let mut row = run.judge(&result, &file_name);
            add_ceiling(&mut row, &json, shortfall);
            row
        }
        Err(error) => run.error(error.to_string()),
    }
}

/// A bandwidth row's ceiling and, when it failed or is short, the causes: `gdrperf explain`'s
/// judgement of the bench's JSON file. A file without path facts leaves the columns empty.
/// `shortfall`: the profile's level (its `[bandwidth] shortfall`), else gdrperf's.
fn add_ceiling(row: &mut AcceptanceRow, json: &Path, shortfall: Option<f64>) {
    let Ok(stored) = crate::explain::StoredResult::read(json) else { return };
    let failed = row.verdict == Verdict::Fail;
    let shortfall = shortfall.unwrap_or(gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT);
    let Some(measured) =
        stored.rows().iter().find(|candidate| candidate[column::BYTES.name()].as_u64() == Some(row.bytes))
    else {
        return;
    };
    if let Ok(Some(judged)) = stored.judge(measured, None, shortfall, failed) {
        row.ceiling_causes = judged.causes_column();
        row.ceiling_gbps = judged.ceiling_gbps;
        row.pct_of_ceiling = judged.pct_of_ceiling;
        row.ceiling_limited_by = judged.ceiling_limited_by;
    }
}

/// Under the table: each bandwidth row's share of its ceiling, and the causes of a short one.
fn ceiling_lines(rows: &[AcceptanceRow]) -> String {
    let mut text = String::new();
    for row in rows.iter().filter(|row| !row.ceiling_limited_by.is_empty()) {
        let place = if row.gpu.is_empty() { row.nic.clone() } else { format!("{} on {}", row.gpu, row.nic) };
        let share = match (row.pct_of_ceiling, row.ceiling_gbps) {
            (Some(pct), Some(gbps)) => format!("{pct:.1}% of {gbps:.2} Gb/s, "),
            _ => String::new(),
        };
        text.push_str(&format!(
            "ceiling {} {} ({place}): {share}{}\n",
            row.test, row.mem, row.ceiling_limited_by
        ));
        for cause in row.ceiling_causes.split(" | ").filter(|cause| !cause.is_empty()) {
            text.push_str(&format!("    cause: {cause}\n"));
        }
    }
    text
}

/// The bench binary: in `--bench-dir`, else beside this executable, else on PATH.
fn find_bench(bench_dir: Option<&Path>, name: &str) -> Option<PathBuf> {
    if let Some(dir) = bench_dir {
        return Some(dir.join(name)).filter(|path| path.is_file());
    }
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join(name)));
    beside.filter(|path| path.is_file()).or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|dir| dir.join(name)).find(|path| path.is_file())
        })
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The value parser of every timeout in seconds of this binary: up to
/// [`gdrperf_command_line::MAX_TIMEOUT_SECONDS`], so that `Instant::now() + timeout` cannot overflow;
/// clap refuses a larger value with exit 2.
pub(crate) fn timeout_seconds() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(0..=gdrperf_command_line::MAX_TIMEOUT_SECONDS)
}
