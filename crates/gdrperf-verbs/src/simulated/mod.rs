//! A simulated NIC: the verbs of this crate done as copies between registered regions of one
//! process, so that the harness and its engines run, post, poll and check data without an RDMA
//! device (in `cargo test`, on a laptop, on a GPU host without a NIC).
//!
//! It is never a measurement: its devices are named [`DEVICE_NAME`] ("simulated0") and
//! `simulated1` to `simulated7` (each a port of its own, at the same configured rate), which every
//! result row carries in its `device` column and the run header prints, and its figures come from
//! a configured rate and latency, not from hardware.
//!
//! What it honours, as a NIC does: keys (a request quoting an lkey or rkey that no region of the
//! QP's protection domain has fails), access rights (of the region and of the target QP), bounds,
//! queue depths (a post beyond the send or receive depth fails with ENOMEM, slots of unsignalled
//! requests free when a later signalled one is polled), signalling (only signalled requests and
//! errors complete), receive-not-ready (a SEND or WRITE with immediate finding no receive waits
//! and retries, as `rnr_retry` 7 does), in-order execution per QP, error completions (remote
//! access, local protection, length, a peer QP destroyed: "transport retry counter exceeded",
//! then every later request flushed).
//!
//! One NIC thread per process executes the requests in order of their due time: a request is
//! due when the simulated port has sent the bytes queued before it and its own (at the configured
//! rate) plus the configured latency. Server and client must live in one process (`--loopback`,
//! `--concurrent` lanes, or two threads of a test): the simulated QPs find each other in a
//! process-wide registry by QP number, and two processes share no memory. Cross-process runs
//! are not supported.
//!
//! Settings come from the environment variable [`ENVIRONMENT`] (`GDRPERF_SIMULATED_NIC`): set at
//! all, it lists the simulated device first (so it is the default device); its value is
//! `1` or a comma-separated list of `rate=GBIT_PER_S`, `latency=MICROSECONDS`, the injected
//! fault `fail_after=N` (the N-th request the NIC executes in this process fails with "transport
//! retry counter exceeded", as a vanished peer's would), `rnr_retry=N` (0 to 7, as the QP
//! attribute: a SEND or WRITE with immediate that finds no receive N times more fails with "RNR
//! retry counter exceeded"; 7, the default, retries for ever as the benches' QPs do), and the
//! test hook `post_list=N` (a post call carrying data of any other number of requests fails with
//! EINVAL: a bench's `-l` lists, checked; calls of zero-byte requests, gdr-send-bw's credits, are
//! not lists and pass). `rnr_retry=0` turns every receiver-not-ready into an error, so a
//! run that passes under it never sent without a credit: what Soft-RoCE's RNR counters show, made
//! a decision.
//!
//! This file holds the NIC's state, behind one lock, and opens the device; `settings` reads the
//! rate, latency and faults and knows the device names, `regions` registers memory and copies
//! into and out of it, `queue_pair` is the verbs a bench calls (completion queues, queue pairs,
//! posts), and `execution` the NIC thread that carries the posted requests out.

mod execution;
mod queue_pair;
mod regions;
mod settings;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use sideway::ibverbs::AccessFlags;

use crate::work_request::{LocalSlice, SendRequest, WorkCompletion};
use crate::{Result, VerbsError};

pub(crate) use queue_pair::{create_qp, CompletionQueue, QueuePairHandle};
pub use regions::CopiedMemory;
pub(crate) use regions::{alloc_pd, register, ProtectionDomain, RegisteredRegion};
pub use settings::{is_simulated, listed, port_of, Settings};

/// The simulated device's name: what `-d` takes and what every row's `device` column says.
/// It is the first of [`DEVICE_COUNT`] simulated devices (`simulated0`, `simulated1`, ...), each
/// a port of its own, so that lanes with a NIC each (two rails on one GPU) run without hardware.
pub const DEVICE_NAME: &str = "simulated0";

/// How many simulated devices open by name (`simulated0` to `simulated7`). No source: a chosen
/// bound, the eight rails of an 8-GPU HGX node, enough for any lane test while a typo such as
/// `simulated42` is still refused as an unknown device.
pub const DEVICE_COUNT: usize = 8;

