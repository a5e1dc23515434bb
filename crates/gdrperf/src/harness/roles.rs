//! Who does what: a bench binary's run as server, client or both in one process (`--loopback`),
//! each either one placement after another ([`crate::harness::sweep`]) or all at once, one lane
//! each (`--concurrent`, the second half of this file). Both sit above the sweep; they share a
//! file because choosing the role is choosing between one lane and several.
//!
//! `--concurrent`: every placement of a run at the same time, one *lane* each.
//! A lane is a whole connection of its own: a thread, a control connection, a device context,
//! QPs and buffers (and, for GPU memory, its GPU's context), exactly what a run of one placement
//! has. Sharing nothing on the data path is the point: the aggregate then shows what the node
//! moves with all GPUs and NICs busy, and a lane that falls behind shows in its own row.
//!
//! The client connects the lanes one after another (lane 0's hello tells how many the server
//! runs), so the server pairs them by the order they arrive, and checks the lane number each
//! hello carries. Per size, every lane's server is made ready first; the client's lanes then
//! wait for each other ([`LaneBarrier`]) and start measuring together. Rows go to the main
//! thread, which writes them lane by lane, then the aggregate row, as soon as a size is complete.
//! A lane that stops (error, data-check failure, signal) opens the barrier for good, so no other
//! lane waits for it; the others finish the size they are in and stop.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;

use crate::error::{ConfigError, Error, Result};
use crate::exchange::{is_peer_fault, Control, Refusal, TurnAway, PROOF_PATIENCE};
use crate::harness::barrier::LaneBarrier;
use crate::harness::benchmark::{concurrent, sums_both_directions, Benchmark, RowOf};
use crate::harness::connect::report_refusal;
use crate::harness::interrupt::{conclude, install_signal_handlers, Interruption, StopFlag, SweepPosition};
use crate::harness::lanes_header::describe_lanes;
use crate::harness::port_window::{LanePort, SharedPorts};
use crate::harness::run_header::row_context;
use crate::harness::session::Session;
use crate::harness::sweep::{
    self, agree_on_count, create_local, finish_outputs, greeting, lead_size, progress_bar, run_start,
    write_and_judge, RunOutcome,
};
use crate::options::config::{BenchConfig, Role, StopRule};
use crate::options::placement::{self, placement_for, Placement};
use crate::options::values::OutputFigure;
use crate::output::{Console, ConsoleStyle, Outputs};

/// Runs `benchmark` as its configuration says. The only entry point a bench binary calls.
pub fn run<B: Benchmark>(benchmark: &B) -> Result<RunOutcome> {
    let config = benchmark.config();
    // Signals are taken over only once connected: until then Ctrl-C simply ends the process,
    // and there is nothing measured to save.
    let stop = StopFlag::default();
    let placements = placement::placements(config)?;
    match &config.role {
        Role::Server => {
            // The server reports as perftest's do: its table, --csv, --json, --out_json (and --prom).
            let outputs = create_outputs(config, benchmark)?;
            let local = create_local(config, benchmark, &placements[0])?;
            let address = config.listen_address();
            let listener = Control::listen(address)?;
            eprintln!(
                "{}: waiting for a client on {address} (device {})",
                B::BENCH.binary,
                local.device.name()
            );
            if config.bind.is_none_or(|address| address.is_unspecified()) && config.token.is_none() {
                eprintln!(
                    "{}: no token, and every address of this host listens: anyone who reaches port {} \
                     before your client gets this run's memory keys (set GDRPERF_TOKEN on both sides, \
                     or --bind one address; see docs/security.md)",
                    B::BENCH.binary,
                    address.port()
                );
            } else if config.routable_without_token() {
                eprintln!(
                    "{}: no token, and {address} is reachable from other hosts: anyone who reaches it \
                     before your client gets this run's memory keys (set GDRPERF_TOKEN or --token-file \
                     on both sides; see docs/security.md)",
                    B::BENCH.binary
                );
            }
            let session =
                Session::connect(config, local, Some(&listener), &greeting(benchmark, &placements, 0))?;
            install_signal_handlers(&stop)?;
            serve_connected(config, benchmark, &placements, listener, session, outputs, &stop)
        }
        Role::Client { .. } => {
            let outputs = create_outputs(config, benchmark)?;
            install_signal_handlers(&stop)?;
            lead(config, benchmark, &placements, outputs, &stop)
        }
        Role::Loopback => {
            install_signal_handlers(&stop)?;
            run_loopback(config, benchmark, &placements, &stop)
        }
    }
}

