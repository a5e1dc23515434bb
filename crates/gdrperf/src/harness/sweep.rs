//! The driver every bench binary hands control to: roles, set-up, the size sweep, peer
//! synchronisation, validation and output. A benchmark only supplies the callbacks of
//! [`Benchmark`]: what to prepare, what to measure, what to check, how to make a row.
//!
//! Per size, the client leads and the server follows over the control channel:
//! client `StartSize` -> server prepares, `Ready` -> both measure -> client `SizeDone` ->
//! server checks its memory, `SizeResult` (with its own measurement) -> client writes the row.

use std::collections::BTreeMap;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::exchange::Message;
use crate::harness::config::{BandwidthConfig, BandwidthUnit, BenchConfig, StopRule};
use crate::harness::interrupt::{conclude, Interruption, SweepPosition};
use crate::harness::placement::{self, Placement};
use crate::harness::port_window::{OwnPort, SizeWindow};
use crate::harness::session::{hostname, Greeting, LocalResources, Session, Side};
use crate::nic_counters::{rnr_moved, NicColumns, SoftwareDeviceTally};
use crate::output::ceiling_columns::{self, RowPath};
use crate::output::{HeaderLine, Outputs, Row, RowContext, RunStart};
use crate::verbs::QueuePairSizes;

/// What a bench binary implements. All methods take `&self`: in `--loopback` both ends run the
/// same benchmark value on two threads.
pub trait Benchmark: Sync {
    /// The bench's descriptor (its names, title and defaults), an entry of
    /// [`BENCHES`](crate::bench::BENCHES).
    const BENCH: crate::bench::Bench;
    /// What one side measures for one size (sent to the peer as JSON).
    type Report: Serialize + DeserializeOwned + Send;
    /// The result row.
    type Row: Row + Send + 'static;

    /// The run's validated configuration (given once: [`run`](crate::harness::roles::run) takes it
    /// from here).
    fn config(&self) -> &BenchConfig;
    /// What each side needs and what the test says of itself (see [`Setup`]).
    fn setup(&self) -> Setup;
    /// What staged memory cannot do in this run (refused before connecting; none by default).
    fn staged_rules(&self) -> crate::harness::session::StagedRules {
        crate::harness::session::StagedRules::default()
    }
    /// Before a size starts: fill sources, clear destinations, post receives.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()>;
    /// Runs one size on this side; `None` for a passive side.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<Self::Report>>;
    /// After both sides finished: checks this side's received data, `Some(reason)` if wrong.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<String>>;
    /// The row of one size from both sides' reports.
    fn row(
        &self,
        context: &RowContext,
        ours: Option<Self::Report>,
        peer: Option<Self::Report>,
        validation: &str,
    ) -> Option<Self::Row>;
}

/// What a test needs of each side's resources and says of itself, before it connects.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Queue sizes of each QP.
    pub queue_sizes: QueuePairSizes,
    /// Bytes of each QP's buffer: the sweep's largest message, or more (a ping-pong's halves).
    pub buffer_len: usize,
    /// What the peer may do to the buffers (and through the QPs): the least the test needs.
    pub remote_access: crate::verbs::RemoteAccess,
    /// Test-specific settings that both sides must share (merged into the common ones).
    pub parameters: serde_json::Value,
    /// Extra header lines ("CQ moderation", "100").
    pub header: Vec<(String, String)>,
    /// A latency ping-pong's `-I` (or its default): the header says what perftest's rule makes
    /// of it on this side's device and memory (`None`: nothing is sent inline).
    pub inline: Option<crate::harness::perftest_defaults::InlineRequest>,
    /// A bandwidth test's settings: with `-b` a row sums both directions (a threshold in % of
    /// the port then means that share of both together); `--concurrent` runs every placement
    /// at once, one lane each, with an aggregate row ([`Row::aggregate`]).
    pub bandwidth: Option<BandwidthConfig>,
}

/// `--concurrent`: every placement at once, one lane each.
pub(crate) fn concurrent<B: Benchmark>(benchmark: &B) -> bool {
    benchmark.setup().bandwidth.is_some_and(|bandwidth| bandwidth.concurrent)
}

/// Whether a row sums both directions.
pub(crate) fn sums_both_directions<B: Benchmark>(benchmark: &B) -> bool {
    benchmark.setup().bandwidth.is_some_and(|bandwidth| bandwidth.bidirectional)
}

