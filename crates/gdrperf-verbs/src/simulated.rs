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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rdma_mummy_sys::ibv_wc_opcode as opcode;
use rdma_mummy_sys::ibv_wc_status as status;

use sideway::ibverbs::AccessFlags;

use crate::work_request::{LocalSlice, Operation, SendRequest, WorkCompletion};
use crate::{Result, VerbsError};

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

/// How the simulated port behaves; see the module's documentation for the spelling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Bytes per second the simulated port moves (all QPs of the process share it).
    pub bytes_per_second: f64,
    /// Added to every request between its last byte and its completion.
    pub latency: Duration,
    /// The 1-based count of the executed request that fails (an injected fault).
    pub fail_after: Option<u64>,
    /// Receiver-not-ready retries before a request fails; 7 (the IB encoding of "for ever").
    pub rnr_retry: u8,
    /// Every post call carrying data must carry exactly this many requests, else it fails with
    /// EINVAL: the test hook that shows a bench posts in lists of `-l/--post_list` (`post_list=N`).
    /// Calls of zero-byte requests only (gdr-send-bw's credits) are not lists and pass.
    pub post_list: Option<u32>,
}

impl Default for Settings {
    /// 25 Gb/s and 2 us: a plausible RoCE port, so that timing code sees plausible numbers.
    fn default() -> Self {
        Settings {
            bytes_per_second: 25e9 / 8.0,
            latency: Duration::from_micros(2),
            fail_after: None,
            rnr_retry: RNR_RETRY_FOR_EVER,
            post_list: None,
        }
    }
}

impl Settings {
    /// Parses the value of [`ENVIRONMENT`]: `1`, empty, or `key=value` pairs joined by commas.
    pub fn parse(text: &str) -> Result<Settings> {
        let mut settings = Settings::default();
        let bad = |reason: String| VerbsError::SimulatedSettings { value: text.to_string(), reason };
        for part in text.split(',').map(str::trim).filter(|part| !part.is_empty() && *part != "1") {
            let (key, value) =
                part.split_once('=').ok_or_else(|| bad(format!("'{part}' is not key=value")))?;
            let number: f64 =
                value.trim().parse().map_err(|_| bad(format!("'{value}' is not a number for {key}")))?;
            if !number.is_finite() || number < 0.0 {
                return Err(bad(format!("{key} must be a finite number >= 0")));
            }
            match key.trim() {
                "rate" if number > 0.0 => settings.bytes_per_second = number * 1e9 / 8.0,
                "rate" => return Err(bad("rate must be above 0 Gb/s".to_string())),
                "latency" => settings.latency = Duration::from_secs_f64(number / 1e6),
                "fail_after" if number >= 1.0 && number.fract() == 0.0 => {
                    settings.fail_after = Some(number as u64)
                }
                "fail_after" => return Err(bad("fail_after must be a whole number >= 1".to_string())),
                "rnr_retry" if number <= f64::from(RNR_RETRY_FOR_EVER) && number.fract() == 0.0 => {
                    settings.rnr_retry = number as u8
                }
                "rnr_retry" => return Err(bad("rnr_retry must be a whole number from 0 to 7".to_string())),
                "post_list" if number >= 1.0 && number.fract() == 0.0 && number <= f64::from(u32::MAX) => {
                    settings.post_list = Some(number as u32)
                }
                "post_list" => return Err(bad("post_list must be a whole number >= 1".to_string())),
                other => {
                    return Err(bad(format!(
                        "unknown key '{other}' (known: rate, latency, fail_after, rnr_retry, post_list)"
                    )))
                }
            }
        }
        Ok(settings)
    }

    /// The settings of this process: [`ENVIRONMENT`]'s, or the defaults where it is unset.
    pub fn from_environment() -> Result<Settings> {
        match std::env::var(ENVIRONMENT) {
            Ok(value) => Settings::parse(&value),
            Err(_) => Ok(Settings::default()),
        }
    }
}

