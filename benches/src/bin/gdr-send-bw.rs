//! gdr-send-bw: SEND/RECV bandwidth, perftest's ib_send_bw on gdrperf's harness.
//!
//! The client streams SENDs; the server keeps `-r/--rx-depth` receives posted per QP and reposts
//! each as it consumes it. Both sides measure: the row's `bw_*` columns are the sender's (what
//! perftest's client prints), the `rx_*` columns the receiver's, sent back by the server. With
//! `-b` both sides send and receive at once and each group is the sum of both directions.
//! With `--validate` every received payload is checked as it is polled (see
//! `gdrperf::engines::send`).
//!
//! Whatever the memory, the bench is the same (the differences live in
//! `gdrperf::memory::queue_memory`); `copy_time_s` is both sides' copy time.

use clap::Parser;
use gdrperf::prelude::*;

#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    #[command(flatten)]
    send: SendArgs,
}

/// The SEND stream.
struct SendBandwidth(SendStream);

impl Benchmark for SendBandwidth {
    const BENCH: Bench = bench::SEND_BW;
    type Engine = SendStream;

    fn engine(&self) -> &SendStream {
        &self.0
    }

    fn setup(&self) -> Setup {
        let SendStream { common, bandwidth, send } = &self.0;
        Setup {
            queue_sizes: match bandwidth.bidirectional {
                // Both directions on each QP: room for the credits each way beyond the data's.
                true => QueuePairSizes {
                    send_depth: common.tx_depth + CREDIT_RECEIVES,
                    recv_depth: send.rx_depth + CREDIT_RECEIVES,
                    max_inline: send.inline_size,
                },
                // A one-way sender's QP receives the receiver's credits instead.
                false => QueuePairSizes {
                    send_depth: common.tx_depth,
                    recv_depth: send.rx_depth.max(CREDIT_RECEIVES),
                    max_inline: send.inline_size,
                },
            },
            buffer_len: common.max_size(),
            // SENDs land in posted receives: no buffer is reached by the peer's keys.
            remote_access: RemoteAccess::None,
            inline: None,
            parameters: bandwidth.parameters(),
            header: {
                let mut header = bandwidth.header();
                header.push(("RX depth".into(), send.rx_depth.to_string()));
                header.push(("Inline".into(), format!("up to {} bytes", send.inline_size)));
                let (rx_depth, tx_depth) = (send.rx_depth, common.tx_depth);
                if rx_depth < tx_depth {
                    header.push((
                        "Credits".into(),
                        format!(
                            "-r {rx_depth} is below -t {tx_depth}: at most {rx_depth} SENDs in flight per QP \
                             (perftest would keep {tx_depth} in flight and wait out receiver-not-ready NAKs)"
                        ),
                    ));
                }
                header
            },
            bandwidth: Some(*bandwidth),
        }
    }

    fn staged_rules(&self) -> StagedRules {
        self.0.bandwidth.staged
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&SendBandwidth::BENCH);
    let defaults = SendBandwidth::BENCH.defaults;
    exit(|| {
        let common = BenchConfig::from_args(&cli.common, defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, SendBandwidth::BENCH.verb)?;
        let send = SendConfig::from_args(&cli.send, &common, &bandwidth)?;
        run(&SendBandwidth(SendStream { common, bandwidth, send }))
    })
}