/// The server once its first client is connected: one round after another, or the lanes.
fn serve_connected<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    listener: TcpListener,
    mut session: Session,
    outputs: Outputs<RowOf<B>>,
    stop: &StopFlag,
) -> Result<RunOutcome> {
    if concurrent(benchmark) {
        return serve_lanes(config, benchmark, placements, listener, session, outputs, stop);
    }
    // One client per run: whoever knocks from now on is told the server is busy.
    let _turn_away = TurnAway::start(listener, session.control.peer());
    session.control.set_stop_flag(stop.clone());
    sweep::serve(config, benchmark, placements, session, outputs)
}

/// The client: connects for the first placement, then leads the rounds (or the lanes).
fn lead<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    outputs: Outputs<RowOf<B>>,
    stop: &StopFlag,
) -> Result<RunOutcome> {
    if concurrent(benchmark) {
        return drive_lanes(config, benchmark, placements, outputs, stop);
    }
    let local = create_local(config, benchmark, &placements[0])?;
    let mut session = Session::connect(config, local, None, &greeting(benchmark, placements, 0))?;
    session.control.set_stop_flag(stop.clone());
    sweep::drive(config, benchmark, placements, session, outputs)
}

/// Both ends in one process: the server on a thread, on an ephemeral TCP port of 127.0.0.1.
/// Only the client watches `stop`; the server thread follows it as a remote server would.
fn run_loopback<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    stop: &StopFlag,
) -> Result<RunOutcome> {
    let outputs = create_outputs(config, benchmark)?;
    let listener = Control::listen(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let port = listener.local_addr().map_err(|source| Error::Loopback { source })?.port();
    let client_config = BenchConfig { tcp_port: port, ..config.clone() };
    let server_config = BenchConfig { role: Role::Server, ..config.clone() };
    std::thread::scope(|scope| {
        let server = scope.spawn(|| -> Result<RunOutcome> {
            let local = create_local(&server_config, benchmark, &placements[0])?;
            let session = Session::connect(
                &server_config,
                local,
                Some(&listener),
                &greeting(benchmark, placements, 0),
            )?;
            let listener = listener.try_clone().map_err(|source| Error::Loopback { source })?;
            // The client's table and files are the run's: the loopback server writes none.
            let quiet = Outputs::create(None, None, None, None, None)?;
            serve_connected(
                &server_config,
                benchmark,
                placements,
                listener,
                session,
                quiet,
                &StopFlag::default(),
            )
        });
        let client = lead(&client_config, benchmark, placements, outputs, stop);
        if client.is_err() && !server.is_finished() {
            // The server thread may wait in accept(): knock once, so that it sees the
            // connection close and ends instead of waiting forever.
            let _ = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        let server = server
            .join()
            .unwrap_or_else(|_| Err(Error::Internal(crate::error::InternalError::LoopbackServerPanicked)));
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

fn create_outputs<B: Benchmark>(config: &BenchConfig, benchmark: &B) -> Result<Outputs<RowOf<B>>> {
    let latency = B::BENCH.measures == crate::options::bench::Measures::Latency;
    if let Some(figure) = config.output {
        if latency != (figure == OutputFigure::Latency) {
            let reason = if latency {
                "a latency test prints `latency` (as perftest's)"
            } else {
                "a bandwidth test prints `bandwidth` or `message_rate` (as perftest's)"
            };
            return Err(crate::error::ConfigError::conflict("--output", reason).into());
        }
    }
    let style = ConsoleStyle {
        unit: config.unit,
        timed: matches!(config.stop, StopRule::Duration(_)),
        figure: config.output,
    };
    let report_both =
        benchmark.setup().bandwidth.is_some_and(|bandwidth| bandwidth.bidirectional && bandwidth.report_both);
    Ok(Outputs::create(
        config.csv.as_deref(),
        config.json.as_deref(),
        config.perftest_json.as_deref().map(|path| (path, style)),
        config.prometheus.as_deref(),
        Some(Console::new(B::BENCH.title, style).reporting_both(report_both)),
    )?
    .reporting_both(report_both))
}

// --- `--concurrent`: the lanes ----------------------------------------------------------

/// The server's side of a concurrent run: accepts the remaining lanes (the first one is
/// `first`), says in its run header what the lanes are (as the client's does, shared GPUs
/// included), then serves each on its own thread. The rows are the client's: `outputs` gets the
/// header and how the run ended, no row.
fn serve_lanes<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    listener: TcpListener,
    mut first: Session,
    mut outputs: Outputs<RowOf<B>>,
    stop: &StopFlag,
) -> Result<RunOutcome> {
    let lanes = agree_on_count(&mut first, placements)?;
    let client_host = peer_host(first.control.peer()).to_string();
    let mut sessions = vec![first];
    for lane in 1..lanes {
        match accept_lane(config, benchmark, placements, &listener, lane, &client_host, &sessions[0]) {
            Ok(session) => sessions.push(session),
            Err(error) => return Err(tell_all(&mut sessions, error)),
        }
    }
    let _turn_away = TurnAway::start(listener, sessions[0].control.peer());
    let mut run = run_start(config, benchmark, &sessions[0], placements, 1);
    describe_lanes(&mut run, &sessions, placements);
    if let Err(error) = outputs.start(&run) {
        return Err(tell_all(&mut sessions, error));
    }
    for session in &mut sessions {
        session.control.set_stop_flag(stop.clone());
    }
    let outcomes: Vec<Result<RunOutcome>> = std::thread::scope(|scope| {
        let threads: Vec<_> = sessions
            .into_iter()
            // A concurrent run has one round: each lane keeps the placement it was accepted with.
            .map(|session| {
                scope.spawn(move || {
                    pin_lane(&session)?;
                    // The lanes' rows are the client's to join: a lane's server writes none.
                    let quiet = Outputs::create(None, None, None, None, None)?;
                    sweep::serve(config, benchmark, placements, session, quiet)
                })
            })
            .collect();
        threads.into_iter().map(|thread| thread.join().unwrap_or_else(|_| Err(panicked()))).collect()
    });
    let mut combined = RunOutcome::default();
    let concluded = outcomes.into_iter().enumerate().try_for_each(|(lane, outcome)| {
        let outcome = outcome.map_err(|error| Error::Lane { lane, source: Box::new(error) })?;
        combined.interrupted = combined.interrupted.take().or(outcome.interrupted);
        Ok(())
    });
    finish_outputs(&mut outputs, combined, concluded.map(|()| None))
}

/// Admits lane `lane` of the client `client_host`: a connection from another host, or one that
/// fails the challenge or the terms, or carries another lane number, is turned away before any
/// key is sent, and the wait goes on (within `--timeout` in all), as for the first lane.
fn accept_lane<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    listener: &TcpListener,
    lane: usize,
    client_host: &str,
    first: &Session,
) -> Result<Session> {
    let local = create_local(config, benchmark, placement_for(placements, lane))?;
    let lane_greeting = greeting(benchmark, placements, lane as u32);
    let ours = local.hello(config, &lane_greeting);
    // While waiting, lane 0's connection is watched: a client that failed to set up this lane
    // says so there (or hangs up), and the server ends with its reason at once.
    let client = format!("the client {}", first.control.peer());
    let mut give_up = || first.control.peer_gone(std::time::Duration::ZERO);
    let deadline = std::time::Instant::now() + config.timeout;
    let mut turned_away = 0;
    loop {
        let patience = deadline.saturating_duration_since(std::time::Instant::now());
        // The handshake of this connection (one deadline, see `Control::vet`) ends by the lane's
        // own deadline too: a peer trickling bytes cannot carry the wait past it.
        let mut control = Control::accept_within(
            listener,
            PROOF_PATIENCE.min(config.timeout).min(patience.max(std::time::Duration::from_millis(100))),
            patience,
            &client,
            &mut give_up,
        )?;
        let host = peer_host(control.peer()).to_string();
        let vetted = if host != client_host {
            Err(format!("busy: this server runs a --concurrent run for another client; start another server on a different -p/--port (lane {lane} expected from lane 0's host)"))
        } else {
            match control.vet(&ours, config.token.as_ref()) {
                Ok(number) if number as usize == lane => Ok(()),
                Ok(number) => {
                    Err(format!("the client's lane {number} arrived as lane {lane}: lanes connect in order"))
                }
                Err(reason) if is_peer_fault(&reason) => Err(reason.to_string()),
                Err(other) => return Err(other.into()),
            }
        };
        control.set_timeout(config.timeout);
        match vetted
            .map_err(|reason| Error::from(ConfigError::PeerRefused { reason }))
            .and_then(|()| control.trade_hellos(&ours).map_err(Error::from))
        {
            Ok(peer) => return Session::from_admitted(config, local, control, peer, &lane_greeting),
            Err(reason) => {
                control.report_failure(&reason.to_string());
                turned_away += 1;
                report_refusal(&Refusal {
                    peer: control.peer().to_string(),
                    reason: format!("lane {lane}: {reason}"),
                    count: turned_away,
                });
            }
        }
    }
}

/// The host part of "10.0.0.2:41234" or "[::1]:41234".
fn peer_host(address: &str) -> &str {
    address.rsplit_once(':').map(|(host, _)| host).unwrap_or(address)
}

/// Tells every connected lane's peer why the run ends, and passes the error on.
fn tell_all(sessions: &mut [Session], error: Error) -> Error {
    for session in sessions {
        session.control.report_failure(&error.to_string());
    }
    error
}

/// A lane thread runs where its NIC's placement says: the main thread was pinned to each lane's
/// placement in turn while it allocated that lane's buffers, and a new thread inherits the last.
fn pin_lane(session: &Session) -> Result<()> {
    crate::node::cpu_placement::pin_current_thread(&session.local.cpu).map_err(|source| {
        Error::CpuPlacement(crate::node::cpu_placement::CpuPlacementError::LaneThread { source })
    })
}

fn panicked() -> Error {
    Error::Internal(crate::error::InternalError::LanePanicked)
}

/// What a client lane hands the main thread for one size.
struct LaneReport<R> {
    lane: usize,
    size_index: usize,
    row: Option<R>,
    failures: Vec<String>,
}

/// The client's side: connects every lane, runs them on threads, writes their rows and the
/// aggregate row of each size as it completes.
fn drive_lanes<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    mut outputs: Outputs<RowOf<B>>,
    stop: &StopFlag,
) -> Result<RunOutcome> {
    let mut sessions = vec![connect_lane(config, benchmark, placements, 0)?];
    let lanes = agree_on_count(&mut sessions[0], placements)?;
    for lane in 1..lanes {
        match connect_lane(config, benchmark, placements, lane) {
            Ok(session) => sessions.push(session),
            Err(error) => return Err(tell_all(&mut sessions, error)),
        }
    }
    let mut run = run_start(config, benchmark, &sessions[0], placements, 1);
    describe_lanes(&mut run, &sessions, placements);
    outputs.start(&run)?;
    let thresholds =
        config.acceptance.resolve(sessions[0].local.port.rate.as_deref(), sums_both_directions(benchmark))?;
    for session in &mut sessions {
        session.control.set_stop_flag(stop.clone());
    }

    let barrier = LaneBarrier::new(sessions.len());
    let lane_ports: Vec<(String, u8)> = sessions
        .iter()
        .map(|session| (session.local.device.name().to_string(), session.local.port.number))
        .collect();
    let ports = SharedPorts::new(&lane_ports);
    let progress = progress_bar(config.sizes.len());
    let mut outcome = RunOutcome::default();
    let (sender, receiver) = mpsc::channel::<LaneReport<RowOf<B>>>();
    let lane_results: Vec<Result<Option<Interruption>>> = std::thread::scope(|scope| -> Result<Vec<_>> {
        let threads: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(lane, session)| {
                let (sender, barrier, ports) = (sender.clone(), &barrier, &ports);
                scope.spawn(move || {
                    pin_lane(&session)?;
                    run_lane(config, benchmark, session, lane, barrier, &ports.lane(lane, barrier), &sender)
                })
            })
            .collect();
        drop(sender);
        // Rows of each size, lane by lane; written as soon as every lane has sent its own.
        let mut pending: BTreeMap<usize, Vec<Option<RowOf<B>>>> = BTreeMap::new();
        let mut write =
            |rows: Vec<Option<RowOf<B>>>, complete: bool, outcome: &mut RunOutcome| -> Result<()> {
                let rows: Vec<RowOf<B>> = rows.into_iter().flatten().collect();
                for row in &rows {
                    write_and_judge(&mut outputs, &progress, &thresholds, config.unit, row, outcome)?;
                }
                if let Some(all) =
                    complete.then(|| <RowOf<B> as crate::output::Row>::aggregate(&rows)).flatten()
                {
                    progress.suspend(|| outputs.write_row(&all))?;
                }
                Ok(())
            };
        for report in receiver {
            if !report.failures.is_empty() {
                let size = config.sizes[report.size_index];
                outcome.validation_failures.push(format!(
                    "{size} bytes, lane {}: {}",
                    report.lane,
                    report.failures.join("; ")
                ));
            }
            let rows = pending.entry(report.size_index).or_insert_with(|| (0..lanes).map(|_| None).collect());
            rows[report.lane] = report.row;
            if rows.iter().all(Option::is_some) {
                let rows = pending.remove(&report.size_index).unwrap_or_default();
                write(rows, true, &mut outcome)?;
                progress.inc(1);
            }
        }
        // Sizes that not every lane finished (one stopped): what was measured is kept.
        for (_, rows) in std::mem::take(&mut pending) {
            write(rows, false, &mut outcome)?;
        }
        Ok(threads.into_iter().map(|thread| thread.join().unwrap_or_else(|_| Err(panicked()))).collect())
    })?;
    progress.finish_and_clear();
    // The first lane's error, else the first lane's interruption.
    let mut concluded: Result<Option<Interruption>> = Ok(None);
    for (lane, result) in lane_results.into_iter().enumerate() {
        match (result, &concluded) {
            (Err(error), Ok(_)) => concluded = Err(Error::Lane { lane, source: Box::new(error) }),
            (Ok(Some(stop)), Ok(None)) => concluded = Ok(Some(stop)),
            _ => {}
        }
    }
    finish_outputs(&mut outputs, outcome, concluded)
}

fn connect_lane<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    placements: &[Placement],
    lane: usize,
) -> Result<Session> {
    let local = create_local(config, benchmark, placement_for(placements, lane))?;
    Session::connect(config, local, None, &greeting(benchmark, placements, lane as u32))
}