/// Whether [`ENVIRONMENT`] asks for the simulated device to be listed (set and not `0`).
pub fn listed() -> bool {
    std::env::var(ENVIRONMENT).is_ok_and(|value| value.trim() != "0")
}

/// Whether `name` names a simulated device (`simulated0` to `simulated7`).
pub fn is_simulated(name: &str) -> bool {
    port_of(name).is_some()
}

/// The port (0-based) of the simulated device `name`: `simulated1` is port 1. `None` for any
/// other name, including spellings such as `simulated01` that would alias a device.
pub fn port_of(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("simulated")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    let port: usize = digits.parse().ok().filter(|_| canonical)?;
    (port < DEVICE_COUNT).then_some(port)
}

/// Memory the simulated NIC reaches by copies rather than by address: GPU memory, whose
/// device pointers the CPU cannot dereference (the harness implements it with CUDA copies).
pub trait CopiedMemory: Send + Sync {
    /// Copies `into.len()` bytes at `offset` of the memory into `into`.
    fn read(&self, offset: usize, into: &mut [u8]) -> std::result::Result<(), String>;
    /// Copies `bytes` into the memory at `offset`.
    fn write(&self, offset: usize, bytes: &[u8]) -> std::result::Result<(), String>;
}

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

impl Region {
    fn covers(&self, address: u64, len: usize) -> bool {
        address >= self.address
            && address.checked_add(len as u64).is_some_and(|end| end <= self.address + self.len as u64)
    }

    /// # Safety
    /// The region is registered (its memory alive) and covers `address..address + into.len()`.
    unsafe fn read(&self, address: u64, into: &mut [u8]) -> std::result::Result<(), String> {
        match &self.copied {
            None => {
                // SAFETY: the caller's promise; registration keeps the memory alive.
                unsafe { std::ptr::copy(address as *const u8, into.as_mut_ptr(), into.len()) };
                Ok(())
            }
            Some(memory) => memory.read((address - self.address) as usize, into),
        }
    }

    /// # Safety
    /// As [`Region::read`].
    unsafe fn write(&self, address: u64, bytes: &[u8]) -> std::result::Result<(), String> {
        match &self.copied {
            None => {
                // SAFETY: the caller's promise; registration keeps the memory alive.
                unsafe { std::ptr::copy(bytes.as_ptr(), address as *mut u8, bytes.len()) };
                Ok(())
            }
            Some(memory) => memory.write((address - self.address) as usize, bytes),
        }
    }
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
            .spawn(run_nic)
            .map_err(|source| VerbsError::OpenDevice { device: DEVICE_NAME.to_string(), source })?;
        nic.thread_started = true;
    }
    Ok(settings)
}

impl Settings {
    /// The words the run header shows in place of a firmware version: what the device is and
    /// what its figures come from.
    pub fn describe(&self) -> String {
        format!(
            "SIMULATED NIC, not a measurement: copies in this process at {} Gb/s and {} us latency",
            self.bytes_per_second * 8.0 / 1e9,
            self.latency.as_secs_f64() * 1e6
        )
    }
}

/// A protection domain of the simulated NIC.
#[derive(Debug)]
pub(crate) struct ProtectionDomain {
    id: u32,
    /// The port of the device it was allocated on: its QPs send through that port.
    port: usize,
}

/// A protection domain of the device whose port is `port` (see [`port_of`]).
pub(crate) fn alloc_pd(port: usize) -> ProtectionDomain {
    ProtectionDomain { id: lock().number(), port }
}

/// A registration; dropping it deregisters (under the NIC's lock, so no copy touches the memory
/// afterwards).
#[derive(Debug)]
pub(crate) struct RegisteredRegion {
    key: u32,
}

