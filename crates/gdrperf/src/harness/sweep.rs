//! The driver every bench binary hands control to: roles, set-up, the size sweep, peer
//! synchronisation, validation and output. A benchmark only supplies the callbacks of
//! [`Benchmark`]: what to prepare, what to measure, what to check, how to make a row.
//!
//! Per size, the client leads and the server follows over the control channel:
//! client `StartSize` -> server prepares, `Ready` -> both measure -> client `SizeDone` ->
//! server checks its memory, `SizeResult` (with its own measurement) -> client writes the row.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::exchange::{Control, Message, TurnAway};
use crate::harness::config::{BenchConfig, Role, StopRule};
use crate::harness::interrupt::{conclude, install_signal_handlers, Interruption, StopFlag, SweepPosition};
use crate::harness::session::{hostname, LocalResources, Session, Side};
use crate::output::{utc_timestamp, Console, Outputs, Row, RowContext};
use crate::verbs::QueuePairSizes;

/// What a bench binary implements. All methods take `&self`: in `--loopback` both ends run the
/// same benchmark value on two threads.
pub trait Benchmark: Sync {
    /// Machine name, the `test` column: "write_bw".
    const NAME: &'static str;
    /// Console title: "RDMA_Write BW Test".
    const TITLE: &'static str;
    /// What one side measures for one size (sent to the peer as JSON).
    type Report: Serialize + DeserializeOwned + Send;
    /// The result row.
    type Row: Row + 'static;

    /// Queue sizes of each QP.
    fn queue_sizes(&self) -> QueuePairSizes;
    /// Test-specific settings that both sides must share (merged into the common ones).
    fn parameters(&self) -> serde_json::Value;
    /// Extra header lines ("CQ moderation", "100").
    fn header(&self) -> Vec<(String, String)>;
    /// Before a size starts: fill sources, clear destinations, post receives.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()>;
    /// Runs one size on this side; `None` for a passive side.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<Self::Report>>;
    /// After both sides finished: checks this side's received data, `Some(reason)` if wrong.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<String>>;
    /// Whether a row sums both directions (a bandwidth threshold in % of the port then means
    /// that share of both directions together).
    fn sums_both_directions(&self) -> bool {
        false
    }
    /// The row of one size from both sides' reports.
    fn row(&self, context: &RowContext, ours: Option<Self::Report>, peer: Option<Self::Report>, validation: &str) -> Option<Self::Row>;
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

/// Runs `benchmark` as `config` says. The only entry point a bench binary calls.
pub fn run<B: Benchmark>(config: &BenchConfig, benchmark: &B) -> Result<RunOutcome> {
    // Signals are taken over only once connected: until then Ctrl-C simply ends the process,
    // and there is nothing measured to save.
    let stop = StopFlag::default();
    match &config.role {
        Role::Server => {
            let local = LocalResources::create(config, benchmark.queue_sizes())?;
            let address = config.listen_address();
            let listener = Control::listen(address)?;
            eprintln!("gdr-{}: waiting for a client on {address} (device {})", B::NAME.replace('_', "-"), local.device.name());
            let mut session = Session::connect(config, local, Some(&listener), B::NAME, &benchmark.parameters())?;
            // One client per run: whoever knocks from now on is told the server is busy.
            let _turn_away = TurnAway::start(listener, session.control.peer());
            install_signal_handlers(&stop)?;
            session.control.set_stop_flag(stop);
            serve(config, benchmark, session)
        }
        Role::Client { .. } => {
            let outputs = create_outputs::<B>(config)?;
            let local = LocalResources::create(config, benchmark.queue_sizes())?;
            let mut session = Session::connect(config, local, None, B::NAME, &benchmark.parameters())?;
            install_signal_handlers(&stop)?;
            session.control.set_stop_flag(stop);
            drive(config, benchmark, session, outputs)
        }
        Role::Loopback => {
            install_signal_handlers(&stop)?;
            run_loopback(config, benchmark, &stop)
        }
    }
}

/// Both ends in one process: the server on a thread, on an ephemeral TCP port of 127.0.0.1.
/// Only the client watches `stop`; the server thread follows it as a remote server would.
fn run_loopback<B: Benchmark>(config: &BenchConfig, benchmark: &B, stop: &StopFlag) -> Result<RunOutcome> {
    let outputs = create_outputs::<B>(config)?;
    let listener = Control::listen(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let port = listener.local_addr().map_err(|error| Error::Config(format!("loopback listener: {error}")))?.port();
    let client_config = BenchConfig { tcp_port: port, ..config.clone() };
    let server_config = BenchConfig { role: Role::Server, ..config.clone() };
    std::thread::scope(|scope| {
        let server = scope.spawn(|| -> Result<RunOutcome> {
            let local = LocalResources::create(&server_config, benchmark.queue_sizes())?;
            let session = Session::connect(&server_config, local, Some(&listener), B::NAME, &benchmark.parameters())?;
            serve(&server_config, benchmark, session)
        });
        let client = match LocalResources::create(&client_config, benchmark.queue_sizes()) {
            Ok(local) => Session::connect(&client_config, local, None, B::NAME, &benchmark.parameters()).and_then(|mut session| {
                session.control.set_stop_flag(stop.clone());
                drive(&client_config, benchmark, session, outputs)
            }),
            Err(error) => {
                // The server thread waits in accept(): knock once, so that it sees the
                // connection close and ends instead of waiting forever.
                let _ = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)));
                Err(error)
            }
        };
        let server = server.join().unwrap_or_else(|_| Err(Error::Config("the loopback server thread panicked".into())));
        // The client's error is the more telling one when both failed (the server then only saw
        // the connection close); a stopped client leaves the server with a "stopped" error.
        match (client, server) {
            (Err(error), _) => Err(error),
            (Ok(outcome), _) if outcome.interrupted.is_some() => Ok(outcome),
            (Ok(_), Err(error)) => Err(error),
            (Ok(outcome), Ok(_)) => Ok(outcome),
        }
    })
}

