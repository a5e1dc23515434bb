//! Fuzzing the exchange's message decoder: the one place where bytes from an unknown host reach
//! our parser before anything is authenticated.
//!
//! Every property runs `GDRPERF_FUZZ_CASES` inputs (default 4000, seconds in CI; the two that
//! open sockets run fewer, see [`socket_cases`]) and
//! prints how many ran clean; `results/fuzz/exchange.md` records long runs. Inputs are random
//! bytes, JSON-shaped token soup, valid messages mutated (bits flipped, bytes cut, inserted,
//! length prefixes rewritten), and whole byte streams fed to a real socket. Each must be decoded
//! or refused with an error: never a panic, never a hang, and never an allocation out of
//! proportion to the input (a tracking allocator measures the largest one) or, on the socket,
//! above the frame limit.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use gdrperf::exchange::{
    decode_body, decode_frame, encode, frame_length, Control, ExchangeError, Hello, Message, SideInfo,
    AUTH_TAG_BYTES, MAX_MESSAGE_BYTES, PROTOCOL_VERSION,
};
use gdrperf::memory_kind::MemoryKind;
use gdrperf::verbs::{Endpoint, Gid, RemoteBuffer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Records the largest single allocation made by each thread, so a property can check what
/// decoding one input cost. Thread-local, so parallel tests do not see each other's.
struct TrackingAllocator;

thread_local! {
    static LARGEST_ALLOCATION: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; the bookkeeping touches only a const-
// initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for TrackingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST_ALLOCATION.try_with(|largest| largest.set(largest.get().max(layout.size())));
        // SAFETY: our caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System` with this layout (every allocation goes there).
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST_ALLOCATION.try_with(|largest| largest.set(largest.get().max(new_size)));
        // SAFETY: as for `dealloc`; `new_size` is checked by our caller's contract.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: TrackingAllocator = TrackingAllocator;

/// The largest allocation `work` makes on this thread.
fn largest_allocation_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST_ALLOCATION.with(|largest| largest.set(0));
    let result = work();
    (result, LARGEST_ALLOCATION.with(Cell::get))
}

/// What decoding `len` bytes may allocate at most in one piece: JSON arrays of small values cost
/// their elements' in-memory size (32 bytes a value, doubled by vector growth) per 2 bytes of
/// text, so 64 times the input plus a constant covers every legitimate shape.
fn allocation_budget(len: usize) -> usize {
    64 * len + 64 * 1024
}

fn cases() -> u32 {
    std::env::var("GDRPERF_FUZZ_CASES").ok().and_then(|text| text.parse().ok()).unwrap_or(4000)
}

/// Properties that open TCP connections run a tenth of the cases, at most 5000: each leaves a
/// port in TIME_WAIT for a minute, and a long run must not exhaust the ephemeral range.
fn socket_cases() -> u32 {
    (cases() / 10).clamp(20, 5000)
}

/// Runs `property` on `cases` inputs of `strategy` and reports how many ran clean.
fn fuzz<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let executions = std::sync::atomic::AtomicU64::new(0);
    let started = Instant::now();
    let result = runner.run(&strategy, |input| {
        executions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        property(input)
    });
    if let Err(failure) = result {
        panic!("{name}: {failure}");
    }
    eprintln!(
        "fuzz {name}: {} executions clean in {:.1} s",
        executions.into_inner(),
        started.elapsed().as_secs_f64()
    );
}

// ---- strategies ---------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..24).prop_map(|chars| chars.into_iter().collect())
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map(text(), inner, 0..6)
                .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
        ]
    })
}

/// An optional report: `Some(null)` is written as `null` and read back as `None`, which means
/// the same to the sweep, so the round trip is checked on the other values.
fn report() -> impl Strategy<Value = Option<serde_json::Value>> {
    proptest::option::of(json_value().prop_filter("null travels as None", |value| !value.is_null()))
}

/// A side's path facts with free text where a peer can put any (issue 44: cleaned at decode).
fn path_facts() -> impl Strategy<Value = Option<gdrperf_ceiling::EndFacts>> {
    let texts = || proptest::collection::vec(text(), 0..3);
    proptest::option::of(
        (text(), proptest::option::of(text()), proptest::option::of(text()), texts(), texts(), any::<u8>())
            .prop_map(|(nic, software_device, port_rate, acs_redirecting, iommu_translating, port)| {
                gdrperf_ceiling::EndFacts {
                    nic,
                    port,
                    software_device,
                    link_layer: None,
                    port_rate,
                    active_mtu: None,
                    max_mtu: None,
                    nic_pcie: None,
                    gpu_pcie: None,
                    memory: gdrperf_ceiling::MemoryPath::Host,
                    gpu_nic_relation: None,
                    acs_redirecting,
                    path_findings: Vec::new(),
                    iommu_translating,
                    nic_numa_node: None,
                    thread_numa_node: None,
                    staged_copy: None,
                    relaxed_ordering_asked: None,
                }
            }),
    )
}