/// How a run ended when no error stopped it.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// Sizes whose data check failed (the sweep stops at the first).
    pub validation_failures: Vec<String>,
    /// Set when SIGINT/SIGTERM stopped the sweep; the finished sizes are in the result files.
    pub interrupted: Option<Interruption>,
    /// Sizes that missed an acceptance threshold (--min-bw, --max-lat), as FAIL lines.
    pub threshold_failures: Vec<String>,
}

impl RunOutcome {
    /// How the run ended, for the JSON file: `status` is "complete", "interrupted" or "failed".
    pub fn summary(&self, error: Option<&Error>) -> serde_json::Value {
        let status = match (error, &self.interrupted) {
            (Some(_), _) => "failed",
            (None, Some(_)) => "interrupted",
            (None, None) => "complete",
        };
        serde_json::json!({
            "status": status,
            "interrupted": self.interrupted.as_ref().map(ToString::to_string),
            "error": error.map(ToString::to_string),
            "validation_failures": self.validation_failures,
            "threshold_failures": self.threshold_failures,
        })
    }
}

/// Ends the client's run: the outcome goes into the files (a failure to write it is reported,
/// not allowed to hide the run's own result), then the run's result is returned.
pub(crate) fn finish_outputs<R: Row + 'static>(
    outputs: &mut Outputs<R>,
    mut outcome: RunOutcome,
    concluded: Result<Option<Interruption>>,
) -> Result<RunOutcome> {
    if let Ok(interrupted) = &concluded {
        outcome.interrupted = outcome.interrupted.take().or_else(|| interrupted.clone());
    }
    if let Err(error) = outputs.finish(&outcome.summary(concluded.as_ref().err())) {
        eprintln!("gdrperf: could not record how the run ended: {error}");
    }
    concluded.map(|_| outcome)
}

/// This side's resources for `placement`, sized as the benchmark wants them.
pub(crate) fn create_local<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placement: &Placement,
) -> Result<LocalResources> {
    let setup = benchmark.setup();
    LocalResources::create(config, placement, setup.queue_sizes, setup.buffer_len, setup.remote_access)
}

/// What this side says in its hello for round or lane `lane`.
pub(crate) fn greeting<B: Benchmark>(benchmark: &B, placements: &[Placement], lane: u32) -> Greeting {
    Greeting {
        test: B::BENCH.name,
        parameters: benchmark.setup().parameters,
        placements: placement::labels(placements),
        lane: if concurrent(benchmark) { lane } else { 0 },
        staged: benchmark.staged_rules(),
    }
}

/// How long the passive side may wait for the active side to finish one size.
fn measurement_wait(config: &BenchConfig) -> Duration {
    match config.stop {
        // A fixed count can take arbitrarily long on a slow link; a dead peer still shows as a
        // closed socket at once, so only a vanished host waits this long.
        StopRule::Iterations(_) => Duration::from_secs(24 * 3600),
        StopRule::Duration(duration) => duration + config.timeout * 2,
    }
}

/// How many rounds (or lanes) this side and its peer pair up into; a mismatch is reported to the
/// peer, which reaches the same verdict from the same two lists.
pub(crate) fn agree_on_count(session: &mut Session, placements: &[Placement]) -> Result<usize> {
    placement::pair_count(&placement::labels(placements), &session.peer.placements).map_err(|message| {
        session.control.report_failure(&message.to_string());
        Error::Config(message)
    })
}

/// Sets up this side's resources of round `round` and connects them to the peer's.
fn next_round<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    session: &mut Session,
    round: usize,
) -> Result<()> {
    let local = create_local(config, benchmark, placement::placement_for(placements, round))?;
    session.replace_resources(config, local, &greeting(benchmark, placements, 0))?;
    Ok(())
}