/// One client lane's sweep; its rows go to the main thread through `reports`.
fn run_lane<B: Benchmark>(
    config: &BenchConfig,
    benchmark: &B,
    mut session: Session,
    lane: usize,
    barrier: &LaneBarrier,
    window: &LanePort,
    reports: &mpsc::Sender<LaneReport<RowOf<B>>>,
) -> Result<Option<Interruption>> {
    let mut context = row_context(B::BENCH.name, config, &session);
    context.lane = lane.to_string();
    let mut position = SweepPosition::new(config.sizes.len());
    let result = (|| -> Result<()> {
        for (size_index, &size) in config.sizes.iter().enumerate() {
            if session.control.stop_requested().is_some() || barrier.is_open_for_good() {
                break;
            }
            position.start(size);
            let step = lead_size(config, benchmark, &mut session, &context, size, window)?;
            let stop_here = !step.failures.is_empty();
            let report = LaneReport { lane, size_index, row: step.row, failures: step.failures };
            reports.send(report).map_err(|_| Error::Internal(crate::error::InternalError::WriterStopped))?;
            position.finish();
            if stop_here {
                break;
            }
        }
        session.control.send(&crate::exchange::Message::Goodbye, "saying goodbye")?;
        Ok(())
    })();
    // Whatever ended this lane, no other lane may wait for it from now on.
    barrier.open_for_good();
    conclude(&mut session, result, &position, "client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_host_drops_the_port() {
        assert_eq!(peer_host("10.0.0.2:41234"), "10.0.0.2");
        assert_eq!(peer_host("[::1]:5000"), "[::1]");
    }
}