impl RegisteredRegion {
    pub(crate) fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for RegisteredRegion {
    fn drop(&mut self) {
        lock().regions.remove(&self.key);
    }
}

pub(crate) fn register(
    pd: &ProtectionDomain,
    address: u64,
    len: usize,
    access: AccessFlags,
    copied: Option<Arc<dyn CopiedMemory>>,
) -> RegisteredRegion {
    let mut nic = lock();
    let key = nic.number();
    nic.regions.insert(key, Region { protection_domain: pd.id, address, len, access, copied });
    RegisteredRegion { key }
}

/// A completion queue of the simulated NIC.
pub(crate) struct CompletionQueue {
    ring: CompletionRing,
    scratch: Vec<Queued>,
}

impl CompletionQueue {
    pub(crate) fn new() -> CompletionQueue {
        CompletionQueue { ring: Arc::default(), scratch: Vec::with_capacity(64) }
    }

    /// Up to 64 completions, handed to `each` after the queue's lock is released (`each` may
    /// post, which takes the NIC's lock).
    pub(crate) fn poll<E>(
        &mut self,
        mut each: impl FnMut(WorkCompletion) -> std::result::Result<(), E>,
    ) -> std::result::Result<usize, E> {
        {
            let mut ring = self.ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let found = ring.len().min(self.scratch.capacity());
            self.scratch.extend(ring.drain(..found));
        }
        let found = self.scratch.len();
        let mut result = Ok(found);
        for queued in self.scratch.drain(..) {
            if let Some((occupied, slots)) = &queued.frees {
                // Saturating: the slots of a QP in error are freed by its flushes, one each.
                let _ = occupied.fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                    Some(taken.saturating_sub(*slots))
                });
            }
            if result.is_ok() {
                if let Err(error) = each(queued.completion) {
                    result = Err(error);
                }
            }
        }
        result
    }
}

/// A reliable-connected queue pair of the simulated NIC; dropping it destroys it (a peer's later
/// requests then fail as towards a vanished host).
#[derive(Debug)]
pub(crate) struct QueuePairHandle {
    number: u32,
}

impl Drop for QueuePairHandle {
    fn drop(&mut self) {
        lock().queue_pairs.remove(&self.number);
    }
}

pub(crate) fn create_qp(
    pd: &ProtectionDomain,
    cq: &CompletionQueue,
    (send_depth, recv_depth, max_inline): (u32, u32, u32),
    access: AccessFlags,
) -> QueuePairHandle {
    let mut nic = lock();
    let number = nic.number();
    nic.queue_pairs.insert(
        number,
        QueuePair {
            protection_domain: pd.id,
            port: pd.port,
            completions: Arc::clone(&cq.ring),
            access,
            send_depth,
            recv_depth,
            max_inline,
            peer: None,
            state: QpState::Init,
            receives: VecDeque::new(),
            sends: VecDeque::new(),
            occupied: Arc::default(),
            unsignalled: 0,
            quality_of_service: (0, 0),
        },
    );
    QueuePairHandle { number }
}

impl QueuePairHandle {
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// INIT -> RTS towards the simulated QP `remote` of this process.
    pub(crate) fn connect(&self, remote: u32, quality_of_service: (u8, u8)) -> Result<()> {
        let mut nic = lock();
        if !nic.queue_pairs.contains_key(&remote) {
            return Err(VerbsError::SimulatedPeer { queue_pair: remote });
        }
        let queue_pair = nic
            .queue_pairs
            .get_mut(&self.number)
            .ok_or(VerbsError::SimulatedPeer { queue_pair: self.number })?;
        queue_pair.peer = Some(remote);
        queue_pair.state = QpState::ReadyToSend;
        queue_pair.quality_of_service = quality_of_service;
        Ok(())
    }

    pub(crate) fn quality_of_service(&self) -> Option<(u8, u8)> {
        lock().queue_pairs.get(&self.number).map(|queue_pair| queue_pair.quality_of_service)
    }

