//! The credit scheme's cost per message (issue 25), next to the stream loop without it: the
//! same [`StreamBook`] loop as `stream_loop.rs` against a stand-in queue that completes every
//! signalled request at the next poll, once as today's writer of host memory runs it (no
//! credits) and once holding a credit per posted receive: [`SenderCredits`] caps each post,
//! a stand-in receiver reposts every message as it lands ([`ReceiverCredits`]) and its credits
//! reach the sender at the next poll. Reported as time per message (throughput in elements).
//!
//!   cargo bench -p gdrperf --bench credits
//!
//! What it tells: the bookkeeping a credit adds to each message on both sides, without the
//! verbs calls (a credit SEND is one more post per batch, a credit receive one more poll entry).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gdrperf::harness::credits::{ReceiverCredits, SenderCredits};
use gdrperf::harness::stream_book::{signal_interval, StreamBook};
use gdrperf_stats::BandwidthMeter;

/// One measured run of `messages` per QP, with credits for `rx_depth` receives or without;
/// returns the messages completed.
fn run(messages: u64, queues: usize, tx_depth: u32, cq_mod: u32, rx_depth: Option<u64>) -> u64 {
    let signal_every = signal_interval(cq_mod, 4096);
    let mut book = StreamBook::start(queues, tx_depth, signal_every, Some(messages), Duration::from_secs(10));
    let events = (messages / signal_every + 2) * queues as u64;
    let mut meter =
        BandwidthMeter::with_capacities(4096, events as usize, (messages * queues as u64) as usize).unwrap();
    let mut in_flight: VecDeque<u64> = VecDeque::with_capacity(tx_depth as usize * queues);
    let mut sender = SenderCredits::new(queues);
    let mut receiver = rx_depth.map(|depth| ReceiverCredits::new(queues, depth, tx_depth));
    let mut credits: VecDeque<(usize, u32)> = VecDeque::new();
    loop {
        // The receiver's credits due (its first grant on the first turn).
        if let Some(receiver) = receiver.as_mut() {
            for index in 0..queues {
                if let Some(credit) = receiver.due(index) {
                    credits.push_back((index, credit));
                }
            }
        }
        for index in 0..queues {
            let mut count = book.room(index);
            if receiver.is_some() {
                count = count.min(sender.available(index));
            }
            if count == 0 {
                continue;
            }
            let first = book.progress[index].posted;
            for sequence in first + 1..=first + count {
                let wr_id = StreamBook::work_request_id(index, sequence);
                let signaled = book.is_signaled(sequence);
                black_box((wr_id, signaled, [0x1000u64, 4096], [0x2000u64, 7]));
                if signaled {
                    in_flight.push_back(wr_id);
                }
            }
            if receiver.is_some() {
                sender.spend(index, count);
            }
            book.posted(index, count, Some(&mut meter));
        }
        // The stand-in queue: up to 16 completions a poll; each retired message landed in a
        // receive, which the stand-in receiver reposts.
        let mut retired = 0;
        for _ in 0..16 {
            let Some(work_request_id) = in_flight.pop_front() else { break };
            let done = book.complete(work_request_id).expect("the stand-in completes what was posted");
            if let Some(receiver) = receiver.as_mut() {
                let index = (work_request_id >> gdrperf::harness::stream_book::SEQUENCE_BITS) as usize;
                (0..done).for_each(|_| receiver.reposted(index));
            }
            retired += done;
        }
        // Credits reach the sender at the next poll; the credit SENDs complete at the receiver.
        while let Some((index, credit)) = credits.pop_front() {
            sender.grant(index, u64::from(credit)).expect("a credit of a known QP");
            receiver.as_mut().and_then(ReceiverCredits::completed).expect("a credit in flight");
        }
        assert!(book.after_poll(retired, Some(&mut meter)));
        if book.all_posted() && book.drained() {
            break;
        }
    }
    meter.total_messages()
}

fn credits(c: &mut Criterion) {
    let mut group = c.benchmark_group("credits");
    let messages = 100_000;
    for (queues, tx_depth, cq_mod, rx_depth) in [(1, 128, 100, 512), (8, 64, 8, 512), (1, 128, 1, 128)] {
        group.throughput(Throughput::Elements(messages * queues as u64));
        for (name, rx_depth) in [("without", None), ("with", Some(rx_depth))] {
            group.bench_function(format!("q{queues}_t{tx_depth}_Q{cq_mod}_{name}_credits"), |bench| {
                bench.iter(|| black_box(run(messages, queues, tx_depth, cq_mod, rx_depth)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, credits);
criterion_main!(benches);
