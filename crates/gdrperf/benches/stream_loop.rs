//! The bandwidth loop's own work per message, without the verbs calls (issue 14 item 8): the
//! [`StreamBook`] bookkeeping (room per QP, which request is signalled, completion accounting,
//! clock reads, post and completion marks for the peak) against a stand-in queue that completes
//! every signalled request at the next poll. A request is built as the engine builds one (id and
//! signal flag into a struct of a work request's size) and handed to `black_box` instead of
//! `ibv_post_send`. Reported as time per message (criterion's throughput in elements).
//!
//!   cargo bench -p gdrperf --bench stream_loop
//!
//! Target: at most 25 ns a message (a 400 Gb/s port at 4 KiB is ~12 M messages/s, ~80 ns each).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gdrperf::harness::stream_book::{signal_interval, StreamBook};
use gdrperf_stats::BandwidthMeter;

/// What the engine fills per request before the verbs call (`SendRequest`'s fields).
#[derive(Clone, Copy)]
struct Request {
    wr_id: u64,
    signaled: bool,
    local: [u64; 2],
    remote: [u64; 2],
}

/// One measured run of `messages` per QP; returns the messages completed.
fn run(messages: u64, queues: usize, tx_depth: u32, cq_mod: u32) -> u64 {
    let signal_every = signal_interval(cq_mod, 4096);
    let mut book = StreamBook::start(queues, tx_depth, signal_every, Some(messages), Duration::from_secs(10));
    let events = (messages / signal_every + 2) * queues as u64;
    let mut meter =
        BandwidthMeter::with_capacities(4096, events as usize, (messages * queues as u64) as usize).unwrap();
    let mut in_flight: VecDeque<u64> = VecDeque::with_capacity(tx_depth as usize * queues);
    loop {
        for index in 0..queues {
            let count = book.room(index);
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
            book.posted(index, count, Some(&mut meter));
        }
        // The stand-in queue: up to 16 completions a poll, as a poll batch.
        let mut retired = 0;
        for _ in 0..16 {
            let Some(work_request_id) = in_flight.pop_front() else { break };
            retired += book.complete(work_request_id).expect("the stand-in completes what was posted");
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
        group.bench_function(format!("q{queues}_t{tx_depth}_Q{cq_mod}"), |bench| {
            bench.iter(|| black_box(run(messages, queues, tx_depth, cq_mod)))
        });
    }
    group.finish();
}

criterion_group!(benches, stream_loop);
criterion_main!(benches);