fn hello() -> impl Strategy<Value = Hello> {
    let endpoint = (
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        proptest::option::of(proptest::array::uniform16(any::<u8>())),
    )
        .prop_map(|(qp_number, psn, lid, gid)| Endpoint { qp_number, psn, lid, gid: gid.map(Gid) });
    let buffer = (any::<u64>(), any::<u32>(), any::<u64>()).prop_map(|(address, rkey, len)| RemoteBuffer {
        address,
        rkey,
        len,
    });
    let memory = proptest::sample::select(vec![
        MemoryKind::Host,
        MemoryKind::Cuda,
        MemoryKind::CudaStaged,
        MemoryKind::HostStaged,
    ]);
    let side = (text(), any::<u8>(), any::<u32>(), memory, proptest::option::of(text()), path_facts())
        .prop_map(|(device, port, active_mtu, memory, gpu, path)| SideInfo {
            device,
            port,
            active_mtu,
            memory,
            gpu,
            path,
        });
    (
        any::<u32>(),
        text(),
        text(),
        json_value(),
        side,
        proptest::collection::vec(endpoint, 0..4),
        proptest::collection::vec(buffer, 0..4),
        (
            proptest::collection::vec(text(), 0..3),
            any::<u32>(),
            proptest::option::of(any::<u16>()),
            proptest::option::of(proptest::array::uniform16(any::<u8>())),
        ),
    )
        .prop_map(
            |(
                version,
                gdrperf_version,
                host,
                parameters,
                side,
                endpoints,
                buffers,
                (placements, lane, rdma_cm_port, rdma_cm_secret),
            )| {
                Hello {
                    version,
                    gdrperf_version,
                    host,
                    parameters,
                    side,
                    endpoints,
                    buffers,
                    placements,
                    lane,
                    rdma_cm_port,
                    rdma_cm_secret: rdma_cm_secret.map(gdrperf_verbs::CmSecret::from_bytes),
                }
            },
        )
}

fn tag() -> impl Strategy<Value = Option<[u8; AUTH_TAG_BYTES]>> {
    proptest::option::of(proptest::array::uniform32(any::<u8>()))
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<u32>(), proptest::array::uniform32(any::<u8>()), any::<bool>()).prop_map(
            |(version, nonce, token_required)| Message::Challenge { version, nonce, token_required }
        ),
        (any::<u32>(), proptest::array::uniform32(any::<u8>()), tag())
            .prop_map(|(version, nonce, tag)| Message::Proof { version, nonce, tag }),
        tag().prop_map(|tag| Message::Accepted { tag }),
        (json_value(), any::<u32>()).prop_map(|(parameters, lane)| Message::Terms { parameters, lane }),
        hello().prop_map(|hello| Message::Hello(Box::new(hello))),
        any::<u64>().prop_map(|size| Message::StartSize { size }),
        Just(Message::Ready),
        Just(Message::RdmaCmListening),
        (any::<u64>(), report()).prop_map(|(size, report)| Message::SizeDone { size, report }),
        (any::<u64>(), proptest::option::of(text()), report()).prop_map(
            |(size, validation_error, report)| Message::SizeResult { size, validation_error, report }
        ),
        text().prop_map(|message| Message::Failed { message }),
        Just(Message::Goodbye),
        any::<u32>().prop_map(|round| Message::NextPlacement { round }),
    ]
}

/// Pieces of JSON and of our own vocabulary, so that random sequences get past the first byte
/// of the parser and into the message shapes.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "255",
    "256",
    "4294967296",
    "18446744073709551616",
    "1e999",
    "-0.5",
    "\"Hello\"",
    "\"Challenge\"",
    "\"Terms\"",
    "\"parameters\"",
    "\"lane\"",
    "\"placements\"",
    "\"rdma_cm_port\"",
    "\"rdma_cm_secret\"",
    "\"RdmaCmListening\"",
    "\"NextPlacement\"",
    "\"round\"",
    "\"Proof\"",
    "\"Accepted\"",
    "\"StartSize\"",
    "\"Ready\"",
    "\"SizeDone\"",
    "\"SizeResult\"",
    "\"Failed\"",
    "\"Goodbye\"",
    "\"version\"",
    "\"nonce\"",
    "\"tag\"",
    "\"token_required\"",
    "\"size\"",
    "\"report\"",
    "\"endpoints\"",
    "\"buffers\"",
    "\"gid\"",
    "\"rkey\"",
    "\"parameters\"",
    "\"side\"",
    "\"message\"",
    "\"\\u0000\"",
    "\"\\ud800\"",
    " ",
    "\n",
];

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(TOKENS), 0..96)
        .prop_map(|tokens| tokens.concat().into_bytes())
}

