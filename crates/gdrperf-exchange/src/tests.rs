//! Tests of the framing and of the control channel over loopback TCP.

use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::process::{StopFlag, StopSignal};

use crate::error::ExchangeResult;

use gdrperf_verbs::{Endpoint, RemoteBuffer};
use serde_json::json;

pub(crate) fn hello() -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        gdrperf_version: "0.1.0".into(),
        host: "node1".into(),
        parameters: json!({"test": "write_bw", "tx_depth": 128}),
        side: SideInfo {
            device: "rxe0".into(),
            port: 1,
            active_mtu: 4096,
            memory: crate::memory_kind::MemoryKind::Host,
            gpu: None,
            path: None,
        },
        endpoints: vec![Endpoint { qp_number: 17, psn: 0x1234, lid: 0, gid: None }],
        buffers: vec![RemoteBuffer { address: 0x7000, rkey: 99, len: 4096 }],
        placements: vec!["host".into(), "cuda:0".into()],
        lane: 0,
        rdma_cm_port: None,
        rdma_cm_secret: None,
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
    assert_eq!(differences, vec!["qps", "tx_depth", "validate"]);
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
        control.exchange_hello(&ours, None)
    });
    let mut client = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
    let client_result = client.exchange_hello(&hello(), None);
    let server_result = server.join().unwrap();
    let message = client_result.unwrap_err().to_string();
    assert!(message.starts_with("the server 127.0.0.1:"), "{message}");
    assert!(message.ends_with("runs gdr-write-bw with other settings: it has -t 64, this side -t 128; give both sides the same flags"), "{message}");
    let message = server_result.unwrap_err().to_string();
    assert!(
        message.starts_with("the client 127.0.0.1:") && message.contains("it has -t 128, this side -t 64"),
        "{message}"
    );
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
    let error =
        Control::connect("127.0.0.1", port, Duration::from_millis(500), "gdr-write-bw").err().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(error.to_string().contains("cannot reach the server at 127.0.0.1"), "{error}");
}

/// A connected pair over loopback TCP: (accepted side, raw client stream).
fn pair() -> (Control, TcpStream) {
    let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    (Control::accept(&listener, Duration::from_secs(5)).unwrap(), client)
}

#[test]
fn a_frame_cut_short_is_a_closed_connection() {
    let (mut control, mut client) = pair();
    let frame = encode(&Message::Ready);
    client.write_all(&frame[..frame.len() - 1]).unwrap();
    drop(client);
    assert!(matches!(control.receive("testing"), Err(ExchangeError::Closed { .. })));
}

#[test]
fn a_stop_request_ends_a_long_wait_early() {
    let (mut control, _client) = pair();
    let stop = StopFlag::default();
    control.set_stop_flag(stop.clone());
    control.set_timeout(Duration::from_secs(3600));
    let started = Instant::now();
    let asker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stop.request(StopSignal::Interrupt);
    });
    let result = control.receive("waiting for a size");
    asker.join().unwrap();
    assert!(matches!(result, Err(ExchangeError::Interrupted(StopSignal::Interrupt))), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
}

#[test]
fn a_silent_peer_times_out_after_the_timeout() {
    let (mut control, _client) = pair();
    control.set_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let result = control.receive("waiting for a size");
    assert!(matches!(result, Err(ExchangeError::Timeout { .. })), "{result:?}");
    assert!(started.elapsed() >= Duration::from_millis(500));
}

/// A goodbye while a size is under way (a `--run-infinitely` client its user stopped) is the peer
/// ending the run, which the watch and `peer_gone` say (waiting for it, not for a fixed time).
#[test]
fn a_goodbye_while_measuring_is_the_peer_ending_the_run() {
    let (control, mut client) = pair();
    assert!(control.peer_gone(Duration::ZERO).is_none(), "nothing sent yet");
    client.write_all(&encode(&Message::Goodbye)).unwrap();
    let gone = control.peer_gone(Duration::from_secs(10));
    assert!(matches!(gone, Some(ExchangeError::PeerEnded { .. })), "{gone:?}");
}

