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
//! A silent connection holds the door for `--timeout` seconds (the wait for its proof), as the
//! server serves one handshake at a time; the real client's connection waits in the listen
//! backlog meanwhile.

use std::io;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::{Control, ExchangeError, ExchangeResult, Hello, Token};

/// One connection the server turned away: who, and why.
#[derive(Debug)]
pub struct Refusal {
    /// The peer's address ("10.0.0.7:40112").
    pub peer: String,
    /// What its handshake failed on.
    pub reason: ExchangeError,
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
        let deadline = door.wait_limit.map(|limit| (Instant::now() + limit, limit));
        let mut turned_away = 0;
        loop {
            let mut control = accept_until(listener, door.timeout, deadline, turned_away)?;
            match control.exchange_hello(ours, door.token) {
                Ok(theirs) => return Ok((control, theirs)),
                Err(reason) if is_peer_fault(&reason) => {
                    control.report_failure(&reason.to_string());
                    turned_away += 1;
                    on_refusal(&Refusal { peer: control.peer().to_string(), reason, count: turned_away });
                }
                Err(other) => return Err(other),
            }
        }
    }
}

/// Accepts one connection, giving up at `deadline` if there is one.
fn accept_until(
    listener: &TcpListener,
    timeout: Duration,
    deadline: Option<(Instant, Duration)>,
    turned_away: usize,
) -> ExchangeResult<Control> {
    let address = listener.local_addr().map(|address| address.to_string()).unwrap_or_default();
    let io_error =
        |source| ExchangeError::Io { peer: address.clone(), during: "accepting a client".into(), source };
    let Some((deadline, limit)) = deadline else {
        let (stream, peer) = listener.accept().map_err(io_error)?;
        return Control::from_accepted(stream, peer.to_string(), timeout);
    };
    listener.set_nonblocking(true).map_err(io_error)?;
    let accepted = loop {
        match listener.accept() {
            Ok(accepted) => break Ok(accepted),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    break Err(ExchangeError::NoClient {
                        address: address.clone(),
                        seconds: limit.as_secs_f64(),
                        turned_away,
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => break Err(io_error(error)),
        }
    };
    listener.set_nonblocking(false).map_err(io_error)?;
    let (stream, peer) = accepted?;
    stream.set_nonblocking(false).map_err(io_error)?;
    Control::from_accepted(stream, peer.to_string(), timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests::hello;
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
        let token = token.and_then(Token::new);
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
            let secret = Token::new("s3cret").unwrap();
            let mut refusals = Vec::new();
            let admitted = Control::admit(&listener, &hello(), door(Some(&secret), None), &mut |refusal| {
                refusals.push(format!("{} {}: {}", refusal.count, refusal.peer, refusal.reason))
            });
            (admitted.map(|(control, theirs)| (control.peer().to_string(), theirs.host)), refusals)
        });
        let parameters = hello().parameters;
        // A port scan: connects and hangs up without a word.
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
        let wrong = client(port, Some("guess"), parameters.clone());
        assert!(wrong.contains("the server refused: wrong token"), "{wrong}");
        let missing = client(port, None, parameters.clone());
        assert!(missing.contains("the server requires a token"), "{missing}");
        let other = client(port, Some("s3cret"), json!({"test": "write_bw", "tx_depth": 64}));
        assert!(other.contains("tx_depth"), "{other}");
        assert_eq!(client(port, Some("s3cret"), parameters), "ok");
        let (admitted, refusals) = server.join().unwrap();
        let (peer, host) = admitted.expect("the right client is admitted");
        assert!(peer.starts_with("127.0.0.1:"), "{peer}");
        assert_eq!(host, "node1");
        assert_eq!(refusals.len(), 4, "{refusals:#?}");
        assert!(refusals[0].starts_with("1 127.0.0.1:") && refusals[0].contains("closed"), "{refusals:#?}");
        assert!(refusals[1].contains("wrong token"), "{refusals:#?}");
        assert!(refusals[2].contains("the client refused"), "{refusals:#?}");
        assert!(refusals[3].starts_with("4 ") && refusals[3].contains("tx_depth: ours 128, peer's 64"));
    }

    #[test]
    fn the_wait_for_a_client_can_be_bounded() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let started = Instant::now();
            let secret = Token::new("s3cret").unwrap();
            let limit = Some(Duration::from_millis(1500));
            let result = Control::admit(&listener, &hello(), door(Some(&secret), limit), &mut |_| {});
            (result.err().map(|error| error.to_string()), started.elapsed())
        });
        let wrong = client(port, Some("guess"), hello().parameters);
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
        assert!(!is_peer_fault(&ExchangeError::Interrupted(
            crate::harness::interrupt::StopSignal::Interrupt
        )));
        assert!(!is_peer_fault(&ExchangeError::NoClient {
            address: "x".into(),
            seconds: 1.0,
            turned_away: 0
        }));
    }
}
