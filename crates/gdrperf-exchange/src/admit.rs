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
//! Handshakes run at once, each on a thread of its own, up to [`HANDSHAKES_AT_ONCE`] in all and
//! [`HANDSHAKES_PER_SOURCE`] from one address (one IPv6 /64): a silent or slow stranger costs the
//! real client nothing, and one that has not proven itself within [`PROOF_PATIENCE`] (or
//! `--timeout`, if shorter) is dropped. A connection over either limit is accepted, told "busy"
//! and closed at once, never left in the listen backlog: a flood of reconnecting silent sockets
//! from one place then keeps [`HANDSHAKES_PER_SOURCE`] slots busy and the backlog empty, and a
//! client from anywhere else finds a slot. The vetting (challenge and terms) gives nothing away;
//! only then does the main thread swap hellos (the keys) with the first vetted connection, one at
//! a time.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, TcpListener};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::auth::Token;
use crate::control::{is_transient_accept_error, Control};
use crate::error::{ExchangeError, ExchangeResult};
use crate::message::{encode, Hello, Message};

/// How long a connection may take to answer the challenge and send its terms. A real client
/// does both at once on connecting (two round trips); this is independent of `--timeout`, so
/// that a stranger holding the socket open ties up a slot for two seconds, not for the run's
/// whole timeout.
pub const PROOF_PATIENCE: Duration = Duration::from_secs(2);

/// Handshakes in flight at most; a connection over the limit is answered "busy" and closed.
pub const HANDSHAKES_AT_ONCE: usize = 64;

/// Handshakes in flight at most from one source address (IPv4) or one /64 (IPv6, where one host
/// commonly holds a whole /64): a connection over the limit is answered "busy" and closed.
pub const HANDSHAKES_PER_SOURCE: usize = 4;

/// The listen backlog asked of the kernel (it caps it at `net.core.somaxconn`): std's 128 fills
/// within a burst, and a full backlog drops the real client's SYN, whose retry comes a second
/// later, then three, then seven.
const LISTEN_BACKLOG: libc::c_int = 4096;

/// What a connection over a handshake limit hears before it is closed.
const BUSY_HANDSHAKING: &str = "busy: this server has too many handshakes in flight from your address \
                                (or in all); try again in a few seconds";

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

