//! The receiving end of gdr-write-bw's `--write_with_imm` with host or GPU memory, perftest's
//! `run_iter_bw_server`: the writer posts RDMA WRITE_WITH_IMM into the start of this side's
//! buffer, each arrival consumes one receive posted here (reposted at once, up to the count the
//! writer sends), and this side times the arrivals it counts and reports its own figures, as
//! perftest's write_bw server then does. No credits go back: as in perftest, a writer that
//! outruns the receives posted meets receiver-not-ready and retries (`rnr_retry` 7).
//!
//! Staged memory has its own receiver ([`crate::engines::staged_receive`]), which copies each
//! arrival on and credits the writer.

use std::time::Instant;

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::error::{Error, Result};
use crate::harness::session::{Session, SessionParts};
use crate::options::config::BenchConfig;
use crate::verbs::completion::opcode;
use crate::verbs::LocalSlice;

/// Receives kept posted per QP: the receive queue's depth, or fewer when fewer messages come (a
/// receive left over would be consumed by the next size's first message and miscount it).
fn initial_receives(recv_depth: u32, messages_per_qp: u64) -> u64 {
    u64::from(recv_depth).min(messages_per_qp)
}

/// Posts the first receives of a size on every QP (before the writer may start).
pub fn post_receives(session: &mut Session, messages_per_qp: u64) -> Result<()> {
    for (index, queue_pair) in session.local.queue_pairs.iter_mut().enumerate() {
        for _ in 0..initial_receives(queue_pair.sizes().recv_depth, messages_per_qp) {
            queue_pair.post_receive(index as u64, LocalSlice::empty())?;
        }
    }
    Ok(())
}

/// Counts `messages_per_qp` arrivals on every QP, reposting a receive for each until all are
/// posted, and reports the rate at which they arrived: the clock starts when the last QP's
/// first `warmup` arrivals are in (with no warm-up, at the first poll), and stops at the last.
pub fn receive(
    session: &mut Session,
    size: usize,
    config: &BenchConfig,
    messages_per_qp: u64,
) -> Result<BandwidthReport> {
    let (warmup, stall_timeout) = (config.warmup, config.timeout);
    let SessionParts { queue_pairs, completion_queue, control, .. } = session.parts();
    let queue_count = queue_pairs.len();
    let recv_depth = queue_pairs.first().map_or(1, |queue_pair| queue_pair.sizes().recv_depth);
    let mut received = vec![0u64; queue_count];
    let mut posted = vec![initial_receives(recv_depth, messages_per_qp); queue_count];
    let mut meter =
        BandwidthMeter::new(size as u64, (messages_per_qp as usize * queue_count).min(1 << 22))
            .map_err(|source| Error::Figure { what: format!("bandwidth meter for {size} bytes"), source })?;
    let mut clock = RunClock::start();
    let mut measuring = warmup == 0;
    let mut last_progress = Instant::now();
    loop {
        control.check_peer()?;
        let mut arrived = vec![0u64; queue_count];
        completion_queue.poll(|completion| {
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
            arrived[index] += 1;
            Ok(())
        })?;
        let now = clock.now_nanos();
        let mut measured_now = 0u64;
        for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
            let new = arrived[index];
            if new == 0 {
                continue;
            }
            let repost = new.min(messages_per_qp - posted[index]);
            for _ in 0..repost {
                queue_pair.post_receive(index as u64, LocalSlice::empty())?;
            }
            posted[index] += repost;
            // Arrivals of the warm-up are not measured.
            measured_now += new - warmup.saturating_sub(received[index]).min(new);
            received[index] += new;
            last_progress = Instant::now();
        }
        if !measuring && received.iter().all(|&count| count >= warmup) {
            // Warm-up done on every QP: the measurement starts now, with what came past it.
            measuring = true;
            clock = RunClock::start();
            meter.record_completion(0, measured_now as u32);
        } else if measuring && measured_now > 0 {
            meter.record_completion(now, measured_now as u32);
        }
        if received.iter().all(|&count| count >= messages_per_qp) {
            return meter.report().map_err(|source| Error::Figure {
                what: format!("no bandwidth measured at {size} bytes"),
                source,
            });
        }
        if last_progress.elapsed() > stall_timeout {
            return Err(Error::Stalled {
                seconds: stall_timeout.as_secs(),
                during: format!(
                    "receiving writes with immediate of {size} bytes ({} of {} arrived)",
                    received.iter().sum::<u64>(),
                    messages_per_qp * queue_count as u64
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_receives_are_posted_than_messages_come() {
        assert_eq!(initial_receives(128, 5016), 128);
        assert_eq!(initial_receives(128, 20), 20);
    }
}