/// The server's loop: follow the client's steps until it says goodbye.
pub(crate) fn serve<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    mut session: Session,
) -> Result<RunOutcome> {
    let rounds = if concurrent(benchmark) { 1 } else { agree_on_count(&mut session, placements)? };
    let mut position = SweepPosition::new(config.sizes.len() * rounds);
    let mut round = 0;
    let result = (|| -> Result<()> {
        loop {
            session.control.set_timeout(config.timeout.max(Duration::from_secs(60)));
            let size = match session.control.receive("waiting for the client's next size")? {
                Message::StartSize { size } => size as usize,
                Message::NextPlacement { round: next }
                    if next as usize == round + 1 && (next as usize) < rounds =>
                {
                    round = next as usize;
                    next_round(config, benchmark, placements, &mut session, round)?;
                    continue;
                }
                Message::Goodbye => return Ok(()),
                other => return Err(unexpected(&session, "StartSize, NextPlacement or Goodbye", &other)),
            };
            if !config.sizes.contains(&size) {
                return Err(Error::Protocol(format!(
                    "client asked for size {size}, not in the agreed sweep"
                )));
            }
            position.start(size);
            benchmark.prepare(&mut session, size)?;
            session.control.send(&Message::Ready, "telling the client we are ready")?;
            let ours = benchmark.measure(&mut session, size)?;
            session.control.set_timeout(measurement_wait(config));
            match session.control.receive("waiting for the client to finish the size")? {
                Message::SizeDone { .. } => {}
                other => return Err(unexpected(&session, "SizeDone", &other)),
            }
            let validation_error = benchmark.check(&mut session, size)?;
            let report = ours
                .map(serde_json::to_value)
                .transpose()
                .map_err(|error| Error::Internal(format!("encoding this side's report: {error}")))?;
            session.control.send(
                &Message::SizeResult { size: size as u64, validation_error, report },
                "sending our result",
            )?;
            position.finish();
        }
    })();
    let interrupted = conclude(&mut session, result, &position, "server")?;
    Ok(RunOutcome { interrupted, ..RunOutcome::default() })
}

/// One size as the client leads it, and what came of it.
pub(crate) struct SizeStep<R> {
    pub row: Option<R>,
    /// Data-check failures of either side ("client: ...", "server: ...").
    pub failures: Vec<String>,
    /// A line for under the size when the NIC's error counters moved during it (on a software
    /// device only for RNR NAKs: [`SoftwareDeviceTally`]).
    pub nic_warning: Option<String>,
    /// The counters that moved during the size, for a software device's end-of-run line.
    pub nic_moved: BTreeMap<String, u64>,
}

/// Leads one size: the server prepares, the window's `before_measure` runs (lanes wait for
/// each other there), both measure, both check, and the two reports make the row.
pub(crate) fn lead_size<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    session: &mut Session,
    context: &RowContext,
    size: usize,
    window: &dyn SizeWindow,
) -> Result<SizeStep<B::Row>> {
    benchmark.prepare(session, size)?;
    let (device, port) = (session.local.device.name().to_string(), session.local.port.number);
    window.open(&device, port);
    session.control.set_timeout(config.timeout);
    session.control.send(&Message::StartSize { size: size as u64 }, "starting a size")?;
    session.control.expect("Ready", "waiting for the server to get ready", |message| match message {
        Message::Ready => Ok(()),
        other => Err(other),
    })?;
    window.before_measure();
    let ours = benchmark.measure(session, size)?;
    session
        .control
        .send(&Message::SizeDone { size: size as u64, report: None }, "reporting the size done")?;
    session.control.set_timeout(measurement_wait(config));
    let (peer_error, peer_report) =
        session.control.expect("SizeResult", "waiting for the server's result", |message| match message {
            Message::SizeResult { validation_error, report, .. } => Ok((validation_error, report)),
            other => Err(other),
        })?;
    let our_error = benchmark.check(session, size)?;
    let failures: Vec<String> =
        [our_error.map(|e| format!("client: {e}")), peer_error.map(|e| format!("server: {e}"))]
            .into_iter()
            .flatten()
            .collect();
    let validation = if !config.validate {
        "off"
    } else if failures.is_empty() {
        "pass"
    } else {
        "fail"
    };
    let peer = peer_report
        .map(serde_json::from_value::<B::Report>)
        .transpose()
        .map_err(|source| Error::PeerReport { size, source })?;
    // Both sides are done with the size: the counters cover its warm-up, measurement and check.
    let moved = window.close(&device, port);
    let context = RowContext { nic: NicColumns::from_deltas(&moved), ..context.clone() };
    let software = session.local.path.software_device.is_some();
    let nic_warning = match software && !rnr_moved(&moved) {
        true => None,
        false => NicColumns::warning(&moved, &format!("{device} port {port}")),
    };
    Ok(SizeStep {
        row: benchmark.row(&context, ours, peer, validation),
        failures,
        nic_warning,
        nic_moved: moved,
    })
}