fn create_outputs<B: Benchmark>(config: &BenchConfig) -> Result<Outputs<B::Row>> {
    Outputs::create(config.csv.as_deref(), config.json.as_deref(), Some(Console::new(B::TITLE, config.unit)))
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

/// The server's loop: follow the client's steps until it says goodbye.
fn serve<B: Benchmark>(config: &BenchConfig, benchmark: &B, mut session: Session) -> Result<RunOutcome> {
    let mut position = SweepPosition::new(config.sizes.len());
    let result = (|| -> Result<()> {
        loop {
            session.control.set_timeout(config.timeout.max(Duration::from_secs(60)));
            let size = match session.control.receive("waiting for the client's next size")? {
                Message::StartSize { size } => size as usize,
                Message::Goodbye => return Ok(()),
                other => return Err(unexpected(&session, "StartSize or Goodbye", &other)),
            };
            if !config.sizes.contains(&size) {
                return Err(Error::Config(format!("client asked for size {size}, not in the agreed sweep")));
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
            let report = ours.map(serde_json::to_value).transpose().map_err(|error| Error::Config(error.to_string()))?;
            session.control.send(&Message::SizeResult { size: size as u64, validation_error, report }, "sending our result")?;
            position.finish();
        }
    })();
    let interrupted = conclude(&mut session, result, &position, "server")?;
    Ok(RunOutcome { interrupted, ..RunOutcome::default() })
}

/// The client's sweep: lead each size, collect both sides' results, write rows.
fn drive<B: Benchmark>(config: &BenchConfig, benchmark: &B, mut session: Session, mut outputs: Outputs<B::Row>) -> Result<RunOutcome> {
    let context = row_context::<B>(config, &session);
    outputs.start(&metadata(config, benchmark, &session))?;
    let thresholds = config.acceptance.resolve(session.local.port.rate.as_deref(), benchmark.sums_both_directions())?;
    let progress = progress_bar(config.sizes.len());
    let mut outcome = RunOutcome::default();
    let mut position = SweepPosition::new(config.sizes.len());
    let result = (|| -> Result<()> {
        for &size in &config.sizes {
            if session.control.stop_requested().is_some() {
                return Ok(());
            }
            position.start(size);
            progress.set_message(format!("{size} bytes"));
            benchmark.prepare(&mut session, size)?;
            session.control.set_timeout(config.timeout);
            session.control.send(&Message::StartSize { size: size as u64 }, "starting a size")?;
            session.control.expect("Ready", "waiting for the server to get ready", |message| match message {
                Message::Ready => Ok(()),
                other => Err(other),
            })?;
            let ours = benchmark.measure(&mut session, size)?;
            session.control.send(&Message::SizeDone { size: size as u64, report: None }, "reporting the size done")?;
            session.control.set_timeout(measurement_wait(config));
            let (peer_error, peer_report) = session.control.expect("SizeResult", "waiting for the server's result", |message| match message {
                Message::SizeResult { validation_error, report, .. } => Ok((validation_error, report)),
                other => Err(other),
            })?;
            let our_error = benchmark.check(&mut session, size)?;
            let failures: Vec<String> = [our_error.map(|e| format!("client: {e}")), peer_error.map(|e| format!("server: {e}"))]
                .into_iter()
                .flatten()
                .collect();
            let validation = if !config.validate { "off" } else if failures.is_empty() { "pass" } else { "fail" };
            let peer = peer_report.map(serde_json::from_value::<B::Report>).transpose().map_err(|error| {
                Error::Config(format!("the server's report for {size} bytes is malformed: {error}"))
            })?;
            if let Some(row) = benchmark.row(&context, ours, peer, validation) {
                progress.suspend(|| outputs.write_row(&row))?;
                for failure in check_thresholds(&thresholds, &row)? {
                    progress.suspend(|| eprintln!("FAIL: {failure}"));
                    outcome.threshold_failures.push(failure);
                }
            }
            progress.inc(1);
            position.finish();
            if !failures.is_empty() {
                outcome.validation_failures.push(format!("{size} bytes: {}", failures.join("; ")));
                break;
            }
        }
        session.control.send(&Message::Goodbye, "saying goodbye")?;
        Ok(())
    })();
    progress.finish_and_clear();
    outcome.interrupted = conclude(&mut session, result, &position, "client")?;
    Ok(outcome)
}

/// The FAIL lines of one row against the acceptance thresholds (empty when none are set).
fn check_thresholds<R: Serialize>(thresholds: &gdrperf_report::Thresholds, row: &R) -> Result<Vec<String>> {
    if thresholds.is_empty() {
        return Ok(Vec::new());
    }
    let value = serde_json::to_value(row).map_err(|error| Error::Config(error.to_string()))?;
    let row = gdrperf_report::ResultRow::from_json("this run", value).map_err(Error::Config)?;
    let failures = thresholds.evaluate(&row).map_err(|error| Error::Config(error.to_string()))?;
    Ok(failures.iter().map(ToString::to_string).collect())
}

fn unexpected(session: &Session, expected: &'static str, got: &Message) -> Error {
    Error::Exchange(crate::exchange::ExchangeError::Unexpected {
        peer: session.control.peer().to_string(),
        expected,
        got: format!("{got:?}").chars().take(60).collect(),
    })
}

fn progress_bar(sizes: usize) -> ProgressBar {
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

fn row_context<B: Benchmark>(config: &BenchConfig, session: &Session) -> RowContext {
    RowContext {
        test: B::NAME.to_string(),
        host: hostname(),
        peer_host: session.peer.host.clone(),
        device: session.local.device.name().to_string(),
        peer_device: session.peer.side.device.clone(),
        mtu: session.mtu.bytes(),
        qps: config.qps,
        mem_local: session.local.buffers.first().map(|buffer| buffer.kind()).unwrap_or("host").to_string(),
        mem_remote: session.peer.side.memory.clone(),
        gpu_local: session.local.buffers.first().and_then(|buffer| buffer.gpu_index()).map(|index| index.to_string()).unwrap_or_default(),
        gpu_remote: session.peer.side.gpu.clone().unwrap_or_default(),
    }
}

/// The run header (console) and metadata (files): what ran, where, when, with what.
fn metadata<B: Benchmark>(config: &BenchConfig, benchmark: &B, session: &Session) -> serde_json::Value {
    let local = &session.local;
    let mut header: Vec<(String, String)> = vec![
        ("Device".into(), format!("{} (firmware {})", local.device.name(), if local.device.firmware().is_empty() { "n/a" } else { local.device.firmware() })),
        ("Port".into(), format!("{} ({}, {})", local.port.number, local.port.link_layer, local.port.rate.clone().unwrap_or_else(|| "rate unknown".into()))),
        ("MTU".into(), format!("{} (active {}, peer {})", session.mtu, local.port.active_mtu, session.peer.side.active_mtu)),
        ("GID".into(), local.gid.map(|gid| gid.to_string()).unwrap_or_else(|| format!("none (LID {})", local.port.lid))),
        ("Peer".into(), format!("{} ({} port {})", session.peer.host, session.peer.side.device, session.peer.side.port)),
        ("Memory".into(), format!("local {}, remote {}", local.buffers.first().map(|b| b.kind()).unwrap_or("host"), session.peer.side.memory)),
        ("GPU".into(), format!(
            "local {}, remote {}",
            local.buffers.first().and_then(|buffer| buffer.gpu_description()).unwrap_or_else(|| "none".into()),
            session.peer.side.gpu.clone().unwrap_or_else(|| "none".into())
        )),
        ("QPs".into(), config.qps.to_string()),
        ("TX depth".into(), config.tx_depth.to_string()),
        ("Stop".into(), match config.stop {
            StopRule::Iterations(n) => format!("{n} iterations per QP (+{} warm-up)", config.warmup),
            StopRule::Duration(d) => format!("{:.1} s per size (+{} warm-up iterations)", d.as_secs_f64(), config.warmup),
        }),
        ("Data check".into(), if config.validate { "on".into() } else { "off".into() }),
    ];
    header.extend(benchmark.header());
    serde_json::json!({
        "test": B::NAME,
        "gdrperf_version": env!("CARGO_PKG_VERSION"),
        "git_commit": env!("GDRPERF_GIT_COMMIT"),
        "argv": config.argv,
        "date": utc_timestamp(),
        "host": hostname(),
        "peer_host": session.peer.host,
        "device": local.device.name(),
        "firmware": local.device.firmware(),
        "port": local.port.number,
        "link_layer": local.port.link_layer.to_string(),
        "rate": local.port.rate,
        "mtu": session.mtu.bytes(),
        "gid": local.gid.map(|gid| gid.to_string()),
        "memory": local.buffers.first().map(|buffer| buffer.kind()).unwrap_or("host"),
        "gpu": local.buffers.first().and_then(|buffer| buffer.gpu_description()),
        "nvidia_driver": std::fs::read_to_string("/sys/module/nvidia/version").ok().map(|text| text.trim().to_string()),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|text| text.trim().to_string()),
        "peer": session.peer.side,
        "parameters": session.peer.parameters,
        "header": header,
    })
}

impl Side {
    pub fn is_client(self) -> bool {
        self == Side::Client
    }
}
