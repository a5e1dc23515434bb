//! The bandwidth loop's own work per message, without the verbs calls (what the loop itself costs apart from the NIC): the
//! [`StreamBook`] bookkeeping (room per QP, which request is signalled, completion accounting,
//! clock reads, post and completion marks for the peak) against a stand-in queue that completes
//! every signalled request at the next poll. A request is built as the engine builds one (id and
//! signal flag into a struct of a work request's size) and handed to `black_box` instead of
//! `ibv_post_send`. Reported as time per message (criterion's throughput in elements).
//!
//! Each case runs twice: as a writer of host memory runs it (no credits), and holding a credit
//! per posted receive, as gdr-send-bw and a writer into staged memory do:
//! [`SenderCredits`] caps each post, a stand-in receiver reposts every message as it lands
//! ([`ReceiverCredits`]) and its credits reach the sender at the next poll. The difference is
//! the credit scheme's bookkeeping per message, without the verbs calls (a credit SEND is one
//! more post per batch, a credit receive one more poll entry).
//!
//!   cargo bench -p gdrperf --bench stream_loop
//!
//! Target: at most 25 ns a message (a 400 Gb/s port at 4 KiB is ~12 M messages/s, ~80 ns each).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gdrperf::engines::credits::{ReceiverCredits, SenderCredits};
use gdrperf::engines::stream_book::{signal_interval, StreamBook, SEQUENCE_BITS};
use gdrperf_stats::BandwidthMeter;

/// What the engine fills per request before the verbs call (`SendRequest`'s fields).
#[derive(Clone, Copy)]
struct Request {
    wr_id: u64,
    signaled: bool,
    local: [u64; 2],
    remote: [u64; 2],
}

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
                let request = Request {
                    wr_id: StreamBook::work_request_id(index, sequence),
                    signaled: book.is_signaled(sequence),
                    local: [0x1000, 4096],
                    remote: [0x2000, 7],
                };
                black_box((request.local, request.remote));
                if request.signaled {
                    in_flight.push_back(request.wr_id);
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
                let index = (work_request_id >> SEQUENCE_BITS) as usize;
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

fn stream_loop(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream_loop");
    for (queues, tx_depth, cq_mod) in [(1, 128, 100), (8, 64, 8), (1, 128, 1)] {
        let messages = 100_000;
        group.throughput(Throughput::Elements(messages * queues as u64));
        for (name, rx_depth) in [("", None), ("_credits", Some(512))] {
            group.bench_function(format!("q{queues}_t{tx_depth}_Q{cq_mod}{name}"), |bench| {
                bench.iter(|| black_box(run(messages, queues, tx_depth, cq_mod, rx_depth)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, stream_loop);
criterion_main!(benches);
