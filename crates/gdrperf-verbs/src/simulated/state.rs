//! The simulated NIC's whole state, behind one lock: its queue pairs with their queued requests
//! and completions, its registrations, and when each port is free again.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use sideway::ibverbs::AccessFlags;

use super::memory::Region;
use super::settings::{Settings, DEVICE_COUNT};
use crate::work_request::{LocalSlice, SendRequest, WorkCompletion};

/// The receiver-not-ready wait before a SEND is tried again (the RNR timer of 0.64 ms the QPs
/// are connected with, `MIN_RNR_TIMER`).
pub(super) const RNR_DELAY: Duration = Duration::from_micros(640);

/// Waits shorter than this are spun by the NIC thread rather than slept.
pub(super) const SPIN_BELOW: Duration = Duration::from_micros(200);

/// A completion waiting in a CQ, with the send-queue slots its polling frees.
pub(super) struct Queued {
    pub(super) completion: WorkCompletion,
    pub(super) frees: Option<(Arc<AtomicU32>, u32)>,
}

pub(super) type CompletionRing = Arc<Mutex<VecDeque<Queued>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QpState {
    Init,
    ReadyToSend,
    Error,
}

/// A send request the NIC has not executed yet.
pub(super) struct Pending {
    pub(super) request: SendRequest,
    pub(super) due: Instant,
    /// Unsignalled requests before it whose slots its completion frees (plus its own).
    pub(super) slots: u32,
    /// Receiver-not-ready retries it has had.
    pub(super) rnr_retries: u8,
}

pub(super) struct QueuePair {
    pub(super) protection_domain: u32,
    /// The port (device) its requests go out of: each device's port has its own rate.
    pub(super) port: usize,
    pub(super) completions: CompletionRing,
    /// What the peer's requests may do here (`RemoteAccess::flags`).
    pub(super) access: AccessFlags,
    pub(super) send_depth: u32,
    pub(super) recv_depth: u32,
    /// The largest inline request it takes (`max_inline_data` asked at creation).
    pub(super) max_inline: u32,
    pub(super) peer: Option<u32>,
    pub(super) state: QpState,
    pub(super) receives: VecDeque<(u64, LocalSlice)>,
    pub(super) sends: VecDeque<Pending>,
    /// Send-queue slots taken: posted and not yet freed by a polled completion.
    pub(super) occupied: Arc<AtomicU32>,
    /// Unsignalled requests posted since the last signalled one.
    pub(super) unsignalled: u32,
    /// What `-S` and `-T` set at connect (`address_quality_of_service`).
    pub(super) quality_of_service: (u8, u8),
}

/// The NIC's whole state, behind one lock.
pub(super) struct Nic {
    pub(super) settings: Settings,
    pub(super) next_number: u32,
    pub(super) regions: HashMap<u32, Region>,
    pub(super) queue_pairs: HashMap<u32, QueuePair>,
    /// When each simulated port (one per device) has sent every byte queued on it so far.
    pub(super) port_free_at: [Instant; DEVICE_COUNT],
    pub(super) executed: u64,
    pub(super) thread_started: bool,
}

pub(super) struct Shared {
    pub(super) nic: Mutex<Nic>,
    pub(super) work: Condvar,
}

pub(super) fn shared() -> &'static Shared {
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
pub(super) fn lock() -> MutexGuard<'static, Nic> {
    shared().nic.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Nic {
    pub(super) fn number(&mut self) -> u32 {
        self.next_number += 1;
        self.next_number
    }
}
