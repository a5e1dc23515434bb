//! gdr-send-bw: SEND/RECV bandwidth, perftest's ib_send_bw on gdrperf's harness.
//!
//! The client streams SENDs; the server keeps `-r/--rx-depth` receives posted per QP and reposts
//! each as it consumes it. Both sides measure: the row's `bw_*` columns are the sender's (what
//! perftest's client prints), the `rx_*` columns the receiver's, sent back by the server. With
//! `-b` both sides send and receive at once and each group is the sum of both directions.
//! With `--validate` every received payload is checked as it is polled (see
//! `gdrperf::harness::send`).
//!
//! Staged memory (`--mem cuda-staged`, on either side): the sender copies each message out to its
//! bounce buffer before posting it (up to `-t` copies ahead), the receiver copies each one in
//! before reposting its receive; `copy_time_s` is both sides' copy time. One direction at a
//! time (no `-b`), and `--validate` checks a staged receiver's payload after each size.

use clap::Parser;
use gdrperf::harness::args_send::{SendArgs, SendConfig};
use gdrperf::harness::buffers::{check_received, copy_time, pattern_seed};
use gdrperf::harness::send::{stream_send, ReceiveQueues, SendPlan};
use gdrperf::harness::{
    self, BandwidthArgs, BandwidthConfig, BenchConfig, Benchmark, CommonArgs, Session, TestDefaults,
};
use gdrperf::output::rows::{BandwidthFigures, BandwidthSettings};
use gdrperf::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
use gdrperf::output::RowContext;
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(
    name = "gdr-send-bw",
    version,
    about = "SEND/RECV bandwidth (server: no HOST; client: HOST; or --loopback)"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    #[command(flatten)]
    send: SendArgs,
}

struct SendBandwidth {
    common: BenchConfig,
    bandwidth: BandwidthConfig,
    send: SendConfig,
}

impl SendBandwidth {
    fn sends(&self, session: &Session) -> bool {
        session.side.is_client() || self.bandwidth.bidirectional
    }

    fn receives(&self, session: &Session) -> bool {
        !session.side.is_client() || self.bandwidth.bidirectional
    }

    /// Staged memory copies through one bounce buffer per QP, which a send and a receive at once
    /// would share: one direction at a time, as gdr-write-bw does. Both sides decide alike.
    fn refuse_staged_bidirectional(&self, session: &Session) -> gdrperf::Result<()> {
        let staged = session.local.buffers[0].is_staged() || session.peer.side.memory.ends_with("-staged");
        if staged && self.bandwidth.bidirectional {
            return Err(gdrperf::Error::Config(
                "staged memory runs one direction at a time: drop -b/--bidirectional".into(),
            ));
        }
        Ok(())
    }

    /// This side receives into a staged payload, which `--validate` checks after the size.
    fn staged_receiver(&self, session: &Session) -> bool {
        self.receives(session) && session.local.buffers[0].is_staged()
    }
}

impl Benchmark for SendBandwidth {
    const NAME: &'static str = "send_bw";
    const TITLE: &'static str = "Send BW Test";
    type Report = SendFigures;
    type Row = SendBandwidthRow;

    fn queue_sizes(&self) -> QueuePairSizes {
        QueuePairSizes {
            send_depth: self.common.tx_depth,
            recv_depth: self.send.rx_depth,
            max_inline: self.send.inline_size,
        }
    }

    fn parameters(&self) -> serde_json::Value {
        self.bandwidth.parameters()
    }

    fn header(&self) -> Vec<(String, String)> {
        let mut header = self.bandwidth.header();
        header.push(("RX depth".into(), self.send.rx_depth.to_string()));
        header.push(("Inline".into(), format!("up to {} bytes", self.send.inline_size)));
        header
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        self.refuse_staged_bidirectional(session)?;
        if self.common.validate && self.sends(session) {
            for (index, buffer) in session.local.buffers.iter_mut().enumerate() {
                buffer.fill_pattern(size, pattern_seed(size, index))?;
            }
        } else if self.common.validate && self.staged_receiver(session) {
            // Cleared, so that a payload no message was copied into fails the check.
            for buffer in &mut session.local.buffers {
                buffer.clear(size)?;
            }
        }
        if self.receives(session) {
            // Posted once per connection and reposted as they are consumed, across sizes.
            if session.state_mut::<ReceiveQueues>().is_none() {
                let queues = ReceiveQueues::post(
                    session,
                    self.send.rx_depth,
                    self.common.validate,
                    self.common.max_size(),
                )?;
                session.keep_state(queues);
            }
        }
        Ok(())
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<SendFigures>> {
        let plan = SendPlan {
            size,
            stop: self.common.stop,
            warmup: self.common.warmup,
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            inline: session.local.buffers[0].host_bytes().is_some() && size <= self.send.inline_size as usize,
            sends: self.sends(session),
            receives: self.receives(session),
            stall_timeout: self.common.timeout,
        };
        let mut queues = session.take_state::<ReceiveQueues>();
        let copying_before = copy_time(&mut session.local.buffers);
        let reports = stream_send(session, &plan, queues.as_mut());
        let rx_depth = queues.as_ref().map(ReceiveQueues::depth).unwrap_or(0);
        if let Some(queues) = queues {
            session.keep_state(queues);
        }
        let reports = reports?;
        // One direction at a time when staged: the copies belong to whichever this side did.
        let copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
        let with_copies = |report: &_| BandwidthFigures { copy_seconds, ..BandwidthFigures::from(report) };
        let sent = reports.sent.as_ref().map(with_copies);
        let received = reports.received.as_ref().map(BandwidthFigures::from).map(|figures| match sent {
            Some(_) => figures,
            None => BandwidthFigures { copy_seconds, ..figures },
        });
        Ok(Some(SendFigures { sent, received, rx_depth }))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !self.receives(session) {
            return Ok(None);
        }
        let failure = session.state_mut::<ReceiveQueues>().and_then(ReceiveQueues::take_failure);
        if failure.is_none() && self.staged_receiver(session) {
            return check_received(&mut session.local.buffers, size, size);
        }
        Ok(failure)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<SendFigures>,
        peer: Option<SendFigures>,
        validation: &str,
    ) -> Option<SendBandwidthRow> {
        let settings = BandwidthSettings {
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            bidirectional: self.bandwidth.bidirectional,
        };
        let reports: Vec<SendFigures> = ours.into_iter().chain(peer).collect();
        SendBandwidthRow::new(
            context,
            settings,
            SendSettings { inline_size: self.send.inline_size },
            &reports,
            validation,
        )
    }

    fn concurrent(&self) -> bool {
        self.bandwidth.concurrent
    }

    fn aggregate(&self, lanes: &[SendBandwidthRow]) -> Option<SendBandwidthRow> {
        SendBandwidthRow::aggregate(lanes)
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let defaults = TestDefaults { size: 65536, iterations: 5000, tx_depth: 128, warmup: 16 };
    gdrperf::harness::exit(|| {
        let common = BenchConfig::from_args(&cli.common, defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common)?;
        let send = SendConfig::from_args(&cli.send)?;
        let benchmark = SendBandwidth { common: common.clone(), bandwidth, send };
        harness::run(&common, &benchmark)
    })
}
