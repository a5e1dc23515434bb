//! The driver every bench binary hands control to: roles, set-up, the size sweep, peer
//! synchronisation, validation and output. A benchmark only supplies its
//! [`Engine`](crate::harness::Engine): what to prepare, what to measure, what to check, how to
//! make a row.
//!
//! Per size, the client leads and the server follows over the control channel:
//! client `StartSize` -> server prepares, `Ready` -> both measure -> client `SizeDone` ->
//! server checks its memory, `SizeResult` (with its own measurement) -> client writes the row.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::exchange::{ExchangeError, Message};
use crate::harness::benchmark::{concurrent, sums_both_directions, Benchmark, Engine, ReportOf, RowOf};
use crate::harness::connect::Greeting;
use crate::harness::interrupt::{conclude, stopped_as_asked, Interruption, SweepPosition};
use crate::harness::port_window::{OwnPort, SizeWindow};
use crate::harness::run_header::{metadata, row_context};
use crate::harness::session::{LocalResources, Session, Side};
use crate::node::nic_counters::{rnr_moved, NicColumns, SoftwareDeviceTally};
use crate::options::config::{BandwidthUnit, BenchConfig, StopRule};
use crate::options::placement::{self, Placement};
use crate::output::{Outputs, Row, RowContext, RunStart};
use indicatif::{ProgressBar, ProgressStyle};

/// How a run ended when no error stopped it.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// Sizes whose data check failed (the sweep stops at the first).
    pub validation_failures: Vec<String>,
    /// Set when SIGINT/SIGTERM stopped the sweep; the finished sizes are in the result files.
    pub interrupted: Option<Interruption>,
    /// Sizes that missed an acceptance threshold (--min-bw, --max-lat), as FAIL lines.
    pub threshold_failures: Vec<String>,
    /// `--run-infinitely` ended by Ctrl-C, its one way to end: not an interruption (exit 0, as
    /// perftest's "User stopped traffic"), but the files say what stopped it.
    pub stopped_as_asked: Option<Interruption>,
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
            "interrupted": self.interrupted.as_ref().or(self.stopped_as_asked.as_ref()).map(ToString::to_string),
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

