//! The out-of-band exchange: a TCP connection carrying typed, versioned messages.
//!
//! RDMA peers cannot talk before they know each other's QP numbers and keys, so, like perftest,
//! we open a TCP connection first. Unlike perftest's fixed-format strings, every message is a
//! serde type framed as a 4-byte big-endian length plus JSON: readable in a packet capture,
//! checked for version, bounded in size before anything is allocated, and each side compares the
//! other's run parameters field by field so a mismatch names the field.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::verbs::{Endpoint, RemoteBuffer};

/// Bumped whenever a message changes shape; peers of different versions refuse each other.
pub const PROTOCOL_VERSION: u32 = 1;

/// No legitimate message comes near this (a hello for 64 QPs is a few KiB): anything larger is
/// refused before allocating, so a stray or hostile peer cannot make us allocate gigabytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Errors of the exchange, each saying which step failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("cannot listen on {address}: {source} (is another benchmark using the port? pick one with -p/--port)")]
    Bind { address: String, source: io::Error },

    #[error("cannot reach the server at {address} within {seconds} s: {source} (is `{test}` running there as server, on the same -p/--port? firewall?)")]
    Connect { address: String, seconds: u64, test: String, source: io::Error },

    #[error("cannot resolve host '{host}': {source}")]
    Resolve { host: String, source: io::Error },

    #[error("peer {peer} closed the connection while {during}")]
    Closed { peer: String, during: String },

    #[error("peer {peer} sent nothing for {seconds} s while {during} (raise --timeout if the peer is this slow)")]
    Timeout { peer: String, seconds: u64, during: String },

    #[error("I/O error with peer {peer} while {during}: {source}")]
    Io { peer: String, during: String, source: io::Error },

    #[error("peer {peer} sent a {len}-byte message; the limit is {MAX_MESSAGE_BYTES} (not a gdrperf peer?)")]
    TooLarge { peer: String, len: usize },

    #[error("peer {peer} sent an undecodable message while {during}: {detail} (not a gdrperf peer, or another version?)")]
    Decode { peer: String, during: String, detail: String },

    #[error("peer {peer} speaks exchange protocol version {theirs}, we speak {ours}: run the same gdrperf version on both sides")]
    Version { peer: String, ours: u32, theirs: u32 },

    #[error("peer {peer} runs a different benchmark: {differences}")]
    Mismatch { peer: String, differences: String },

    #[error("peer {peer} reported an error: {message}")]
    PeerFailed { peer: String, message: String },

    #[error("peer {peer} sent {got} while we expected {expected}")]
    Unexpected { peer: String, expected: &'static str, got: String },
}

type ExchangeResult<T> = std::result::Result<T, ExchangeError>;

/// The first message each side sends: who it is, what it runs, how to reach its QPs and memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub gdrperf_version: String,
    pub host: String,
    /// The parameters both sides must share, as a JSON object, compared field by field.
    pub parameters: serde_json::Value,
    /// Facts about this side that may differ from the peer's (device, memory kind, MTU...).
    pub side: SideInfo,
    pub endpoints: Vec<Endpoint>,
    pub buffers: Vec<RemoteBuffer>,
}

/// Per-side facts: shown in the run header and result rows, never required to match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub device: String,
    pub port: u8,
    pub active_mtu: u32,
    pub memory: String,
    /// The GPU and registration path when `memory` is GPU memory.
    #[serde(default)]
    pub gpu: Option<String>,
}

/// Everything that travels after the hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    Hello(Box<Hello>),
    /// Client -> server: get ready for this message size (clear buffers, post receives).
    StartSize { size: u64 },
    /// Server -> client: ready; the client may start.
    Ready,
    /// Client -> server: done with this size; here is what I measured (JSON row) if anything.
    SizeDone { size: u64, report: Option<serde_json::Value> },
    /// Server -> client: the server's view of the size: data check result and its own numbers.
    SizeResult { size: u64, validation_error: Option<String>, report: Option<serde_json::Value> },
    /// Either side: I failed, here is why (so the peer can exit with that message, not a hang).
    Failed { message: String },
    /// Client -> server: the sweep is over.
    Goodbye,
}

impl Message {
    fn kind(&self) -> &'static str {
        match self {
            Message::Hello(_) => "Hello",
            Message::StartSize { .. } => "StartSize",
            Message::Ready => "Ready",
            Message::SizeDone { .. } => "SizeDone",
            Message::SizeResult { .. } => "SizeResult",
            Message::Failed { .. } => "Failed",
            Message::Goodbye => "Goodbye",
        }
    }
}

