//! One client per run: once a server has its peer, later connections are told so and closed.
//!
//! Dropping the listener would also keep them out, but a refused connection looks to the other
//! side like a server that never came, and its `connect` retries until the timeout. An answer
//! that says "busy" tells the person at that client what is going on at once. It does not say
//! whom the server serves: that is nobody's business on the fabric (our stderr names both).

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::message::{encode, Message};

/// How often the turn-away thread looks for a knock and for its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Turned-away clients reported on stderr; more are only counted, so a flood cannot fill a log.
const REPORTED: usize = 5;

/// Answers every further connection on the server's listener with a `Failed` "busy" message,
/// for as long as it lives.
pub struct TurnAway {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TurnAway {
    /// Takes over `listener` while `serving` (the connected client's address, for our stderr
    /// only) is served.
    pub fn start(listener: TcpListener, serving: &str) -> TurnAway {
        let stop = Arc::new(AtomicBool::new(false));
        let serving = serving.to_string();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("turn-away".into())
                .spawn(move || turn_away(&listener, &serving, &stop))
                .ok()
        };
        TurnAway { stop, thread }
    }
}

/// What a turned-away client hears.
const BUSY: &str = "busy: this server is already serving a client and serves one client per run; \
                    start another server on a different -p/--port";

fn turn_away(listener: &TcpListener, serving: &str, stop: &AtomicBool) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    let frame = encode(&Message::Failed { message: BUSY.to_string() });
    let mut turned_away = 0usize;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, address)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = std::io::Write::write_all(&mut stream, &frame);
                turned_away += 1;
                if turned_away <= REPORTED {
                    let program = crate::process::program_name();
                    eprintln!("{program}: turned away {address}: busy serving {serving}");
                }
            }
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

impl Drop for TurnAway {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Control, ExchangeError};

    #[test]
    fn a_second_client_hears_that_the_server_is_busy() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let first = std::thread::spawn(move || std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
        let served = Control::accept(&listener, Duration::from_secs(5)).unwrap();
        let _first = first.join().unwrap();
        let guard = TurnAway::start(listener, served.peer());
        let mut second = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
        match second.receive("waiting for the server's challenge") {
            Err(ExchangeError::PeerFailed { message, .. }) => {
                assert!(message.starts_with("busy: this server is already serving a client"), "{message}");
                // Whom the server serves is not told to whoever knocks.
                assert!(!message.contains("127.0.0.1"), "{message}")
            }
            other => panic!("expected a busy refusal, got {other:?}"),
        }
        drop(guard);
    }
}
