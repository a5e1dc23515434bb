//! Who does what: a bench binary's run as server, client or both in one process (`--loopback`),
//! each either one placement after another ([`crate::harness::sweep`]) or all at once, one lane
//! each (`--concurrent`, [`crate::harness::lanes`]). It sits above both, so that neither of
//! them needs the other's entry points.

use std::net::{SocketAddr, TcpListener, TcpStream};

use crate::error::{Error, Result};
use crate::exchange::{Control, TurnAway};
use crate::harness::benchmark::{concurrent, Benchmark, RowOf};
use crate::harness::interrupt::{install_signal_handlers, StopFlag};
use crate::harness::lanes;
use crate::harness::session::Session;
use crate::harness::sweep::{self, create_local, greeting, RunOutcome};
use crate::options::config::{BenchConfig, Role};
use crate::options::placement::{self, Placement};
use crate::output::{Console, Outputs};

/// Runs `benchmark` as its configuration says. The only entry point a bench binary calls.
pub fn run<B: Benchmark>(benchmark: &B) -> Result<RunOutcome> {
    let config = benchmark.config();
    // Signals are taken over only once connected: until then Ctrl-C simply ends the process,
    // and there is nothing measured to save.
    let stop = StopFlag::default();
    let placements = placement::plan(config)?;
    match &config.role {
        Role::Server => {
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
            serve_connected(config, benchmark, &placements, listener, session, &stop)
        }
        Role::Client { .. } => {
            let outputs = create_outputs::<B>(config)?;
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
    stop: &StopFlag,
) -> Result<RunOutcome> {
    if concurrent(benchmark) {
        return lanes::serve(config, benchmark, placements, listener, session, stop);
    }
    // One client per run: whoever knocks from now on is told the server is busy.
    let _turn_away = TurnAway::start(listener, session.control.peer());
    session.control.set_stop_flag(stop.clone());
    sweep::serve(config, benchmark, placements, session)
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
        return lanes::drive(config, benchmark, placements, outputs, stop);
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
    let outputs = create_outputs::<B>(config)?;
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
            serve_connected(&server_config, benchmark, placements, listener, session, &StopFlag::default())
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

fn create_outputs<B: Benchmark>(config: &BenchConfig) -> Result<Outputs<RowOf<B>>> {
    Outputs::create(
        config.csv.as_deref(),
        config.json.as_deref(),
        Some(Console::new(B::BENCH.title, config.unit)),
    )
}