/// Whether a client's handshake failed only because the server had too many handshakes in
/// flight from the client's address (or in all): a retry a moment later may get in, so a client
/// tries again until its own `--timeout` is up.
pub fn is_handshake_busy(error: &ExchangeError) -> bool {
    matches!(error, ExchangeError::PeerFailed { message, .. } if message == BUSY_HANDSHAKING)
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
        let slots = Arc::new(Slots::default());
        let mut turned_away = 0;
        widen_backlog(listener);
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
            match listener.accept() {
                Ok((stream, peer)) => {
                    let Some(slot) = slots.take(peer.ip()) else {
                        answer_busy(stream);
                        continue;
                    };
                    stream.set_nonblocking(false).map_err(io_error)?;
                    let patience = PROOF_PATIENCE.min(door.timeout);
                    let control = Control::from_accepted(stream, peer.to_string(), patience)?;
                    vet_on_a_thread(control, ours, door.token, &sender, slot);
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

/// The handshakes in flight, in all and by source, with their limits.
#[derive(Default)]
struct Slots {
    taken: Mutex<(usize, HashMap<SourceKey, usize>)>,
}

/// Where a connection comes from, as the per-source limit counts it: the IPv4 address, or the
/// /64 an IPv6 address belongs to (an IPv4-mapped IPv6 address counts as its IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum SourceKey {
    V4(std::net::Ipv4Addr),
    V6Prefix(u64),
}

impl SourceKey {
    fn of(address: IpAddr) -> SourceKey {
        match address {
            IpAddr::V4(v4) => SourceKey::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => SourceKey::V4(v4),
                None => SourceKey::V6Prefix((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// One handshake's slot, given back when it is dropped (its thread ended, or none started).
struct Slot {
    slots: Arc<Slots>,
    source: SourceKey,
}

impl Slots {
    /// A slot for a connection from `address`, unless a limit is reached.
    fn take(self: &Arc<Self>, address: IpAddr) -> Option<Slot> {
        let source = SourceKey::of(address);
        let mut taken = self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (all, by_source) = &mut *taken;
        let from_here = by_source.entry(source).or_default();
        if *all >= HANDSHAKES_AT_ONCE || *from_here >= HANDSHAKES_PER_SOURCE {
            return None;
        }
        *from_here += 1;
        *all += 1;
        Some(Slot { slots: Arc::clone(self), source })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut taken = self.slots.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (all, by_source) = &mut *taken;
        *all -= 1;
        if let Some(from_here) = by_source.get_mut(&self.source) {
            *from_here -= 1;
            if *from_here == 0 {
                by_source.remove(&self.source);
            }
        }
    }
}

/// Tells a connection over a limit that the server is busy, without waiting on it (its socket
/// buffer takes the few bytes; a peer that reads nothing loses nothing), and closes it.
fn answer_busy(stream: std::net::TcpStream) {
    let frame = encode(&Message::Failed { message: BUSY_HANDSHAKING.to_string() });
    let _ = stream.set_nonblocking(true);
    let _ = io::Write::write(&mut &stream, &frame);
}

/// Asks the kernel for a longer listen backlog than std's 128 (listen(2) on a listening socket
/// changes its backlog). Failing that, the backlog stays as it was.
fn widen_backlog(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: listen(2) on a descriptor the listener owns and keeps open for the call.
    let _ = unsafe { libc::listen(listener.as_raw_fd(), LISTEN_BACKLOG) };
}

/// Runs the challenge and the terms of one connection on a thread, and hands it back vetted or
/// with why not. A thread still vetting when the server has its client ends on its own (within
/// [`PROOF_PATIENCE`]); its connection is then closed unanswered.
fn vet_on_a_thread(
    mut control: Control,
    ours: &Hello,
    token: Option<&Token>,
    sender: &mpsc::Sender<(Control, ExchangeResult<u32>)>,
    slot: Slot,
) {
    let (ours, token, sender) = (ours.clone(), token.cloned(), sender.clone());
    // No thread to be had: the slot and the connection are dropped (closed), the next one tried.
    let _ = std::thread::Builder::new().name("handshake".into()).spawn(move || {
        let outcome = control.vet(&ours, token.as_ref());
        drop(slot);
        let _ = sender.send((control, outcome));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::hello;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn door(token: Option<&Token>, wait_limit: Option<Duration>) -> Door<'_> {
        Door { token, timeout: Duration::from_secs(5), wait_limit }
    }

    /// A server on a free loopback port that admits one client with the test token, with a
    /// `--timeout` of 30 s (silent sockets would hold a one-at-a-time server that long): its port,
    /// and its thread, which ends with the admitted client's host name. The flood and the silent
    /// sockets of the tests below are all made against this one server.
    fn patient_server() -> (u16, std::thread::JoinHandle<Result<String, ExchangeError>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let secret = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
            let door = Door { token: Some(&secret), timeout: Duration::from_secs(30), wait_limit: None };
            Control::admit(&listener, &hello(), door, &mut |_| {}).map(|(_, theirs)| theirs.host)
        });
        (port, server)
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
        let (port, server) = patient_server();
        // Five silent strangers from another address (one address may hold only
        // HANDSHAKES_PER_SOURCE slots; those over it hear "busy" at once).
        let silent: Vec<_> =
            (0..5).map(|_| connect_from(std::net::Ipv4Addr::new(127, 0, 0, 3), port).unwrap()).collect();
        // No wait is needed for the strangers to be first: each connect above returned once the
        // kernel had queued the connection, and the listener accepts in the queue's order. The
        // decision: the client is served within its own 5 s timeout, which a server taking the
        // strangers one at a time could not do (four hold slots, PROOF_PATIENCE of 2 s each).
        assert_eq!(client(port, Some("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), hello().parameters), "ok");
        assert_eq!(server.join().unwrap().unwrap(), "node1");
        drop(silent);
    }

    /// A socket to `port` on 127.0.0.1 from `source` (another loopback address: a stranger on
    /// another host, as the server sees it), its connect bounded by one second.
    fn connect_from(source: std::net::Ipv4Addr, port: u16) -> Option<std::net::TcpStream> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket calls on a descriptor this function owns; the addresses are
        // initialised `sockaddr_in`s of the right length.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return None;
            }
            let stream = std::net::TcpStream::from_raw_fd(fd);
            let timeout = libc::timeval { tv_sec: 1, tv_usec: 0 };
            let timeout_len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                (&raw const timeout).cast(),
                timeout_len,
            );
            let address = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
                sin_zero: [0; 8],
            };
            let length = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let local = address(source, 0);
            if libc::bind(fd, (&raw const local).cast(), length) != 0 {
                return None;
            }
            let server = address(std::net::Ipv4Addr::LOCALHOST, port);
            (libc::connect(fd, (&raw const server).cast(), length) == 0).then_some(stream)
        }
    }

    /// Issue 44: one process reconnecting silent sockets as fast as it can (each kept open until
    /// it has 100 newer ones) filled every handshake slot and the listen backlog, and a real
    /// client waited seconds or never got in. With a per-source limit answered "busy" at once and
    /// a short pre-proof deadline, the real client (from another address) is admitted within its
    /// own timeout while the flood goes on. The decision asserted is that it got in at all.
    #[test]
    fn a_flood_of_silent_reconnecting_sockets_cannot_keep_the_real_client_out() {
        let (port, server) = patient_server();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let made = Arc::new(AtomicUsize::new(0));
        let flooders: Vec<_> = (0..4)
            .map(|_| {
                let (stop, made) = (Arc::clone(&stop), Arc::clone(&made));
                std::thread::spawn(move || {
                    let mut held = std::collections::VecDeque::new();
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(socket) = connect_from(std::net::Ipv4Addr::new(127, 0, 0, 2), port) {
                            held.push_back(socket);
                            made.fetch_add(1, Ordering::Relaxed);
                            if held.len() > 100 {
                                held.pop_front();
                            }
                        }
                    }
                })
            })
            .collect();
        // The flood is under way (every handshake slot of the old server taken) before the
        // real client comes.
        while made.load(Ordering::Relaxed) < 400 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut control = Control::connect("127.0.0.1", port, Duration::from_secs(4), "gdr-write-bw");
        let outcome = match control.as_mut() {
            Ok(control) => {
                let token = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
                control.exchange_hello(&hello(), Some(&token)).map(|_| ()).map_err(|error| error.to_string())
            }
            Err(error) => Err(error.to_string()),
        };
        stop.store(true, Ordering::Relaxed);
        flooders.into_iter().for_each(|flooder| flooder.join().unwrap());
        assert_eq!(outcome, Ok(()), "the real client was kept out by the flood");
        assert_eq!(server.join().unwrap().unwrap(), "node1");
    }

    /// Silent sockets from the client's own address hold that address's slots for
    /// [`PROOF_PATIENCE`]: the client hears "busy", connects again, and is served within its
    /// timeout once their time is up.
    #[test]
    fn a_client_told_busy_tries_again_until_it_is_served() {
        let (port, server) = patient_server();
        let silent: Vec<_> = (0..HANDSHAKES_PER_SOURCE)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        // Ordered by a condition: one more connection from here is answered busy.
        let mut probe = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
        let busy = probe.exchange_hello(&hello(), None).unwrap_err();
        assert!(is_handshake_busy(&busy), "{busy}");
        let token = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
        let (_control, served) = Control::connect_and_exchange_hello(
            "127.0.0.1",
            port,
            PROOF_PATIENCE * 4,
            "gdr-write-bw",
            &hello(),
            Some(&token),
        )
        .unwrap();
        assert_eq!(served.map(|theirs| theirs.host).map_err(|error| error.to_string()), Ok("node1".into()));
        assert_eq!(server.join().unwrap().unwrap(), "node1");
        drop(silent);
    }

    #[test]
    fn one_source_holds_a_few_slots_and_an_ipv6_host_counts_as_its_64() {
        let slots = Arc::new(Slots::default());
        let here: IpAddr = "10.0.0.7".parse().unwrap();
        let held: Vec<Slot> = (0..HANDSHAKES_PER_SOURCE).map(|_| slots.take(here).unwrap()).collect();
        assert!(slots.take(here).is_none(), "over the per-source limit");
        assert!(slots.take("::ffff:10.0.0.7".parse().unwrap()).is_none(), "the same host, mapped");
        let other = slots.take("10.0.0.8".parse().unwrap()).expect("another host still gets a slot");
        drop(held);
        assert!(slots.take(here).is_some(), "slots come back when their handshakes end");
        drop(other);
        let v6: Vec<Slot> = (0..HANDSHAKES_PER_SOURCE)
            .map(|host| slots.take(format!("2001:db8::{}", host + 1).parse().unwrap()).unwrap())
            .collect();
        assert!(slots.take("2001:db8::ffff".parse().unwrap()).is_none(), "one /64 is one source");
        assert!(slots.take("2001:db8:0:1::1".parse().unwrap()).is_some(), "the next /64 is another");
        drop(v6);
        let sources: Vec<IpAddr> = (0..HANDSHAKES_AT_ONCE)
            .map(|n| format!("10.1.{}.{}", n / 200, n % 200 + 1).parse().unwrap())
            .collect();
        let all: Vec<Slot> = sources.iter().map(|source| slots.take(*source).unwrap()).collect();
        assert!(slots.take("10.9.9.9".parse().unwrap()).is_none(), "over the limit in all");
        drop(all);
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
        assert!(!is_peer_fault(&ExchangeError::Interrupted(crate::process::StopSignal::Interrupt)));
        assert!(!is_peer_fault(&ExchangeError::NoClient {
            address: "x".into(),
            seconds: 1.0,
            turned_away: 0
        }));
    }
}
