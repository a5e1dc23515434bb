//! A server that a stranger cannot stop: the door of a waiting server.
//!
//! On a shared cluster anyone can reach the server's TCP port: a port scan, a colleague's client
//! with a mistyped token, a client started with other parameters. None of them may end a
//! server that waits for its real client (an acceptance run would be gone). So the server admits
//! one connection at a time: it runs the challenge and the hello swap, and a connection that
//! fails either (wrong or missing token, another protocol version, other run parameters, a peer
//! that hangs up or sends garbage) is told why, closed, reported with its address, and the
//! server waits for the next one. Only a failure of this side (Ctrl-C, no random source) ends
//! the wait, or the optional limit on it (`--accept-timeout`; like perftest, the default is to
//! wait for ever).
//!
//! Handshakes run at once, each on a thread of its own, up to [`HANDSHAKES_AT_ONCE`]: a silent
//! or slow stranger costs the real client nothing, and one that has not proven itself within
//! [`PROOF_PATIENCE`] (or `--timeout`, if shorter) is dropped. The vetting (challenge and terms)
//! gives nothing away; only then does the main thread swap hellos (the keys) with the first
//! vetted connection, one at a time.

use std::io;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::auth::Token;
use crate::control::{is_transient_accept_error, Control};
use crate::error::{ExchangeError, ExchangeResult};
use crate::message::Hello;

/// How long a connection may take to answer the challenge and send its terms. A real client
/// does both at once on connecting; this is independent of `--timeout`, so that a stranger
/// holding the socket open ties up a thread for seconds, not for the run's whole timeout.
pub const PROOF_PATIENCE: Duration = Duration::from_secs(5);

/// Handshakes in flight at most; further connections wait in the listen backlog.
pub const HANDSHAKES_AT_ONCE: usize = 64;

/// One connection the server turned away: who, and why.
#[derive(Debug)]
pub struct Refusal {
    /// The peer's address ("10.0.0.7:40112").
    pub peer: String,
    /// What its handshake failed on.
    pub reason: String,
    /// How many connections were turned away so far, this one included.
    pub count: usize,
}

/// How a server admits its client.
#[derive(Debug, Clone, Copy)]
pub struct Door<'a> {
    /// The shared secret the client must prove it knows (`None`: no token on either side).
    pub token: Option<&'a Token>,
    /// How long one connection's handshake may wait for the peer.
    pub timeout: Duration,
    /// The limit on the whole wait for an admitted client (`None`: for ever).
    pub wait_limit: Option<Duration>,
}

/// Whether a failed handshake is the connecting peer's doing (turn it away, keep waiting) rather
/// than this side's (end the run).
pub fn is_peer_fault(error: &ExchangeError) -> bool {
    !matches!(
        error,
        ExchangeError::Interrupted(_)
            | ExchangeError::Random(_)
            | ExchangeError::Bind { .. }
            | ExchangeError::Resolve { .. }
            | ExchangeError::Connect { .. }
            | ExchangeError::NoClient { .. }
    )
}