    /// Queues `requests` (all or none: a post beyond the send depth fails with ENOMEM, as a
    /// full send queue does).
    pub(crate) fn post_send(&self, requests: impl IntoIterator<Item = SendRequest>) -> Result<()> {
        let requests: Vec<SendRequest> = requests.into_iter().collect();
        let operation = requests.last().map_or("send", |request| request.operation.name());
        let full = |errno| VerbsError::PostSend {
            op: operation,
            source: sideway::ibverbs::queue_pair::PostSendError::Ibverbs(std::io::Error::from_raw_os_error(
                errno,
            )),
        };
        let mut nic = lock();
        let now = Instant::now();
        let settings = nic.settings;
        let port = nic.queue_pairs.get(&self.number).ok_or(full(libc::EINVAL))?.port;
        let mut port_free_at = nic.port_free_at[port].max(now);
        let queue_pair = nic.queue_pairs.get_mut(&self.number).ok_or(full(libc::EINVAL))?;
        if queue_pair.state == QpState::Init {
            return Err(full(libc::EINVAL));
        }
        let taken = queue_pair.occupied.load(Ordering::Acquire);
        // A QP in error takes every request (each is flushed), as a real one does.
        if queue_pair.state != QpState::Error
            && taken as usize + requests.len() > queue_pair.send_depth as usize
        {
            return Err(full(libc::ENOMEM));
        }
        // An inline request longer than the QP's max_inline_data is refused at the post, as a
        // real provider does (rxe: EINVAL in validate_send_wr).
        if requests
            .iter()
            .any(|request| request.inline.is_inline() && request.local.len() > queue_pair.max_inline)
        {
            return Err(full(libc::EINVAL));
        }
        // The test hook of `post_list=N`: a call of any other length is refused, but for calls of
        // zero-byte requests only (gdr-send-bw's credits, posted one at a time as perftest
        // posts its own bookkeeping: they are not the bench's lists).
        let carries_data = requests.iter().any(|request| !request.local.is_empty());
        if carries_data && settings.post_list.is_some_and(|length| requests.len() != length as usize) {
            return Err(full(libc::EINVAL));
        }
        queue_pair.occupied.fetch_add(requests.len() as u32, Ordering::AcqRel);
        for request in requests {
            queue_pair.unsignalled += 1;
            let slots = if request.signaled { std::mem::take(&mut queue_pair.unsignalled) } else { 0 };
            let bytes = match request.operation {
                Operation::FetchAndAdd { .. } | Operation::CompareAndSwap { .. } => 8,
                _ => request.local.len() as usize,
            };
            port_free_at += Duration::from_secs_f64(bytes as f64 / settings.bytes_per_second);
            queue_pair.sends.push_back(Pending {
                request,
                due: port_free_at + settings.latency,
                slots,
                rnr_retries: 0,
            });
        }
        nic.port_free_at[port] = port_free_at;
        drop(nic);
        shared().work.notify_all();
        Ok(())
    }

    /// Queues one receive (ENOMEM beyond the receive depth).
    pub(crate) fn post_receive(&self, wr_id: u64, local: LocalSlice) -> Result<()> {
        let mut nic = lock();
        let queue_pair = nic
            .queue_pairs
            .get_mut(&self.number)
            .ok_or(VerbsError::PostRecv { source: std::io::Error::from_raw_os_error(libc::EINVAL) })?;
        if queue_pair.receives.len() >= queue_pair.recv_depth as usize {
            return Err(VerbsError::PostRecv { source: std::io::Error::from_raw_os_error(libc::ENOMEM) });
        }
        if queue_pair.state == QpState::Error {
            push(&queue_pair.completions, flushed(wr_id, opcode::IBV_WC_RECV), None);
            return Ok(());
        }
        queue_pair.receives.push_back((wr_id, local));
        drop(nic);
        // A SEND waiting for a receive (RNR) may go now.
        shared().work.notify_all();
        Ok(())
    }
}

fn push(ring: &CompletionRing, completion: WorkCompletion, frees: Option<(Arc<AtomicU32>, u32)>) {
    ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push_back(Queued { completion, frees });
}

fn flushed(wr_id: u64, opcode: u32) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: status::IBV_WC_WR_FLUSH_ERR,
        opcode,
        byte_len: 0,
        vendor_err: 0,
        immediate: None,
    }
}