/// A change to a valid frame.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Truncate { at: usize },
    Insert { at: usize, byte: u8 },
    Remove { at: usize },
    Prefix { len: u32 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Remove { at }),
        any::<u32>().prop_map(|len| Mutation::Prefix { len }),
    ]
}

fn mutate(frame: &mut Vec<u8>, mutation: &Mutation) {
    let len = frame.len();
    match *mutation {
        Mutation::Flip { at, bit } => frame[at % len] ^= 1 << bit,
        Mutation::Truncate { at } => frame.truncate(at % (len + 1)),
        Mutation::Insert { at, byte } => frame.insert(at % (len + 1), byte),
        Mutation::Remove { at } => {
            frame.remove(at % len);
        }
        Mutation::Prefix { len } => frame[..4].copy_from_slice(&len.to_be_bytes()),
    }
}

/// Decodes `bytes` as a frame and checks what any answer must satisfy.
fn decode_checked(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (result, largest) = largest_allocation_of(|| decode_frame(bytes));
    prop_assert!(
        largest <= allocation_budget(bytes.len()),
        "decoding {} bytes allocated {largest} at once",
        bytes.len()
    );
    match result {
        Ok(Some((message, used))) => {
            prop_assert!(used <= bytes.len());
            // Whatever was accepted is a well-formed message: it survives its own round trip.
            prop_assert!(decode_body(&encode(&message)[4..]).is_ok());
        }
        Ok(None) => prop_assert!(
            bytes.len() < 4
                || frame_length(bytes[..4].try_into().unwrap()).is_ok_and(|len| bytes.len() < 4 + len)
        ),
        Err(detail) => prop_assert!(!detail.to_string().is_empty()),
    }
    Ok(())
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body);
    frame
}

// ---- properties ----------------------------------------------------------------------------

#[test]
fn the_allocation_tracker_sees_a_large_allocation() {
    let (buffer, largest) = largest_allocation_of(|| vec![1u8; 1 << 20]);
    assert!(largest >= buffer.len(), "tracker saw {largest}");
    assert!(largest > allocation_budget(100), "the budget must be able to fail");
}

#[test]
fn valid_messages_round_trip() {
    fuzz("round trip", cases(), message(), |message| {
        let frame = encode(&message);
        let decoded = decode_frame(&frame).map_err(|error| TestCaseError::fail(error.to_string()))?;
        let Some((decoded, used)) = decoded else {
            return Err(TestCaseError::fail("a whole frame decoded to None"));
        };
        prop_assert_eq!(used, frame.len());
        // A peer's text is cleaned where it is decoded (control characters escaped, long text
        // cut): clean text comes back as sent, and cleaned text is a fixed point.
        let shown = format!("{message:?}");
        let has_control = ["\\u{", "\\n", "\\r", "\\t", "\\0"].iter().any(|escape| shown.contains(escape));
        if !has_control && shown.len() < 400 {
            prop_assert_eq!(&decoded, &message);
        }
        let again =
            decode_frame(&encode(&decoded)).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(again.map(|(message, _)| message), Some(decoded));
        Ok(())
    });
}

#[test]
fn random_bytes_are_refused_not_a_panic() {
    fuzz("random bytes", cases(), proptest::collection::vec(any::<u8>(), 0..512), |bytes| {
        decode_checked(&bytes)?;
        decode_checked(&framed(&bytes))
    });
}

#[test]
fn json_shaped_garbage_is_refused_not_a_panic() {
    fuzz("json-shaped garbage", cases(), token_soup(), |body| decode_checked(&framed(&body)));
}

#[test]
fn mutated_valid_frames_are_decoded_or_refused() {
    let strategy = (message(), proptest::collection::vec(mutation(), 1..4));
    fuzz("mutated frames", cases(), strategy, |(message, mutations)| {
        let mut frame = encode(&message);
        for mutation in &mutations {
            if frame.len() < 4 {
                break;
            }
            mutate(&mut frame, mutation);
        }
        decode_checked(&frame)
    });
}

