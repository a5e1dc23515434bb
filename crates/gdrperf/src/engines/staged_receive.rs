//! The receiving end of a staged stream: every message that lands in its slot of the bounce
//! ring is copied on into the same slot of the payload (GPU memory for `cuda-staged`), as a
//! staged GPU-to-GPU transfer must do. The sender writes with immediate data, so each arrival
//! completes one of the receives posted here.
//!
//! A slot is given back only after its copy in has finished: then its receive is reposted and
//! the sender is sent a credit (a zero-byte SEND whose immediate value says how many more
//! messages were copied in). The sender writes into a slot only once the message before it in
//! that slot was credited, so no message lands on bytes still being copied.

use std::time::Instant;

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::engines::bandwidth::CREDIT_FLAG;
use crate::engines::credits::{credit_batch, CREDIT_RECEIVES};
use crate::error::{Error, Result};
use crate::harness::session::{Session, SessionParts};
use crate::memory::buffers::pattern_seed;
use crate::memory::queue_memory::{QueueMemory, Ring, Staged, Stamps};
use crate::options::config::BenchConfig;
use crate::verbs::completion::opcode;
use crate::verbs::{Inline, LocalSlice, Operation, SendRequest};

/// How many receives to post up front: one per ring slot, or fewer when fewer messages come
/// (a receive left over would overflow the queue at the next size).
pub fn initial_receives(slots: u64, messages_per_qp: u64) -> u64 {
    slots.min(messages_per_qp)
}

/// The receiving side's ring for `size`-byte messages with `depth` in flight.
fn ring(session: &Session, size: usize, depth: u32) -> Ring {
    Ring::new(session.local.buffers[0].region().len(), depth, size)
}

/// Receives kept posted: one per slot (the old shared bounce buffer, for its test: `depth`).
fn receive_slots(ring: Ring, depth: u32, shared_bounce_for_tests: bool) -> u64 {
    match shared_bounce_for_tests {
        true => u64::from(depth),
        false => ring.slots,
    }
}

/// Posts the initial receives on every QP of a staged receiver (before the sender may start).
/// `config`: its `-t` is the depth the sender keeps in flight.
pub fn post_receives(
    session: &mut Session,
    size: usize,
    config: &BenchConfig,
    messages_per_qp: u64,
) -> Result<()> {
    let depth = config.tx_depth;
    let slots = receive_slots(ring(session, size, depth), depth, config.shared_bounce_for_tests);
    for (index, queue_pair) in session.local.queue_pairs.iter_mut().enumerate() {
        for _ in 0..initial_receives(slots, messages_per_qp) {
            queue_pair.post_receive(index as u64, LocalSlice::empty())?;
        }
    }
    Ok(())
}