/// Encodes a message as length-prefixed JSON.
pub fn encode(message: &Message) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("messages are plain data and always serialise");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Decodes the body of one frame (without its length prefix).
pub fn decode_body(body: &[u8]) -> std::result::Result<Message, String> {
    serde_json::from_slice(body).map_err(|error| error.to_string())
}

/// A connected control channel to the peer.
pub struct Control {
    stream: TcpStream,
    peer: String,
    timeout: Duration,
}

impl Control {
    /// Server side: listens on `address` and waits for one client.
    pub fn listen(address: SocketAddr) -> ExchangeResult<TcpListener> {
        TcpListener::bind(address).map_err(|source| ExchangeError::Bind { address: address.to_string(), source })
    }

    /// Server side: accepts the client on an already bound listener.
    pub fn accept(listener: &TcpListener, timeout: Duration) -> ExchangeResult<Control> {
        let local = listener.local_addr().map(|address| address.to_string()).unwrap_or_default();
        let (stream, peer) = listener
            .accept()
            .map_err(|source| ExchangeError::Io { peer: local, during: "accepting a client".into(), source })?;
        Control::from_stream(stream, peer.to_string(), timeout)
    }

    /// Client side: connects to `host:port`, retrying refused connections until `timeout`, so
    /// that a script may start client and server at the same moment.
    pub fn connect(host: &str, port: u16, timeout: Duration, test: &str) -> ExchangeResult<Control> {
        let address_text = format!("{host}:{port}");
        let addresses: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|source| ExchangeError::Resolve { host: host.to_string(), source })?
            .collect();
        let deadline = Instant::now() + timeout;
        loop {
            let mut last_error = io::Error::new(io::ErrorKind::NotFound, "no address");
            for address in &addresses {
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
                match TcpStream::connect_timeout(address, left) {
                    Ok(stream) => return Control::from_stream(stream, address.to_string(), timeout),
                    Err(error) => last_error = error,
                }
            }
            if Instant::now() >= deadline {
                return Err(ExchangeError::Connect {
                    address: address_text,
                    seconds: timeout.as_secs(),
                    test: test.to_string(),
                    source: last_error,
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn from_stream(stream: TcpStream, peer: String, timeout: Duration) -> ExchangeResult<Control> {
        let setup = |source| ExchangeError::Io { peer: peer.clone(), during: "setting up the socket".into(), source };
        stream.set_nodelay(true).map_err(setup)?;
        stream.set_read_timeout(Some(timeout)).map_err(setup)?;
        stream.set_write_timeout(Some(timeout)).map_err(setup)?;
        Ok(Control { stream, peer, timeout })
    }

    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Changes how long a receive may wait (a long `-D` run waits longer for the peer's report).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        let _ = self.stream.set_read_timeout(Some(timeout));
    }

    pub fn send(&mut self, message: &Message, during: &str) -> ExchangeResult<()> {
        self.stream.write_all(&encode(message)).map_err(|source| self.io_error(source, during))
    }

    /// Receives one message. A `Failed` from the peer becomes [`ExchangeError::PeerFailed`].
    pub fn receive(&mut self, during: &str) -> ExchangeResult<Message> {
        let mut length = [0u8; 4];
        self.read_exact(&mut length, during)?;
        let len = u32::from_be_bytes(length) as usize;
        if len > MAX_MESSAGE_BYTES {
            return Err(ExchangeError::TooLarge { peer: self.peer.clone(), len });
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body, during)?;
        match decode_body(&body) {
            Ok(Message::Failed { message }) => Err(ExchangeError::PeerFailed { peer: self.peer.clone(), message }),
            Ok(message) => Ok(message),
            Err(detail) => Err(ExchangeError::Decode { peer: self.peer.clone(), during: during.to_string(), detail }),
        }
    }

    /// Receives and checks that the message is the one expected next.
    pub fn expect<T>(
        &mut self, expected: &'static str, during: &str, pick: impl FnOnce(Message) -> Result<T, Message>,
    ) -> ExchangeResult<T> {
        let message = self.receive(during)?;
        pick(message).map_err(|other| ExchangeError::Unexpected {
            peer: self.peer.clone(),
            expected,
            got: other.kind().to_string(),
        })
    }

    /// Best effort: tells the peer why we stop, so it exits with our reason instead of waiting.
    pub fn report_failure(&mut self, message: &str) {
        let _ = self.stream.write_all(&encode(&Message::Failed { message: message.to_string() }));
    }

    /// Sends our hello, reads the peer's, and checks version and shared parameters.
    pub fn exchange_hello(&mut self, ours: &Hello) -> ExchangeResult<Hello> {
        self.send(&Message::Hello(Box::new(ours.clone())), "sending our hello")?;
        let theirs = self.expect("Hello", "waiting for the peer's hello", |message| match message {
            Message::Hello(hello) => Ok(*hello),
            other => Err(other),
        })?;
        if theirs.version != PROTOCOL_VERSION {
            return Err(ExchangeError::Version { peer: self.peer.clone(), ours: PROTOCOL_VERSION, theirs: theirs.version });
        }
        let differences = parameter_differences(&ours.parameters, &theirs.parameters);
        if !differences.is_empty() {
            return Err(ExchangeError::Mismatch { peer: self.peer.clone(), differences: differences.join("; ") });
        }
        Ok(theirs)
    }

    fn read_exact(&mut self, buffer: &mut [u8], during: &str) -> ExchangeResult<()> {
        self.stream.read_exact(buffer).map_err(|source| self.io_error(source, during))
    }

    fn io_error(&self, source: io::Error, during: &str) -> ExchangeError {
        let peer = self.peer.clone();
        let during = during.to_string();
        match source.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                ExchangeError::Closed { peer, during }
            }
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                ExchangeError::Timeout { peer, seconds: self.timeout.as_secs(), during }
            }
            _ => ExchangeError::Io { peer, during, source },
        }
    }
}

/// Names every field whose value differs: "tx_depth: ours 128, peer's 64".
pub fn parameter_differences(ours: &serde_json::Value, theirs: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let ours = ours.as_object().unwrap_or(&empty);
    let theirs = theirs.as_object().unwrap_or(&empty);
    let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let mine = ours.get(name).unwrap_or(&serde_json::Value::Null);
            let peer = theirs.get(name).unwrap_or(&serde_json::Value::Null);
            (mine != peer).then(|| format!("{name}: ours {mine}, peer's {peer}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hello() -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            gdrperf_version: "0.1.0".into(),
            host: "node1".into(),
            parameters: json!({"test": "write_bw", "tx_depth": 128}),
            side: SideInfo { device: "rxe0".into(), port: 1, active_mtu: 4096, memory: "host".into(), gpu: None },
            endpoints: vec![Endpoint { qp_number: 17, psn: 0x1234, lid: 0, gid: None }],
            buffers: vec![RemoteBuffer { address: 0x7000, rkey: 99, len: 4096 }],
        }
    }

    #[test]
    fn messages_round_trip_through_the_frame() {
        let message = Message::Hello(Box::new(hello()));
        let frame = encode(&message);
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        assert_eq!(decode_body(&frame[4..]).unwrap(), message);
    }

    #[test]
    fn differences_name_each_field() {
        let differences = parameter_differences(
            &json!({"test": "write_bw", "tx_depth": 128, "qps": 1}),
            &json!({"test": "write_bw", "tx_depth": 64, "validate": true}),
        );
        assert_eq!(
            differences,
            vec!["qps: ours 1, peer's null", "tx_depth: ours 128, peer's 64", "validate: ours null, peer's true"]
        );
    }

    #[test]
    fn garbage_and_truncated_bodies_are_errors_not_panics() {
        assert!(decode_body(b"").is_err());
        assert!(decode_body(b"{\"Hello\":").is_err());
        assert!(decode_body(&[0xff, 0xfe, 0x00]).is_err());
    }

    #[test]
    fn hello_exchange_over_loopback_checks_parameters() {
        let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut control = Control::accept(&listener, Duration::from_secs(5)).unwrap();
            let mut ours = hello();
            ours.parameters = json!({"test": "write_bw", "tx_depth": 64});
            control.exchange_hello(&ours)
        });
        let mut client = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
        let client_result = client.exchange_hello(&hello());
        let server_result = server.join().unwrap();
        let message = client_result.unwrap_err().to_string();
        assert!(message.contains("tx_depth: ours 128, peer's 64"), "{message}");
        assert!(server_result.unwrap_err().to_string().contains("tx_depth: ours 64, peer's 128"));
    }

    #[test]
    fn oversized_frames_are_refused_before_allocation() {
        let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let sender = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream.write_all(&u32::MAX.to_be_bytes()).unwrap();
        });
        let mut control = Control::accept(&listener, Duration::from_secs(5)).unwrap();
        sender.join().unwrap();
        assert!(matches!(control.receive("testing"), Err(ExchangeError::TooLarge { .. })));
    }

    #[test]
    fn connecting_to_nobody_times_out_with_a_clear_message() {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let started = Instant::now();
        let error = Control::connect("127.0.0.1", port, Duration::from_millis(500), "gdr-write-bw").err().unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(error.to_string().contains("cannot reach the server at 127.0.0.1"), "{error}");
    }
}