impl Control {
    /// Server side: waits on `listener` until a client passes the challenge and the parameter
    /// check, and returns its connection and hello. Every connection that fails is told why,
    /// closed and handed to `on_refusal`; the wait goes on.
    pub fn admit(
        listener: &TcpListener,
        ours: &Hello,
        door: Door<'_>,
        on_refusal: &mut dyn FnMut(&Refusal),
    ) -> ExchangeResult<(Control, Hello)> {
        let address = listener.local_addr().map(|address| address.to_string()).unwrap_or_default();
        let io_error =
            |source| ExchangeError::Io { peer: address.clone(), during: "accepting a client".into(), source };
        let deadline = door.wait_limit.map(|limit| Instant::now() + limit);
        let (sender, vetted) = mpsc::channel::<(Control, ExchangeResult<u32>)>();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let mut turned_away = 0;
        listener.set_nonblocking(true).map_err(io_error)?;
        let admitted = loop {
            while let Ok((mut control, outcome)) = vetted.try_recv() {
                control.set_timeout(door.timeout);
                match outcome.and_then(|_lane| control.trade_hellos(ours)) {
                    Ok(theirs) => return finish(listener, Ok((control, theirs)), &io_error),
                    Err(reason) if is_peer_fault(&reason) => {
                        control.report_failure(&reason.to_string());
                        turned_away += 1;
                        on_refusal(&Refusal {
                            peer: control.peer().to_string(),
                            reason: reason.to_string(),
                            count: turned_away,
                        });
                    }
                    Err(other) => return finish(listener, Err(other), &io_error),
                }
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break Err(ExchangeError::NoClient {
                    address: address.clone(),
                    seconds: door.wait_limit.unwrap_or_default().as_secs_f64(),
                    turned_away,
                });
            }
            if in_flight.load(Ordering::Acquire) >= HANDSHAKES_AT_ONCE {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    stream.set_nonblocking(false).map_err(io_error)?;
                    let patience = PROOF_PATIENCE.min(door.timeout);
                    let control = Control::from_accepted(stream, peer.to_string(), patience)?;
                    vet_on_a_thread(control, ours, door.token, &sender, &in_flight);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(error) if is_transient_accept_error(&error) => {}
                Err(error) => break Err(io_error(error)),
            }
        };
        finish(listener, admitted, &io_error)
    }
}

/// Puts the listener back as the rest of the run expects it (blocking).
fn finish<T>(
    listener: &TcpListener,
    result: ExchangeResult<T>,
    io_error: &dyn Fn(io::Error) -> ExchangeError,
) -> ExchangeResult<T> {
    listener.set_nonblocking(false).map_err(io_error)?;
    result
}