/// The client's sweep: each round's sizes, both sides' results collected, rows written.
pub(crate) fn drive<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    mut session: Session,
    mut outputs: Outputs<B::Row>,
) -> Result<RunOutcome> {
    let rounds = agree_on_count(&mut session, placements)?;
    let progress = progress_bar(config.sizes.len() * rounds);
    let mut outcome = RunOutcome::default();
    let mut position = SweepPosition::new(config.sizes.len() * rounds);
    let window = OwnPort::default();
    let mut software_tally = SoftwareDeviceTally::default();
    let result = (|| -> Result<()> {
        'rounds: for round in 0..rounds {
            if round > 0 {
                if session.control.stop_requested().is_some() {
                    return Ok(());
                }
                session.control.send(
                    &Message::NextPlacement { round: round as u32 },
                    "starting the next memory placement",
                )?;
                next_round(config, benchmark, placements, &mut session, round)?;
            }
            let context = row_context::<B>(config, &session);
            let metadata = metadata(config, benchmark, &session, placements, rounds);
            progress.suspend(|| {
                if round == 0 {
                    outputs.start(&metadata)
                } else {
                    outputs.section(&metadata)
                }
            })?;
            let thresholds = config
                .acceptance
                .resolve(session.local.port.rate.as_deref(), sums_both_directions(benchmark))?;
            for &size in &config.sizes {
                if session.control.stop_requested().is_some() {
                    return Ok(());
                }
                position.start(size);
                progress.set_message(format!("{size} bytes"));
                let step = lead_size(config, benchmark, &mut session, &context, size, &window)?;
                if let Some(row) = step.row {
                    write_and_judge(&mut outputs, &progress, &thresholds, config.unit, &row, &mut outcome)?;
                }
                if let Some(warning) = &step.nic_warning {
                    progress.suspend(|| eprintln!("{warning}"));
                }
                software_tally.add(&step.nic_moved);
                progress.inc(1);
                position.finish();
                if !step.failures.is_empty() {
                    outcome.validation_failures.push(format!("{size} bytes: {}", step.failures.join("; ")));
                    break 'rounds;
                }
            }
        }
        session.control.send(&Message::Goodbye, "saying goodbye")?;
        Ok(())
    })();
    progress.finish_and_clear();
    if let Some(driver) = &session.local.path.software_device {
        let (device, port) = (session.local.device.name(), session.local.port.number);
        if let Some(line) = software_tally.line(device, u32::from(port), driver) {
            eprintln!("{line}");
        }
    }
    let concluded = conclude(&mut session, result, &position, "client");
    finish_outputs(&mut outputs, outcome, concluded)
}

/// Holds one row against the thresholds, then writes it: each miss is a FAIL line on stderr and
/// in `outcome` (the sequential sweep and the lanes of a concurrent run alike), followed by the
/// row's causes as `gdrperf accept` lists them, which the row's `ceiling_causes` then carries.
pub(crate) fn write_and_judge<R: Row + 'static>(
    outputs: &mut Outputs<R>,
    progress: &ProgressBar,
    thresholds: &gdrperf_threshold::Thresholds,
    unit: BandwidthUnit,
    row: &R,
    outcome: &mut RunOutcome,
) -> Result<()> {
    let table_unit = match unit {
        BandwidthUnit::MebibytesPerSecond => gdrperf_threshold::BandwidthUnit::MebibytesPerSecond,
        BandwidthUnit::GigabitsPerSecond => gdrperf_threshold::BandwidthUnit::GigabitsPerSecond,
    };
    let failures = check_thresholds(thresholds, table_unit, row)?;
    if failures.is_empty() {
        return progress.suspend(|| outputs.write_row(row));
    }
    let mut missed = row.clone();
    let causes = missed.threshold_missed();
    progress.suspend(|| outputs.write_row(&missed))?;
    for failure in failures {
        progress.suspend(|| {
            eprintln!("FAIL: {failure}");
            causes.iter().for_each(|cause| eprintln!("    cause: {cause}"));
        });
        outcome.threshold_failures.push(failure);
    }
    Ok(())
}

/// The FAIL lines of one row against the acceptance thresholds (empty when none are set).
/// The FAIL lines of `row`, bandwidths also in the console table's unit.
fn check_thresholds<R: Row>(
    thresholds: &gdrperf_threshold::Thresholds,
    table_unit: gdrperf_threshold::BandwidthUnit,
    row: &R,
) -> Result<Vec<String>> {
    let failures =
        thresholds.evaluate(row).map_err(|source| Error::Threshold { flag: source.flag(), source })?;
    Ok(failures.iter().map(|failure| failure.in_table_unit(table_unit)).collect())
}

