//! The NIC thread, started when the device first opens: executes each queue pair's requests in order when they are due, as copies
//! between registered regions, and completes them, honouring keys, rights, bounds,
//! receive-not-ready, the injected fault and a vanished peer.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Instant;

use rdma_mummy_sys::ibv_wc_opcode as opcode;
use rdma_mummy_sys::ibv_wc_status as status;
use sideway::ibverbs::AccessFlags;

use super::queue_pair::{flushed, push};
use super::settings::{Settings, DEVICE_NAME, RNR_RETRY_FOR_EVER};
use super::state::{lock, shared, Nic, Pending, QpState, QueuePair, RNR_DELAY, SPIN_BELOW};
use crate::work_request::{LocalSlice, Operation, SendRequest, WorkCompletion};
use crate::{Result, VerbsError};

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