/// The environment variable that lists the simulated device and sets its rate, latency and faults.
pub const ENVIRONMENT: &str = "GDRPERF_SIMULATED_NIC";

/// The receiver-not-ready wait before a SEND is tried again (the RNR timer of 0.64 ms the QPs
/// are connected with, `MIN_RNR_TIMER`).
const RNR_DELAY: Duration = Duration::from_micros(640);

/// `rnr_retry` 7: retry for ever (the InfiniBand encoding, and what the benches' QPs ask for).
const RNR_RETRY_FOR_EVER: u8 = 7;

/// Waits shorter than this are spun by the NIC thread rather than slept.
const SPIN_BELOW: Duration = Duration::from_micros(200);

/// A registered region as the NIC sees it.
struct Region {
    protection_domain: u32,
    address: u64,
    len: usize,
    /// The rights it was registered with (`RemoteAccess::flags`).
    access: AccessFlags,
    /// `None`: host memory at `address`; otherwise reached through its copies.
    copied: Option<Arc<dyn CopiedMemory>>,
}

/// A completion waiting in a CQ, with the send-queue slots its polling frees.
struct Queued {
    completion: WorkCompletion,
    frees: Option<(Arc<AtomicU32>, u32)>,
}

type CompletionRing = Arc<Mutex<VecDeque<Queued>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QpState {
    Init,
    ReadyToSend,
    Error,
}

/// A send request the NIC has not executed yet.
struct Pending {
    request: SendRequest,
    due: Instant,
    /// Unsignalled requests before it whose slots its completion frees (plus its own).
    slots: u32,
    /// Receiver-not-ready retries it has had.
    rnr_retries: u8,
}

struct QueuePair {
    protection_domain: u32,
    /// The port (device) its requests go out of: each device's port has its own rate.
    port: usize,
    completions: CompletionRing,
    /// What the peer's requests may do here (`RemoteAccess::flags`).
    access: AccessFlags,
    send_depth: u32,
    recv_depth: u32,
    /// The largest inline request it takes (`max_inline_data` asked at creation).
    max_inline: u32,
    peer: Option<u32>,
    state: QpState,
    receives: VecDeque<(u64, LocalSlice)>,
    sends: VecDeque<Pending>,
    /// Send-queue slots taken: posted and not yet freed by a polled completion.
    occupied: Arc<AtomicU32>,
    /// Unsignalled requests posted since the last signalled one.
    unsignalled: u32,
    /// What `-S` and `-T` set at connect (`address_quality_of_service`).
    quality_of_service: (u8, u8),
}

/// The NIC's whole state, behind one lock.
struct Nic {
    settings: Settings,
    next_number: u32,
    regions: HashMap<u32, Region>,
    queue_pairs: HashMap<u32, QueuePair>,
    /// When each simulated port (one per device) has sent every byte queued on it so far.
    port_free_at: [Instant; DEVICE_COUNT],
    executed: u64,
    thread_started: bool,
}

struct Shared {
    nic: Mutex<Nic>,
    work: Condvar,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        nic: Mutex::new(Nic {
            settings: Settings::default(),
            // Small numbers look like keys and QP numbers of a real device, and 0 is no key.
            next_number: 0x100,
            regions: HashMap::new(),
            queue_pairs: HashMap::new(),
            port_free_at: [Instant::now(); DEVICE_COUNT],
            executed: 0,
            thread_started: false,
        }),
        work: Condvar::new(),
    })
}

/// The NIC's lock; a panic elsewhere while holding it leaves the state usable (every change
/// under it is whole before anything can panic).
fn lock() -> MutexGuard<'static, Nic> {
    shared().nic.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Nic {
    fn number(&mut self) -> u32 {
        self.next_number += 1;
        self.next_number
    }
}

/// Opens the simulated device: reads the settings (once per open, so a test may change them
/// between runs) and starts the NIC thread on first use.
pub(crate) fn open() -> Result<Settings> {
    let settings = Settings::from_environment()?;
    let mut nic = lock();
    nic.settings = settings;
    if !nic.thread_started {
        std::thread::Builder::new()
            .name("simulated-nic".into())
            .spawn(execution::run_nic)
            .map_err(|source| VerbsError::OpenDevice { device: DEVICE_NAME.to_string(), source })?;
        nic.thread_started = true;
    }
    Ok(settings)
}