/// How long a test waits for something that takes microseconds on an idle host: a failure
/// after this is a broken condition, not a slow machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// Waits until `condition` holds, polling; fails the test, naming `what`, after [`PATIENCE`].
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn check_peer_sees_a_dead_peer_and_a_failure_without_consuming_other_messages() {
    let (mut control, mut client) = pair();
    let watch = control.watch();
    assert!(watch.check_peer_now().is_ok(), "nothing sent yet");
    let size_done = encode(&Message::SizeDone { size: 64, report: None });
    client.write_all(&size_done).unwrap();
    wait_until("the SizeDone to arrive", || watch.bytes_waiting() == size_done.len());
    assert!(watch.check_peer_now().is_ok(), "a SizeDone is left for the sweep");
    assert_eq!(watch.bytes_waiting(), size_done.len(), "the check consumed nothing");
    assert_eq!(control.receive("testing").unwrap(), Message::SizeDone { size: 64, report: None });
    let failed = encode(&Message::Failed { message: "out of memory".into() });
    client.write_all(&failed).unwrap();
    wait_until("the Failed to arrive", || watch.bytes_waiting() == failed.len());
    assert!(
        matches!(watch.check_peer_now(), Err(ExchangeError::PeerFailed { message, .. }) if message == "out of memory")
    );
    let _ = control.receive("consuming the failure");
    drop(client);
    let mut seen = Ok(());
    wait_until("the closed connection to be seen", || {
        seen = watch.check_peer_now();
        seen.is_err()
    });
    assert!(matches!(seen, Err(ExchangeError::Closed { .. })), "{seen:?}");
    // Rate-limited: once a look finds the connection closed, a look right after it (well
    // within the interval, as timed from before the first) does not look again. A host that
    // stalls this thread for a whole interval between the two only makes the loop try again.
    let mut next_look = Ok(());
    wait_until("a look at the closed connection followed at once by a rate-limited one", || {
        let before = Instant::now();
        match control.check_peer() {
            Ok(()) => false,
            Err(error) => {
                assert!(matches!(error, ExchangeError::Closed { .. }), "{error}");
                next_look = control.check_peer();
                before.elapsed() < PEER_CHECK_INTERVAL
            }
        }
    });
    assert!(next_look.is_ok(), "rate-limited: the next look comes only after the interval");
}

#[test]
fn a_version_one_peer_is_named_as_such() {
    let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    // An old server sends its hello first, without a challenge.
    let old_server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut old = hello();
        old.version = 1;
        stream.write_all(&encode(&Message::Hello(Box::new(old)))).unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
    });
    let mut client = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
    let error = client.exchange_hello(&hello(), None).unwrap_err();
    drop(client);
    old_server.join().unwrap();
    assert!(matches!(error, ExchangeError::Version { theirs: 1, ours: PROTOCOL_VERSION, .. }), "{error}");
}

#[test]
fn a_peers_text_is_escaped_and_cut() {
    assert_eq!(printable("wrong token"), "wrong token");
    assert_eq!(printable("a\nFAKE: ok\x1b[2J\r"), "a\\nFAKE: ok\\u{1b}[2J\\r");
    let long = "é".repeat(PEER_TEXT_CHARS + 10);
    let cut = printable(&long);
    assert!(cut.starts_with(&"é".repeat(PEER_TEXT_CHARS)), "{cut}");
    assert!(cut.ends_with("... (10 more characters cut)"), "{cut}");
    // Bidirectional overrides and isolates, zero-width and other format characters: what the
    // screen shows would not be what the bytes say.
    assert_eq!(printable("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    assert_eq!(
        printable("a\u{2066}b\u{2069}c\u{200b}d\u{200f}e\u{feff}f\u{2028}"),
        "a\\u{2066}b\\u{2069}c\\u{200b}d\\u{200f}e\\u{feff}f\\u{2028}"
    );
    assert_eq!(printable("mlx5_0 é 日本"), "mlx5_0 é 日本", "printable text is left alone");
}

#[test]
fn a_peers_failed_message_arrives_escaped_and_cut() {
    let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let sender = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let message = format!("\x1b[31mred\n{}", "x".repeat(MAX_MESSAGE_BYTES / 2));
        stream.write_all(&encode(&Message::Failed { message })).unwrap();
    });
    let mut control = Control::accept(&listener, Duration::from_secs(5)).unwrap();
    let error = control.receive("waiting").unwrap_err().to_string();
    sender.join().unwrap();
    assert!(
        error.contains("\\u{1b}[31mred\\nxxx") && !error.contains('\x1b') && !error.contains('\n'),
        "{error}"
    );
    assert!(error.len() < 600, "{} characters", error.len());
}

/// A server vetting one connection, and a raw client socket that plays a hostile peer.
fn vetting_pair(timeout: Duration) -> (std::thread::JoinHandle<ExchangeResult<u32>>, TcpStream) {
    let listener = Control::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let mut control = Control::accept(&listener, timeout).unwrap();
        control.vet(&hello(), None)
    });
    (server, TcpStream::connect(("127.0.0.1", port)).unwrap())
}