fn unexpected(session: &Session, expected: &'static str, got: &Message) -> Error {
    Error::Exchange(crate::exchange::ExchangeError::Unexpected {
        peer: session.control.peer().to_string(),
        expected,
        got: format!("{got:?}").chars().take(60).collect(),
    })
}

pub(crate) fn progress_bar(sizes: usize) -> ProgressBar {
    // indicatif draws nothing when stderr is not a terminal, so logs and CI stay clean.
    let bar = ProgressBar::new(sizes as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} sizes, now {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    if sizes < 2 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

pub(crate) fn row_context<B: Benchmark>(config: &BenchConfig, session: &Session) -> RowContext {
    RowContext {
        test: B::BENCH.name.to_string(),
        host: hostname(),
        peer_host: session.peer.host.clone(),
        device: session.local.device.name().to_string(),
        peer_device: session.peer.side.device.clone(),
        mtu: session.mtu.bytes(),
        qps: config.qps,
        mem_local: session.memory(),
        mem_remote: session.peer_memory(),
        gpu_local: session
            .local
            .buffers
            .first()
            .and_then(|buffer| buffer.gpu_index())
            .map(|index| index.to_string())
            .unwrap_or_default(),
        gpu_remote: session.peer.side.gpu.clone().unwrap_or_default(),
        lane: String::new(),
        cpu: session.local.cpu.cpu_column(),
        numa_node: session.local.cpu.numa_node,
        gpu_local_bus_id: super::pcie::gpu_bus_id(&session.local.buffers).unwrap_or_default(),
        nic: Default::default(),
        path: Some(RowPath::new(
            session.side.is_client(),
            session.local.path.clone(),
            session.peer.side.path.clone(),
        )),
    }
}

/// The run header (console) and metadata (files): what ran, where, when, with what.
pub(crate) fn metadata<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    session: &Session,
    placements: &[Placement],
    rounds: usize,
) -> RunStart {
    let labels = placement::labels(placements);
    let local = &session.local;
    // The clock this run times with: the latency engines' (calibrated once per process, the same
    // one they use), or the monotonic clock of the bandwidth engines (`RunClock`, never pinned).
    let (clock, clock_line) = match config.latency_span {
        Some(_) => {
            let facts = gdrperf_stats::SampleClock::new().facts();
            let line = facts.describe();
            (facts, line)
        }
        None => {
            let facts = gdrperf_stats::SampleClock::monotonic().facts();
            let kernel = facts.kernel_clocksource.clone().unwrap_or_else(|| "unknown".into());
            (
                facts,
                format!("monotonic clock (bandwidth timing, thread not pinned; kernel clocksource {kernel})"),
            )
        }
    };
    let qp_connection = crate::verbs::connection_manager::describe(local.rdma_cm.as_ref());
    let mut header: Vec<HeaderLine> = vec![
        HeaderLine::per_placement(
            "Device",
            format!(
                "{} (firmware {})",
                local.device.name(),
                if local.device.firmware().is_empty() { "n/a" } else { local.device.firmware() }
            ),
        ),
        HeaderLine::new(
            "Port",
            format!(
                "{} ({}, {})",
                local.port.number,
                local.port.link_layer,
                local.port.rate.clone().unwrap_or_else(|| "rate unknown".into())
            ),
        ),
        HeaderLine::new(
            "MTU",
            format!(
                "{} (active {}, peer {})",
                session.mtu, local.port.active_mtu, session.peer.side.active_mtu
            ),
        ),
        HeaderLine::new(
            "GID",
            local.gid.map(|gid| gid.to_string()).unwrap_or_else(|| format!("none (LID {})", local.port.lid)),
        ),
        HeaderLine::new(
            "Peer",
            format!("{} ({} port {})", session.peer.host, session.peer.side.device, session.peer.side.port),
        ),
        HeaderLine::per_placement(
            "Memory",
            format!("local {}, remote {}", session.memory(), session.peer_memory()),
        ),
        HeaderLine::per_placement(
            "GPU",
            format!(
                "local {}, remote {}",
                local
                    .buffers
                    .first()
                    .and_then(|buffer| buffer.gpu_description())
                    .unwrap_or_else(|| "none".into()),
                session.peer.side.gpu.clone().unwrap_or_else(|| "none".into())
            ),
        ),
        HeaderLine::new("CPU", local.cpu.describe()),
        HeaderLine::new("QPs", config.qps.to_string()),
        HeaderLine::new("QP connection", qp_connection.clone()),
        HeaderLine::new("TX depth", config.tx_depth.to_string()),
        HeaderLine::new(
            "Stop",
            match config.stop {
                StopRule::Iterations(n) => format!("{n} iterations per QP (+{} warm-up)", config.warmup),
                StopRule::Duration(d) if config.latency_span.is_some() => {
                    format!("{:.1} s per size (+{} warm-up iterations)", d.as_secs_f64(), config.warmup)
                }
                StopRule::Duration(d) => format!(
                    "{:.1} s per size, measured between margins of {} s (-f) (+{} warm-up iterations)",
                    d.as_secs_f64(),
                    config.margin_seconds,
                    config.warmup
                ),
            },
        ),
        HeaderLine::new("Data check", if config.validate { "on".into() } else { "off".into() }),
        HeaderLine::new("Clock", clock_line),
        // What made this output, so a saved console log is a complete result by itself.
        HeaderLine::new("Command", gdrperf_stats::provenance::command_line(&config.argv)),
        HeaderLine::new("Git commit", gdrperf_stats::provenance::GIT_COMMIT.into()),
    ];
    if let Some(span) = config.latency_span {
        header.push(HeaderLine::new("Latency sample", span.description().into()));
    }
    if rounds > 1 {
        header.push(HeaderLine::new(
            "Placements",
            format!(
                "{rounds} in turn: local [{}], remote [{}]",
                labels.join(", "),
                session.peer.placements.join(", ")
            ),
        ));
    }
    let pcie = super::pcie::run_pcie_facts(&local.device, &local.buffers);
    let gpu_order = gdrperf_cuda::GpuOrder::from_env();
    if local.buffers.first().and_then(|buffer| buffer.gpu_index()).is_some() {
        header.push(HeaderLine::new("GPU numbering", gpu_order.describe()));
    }
    header.extend(pcie.header_lines().into_iter().map(|(name, value)| HeaderLine::new(&name, value)));
    let ceiling = ceiling_columns::header(&local.path, session.peer.side.path.as_ref());
    header.push(HeaderLine::per_placement("Ceiling", ceiling));
    let setup = benchmark.setup();
    header.extend(setup.header.into_iter().map(|(name, value)| HeaderLine::new(&name, value)));
    if let Some(request) = setup.inline {
        use crate::harness::perftest_defaults::{describe_inline, inline_size};
        let (size, reason) = inline_size(request, session.perftest_knows_inline(), session.cpu_visible());
        header.push(HeaderLine::per_placement("Inline", describe_inline(size, reason)));
    }
    let metadata = serde_json::json!({
        "test": B::BENCH.name,
        "gdrperf_version": env!("CARGO_PKG_VERSION"),
        "git_commit": gdrperf_stats::provenance::GIT_COMMIT,
        "argv": config.argv,
        "date": gdrperf_stats::utc_timestamp(),
        "host": hostname(),
        "peer_host": session.peer.host,
        "role": if session.side.is_client() { "client" } else { "server" },
        "device": local.device.name(),
        "firmware": local.device.firmware(),
        "port": local.port.number,
        "link_layer": local.port.link_layer.to_string(),
        "rate": local.port.rate,
        "mtu": session.mtu.bytes(),
        "gid": local.gid.map(|gid| gid.to_string()),
        "memory": session.memory(),
        "gpu": local.buffers.first().and_then(|buffer| buffer.gpu_description()),
        "nvidia_driver": std::fs::read_to_string("/sys/module/nvidia/version").ok().map(|text| text.trim().to_string()),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|text| text.trim().to_string()),
        "peer": session.peer.side,
        "cpu": local.cpu,
        "pcie": pcie,
        "path_facts": local.path,
        "gpu_order": gpu_order.describe(),
        "placements": labels,
        "peer_placements": session.peer.placements,
        "parameters": session.peer.parameters,
        "clock": clock,
        "latency_span": config.latency_span,
        "qp_connection": qp_connection,
    });
    RunStart { header, metadata }
}

impl Side {
    pub fn is_client(self) -> bool {
        self == Side::Client
    }
}