#[test]
fn length_prefixes_over_the_limit_are_refused_before_reading_the_body() {
    let strategy = (MAX_MESSAGE_BYTES as u32 + 1)..=u32::MAX;
    fuzz("oversized prefixes", cases(), strategy, |len| {
        prop_assert_eq!(frame_length(len.to_be_bytes()), Err(len as usize));
        let (result, largest) = largest_allocation_of(|| decode_frame(&len.to_be_bytes()));
        prop_assert!(result.is_err(), "a {len}-byte prefix must be refused even without a body");
        prop_assert!(largest < 4096, "refusing allocated {largest} bytes");
        Ok(())
    });
}

#[test]
fn nesting_deeper_than_the_parser_allows_is_an_error_not_a_stack_overflow() {
    for depth in [100, 129, 1000, 100_000] {
        let parameters = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let body = format!(r#"{{"SizeDone":{{"size":1,"report":{parameters}}}}}"#);
        let result = decode_body(body.as_bytes());
        assert_eq!(result.is_ok(), depth <= 127, "depth {depth}: {result:?}");
    }
}

/// A connected pair: our side as a server that accepted, and the raw stream of a fake peer.
fn connected(timeout: Duration) -> (Control, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = TcpStream::connect(("127.0.0.1", port)).unwrap();
    (Control::accept(&listener, timeout).unwrap(), peer)
}

#[test]
fn byte_streams_from_a_socket_end_in_a_message_or_an_error() {
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        token_soup().prop_map(|body| framed(&body)),
        (message(), mutation()).prop_map(|(message, mutation)| {
            let mut frame = encode(&message);
            mutate(&mut frame, &mutation);
            frame
        }),
    ];
    fuzz("socket streams", socket_cases(), strategy, |bytes| {
        let (mut control, mut peer) = connected(Duration::from_secs(5));
        peer.write_all(&bytes).unwrap();
        drop(peer);
        let started = Instant::now();
        let (result, largest) = largest_allocation_of(|| control.receive("fuzzing"));
        prop_assert!(started.elapsed() < Duration::from_secs(4), "a closed stream must end the wait at once");
        // Reading a frame allocates the length its prefix declares, which the limit caps.
        let budget = allocation_budget(bytes.len()).max(MAX_MESSAGE_BYTES);
        prop_assert!(largest <= budget, "{} bytes allocated {largest} at once", bytes.len());
        if let Err(error) = result {
            prop_assert!(
                !matches!(error, ExchangeError::Timeout { .. } | ExchangeError::Trickle { .. }),
                "{error}"
            );
        }
        Ok(())
    });
}

#[test]
fn peers_of_another_protocol_version_are_refused_naming_both() {
    let strategy = any::<u32>().prop_filter("another version", |version| *version != PROTOCOL_VERSION);
    fuzz("version mismatch", socket_cases(), strategy, |theirs| {
        // A server of another version challenges us: the client refuses before its hello.
        let (mut client_side, mut server) = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let client = Control::connect("127.0.0.1", port, Duration::from_secs(5), "fuzz").unwrap();
            (client, listener.accept().unwrap().0)
        };
        let challenge = Message::Challenge { version: theirs, nonce: [0; 32], token_required: false };
        server.write_all(&encode(&challenge)).unwrap();
        let hello = Hello {
            version: PROTOCOL_VERSION,
            gdrperf_version: "test".into(),
            host: "here".into(),
            parameters: serde_json::json!({}),
            side: SideInfo {
                device: "rxe0".into(),
                port: 1,
                active_mtu: 1024,
                memory: MemoryKind::Host,
                gpu: None,
                path: None,
            },
            endpoints: vec![],
            buffers: vec![RemoteBuffer { address: 0x1000, rkey: 0x1234, len: 64 }],
            placements: vec![],
            lane: 0,
            rdma_cm_port: None,
            rdma_cm_secret: None,
        };
        let error = client_side.exchange_hello(&hello, None).unwrap_err();
        prop_assert!(
            matches!(error, ExchangeError::Version { ours: PROTOCOL_VERSION, theirs: got, .. } if got == theirs),
            "{error}"
        );
        // A client of another version answers our challenge: the server refuses likewise.
        let (mut server_side, mut client) = connected(Duration::from_secs(5));
        let proof = Message::Proof { version: theirs, nonce: [0; 32], tag: None };
        client.write_all(&encode(&proof)).unwrap();
        let error = server_side.exchange_hello(&hello, None).unwrap_err();
        prop_assert!(matches!(error, ExchangeError::Version { theirs: got, .. } if got == theirs), "{error}");
        Ok(())
    });
}