/// The run header and metadata of `benchmark` on `session` (see `run_header::metadata`).
pub(crate) fn run_start<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    session: &Session,
    placements: &[Placement],
    rounds: usize,
) -> RunStart {
    let setup = benchmark.setup();
    let post_list = setup.bandwidth.map_or(1, |bandwidth| bandwidth.post_list);
    metadata(config, B::BENCH.name, (setup.header, setup.inline, post_list), session, placements, rounds)
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

/// The server's loop: follow the client's steps until it says goodbye. Like perftest's servers
/// it reports too: each size's row (made from both sides' reports, which the client sends with
/// its `SizeDone`) goes to `outputs`, its own console table and files.
pub(crate) fn serve<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    mut session: Session,
    mut outputs: Outputs<RowOf<B>>,
) -> Result<RunOutcome> {
    let rounds = if concurrent(benchmark) { 1 } else { agree_on_count(&mut session, placements)? };
    let mut position = SweepPosition::new(config.sizes.len() * rounds);
    let mut round = 0;
    outputs.start(&run_start(config, benchmark, &session, placements, rounds))?;
    let mut context = row_context(B::BENCH.name, config, &session);
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
                    outputs.section(&run_start(config, benchmark, &session, placements, rounds))?;
                    context = row_context(B::BENCH.name, config, &session);
                    continue;
                }
                Message::Goodbye => return Ok(()),
                other => return Err(unexpected(&session, "StartSize, NextPlacement or Goodbye", &other)),
            };
            if !config.sizes.contains(&size) {
                return Err(Error::Protocol(crate::error::ProtocolError::SizeOutsideSweep { size }));
            }
            position.start(size);
            benchmark.engine().prepare(&mut session, size)?;
            session.control.send(&Message::Ready, "telling the client we are ready")?;
            let ours = match benchmark.engine().measure(&mut session, size) {
                Ok(ours) => ours,
                // A `--run-infinitely` client stopped by Ctrl-C while this side measured: the
                // window is dropped and the run ends cleanly, as perftest's. Its goodbye may also
                // come with an error here (a credit sent to QPs it has already destroyed): the
                // goodbye is then the story.
                Err(error) => match error {
                    Error::Exchange(ExchangeError::PeerEnded { .. }) => return Ok(()),
                    error => match session.control.peer_gone(Duration::from_millis(500)) {
                        Some(ExchangeError::PeerEnded { .. }) => return Ok(()),
                        _ => return Err(error),
                    },
                },
            };
            session.control.set_timeout(measurement_wait(config));
            let peer_report = match session.control.receive("waiting for the client to finish the size")? {
                Message::SizeDone { report, .. } => report,
                // A `--run-infinitely` client stopped by Ctrl-C drops its window and says goodbye.
                Message::Goodbye => return Ok(()),
                other => return Err(unexpected(&session, "SizeDone", &other)),
            };
            // The wire carries the failure's text: the client reports it as the server's.
            let validation_error =
                benchmark.engine().check(&mut session, size)?.map(|failure| failure.to_string());
            let report = ours.map(serde_json::to_value).transpose().map_err(|error| {
                Error::Internal(crate::error::InternalError::EncodeReport { source: error })
            })?;
            let validation = match (config.validate, &validation_error) {
                (false, _) => "off",
                (true, None) => "pass",
                (true, Some(_)) => "fail",
            };
            // Our report back from its JSON (it has gone to the client), the client's as it came.
            let decode = |value: Option<&serde_json::Value>| {
                value.map(|value| serde_json::from_value::<ReportOf<B>>(value.clone())).transpose()
            };
            let row = match (decode(report.as_ref()), decode(peer_report.as_ref())) {
                (Ok(ours), Ok(peer)) => benchmark.engine().row(&context, ours, peer, validation),
                (_, Err(source)) | (Err(source), _) => return Err(Error::PeerReport { size, source }),
            };
            session.control.send(
                &Message::SizeResult { size: size as u64, validation_error, report },
                "sending our result",
            )?;
            if let Some(row) = row {
                outputs.write_row(&row)?;
            }
            position.finish();
        }
    })();
    let concluded = conclude(&mut session, result, &position, "server");
    finish_outputs(&mut outputs, RunOutcome::default(), concluded)
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
) -> Result<SizeStep<RowOf<B>>> {
    benchmark.engine().prepare(session, size)?;
    let (device, port) = (session.local.device.name().to_string(), session.local.port.number);
    window.open(&device, port);
    session.control.set_timeout(config.timeout);
    session.control.send(&Message::StartSize { size: size as u64 }, "starting a size")?;
    session.control.expect("Ready", "waiting for the server to get ready", |message| match message {
        Message::Ready => Ok(()),
        other => Err(other),
    })?;
    window.before_measure();
    let ours = benchmark.engine().measure(session, size)?;
    // Our figures go with it, so that the server can print the row as perftest's servers do.
    let report = ours
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|error| Error::Internal(crate::error::InternalError::EncodeReport { source: error }))?;
    session.control.send(&Message::SizeDone { size: size as u64, report }, "reporting the size done")?;
    session.control.set_timeout(measurement_wait(config));
    let (peer_error, peer_report) =
        session.control.expect("SizeResult", "waiting for the server's result", |message| match message {
            Message::SizeResult { validation_error, report, .. } => Ok((validation_error, report)),
            other => Err(other),
        })?;
    let our_error = benchmark.engine().check(session, size)?;
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
        .map(serde_json::from_value::<ReportOf<B>>)
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
        row: benchmark.engine().row(&context, ours, peer, validation),
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
    mut outputs: Outputs<RowOf<B>>,
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
            let context = row_context(B::BENCH.name, config, &session);
            let metadata = run_start(config, benchmark, &session, placements, rounds);
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
                // `--run-infinitely`: the size again, a row per -D window, until Ctrl-C.
                loop {
                    if session.control.stop_requested().is_some() {
                        return Ok(());
                    }
                    position.start(size);
                    progress.set_message(format!("{size} bytes"));
                    let step = lead_size(config, benchmark, &mut session, &context, size, &window)?;
                    if let Some(row) = step.row {
                        write_and_judge(
                            &mut outputs,
                            &progress,
                            &thresholds,
                            config.unit,
                            &row,
                            &mut outcome,
                        )?;
                    }
                    if let Some(warning) = &step.nic_warning {
                        progress.suspend(|| eprintln!("{warning}"));
                    }
                    software_tally.add(&step.nic_moved);
                    progress.inc(1);
                    position.finish();
                    if !step.failures.is_empty() {
                        outcome
                            .validation_failures
                            .push(format!("{size} bytes: {}", step.failures.join("; ")));
                        break 'rounds;
                    }
                    if !config.run_infinitely {
                        break;
                    }
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
    // `--run-infinitely` ends with Ctrl-C: as perftest's `run_iter_bw_infinitely` (whose SIGINT
    // handler it installs only for a unidirectional stream), "User stopped traffic", exit 0, every
    // window's row kept. Under -b perftest dies by the signal: the interruption (130) stands, as
    // does SIGTERM's (143).
    let endless = config.run_infinitely && !sums_both_directions(benchmark);
    let concluded = match endless.then(|| stopped_as_asked(&mut session, &position)).flatten() {
        Some(stop) => {
            if config.output.is_none() {
                println!("\n User stopped traffic");
            }
            outcome.stopped_as_asked = Some(stop);
            Ok(None)
        }
        None => conclude(&mut session, result, &position, "client"),
    };
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

impl Side {
    pub fn is_client(self) -> bool {
        self == Side::Client
    }
}