/// Runs the challenge and the terms of one connection on a thread, and hands it back vetted or
/// with why not. A thread still vetting when the server has its client ends on its own (within
/// [`PROOF_PATIENCE`]); its connection is then closed unanswered.
fn vet_on_a_thread(
    mut control: Control,
    ours: &Hello,
    token: Option<&Token>,
    sender: &mpsc::Sender<(Control, ExchangeResult<u32>)>,
    in_flight: &Arc<AtomicUsize>,
) {
    let (ours, token, sender, counter) =
        (ours.clone(), token.cloned(), sender.clone(), Arc::clone(in_flight));
    in_flight.fetch_add(1, Ordering::AcqRel);
    let spawned = std::thread::Builder::new().name("handshake".into()).spawn(move || {
        let outcome = control.vet(&ours, token.as_ref());
        counter.fetch_sub(1, Ordering::AcqRel);
        let _ = sender.send((control, outcome));
    });
    if spawned.is_err() {
        // No thread to be had: this connection is dropped (closed), the next one tried.
        in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::hello;
    use serde_json::json;

    fn door(token: Option<&Token>, wait_limit: Option<Duration>) -> Door<'_> {
        Door { token, timeout: Duration::from_secs(5), wait_limit }
    }

    /// A client with `token` and `parameters` against the server on `port`: its outcome as text.
    fn client(port: u16, token: Option<&str>, parameters: serde_json::Value) -> String {
        let mut control =
            Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
        let mut ours = hello();
        ours.parameters = parameters;
        let token = token.and_then(|text| Token::new(text).ok());
        match control.exchange_hello(&ours, token.as_ref()) {
            Ok(_) => "ok".into(),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn strangers_are_turned_away_and_the_right_client_is_served() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let secret = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
            let mut refusals = Vec::new();
            let admitted = Control::admit(&listener, &hello(), door(Some(&secret), None), &mut |refusal| {
                refusals.push(format!("{} {}: {}", refusal.count, refusal.peer, refusal.reason))
            });
            (admitted.map(|(control, theirs)| (control.peer().to_string(), theirs.host)), refusals)
        });
        let parameters = hello().parameters;
        // A port scan: connects and hangs up without a word.
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
        let wrong = client(port, Some("0123456789abcdef0123456789abcdef"), parameters.clone());
        assert!(wrong.contains("the server refused: wrong token"), "{wrong}");
        let missing = client(port, None, parameters.clone());
        assert!(missing.contains("the server requires a token"), "{missing}");
        let other = client(
            port,
            Some("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"),
            json!({"test": "write_bw", "tx_depth": 64}),
        );
        assert!(other.contains("it has -t 128, this side -t 64"), "{other}");
        assert_eq!(client(port, Some("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), parameters), "ok");
        let (admitted, refusals) = server.join().unwrap();
        let (peer, host) = admitted.expect("the right client is admitted");
        assert!(peer.starts_with("127.0.0.1:"), "{peer}");
        assert_eq!(host, "node1");
        assert_eq!(refusals.len(), 4, "{refusals:#?}");
        // Handshakes run at once, so the order of the reports is the order they ended in.
        let named = |text: &str| refusals.iter().filter(|refusal| refusal.contains(text)).count();
        assert!(refusals.iter().all(|refusal| refusal.contains(" 127.0.0.1:")), "{refusals:#?}");
        assert_eq!(named("closed"), 1, "{refusals:#?}");
        assert_eq!(named("wrong token"), 1, "{refusals:#?}");
        assert_eq!(named("the client refused"), 1, "{refusals:#?}");
        assert_eq!(named("it has -t 64, this side -t 128"), 1, "{refusals:#?}");
        assert!(refusals[3].starts_with("4 "), "{refusals:#?}");
    }

    #[test]
    fn silent_connections_cost_the_real_client_nothing() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let secret = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
            // A --timeout of 30 s: the silent ones would hold a one-at-a-time server that long.
            let door = Door { token: Some(&secret), timeout: Duration::from_secs(30), wait_limit: None };
            Control::admit(&listener, &hello(), door, &mut |_| {}).map(|(_, theirs)| theirs.host)
        });
        let silent: Vec<_> =
            (0..5).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        assert_eq!(client(port, Some("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), hello().parameters), "ok");
        assert!(started.elapsed() < Duration::from_secs(1), "served after {:?}", started.elapsed());
        assert_eq!(server.join().unwrap().unwrap(), "node1");
        drop(silent);
    }

    #[test]
    fn accept_errors_of_one_connection_are_retried_others_end_the_wait() {
        for code in [libc::ECONNABORTED, libc::EPROTO, libc::ENETUNREACH, libc::EHOSTUNREACH, libc::EINTR] {
            assert!(is_transient_accept_error(&io::Error::from_raw_os_error(code)), "{code}");
        }
        for code in [libc::EMFILE, libc::EBADF, libc::EINVAL] {
            assert!(!is_transient_accept_error(&io::Error::from_raw_os_error(code)), "{code}");
        }
    }

    #[test]
    fn the_wait_for_a_client_can_be_bounded() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let started = Instant::now();
            let secret = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
            let limit = Some(Duration::from_millis(1500));
            let result = Control::admit(&listener, &hello(), door(Some(&secret), limit), &mut |_| {});
            (result.err().map(|error| error.to_string()), started.elapsed())
        });
        let wrong = client(port, Some("0123456789abcdef0123456789abcdef"), hello().parameters);
        assert!(wrong.contains("wrong token"), "{wrong}");
        let (error, waited) = server.join().unwrap();
        let error = error.expect("nobody right came: the wait ends");
        assert!(error.contains("no client was admitted") && error.contains("1 connection"), "{error}");
        assert!(error.contains("--accept-timeout"), "{error}");
        assert!(waited >= Duration::from_millis(1500) && waited < Duration::from_secs(5), "{waited:?}");
    }

    #[test]
    fn only_this_sides_failures_end_the_wait() {
        assert!(is_peer_fault(&ExchangeError::Closed { peer: "x".into(), during: "y".into() }));
        assert!(is_peer_fault(&ExchangeError::Authentication { peer: "x".into(), detail: "y".into() }));
        assert!(is_peer_fault(&ExchangeError::Mismatch { peer: "x".into(), differences: "y".into() }));
        assert!(!is_peer_fault(&ExchangeError::Interrupted(gdrperf_process::StopSignal::Interrupt)));
        assert!(!is_peer_fault(&ExchangeError::NoClient {
            address: "x".into(),
            seconds: 1.0,
            turned_away: 0
        }));
    }
}