/// A trickle cannot hold a handshake: a peer sending one byte per 20 ms (well inside the 200 ms read slice, so no
/// read ever times out) is cut off by the handshake's one deadline, before it finishes its frame.
#[test]
fn a_trickling_peer_is_cut_off_by_the_handshake_deadline() {
    let (server, mut stream) = vetting_pair(Duration::from_secs(1));
    let frame_bytes = 2_000usize;
    stream.write_all(&(frame_bytes as u32).to_be_bytes()).unwrap();
    let trickler = std::thread::spawn(move || {
        for sent in 0..frame_bytes {
            if stream.write_all(b" ").is_err() {
                return sent;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        frame_bytes
    });
    let error = server.join().unwrap().unwrap_err();
    // Named as what it was: a trickle cut off mid-message, not a peer that "sent nothing".
    match &error {
        ExchangeError::Trickle { received, expected, .. } => {
            assert_eq!(*expected, frame_bytes, "{error}");
            assert!(*received > 0 && *received < frame_bytes, "{error}");
        }
        other => panic!("expected a trickle cut off, got {other}"),
    }
    assert!(error.to_string().contains("cut off at the deadline"), "{error}");
    assert!(!error.to_string().contains("sent nothing"), "{error}");
    // The server closed its end when it gave up: the trickler's writes fail from then on.
    assert!(trickler.join().unwrap() < frame_bytes, "the trickle ran to its end: no deadline cut it");
}

/// Nothing large is read before the proof: a frame larger than a proof is refused from its length
/// prefix alone (nothing of its body is read or allocated); an early close is named as such.
#[test]
fn before_the_proof_only_small_frames_are_read() {
    let (server, mut stream) = vetting_pair(Duration::from_secs(5));
    stream.write_all(&(MAX_MESSAGE_BYTES as u32).to_be_bytes()).unwrap();
    let error = server.join().unwrap().unwrap_err();
    match &error {
        ExchangeError::TooLarge { len, limit, .. } => {
            assert_eq!((*len, *limit), (MAX_MESSAGE_BYTES, PRE_PROOF_MAX_BYTES))
        }
        other => panic!("expected TooLarge, got {other}"),
    }
    assert!(error.to_string().contains("while waiting for the client's proof"), "{error}");

    let (server, stream) = vetting_pair(Duration::from_secs(5));
    drop(stream);
    let error = server.join().unwrap().unwrap_err();
    assert!(matches!(error, ExchangeError::Closed { .. }), "{error}");
}

/// One frame read from a raw socket, decoded.
fn read_frame(stream: &mut TcpStream) -> Message {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).unwrap();
    decode_body(&body).unwrap()
}

/// A raw client through the challenge of a server without a token, up to the terms.
fn past_the_proof() -> (std::thread::JoinHandle<ExchangeResult<u32>>, TcpStream) {
    let (server, mut stream) = vetting_pair(Duration::from_secs(5));
    let Message::Challenge { version, .. } = read_frame(&mut stream) else { panic!("no challenge") };
    stream.write_all(&encode(&Message::Proof { version, nonce: [7; 32], tag: None })).unwrap();
    assert!(matches!(read_frame(&mut stream), Message::Accepted { tag: None }));
    (server, stream)
}

/// The terms' cap (security.md: "64 KiB while the terms are agreed"): with no token every peer
/// gets past the proof, so this bound is what a stranger costs. A frame over it is refused from
/// its prefix; one under it is read and judged on its content.
#[test]
fn the_terms_are_read_up_to_64_kib_and_no_further() {
    let (server, mut stream) = past_the_proof();
    stream.write_all(&((TERMS_MAX_BYTES + 1) as u32).to_be_bytes()).unwrap();
    match server.join().unwrap().unwrap_err() {
        ExchangeError::TooLarge { len, limit, .. } => {
            assert_eq!((len, limit), (TERMS_MAX_BYTES + 1, TERMS_MAX_BYTES))
        }
        other => panic!("expected TooLarge, got {other}"),
    }
    let (server, mut stream) = past_the_proof();
    let padding = "x".repeat(TERMS_MAX_BYTES - 200);
    let terms = encode(&Message::Terms { parameters: json!({"test": "write_bw", "pad": padding}), lane: 0 });
    assert!(terms.len() - 4 <= TERMS_MAX_BYTES && terms.len() - 4 > TERMS_MAX_BYTES - 300);
    stream.write_all(&terms).unwrap();
    let error = server.join().unwrap().unwrap_err();
    assert!(matches!(error, ExchangeError::Mismatch { .. }), "read and judged, not refused: {error}");
}

/// Peer text made harmless: every string of a peer's hello is cleaned where it is decoded, so no printer
/// downstream (run header, sweep, terms, errors, CSV) ever holds an ESC or a huge name.
#[test]
fn a_peers_hello_is_cleaned_and_cut_where_it_is_decoded() {
    let mut theirs = hello();
    let huge = format!("\x1b[2J\x1b]0;owned\x07{}", "n".repeat(500_000));
    theirs.host = huge.clone();
    theirs.side.device = "rxe0\x1b[31m".into();
    theirs.side.gpu = Some("gpu\r\nFAKE: ok".into());
    theirs.placements = vec![huge.clone(), "host".into()];
    theirs.parameters = json!({"test": "write_bw", "evil\x1b": [huge.clone()]});
    let decoded = match decode_body(&encode(&Message::Hello(Box::new(theirs)))[4..]).unwrap() {
        Message::Hello(hello) => hello,
        other => panic!("decoded {other:?}"),
    };
    let text = serde_json::to_string(&decoded).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\r') && !text.contains('\u{7}'),
        "a control character survived"
    );
    assert!(text.len() < 4 * PEER_TEXT_CHARS + 2_000, "{} bytes survived", text.len());
    assert!(decoded.host.starts_with("\\u{1b}[2J") && decoded.host.ends_with("more characters cut)"));
    assert_eq!(decoded.side.device, "rxe0\\u{1b}[31m");
    assert_eq!(decoded.placements[1], "host", "clean text is left as it is");
    assert!(decoded.parameters.get("evil\\u{1b}").is_some(), "{}", decoded.parameters);
    let failed = encode(&Message::Failed { message: "\x1b[2Jbye".into() });
    assert_eq!(decode_body(&failed[4..]).unwrap(), Message::Failed { message: "\\u{1b}[2Jbye".into() });
}

