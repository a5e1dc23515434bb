//! The receiving end of a staged stream: every message that lands in the bounce buffer is
//! copied on into the payload (GPU memory for `cuda-staged`), as a staged GPU-to-GPU transfer
//! must do. The sender writes with immediate data, so each arrival completes one of the
//! receives posted here; the receiver reposts as it consumes.

use std::time::Instant;

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::error::{Error, Result};
use crate::harness::session::Session;
use crate::verbs::completion::opcode;

/// How many receives to post up front: the queue's depth, or fewer when fewer messages come
/// (a receive left over would overflow the queue at the next size).
pub fn initial_receives(depth: u32, messages_per_qp: u64) -> u64 {
    u64::from(depth).min(messages_per_qp)
}

/// Posts the initial receives on every QP of a staged receiver (before the sender may start).
pub fn post_receives(session: &mut Session, size: usize, depth: u32, messages_per_qp: u64) -> Result<()> {
    let local = &mut session.local;
    for (index, queue_pair) in local.queue_pairs.iter_mut().enumerate() {
        let slice = local.buffers[index].slice(size);
        for _ in 0..initial_receives(depth, messages_per_qp) {
            queue_pair.post_receive(index as u64, slice)?;
        }
    }
    Ok(())
}

/// Receives `messages_per_qp` messages on every QP, copying each into the payload, and reports
/// the rate at which data reached the payload: from the first arrival to the last copy done.
/// `depth` must be what [`post_receives`] was given. The first `warmup` messages of each QP are
/// copied like the others but not measured: the clock starts when the last of them is copied.
pub fn receive(
    session: &mut Session,
    size: usize,
    depth: u32,
    warmup: u64,
    messages_per_qp: u64,
    stall_timeout: std::time::Duration,
) -> Result<BandwidthReport> {
    let queue_count = session.local.queue_pairs.len();
    // Per QP: receives completed, copies started for them, copies running (oldest first).
    let mut received = vec![0u64; queue_count];
    let mut started = vec![0u64; queue_count];
    let mut copies = vec![std::collections::VecDeque::new(); queue_count];
    let mut posted = vec![initial_receives(depth, messages_per_qp); queue_count];
    let mut meter =
        BandwidthMeter::new(size as u64, (messages_per_qp as usize * queue_count).min(1 << 22))
            .map_err(|source| Error::Figure { what: format!("bandwidth meter for {size} bytes"), source })?;
    let mut clock = RunClock::start();
    let mut copied = vec![0u64; queue_count];
    let mut measuring = warmup == 0;
    // Messages copied in the same pass that finished the warm-up: counted at the clock's start.
    let mut beyond_warmup = 0u32;
    let mut last_progress = Instant::now();
    loop {
        session.control.check_peer()?;
        let local = &mut session.local;
        let mut arrived_now = 0;
        local.completion_queue.poll(|completion| {
            if !completion.is_success() {
                return Err(completion.error("RECV (write with immediate)", size));
            }
            let index = completion.wr_id as usize;
            if completion.opcode != opcode::RECV_RDMA_WITH_IMM || index >= queue_count {
                return Err(Error::UnexpectedCompletion {
                    wr_id: completion.wr_id,
                    opcode: completion.opcode,
                    expected: "RECV of an RDMA WRITE with immediate",
                });
            }
            received[index] += 1;
            arrived_now += 1;
            Ok(())
        })?;
        for (index, queue_pair) in local.queue_pairs.iter_mut().enumerate() {
            let buffer = &mut local.buffers[index];
            let slice = buffer.slice(size);
            let Some(stager) = buffer.stager() else {
                return Err(Error::Internal("a staged receive needs a staged buffer".into()));
            };
            // Start one copy per new arrival, repost its receive, and retire finished copies.
            while started[index] < received[index] {
                copies[index].push_back(stager.begin_in(0..size)?);
                started[index] += 1;
                if posted[index] < messages_per_qp {
                    queue_pair.post_receive(index as u64, slice)?;
                    posted[index] += 1;
                }
            }
            let mut done = 0u32;
            while let Some(&copy) = copies[index].front() {
                if !stager.poll(copy)? {
                    break;
                }
                copies[index].pop_front();
                done += 1;
            }
            if done > 0 {
                let warmup_left = warmup.saturating_sub(copied[index]).min(u64::from(done)) as u32;
                copied[index] += u64::from(done);
                if done > warmup_left {
                    if measuring {
                        meter.record_completion(clock.now_nanos(), done - warmup_left);
                    } else {
                        beyond_warmup += done - warmup_left;
                    }
                }
                last_progress = Instant::now();
            }
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
        if copied.iter().all(|&count| count >= messages_per_qp) {
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