/// The NIC thread: executes the due request of the QP whose head is due first, or sleeps until
/// it is due or new work is posted.
fn run_nic() {
    let shared = shared();
    let mut nic = lock();
    loop {
        let now = Instant::now();
        let next = nic
            .queue_pairs
            .iter()
            .filter_map(|(number, queue_pair)| queue_pair.sends.front().map(|pending| (pending.due, *number)))
            .min();
        nic = match next {
            None => shared.work.wait(nic).unwrap_or_else(|poisoned| poisoned.into_inner()),
            // A short wait is spun (yielding): a timed sleep overshoots by tens of microseconds,
            // which would swamp a latency of a few.
            Some((due, _)) if due > now && due - now < SPIN_BELOW => {
                drop(nic);
                std::thread::yield_now();
                lock()
            }
            Some((due, _)) if due > now => {
                shared.work.wait_timeout(nic, due - now).unwrap_or_else(|poisoned| poisoned.into_inner()).0
            }
            Some((_, number)) => {
                execute_head(&mut nic, number);
                nic
            }
        };
    }
}

/// What executing a request came to.
enum Outcome {
    Done {
        byte_len: u32,
    },
    /// The peer had no receive posted: try again after the RNR delay.
    ReceiverNotReady,
    Failed {
        status: u32,
        peer_status: Option<u32>,
    },
}

fn execute_head(nic: &mut Nic, number: u32) {
    let Some(queue_pair) = nic.queue_pairs.get_mut(&number) else { return };
    let Some(pending) = queue_pair.sends.pop_front() else { return };
    let outcome = if queue_pair.state == QpState::Error {
        Outcome::Failed { status: status::IBV_WC_WR_FLUSH_ERR, peer_status: None }
    } else {
        nic.executed += 1;
        if nic.settings.fail_after == Some(nic.executed) {
            Outcome::Failed { status: status::IBV_WC_RETRY_EXC_ERR, peer_status: None }
        } else {
            perform(nic, number, &pending.request)
        }
    };
    let outcome = match outcome {
        Outcome::ReceiverNotReady
            if nic.settings.rnr_retry < RNR_RETRY_FOR_EVER
                && pending.rnr_retries >= nic.settings.rnr_retry =>
        {
            Outcome::Failed { status: status::IBV_WC_RNR_RETRY_EXC_ERR, peer_status: None }
        }
        other => other,
    };
    let Some(queue_pair) = nic.queue_pairs.get_mut(&number) else { return };
    let request = pending.request;
    let opcode = send_opcode(&request.operation);
    let frees = |slots: u32, occupied: &Arc<AtomicU32>| (slots > 0).then(|| (Arc::clone(occupied), slots));
    match outcome {
        Outcome::ReceiverNotReady => {
            nic.executed -= 1;
            let rnr_retries = pending.rnr_retries.saturating_add(1);
            queue_pair.sends.push_front(Pending { due: Instant::now() + RNR_DELAY, rnr_retries, ..pending });
        }
        Outcome::Done { byte_len } => {
            if request.signaled {
                let completion = WorkCompletion {
                    wr_id: request.wr_id,
                    status: status::IBV_WC_SUCCESS,
                    opcode,
                    byte_len,
                    vendor_err: 0,
                    immediate: None,
                };
                push(&queue_pair.completions, completion, frees(pending.slots, &queue_pair.occupied));
            }
        }
        Outcome::Failed { status: failed, peer_status } => {
            // An error completes whether signalled or not (a flush too: every request after the
            // first error completes flushed); the QP goes to the error state.
            let slots = if request.signaled { pending.slots.max(1) } else { 1 };
            let completion = WorkCompletion {
                wr_id: request.wr_id,
                status: failed,
                opcode,
                byte_len: 0,
                vendor_err: 0,
                immediate: None,
            };
            push(&queue_pair.completions, completion, frees(slots, &queue_pair.occupied));
            queue_pair.state = QpState::Error;
            flush_receives(queue_pair);
            let peer = queue_pair.peer;
            if let (Some(peer_status), Some(peer)) =
                (peer_status, peer.and_then(|peer| nic.queue_pairs.get_mut(&peer)))
            {
                peer.state = QpState::Error;
                if let Some((wr_id, _)) = peer.receives.pop_front() {
                    let completion = WorkCompletion {
                        wr_id,
                        status: peer_status,
                        opcode: opcode::IBV_WC_RECV,
                        byte_len: 0,
                        vendor_err: 0,
                        immediate: None,
                    };
                    push(&peer.completions, completion, None);
                }
                flush_receives(peer);
            }
        }
    }
}