/// The path facts of a hello are free text too (software device, port rate, ACS and IOMMU lists,
/// findings' device, evidence and fix): cleaned and cut where they are decoded, like the rest.
#[test]
fn a_peers_path_facts_are_cleaned_and_cut_where_they_are_decoded() {
    let huge = format!("\x1b[2J\n{}", "e".repeat(200_000));
    let facts = json!({
        "nic": "mlx5_0\x1b[31m", "port": 1, "software_device": "rxe\u{202e}",
        "link_layer": null, "port_rate": "400 Gb/sec\r\nFAIL", "active_mtu": 4096, "max_mtu": 4096,
        "nic_pcie": {"name": "mlx5_0\u{2066}", "address": "0000:18:00.0\n", "speed_gts": 16.0,
            "width": 16, "max_speed_gts": 16.0, "max_width": 16, "max_payload_bytes": 256,
            "max_read_request_bytes": 512, "relaxed_ordering": true},
        "gpu_pcie": null, "memory": "host", "gpu_nic_relation": null,
        "acs_redirecting": ["0000:00:01.0\x1b]0;t\x07"],
        "path_findings": [{"check": "pcie-link", "level": "warn", "device": "dev\x1b[1m",
            "role": "nic", "evidence": huge, "fix": "fix\u{200b}", "source": "src\n"}],
        "iommu_translating": ["0000:18:00.0 (DMA)\u{2069}"],
        "nic_numa_node": 0, "thread_numa_node": 0,
    });
    let mut theirs = hello();
    theirs.side.path = Some(facts);
    let decoded = match decode_body(&encode(&Message::Hello(Box::new(theirs)))[4..]).unwrap() {
        Message::Hello(hello) => hello,
        other => panic!("decoded {other:?}"),
    };
    let path = decoded.side.path.expect("the facts still travel");
    let text = serde_json::to_string(&path).unwrap();
    for bad in ['\u{1b}', '\r', '\n', '\u{7}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200b}'] {
        assert!(!text.contains(bad), "{bad:?} survived in {text}");
    }
    assert!(text.len() < 20 * PEER_TEXT_CHARS, "{} bytes survived", text.len());
    assert_eq!(path["port_rate"], "400 Gb/sec\\r\\nFAIL");
    assert_eq!(path["software_device"], "rxe\\u{202e}");
    assert!(path["path_findings"][0]["evidence"].as_str().unwrap().ends_with("more characters cut)"));
}

/// The hello's connect retries (busy servers) stop at the user's deadline, but the error and the
/// connected channel keep the user's whole `--timeout`: a retry loop once handed `connect` the
/// time left (0.99 s), and the message read "within 0 s" for `--timeout 1`.
#[test]
fn the_hello_connect_names_the_users_whole_timeout() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let ours = hello();
    let error = Control::connect_and_exchange_hello(
        "127.0.0.1",
        port,
        Duration::from_secs(1),
        "gdr-write-bw",
        &ours,
        None,
    )
    .err()
    .unwrap();
    assert!(matches!(error, ExchangeError::Connect { seconds: 1, .. }), "{error}");
}