/// Receives `messages_per_qp` messages on every QP, copying each into the payload, and reports
/// the rate at which data reached the payload: from the first arrival to the last copy done.
/// `config` must be what [`post_receives`] was given. The first `--warmup` messages of each QP
/// are copied like the others but not measured: the clock starts when the last of them is
/// copied. With `--validate`, each message is checked as its copy in finishes (see
/// `memory::staging::ring`).
pub fn receive(
    session: &mut Session,
    size: usize,
    config: &BenchConfig,
    messages_per_qp: u64,
) -> Result<BandwidthReport> {
    let (depth, warmup, stall_timeout, validate) =
        (config.tx_depth, config.warmup, config.timeout, config.validate);
    let shared_bounce = config.shared_bounce_for_tests;
    let ring = ring(session, size, depth);
    let slots = receive_slots(ring, depth, shared_bounce);
    let ring = if shared_bounce { Ring { slots: 1, stride: size } } else { ring };
    let stamped = session.peer_memory().is_staged();
    let SessionParts { queue_pairs, completion_queue, buffers, control, .. } = session.parts();
    let queue_count = queue_pairs.len();
    let mut memories = Vec::with_capacity(queue_count);
    for (index, buffer) in buffers.iter_mut().enumerate() {
        let stamps = validate.then(|| Stamps { seed: pattern_seed(size, index), stamped });
        memories.push(
            Staged::new(buffer, ring, size, stamps)
                .ok_or_else(|| Error::Internal(crate::error::InternalError::NoStagedBuffer))?,
        );
    }
    // Per QP: receives completed, messages copied in (and so credited or about to be), receives posted.
    let mut received = vec![0u64; queue_count];
    let mut copied = vec![0u64; queue_count];
    let mut credited = vec![0u64; queue_count];
    let mut posted = vec![initial_receives(slots, messages_per_qp); queue_count];
    let mut credit_sends = 0u64;
    let send_depth = u64::from(queue_pairs[0].sizes().send_depth.max(1));
    // The writer keeps `credit_receives` receives for our credits: batches bound the credits in
    // flight to that (see `credit_batch`).
    let credit_receives = u64::from(CREDIT_RECEIVES.min(queue_pairs[0].sizes().recv_depth));
    let batch = credit_batch(slots, credit_receives);
    let mut meter =
        BandwidthMeter::new(size as u64, (messages_per_qp as usize * queue_count).min(1 << 22))
            .map_err(|source| Error::Figure { what: format!("bandwidth meter for {size} bytes"), source })?;
    let mut clock = RunClock::start();
    let mut measuring = warmup == 0;
    // Messages copied in the same pass that finished the warm-up: counted at the clock's start.
    let mut beyond_warmup = 0u32;
    let mut last_progress = Instant::now();
    loop {
        control.check_peer()?;
        let mut arrived_now = 0;
        completion_queue.poll(|completion| {
            if completion.wr_id & CREDIT_FLAG != 0 {
                if !completion.is_success() {
                    return Err(completion.error("SEND of a credit", 0).into());
                }
                credit_sends = credit_sends.saturating_sub(1);
                return Ok(());
            }
            if !completion.is_success() {
                return Err(completion.error("RECV (write with immediate)", size).into());
            }
            let index = completion.wr_id as usize;
            if completion.opcode != opcode::RECV_RDMA_WITH_IMM || index >= queue_count {
                return Err(Error::UnexpectedCompletion {
                    wr_id: completion.wr_id,
                    opcode: completion.opcode,
                    expected: "RECV of an RDMA WRITE with immediate",
                });
            }
            // Messages land in order: this is message `received[index]`, in its own slot.
            memories[index].landed(received[index], received[index])?;
            received[index] += 1;
            arrived_now += 1;
            Ok(())
        })?;
        for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
            let done = memories[index].copied_in()?;
            let new = done - copied[index];
            if new == 0 {
                continue;
            }
            // The copies are done: the slots go back (receives first, then the credit).
            for _ in 0..new {
                if posted[index] < messages_per_qp {
                    queue_pair.post_receive(index as u64, LocalSlice::empty())?;
                    posted[index] += 1;
                }
            }
            let warmup_left = warmup.saturating_sub(copied[index]).min(new) as u32;
            copied[index] = done;
            let new = new as u32;
            if new > warmup_left {
                if measuring {
                    meter.record_completion(clock.now_nanos(), new - warmup_left);
                } else {
                    beyond_warmup += new - warmup_left;
                }
            }
            last_progress = Instant::now();
        }
        // Credits: one SEND per QP and pass once a batch is owed (or a phase's last messages
        // are copied in, which the writer waits for), as the send queue has room.
        for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
            let owed = copied[index] - credited[index];
            let phase_end = copied[index] == warmup || copied[index] == messages_per_qp;
            if owed == 0 || (owed < batch && !phase_end) || credit_sends >= send_depth {
                continue;
            }
            queue_pair.post_send(std::iter::once(SendRequest {
                wr_id: CREDIT_FLAG | index as u64,
                signaled: true,
                local: LocalSlice::empty(),
                operation: Operation::SendWithImmediate { immediate: owed as u32 },
                inline: Inline::NO,
            }))?;
            credit_sends += 1;
            credited[index] = copied[index];
        }
        if !measuring && copied.iter().all(|&count| count >= warmup) {
            // Warm-up done on every QP: the measurement starts now.
            measuring = true;
            clock = RunClock::start();
            meter.record_completion(0, std::mem::take(&mut beyond_warmup));
        }
        if arrived_now > 0 {
            last_progress = Instant::now();
        }
        let all_credited = credited.iter().all(|&count| count >= messages_per_qp);
        if all_credited && credit_sends == 0 {
            for memory in &mut memories {
                memory.finish(0)?;
            }
            return meter.report().map_err(|source| Error::Figure {
                what: format!("no bandwidth measured at {size} bytes"),
                source,
            });
        }
        if last_progress.elapsed() > stall_timeout {
            return Err(Error::Stalled {
                seconds: stall_timeout.as_secs(),
                during: format!(
                    "receiving staged writes of {size} bytes ({} of {} arrived)",
                    received.iter().sum::<u64>(),
                    messages_per_qp * queue_count as u64
                ),
            });
        }
    }
}