fn flush_receives(queue_pair: &mut QueuePair) {
    for (wr_id, _) in queue_pair.receives.drain(..) {
        push(&queue_pair.completions, flushed(wr_id, opcode::IBV_WC_RECV), None);
    }
}

fn send_opcode(operation: &Operation) -> u32 {
    match operation {
        Operation::Write { .. } | Operation::WriteWithImmediate { .. } => opcode::IBV_WC_RDMA_WRITE,
        Operation::Read { .. } => opcode::IBV_WC_RDMA_READ,
        Operation::Send | Operation::SendWithImmediate { .. } => opcode::IBV_WC_SEND,
        Operation::FetchAndAdd { .. } => opcode::IBV_WC_FETCH_ADD,
        Operation::CompareAndSwap { .. } => opcode::IBV_WC_COMP_SWAP,
    }
}

/// The local region a slice of `protection_domain` names, if its key and bounds hold.
fn local_region(nic: &Nic, protection_domain: u32, slice: &LocalSlice) -> Option<u32> {
    if slice.is_empty() {
        return Some(0);
    }
    let region = nic.regions.get(&slice.lkey())?;
    (region.protection_domain == protection_domain && region.covers(slice.address(), slice.len() as usize))
        .then_some(slice.lkey())
}

/// The remote region `rkey` names, if it belongs to the peer's protection domain, covers the
/// bytes, and both it and the peer QP allow `wanted`.
fn remote_region(
    nic: &Nic,
    peer: &QueuePair,
    rkey: u32,
    address: u64,
    len: usize,
    wanted: AccessFlags,
) -> Option<u32> {
    let region = nic.regions.get(&rkey)?;
    (region.protection_domain == peer.protection_domain
        && region.covers(address, len)
        && region.access.contains(wanted)
        && peer.access.contains(wanted))
    .then_some(rkey)
}

/// Executes one request of QP `number` (in the ready-to-send state): the copy, the peer's
/// receive completion where there is one, and the outcome for the requester.
fn perform(nic: &mut Nic, number: u32, request: &SendRequest) -> Outcome {
    let remote_access_error = Outcome::Failed { status: status::IBV_WC_REM_ACCESS_ERR, peer_status: None };
    let (protection_domain, peer_number) = match nic.queue_pairs.get(&number) {
        Some(queue_pair) => (queue_pair.protection_domain, queue_pair.peer),
        None => return Outcome::Failed { status: status::IBV_WC_RETRY_EXC_ERR, peer_status: None },
    };
    let Some(peer) = peer_number.and_then(|peer| nic.queue_pairs.get(&peer)) else {
        // The peer QP was destroyed (its process or thread ended): nobody acknowledges.
        return Outcome::Failed { status: status::IBV_WC_RETRY_EXC_ERR, peer_status: None };
    };
    if peer.state == QpState::Error {
        return Outcome::Failed { status: status::IBV_WC_RETRY_EXC_ERR, peer_status: None };
    }
    let local = request.local;
    let inline = request.inline.is_inline();
    let local_key = if inline { Some(0) } else { local_region(nic, protection_domain, &local) };
    let Some(local_key) = local_key else {
        return Outcome::Failed { status: status::IBV_WC_LOC_PROT_ERR, peer_status: None };
    };
    let len = local.len() as usize;
    // Reads the requester's bytes (inline: host memory copied at post in a real NIC; the
    // caller promised it is alive).
    let read_local = |nic: &Nic, into: &mut [u8]| -> std::result::Result<(), String> {
        if into.is_empty() {
            return Ok(());
        }
        match nic.regions.get(&local_key) {
            // SAFETY: the key's region is registered and covers the slice (checked above).
            Some(region) if !inline => unsafe { region.read(local.address(), into) },
            _ => {
                // SAFETY: `Inline::yes()`'s contract: the slice names live host memory.
                unsafe { std::ptr::copy(local.address() as *const u8, into.as_mut_ptr(), into.len()) };
                Ok(())
            }
        }
    };
    let copy_failed = |_: String| Outcome::Failed { status: status::IBV_WC_LOC_PROT_ERR, peer_status: None };
    match request.operation {
        Operation::Write { remote_address, rkey }
        | Operation::WriteWithImmediate { remote_address, rkey, .. } => {
            let immediate = match request.operation {
                Operation::WriteWithImmediate { immediate, .. } => Some(immediate),
                _ => None,
            };
            if immediate.is_some() && peer.receives.is_empty() {
                return Outcome::ReceiverNotReady;
            }
            let Some(target) = remote_region(nic, peer, rkey, remote_address, len, AccessFlags::RemoteWrite)
            else {
                return remote_access_error;
            };
            let mut bytes = vec![0u8; len];
            if let Err(error) = read_local(nic, &mut bytes) {
                return copy_failed(error);
            }
            // SAFETY: checked by remote_region: registered, covering the bytes.
            if let Err(error) = unsafe { nic.regions[&target].write(remote_address, &bytes) } {
                return copy_failed(error);
            }
            if let Some(immediate) = immediate {
                let peer_number = peer_number.unwrap_or_default();
                let Some(peer) = nic.queue_pairs.get_mut(&peer_number) else { return remote_access_error };
                if let Some((wr_id, _)) = peer.receives.pop_front() {
                    let completion = WorkCompletion {
                        wr_id,
                        status: status::IBV_WC_SUCCESS,
                        opcode: opcode::IBV_WC_RECV_RDMA_WITH_IMM,
                        byte_len: len as u32,
                        vendor_err: 0,
                        immediate: Some(immediate),
                    };
                    push(&peer.completions, completion, None);
                }
            }
            Outcome::Done { byte_len: len as u32 }
        }
        Operation::Read { remote_address, rkey } => {
            let Some(source) = remote_region(nic, peer, rkey, remote_address, len, AccessFlags::RemoteRead)
            else {
                return remote_access_error;
            };
            let mut bytes = vec![0u8; len];
            // SAFETY: checked by remote_region.
            if let Err(error) = unsafe { nic.regions[&source].read(remote_address, &mut bytes) } {
                return copy_failed(error);
            }
            if len > 0 {
                // SAFETY: checked by local_region (a READ is never inline).
                if let Err(error) = unsafe { nic.regions[&local_key].write(local.address(), &bytes) } {
                    return copy_failed(error);
                }
            }
            Outcome::Done { byte_len: len as u32 }
        }
        Operation::Send | Operation::SendWithImmediate { .. } => {
            let immediate = match request.operation {
                Operation::SendWithImmediate { immediate } => Some(immediate),
                _ => None,
            };
            let Some(&(wr_id, receive)) = peer.receives.front() else { return Outcome::ReceiverNotReady };
            if (receive.len() as usize) < len {
                return Outcome::Failed {
                    status: status::IBV_WC_REM_INV_REQ_ERR,
                    peer_status: Some(status::IBV_WC_LOC_LEN_ERR),
                };
            }
            let receiver_key = local_region(nic, peer.protection_domain, &receive);
            let Some(receiver_key) = receiver_key else {
                return Outcome::Failed {
                    status: status::IBV_WC_REM_OP_ERR,
                    peer_status: Some(status::IBV_WC_LOC_PROT_ERR),
                };
            };
            let mut bytes = vec![0u8; len];
            if let Err(error) = read_local(nic, &mut bytes) {
                return copy_failed(error);
            }
            if len > 0 {
                // SAFETY: checked by local_region for the receiver's domain.
                if let Err(error) = unsafe { nic.regions[&receiver_key].write(receive.address(), &bytes) } {
                    return copy_failed(error);
                }
            }
            let peer_number = peer_number.unwrap_or_default();
            if let Some(peer) = nic.queue_pairs.get_mut(&peer_number) {
                peer.receives.pop_front();
                let completion = WorkCompletion {
                    wr_id,
                    status: status::IBV_WC_SUCCESS,
                    opcode: opcode::IBV_WC_RECV,
                    byte_len: len as u32,
                    vendor_err: 0,
                    immediate,
                };
                push(&peer.completions, completion, None);
            }
            Outcome::Done { byte_len: len as u32 }
        }
        Operation::FetchAndAdd { remote_address, rkey, .. }
        | Operation::CompareAndSwap { remote_address, rkey, .. } => {
            if remote_address % 8 != 0 || len < 8 {
                return remote_access_error;
            }
            let Some(target) = remote_region(nic, peer, rkey, remote_address, 8, AccessFlags::RemoteAtomic)
            else {
                return remote_access_error;
            };
            let mut old = [0u8; 8];
            // SAFETY: checked by remote_region.
            if let Err(error) = unsafe { nic.regions[&target].read(remote_address, &mut old) } {
                return copy_failed(error);
            }
            let value = u64::from_ne_bytes(old);
            let new = match request.operation {
                Operation::FetchAndAdd { add, .. } => Some(value.wrapping_add(add)),
                Operation::CompareAndSwap { compare, swap, .. } => (value == compare).then_some(swap),
                _ => None,
            };
            if let Some(new) = new {
                // SAFETY: as above.
                if let Err(error) = unsafe { nic.regions[&target].write(remote_address, &new.to_ne_bytes()) }
                {
                    return copy_failed(error);
                }
            }
            // SAFETY: checked by local_region; the old value lands in the first 8 bytes.
            if let Err(error) = unsafe { nic.regions[&local_key].write(local.address(), &old) } {
                return copy_failed(error);
            }
            Outcome::Done { byte_len: 8 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_rate_latency_and_fault_and_refuse_the_rest() {
        assert_eq!(Settings::parse("1").unwrap(), Settings::default());
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
        let settings = Settings::parse("rate=100, latency=0.5,fail_after=7").unwrap();
        assert_eq!(settings.bytes_per_second, 100e9 / 8.0);
        assert_eq!(settings.latency, Duration::from_nanos(500));
        assert_eq!(settings.fail_after, Some(7));
        assert_eq!(settings.rnr_retry, 7, "retry for ever unless asked");
        assert_eq!(Settings::parse("rnr_retry=0").unwrap().rnr_retry, 0);
        assert_eq!(Settings::parse("post_list=4").unwrap().post_list, Some(4));
        for (bad, reason) in [
            ("rnr_retry=8", "from 0 to 7"),
            ("rnr_retry=0.5", "from 0 to 7"),
            ("post_list=0", "post_list must be a whole number >= 1"),
            ("rate=0", "rate must be above 0"),
            ("rate=fast", "'fast' is not a number for rate"),
            ("latency=-1", "must be a finite number >= 0"),
            ("fail_after=1.5", "whole number"),
            ("speed=3", "unknown key 'speed'"),
            ("rate", "is not key=value"),
        ] {
            let error = Settings::parse(bad).unwrap_err().to_string();
            assert!(error.starts_with("invalid configuration: GDRPERF_SIMULATED_NIC="), "{error}");
            assert!(error.contains(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn devices_are_simulated0_to_simulated7_spelled_one_way() {
        assert_eq!(port_of("simulated0"), Some(0));
        assert_eq!(port_of("simulated1"), Some(1));
        assert_eq!(port_of("simulated7"), Some(DEVICE_COUNT - 1));
        for other in [
            "simulated8",
            "simulated",
            "simulated01",
            "simulated+1",
            "simulated-1",
            "Simulated0",
            "mlx5_0",
            "rxe0",
        ] {
            assert_eq!(port_of(other), None, "{other}");
            assert!(!is_simulated(other), "{other}");
        }
    }
}
