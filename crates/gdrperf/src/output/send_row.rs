//! The result row of gdr-send-bw: the sender's figures in exactly the columns of
//! [`BandwidthRow`] (so send and write bandwidth plot with one script), then the receiver's.
//!
//! Both sides of a SEND stream measure: the sender from its first post to its last completion,
//! the receiver from its first receive completion to its last (perftest's two views; under `-D`
//! each over the middle window of its own clock). The
//! `bw_*` columns are the sender's, as perftest's client prints them; the `rx_*` columns are
//! the receiver's, which the server sends to the client at the end of each size. With `-b`,
//! each group is the sum of both directions.

use gdrperf_stats::units::{BITS_PER_GBIT, BYTES_PER_MIB};
use gdrperf_stats::{aggregate_rate, LaneSpan};
use serde::{Deserialize, Serialize};

use crate::harness::config::BandwidthUnit;
use crate::output::rows::{lane_note, optional_figure, BandwidthFigures, BandwidthSettings};
use crate::output::{BandwidthRow, Row, RowContext};

/// What one side of a SEND stream measured for one size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SendFigures {
    pub sent: Option<BandwidthFigures>,
    pub received: Option<BandwidthFigures>,
    /// Receives this side kept posted per QP (0 when it did not receive).
    pub rx_depth: u32,
}

/// Settings of a send row that are not in the context or the bandwidth settings.
#[derive(Debug, Clone, Copy)]
pub struct SendSettings {
    pub inline_size: u32,
}

/// One size of gdr-send-bw. The columns up to `gpu_remote` are [`BandwidthRow`]'s.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendBandwidthRow {
    pub test: String,
    pub bytes: u64,
    pub iterations: u64,
    pub bw_peak_mib_s: Option<f64>,
    pub bw_avg_mib_s: f64,
    pub bw_peak_gbit_s: Option<f64>,
    pub bw_avg_gbit_s: f64,
    pub msg_rate_mpps: f64,
    pub elapsed_s: f64,
    pub qps: u32,
    pub tx_depth: u32,
    pub cq_mod: u32,
    pub bidirectional: bool,
    pub mtu: u32,
    pub validation: String,
    pub host: String,
    pub peer_host: String,
    pub device: String,
    pub peer_device: String,
    pub mem_local: String,
    pub mem_remote: String,
    pub gpu_local: String,
    pub gpu_remote: String,
    /// [`BandwidthRow`]'s staging copy time: the busy time of the copies between payload and
    /// bounce buffer (the union of their intervals; the sender's copies out, the receiver's
    /// copies in), both sides summed, warm-up included; 0 where nothing is staged.
    pub copy_time_s: f64,
    /// Receives kept posted per QP (below `-r` when a `--validate` ring capped it).
    pub rx_depth: u32,
    pub inline_size: u32,
    /// Messages the receiver counted; the receiver's figures are empty when it timed none.
    pub rx_iterations: u64,
    pub rx_bw_peak_mib_s: Option<f64>,
    pub rx_bw_avg_mib_s: Option<f64>,
    pub rx_bw_peak_gbit_s: Option<f64>,
    pub rx_bw_avg_gbit_s: Option<f64>,
    pub rx_msg_rate_mpps: Option<f64>,
    /// `--concurrent`: the lane ("0", "1", ...) or "all" for the sum of the lanes; empty otherwise.
    #[serde(default)]
    pub lane: String,
    /// [`BandwidthRow`]'s `cpu` and `numa_node`: where this side's measuring thread ran.
    #[serde(default)]
    pub cpu: String,
    #[serde(default)]
    pub numa_node: Option<u32>,
    #[serde(default)]
    pub gpu_local_bus_id: String,
    /// NIC port counters that moved during this size (see `gdrperf::nic_counters`): compact sums,
    /// all error counters together (`nic_errors`, what --max-nic-errors limits), and every moved
    /// counter as name=delta;... (`nic_counters`). 0 and empty where nothing moved.
    #[serde(default)]
    pub nic_retransmissions: u64,
    #[serde(default)]
    pub nic_seq_errors: u64,
    #[serde(default)]
    pub nic_rnr_naks: u64,
    #[serde(default)]
    pub nic_out_of_buffer: u64,
    #[serde(default)]
    pub nic_link_downed: u64,
    #[serde(default)]
    pub nic_errors: u64,
    #[serde(default)]
    pub nic_counters: String,
    /// [`BandwidthRow`]'s peak span columns, the sender's.
    #[serde(default)]
    pub peak_messages: Option<u64>,
    #[serde(default)]
    pub peak_span_s: Option<f64>,
    /// [`BandwidthRow`]'s ceiling columns, for the headline (sender's, or a staged receiver's)
    /// bandwidth.
    #[serde(default)]
    pub ceiling_gbps: Option<f64>,
    #[serde(default)]
    pub ceiling_limited_by: String,
    #[serde(default)]
    pub pct_of_ceiling: Option<f64>,
    #[serde(default)]
    pub ceiling_causes: String,
    /// [`BandwidthRow`]'s, over the sender's and the receiver's stores.
    #[serde(default)]
    pub peak_events_not_stored: u64,
    /// What `ceiling_causes` becomes if the row misses a threshold (no column of its own).
    #[serde(skip)]
    pub causes_if_failed: String,
}

impl SendBandwidthRow {
    /// Builds the row from both sides' figures; `None` when nobody sent (cannot happen in a
    /// completed size, where the client always sends).
    pub fn new(
        context: &RowContext,
        bandwidth: BandwidthSettings,
        send: SendSettings,
        reports: &[SendFigures],
        validation: &str,
    ) -> Option<SendBandwidthRow> {
        let sent: Vec<BandwidthFigures> = reports.iter().filter_map(|report| report.sent).collect();
        let received: Vec<BandwidthFigures> = reports.iter().filter_map(|report| report.received).collect();
        if sent.is_empty() {
            return None;
        }
        // A staged receiver (the server, one direction) ends at its last copy in.
        let headline = match (sent.as_slice(), received.as_slice()) {
            ([sent], [landed]) if !bandwidth.bidirectional && context.mem_remote.is_staged() => {
                vec![if landed.average_bytes_per_second < sent.average_bytes_per_second {
                    *landed
                } else {
                    *sent
                }]
            }
            _ => sent.clone(),
        };
        let base = BandwidthRow::new(context, bandwidth, &headline, validation);
        let rx_depth = reports.iter().map(|report| report.rx_depth).max().unwrap_or(0);
        let mut row = SendBandwidthRow::from_sender(base, rx_depth, send.inline_size);
        // Both ends' copies: the sender's out and the receiver's in.
        row.copy_time_s = reports
            .iter()
            .flat_map(|report| report.sent.iter().chain(report.received.iter()))
            .map(|figures| figures.copy_seconds)
            .sum();
        // Both ends' stores, whichever figures the headline took.
        row.peak_events_not_stored = reports
            .iter()
            .flat_map(|report| report.sent.iter().chain(report.received.iter()))
            .map(|figures| figures.events_not_stored)
            .sum();
        if !received.is_empty() {
            let rx = BandwidthRow::new(context, bandwidth, &received, validation);
            row.rx_iterations = rx.iterations;
            row.rx_bw_peak_mib_s = rx.bw_peak_mib_s;
            row.rx_bw_avg_mib_s = Some(rx.bw_avg_mib_s);
            row.rx_bw_peak_gbit_s = rx.bw_peak_gbit_s;
            row.rx_bw_avg_gbit_s = Some(rx.bw_avg_gbit_s);
            row.rx_msg_rate_mpps = Some(rx.msg_rate_mpps);
        }
        Some(row)
    }

    /// The aggregate row of one size of a `--concurrent` run: the sender's columns as
    /// [`BandwidthRow::aggregate`] makes them; the receiver's likewise, all lanes' received
    /// bytes over the longest receiver's interval ([`aggregate_rate`]), where every lane has them.
    pub fn aggregate(lanes: &[SendBandwidthRow]) -> Option<SendBandwidthRow> {
        let first = lanes.first()?;
        let sender: Vec<BandwidthRow> = lanes.iter().map(SendBandwidthRow::sender_columns).collect();
        let mut row = SendBandwidthRow::from_sender(
            BandwidthRow::aggregate(&sender)?,
            first.rx_depth,
            first.inline_size,
        );
        row.rx_iterations = lanes.iter().map(|row| row.rx_iterations).sum();
        // Peaks are over different spans and do not add (see `BandwidthRow::aggregate`).
        row.rx_bw_peak_mib_s = None;
        row.rx_bw_peak_gbit_s = None;
        let spans: Option<Vec<LaneSpan>> = lanes.iter().map(SendBandwidthRow::receiver_span).collect();
        if let Some(rate) = spans.as_deref().and_then(aggregate_rate) {
            row.rx_bw_avg_mib_s = Some(rate.bytes_per_second / BYTES_PER_MIB);
            row.rx_bw_avg_gbit_s = Some(rate.bytes_per_second * 8.0 / BITS_PER_GBIT);
            row.rx_msg_rate_mpps = Some(rate.messages_per_second / 1e6);
        }
        Some(row)
    }

    /// This lane's receiver as a span for [`aggregate_rate`]: the bytes it counted over the
    /// interval its average was taken over (bytes / average: first to last receive, or `-D`'s
    /// window), from the common start of the size (the lanes start each size together). `None`
    /// when the lane has no receiver figures.
    fn receiver_span(&self) -> Option<LaneSpan> {
        let bytes_per_second = self.rx_bw_avg_mib_s? * BYTES_PER_MIB;
        let bytes = self.rx_iterations.saturating_mul(self.bytes);
        let seconds = (bytes_per_second > 0.0).then(|| bytes as f64 / bytes_per_second)?;
        Some(LaneSpan {
            bytes,
            messages: self.rx_iterations,
            start_nanos: 0,
            end_nanos: (seconds * 1e9).round() as u64,
        })
    }

    /// A row whose sender columns are `base`'s, with no receiver figures yet.
    fn from_sender(base: BandwidthRow, rx_depth: u32, inline_size: u32) -> SendBandwidthRow {
        SendBandwidthRow {
            test: base.test,
            bytes: base.bytes,
            iterations: base.iterations,
            bw_peak_mib_s: base.bw_peak_mib_s,
            bw_avg_mib_s: base.bw_avg_mib_s,
            bw_peak_gbit_s: base.bw_peak_gbit_s,
            bw_avg_gbit_s: base.bw_avg_gbit_s,
            msg_rate_mpps: base.msg_rate_mpps,
            elapsed_s: base.elapsed_s,
            qps: base.qps,
            tx_depth: base.tx_depth,
            cq_mod: base.cq_mod,
            bidirectional: base.bidirectional,
            mtu: base.mtu,
            validation: base.validation,
            host: base.host,
            peer_host: base.peer_host,
            device: base.device,
            peer_device: base.peer_device,
            mem_local: base.mem_local,
            mem_remote: base.mem_remote,
            gpu_local: base.gpu_local,
            gpu_remote: base.gpu_remote,
            copy_time_s: base.copy_time_s,
            rx_depth,
            inline_size,
            rx_iterations: 0,
            rx_bw_peak_mib_s: None,
            rx_bw_avg_mib_s: None,
            rx_bw_peak_gbit_s: None,
            rx_bw_avg_gbit_s: None,
            rx_msg_rate_mpps: None,
            lane: base.lane,
            cpu: base.cpu,
            numa_node: base.numa_node,
            gpu_local_bus_id: base.gpu_local_bus_id,
            nic_retransmissions: base.nic_retransmissions,
            nic_seq_errors: base.nic_seq_errors,
            nic_rnr_naks: base.nic_rnr_naks,
            nic_out_of_buffer: base.nic_out_of_buffer,
            nic_link_downed: base.nic_link_downed,
            nic_errors: base.nic_errors,
            nic_counters: base.nic_counters,
            peak_messages: base.peak_messages,
            peak_span_s: base.peak_span_s,
            ceiling_gbps: base.ceiling_gbps,
            ceiling_limited_by: base.ceiling_limited_by,
            pct_of_ceiling: base.pct_of_ceiling,
            ceiling_causes: base.ceiling_causes,
            peak_events_not_stored: base.peak_events_not_stored,
            causes_if_failed: base.causes_if_failed,
        }
    }

    /// The columns this row shares with [`BandwidthRow`], as one.
    fn sender_columns(&self) -> BandwidthRow {
        BandwidthRow {
            test: self.test.clone(),
            bytes: self.bytes,
            iterations: self.iterations,
            bw_peak_mib_s: self.bw_peak_mib_s,
            bw_avg_mib_s: self.bw_avg_mib_s,
            bw_peak_gbit_s: self.bw_peak_gbit_s,
            bw_avg_gbit_s: self.bw_avg_gbit_s,
            msg_rate_mpps: self.msg_rate_mpps,
            elapsed_s: self.elapsed_s,
            qps: self.qps,
            tx_depth: self.tx_depth,
            cq_mod: self.cq_mod,
            bidirectional: self.bidirectional,
            mtu: self.mtu,
            validation: self.validation.clone(),
            host: self.host.clone(),
            peer_host: self.peer_host.clone(),
            device: self.device.clone(),
            peer_device: self.peer_device.clone(),
            mem_local: self.mem_local.clone(),
            mem_remote: self.mem_remote.clone(),
            gpu_local: self.gpu_local.clone(),
            gpu_remote: self.gpu_remote.clone(),
            copy_time_s: self.copy_time_s,
            lane: self.lane.clone(),
            cpu: self.cpu.clone(),
            numa_node: self.numa_node,
            gpu_local_bus_id: self.gpu_local_bus_id.clone(),
            nic_retransmissions: self.nic_retransmissions,
            nic_seq_errors: self.nic_seq_errors,
            nic_rnr_naks: self.nic_rnr_naks,
            nic_out_of_buffer: self.nic_out_of_buffer,
            nic_link_downed: self.nic_link_downed,
            nic_errors: self.nic_errors,
            nic_counters: self.nic_counters.clone(),
            peak_messages: self.peak_messages,
            peak_span_s: self.peak_span_s,
            ceiling_gbps: self.ceiling_gbps,
            ceiling_limited_by: self.ceiling_limited_by.clone(),
            pct_of_ceiling: self.pct_of_ceiling,
            ceiling_causes: self.ceiling_causes.clone(),
            peak_events_not_stored: self.peak_events_not_stored,
            causes_if_failed: self.causes_if_failed.clone(),
        }
    }
}

impl Row for SendBandwidthRow {
    fn threshold_missed(&mut self) -> Vec<String> {
        super::list_causes_if_failed(&mut self.ceiling_causes, &self.causes_if_failed)
    }

    fn aggregate(lanes: &[SendBandwidthRow]) -> Option<SendBandwidthRow> {
        SendBandwidthRow::aggregate(lanes)
    }

    fn console_header(unit: BandwidthUnit) -> String {
        let unit = match unit {
            BandwidthUnit::MebibytesPerSecond => "MiB/sec",
            BandwidthUnit::GigabitsPerSecond => "Gb/sec",
        };
        format!(
            " {:<10} {:<13} {:<20} {:<22} {:<14} {:<22} {}",
            "#bytes",
            "#iterations",
            format!("BW peak[{unit}]"),
            format!("BW average[{unit}]"),
            "MsgRate[Mpps]",
            format!("RX BW average[{unit}]"),
            "check"
        )
    }

    fn console_line(&self, unit: BandwidthUnit) -> String {
        let (peak, average, received) = match unit {
            BandwidthUnit::MebibytesPerSecond => {
                (self.bw_peak_mib_s, self.bw_avg_mib_s, self.rx_bw_avg_mib_s)
            }
            BandwidthUnit::GigabitsPerSecond => {
                (self.bw_peak_gbit_s, self.bw_avg_gbit_s, self.rx_bw_avg_gbit_s)
            }
        };
        let received = received.map(|value| format!("{value:.2}")).unwrap_or_else(|| "n/a".into());
        format!(
            " {:<10} {:<13} {:<20} {:<22.2} {:<14.6} {:<22} {}{}",
            self.bytes,
            self.iterations,
            optional_figure(peak),
            average,
            self.msg_rate_mpps,
            received,
            self.validation,
            lane_note(&self.lane, &self.device, &self.mem_local, &self.gpu_local, &self.gpu_local_bus_id)
        ) + &self.sender_columns().ceiling().console_note()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(bytes_per_second: f64, messages: u64) -> BandwidthFigures {
        // Through serde, as the figures arrive from the peer: fields added later take defaults.
        serde_json::from_value(serde_json::json!({
            "message_size_bytes": 65536,
            "messages": messages,
            // Consistent with the average, as the aggregate recomputes it from bytes and time.
            "elapsed_nanos": (messages as f64 * 65536.0 / bytes_per_second * 1e9).round() as u64,
            "peak_bytes_per_second": bytes_per_second * 1.5,
            "average_bytes_per_second": bytes_per_second,
            "messages_per_second": bytes_per_second / 65536.0,
        }))
        .unwrap()
    }

    const BANDWIDTH: BandwidthSettings =
        BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: false };

    /// The row both sides' `reports` make, data checked.
    fn row_of(context: &RowContext, reports: &[SendFigures]) -> SendBandwidthRow {
        SendBandwidthRow::new(context, BANDWIDTH, SendSettings { inline_size: 0 }, reports, "pass").unwrap()
    }

    #[test]
    fn a_staged_receiver_ends_the_headline_at_its_last_copy_in() {
        use crate::memory_kind::MemoryKind;
        let client =
            SendFigures { sent: Some(figures(1_048_576.0 * 100.0, 5000)), received: None, rx_depth: 0 };
        // The staged receiver's figures run to its last copy in: slower than the sender's.
        let server =
            SendFigures { sent: None, received: Some(figures(1_048_576.0 * 80.0, 5000)), rx_depth: 64 };
        let row = |mem_remote| {
            let context = RowContext { test: "send_bw".into(), qps: 1, mem_remote, ..RowContext::default() };
            row_of(&context, &[client, server])
        };
        let staged = row(MemoryKind::HostStaged);
        assert_eq!((staged.bw_avg_mib_s, staged.rx_bw_avg_mib_s), (80.0, Some(80.0)));
        let host = row(MemoryKind::Host);
        assert_eq!(host.bw_avg_mib_s, 100.0, "a receiver that does not copy: the sender's, as perftest");
        // A staged receiver faster than the sender (its clock starts later) leaves the sender's.
        let fast = SendFigures { received: Some(figures(1_048_576.0 * 120.0, 5000)), ..server };
        let context = RowContext {
            test: "send_bw".into(),
            qps: 1,
            mem_remote: MemoryKind::CudaStaged,
            ..RowContext::default()
        };
        let row = row_of(&context, &[client, fast]);
        assert_eq!(row.bw_avg_mib_s, 100.0);
    }

    #[test]
    fn sender_columns_match_bandwidth_row_and_receiver_columns_follow() {
        let context = RowContext { test: "send_bw".into(), qps: 1, ..RowContext::default() };
        let client =
            SendFigures { sent: Some(figures(1_048_576.0 * 100.0, 5000)), received: None, rx_depth: 0 };
        let server =
            SendFigures { sent: None, received: Some(figures(1_048_576.0 * 99.0, 5000)), rx_depth: 512 };
        let row = row_of(&context, &[client, server]);
        assert_eq!((row.bw_avg_mib_s, row.rx_bw_avg_mib_s), (100.0, Some(99.0)));
        assert_eq!((row.iterations, row.rx_iterations, row.rx_depth), (5000, 5000, 512));

        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(&row).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        let header = text.lines().next().unwrap();
        let mut reference = csv::Writer::from_writer(Vec::new());
        reference.serialize(BandwidthRow::new(&context, BANDWIDTH, &[figures(1.0, 1)], "pass")).unwrap();
        let reference = String::from_utf8(reference.into_inner().unwrap()).unwrap();
        // BandwidthRow's columns through copy_time_s, then the receiver's; `lane` and the CPU
        // placement (cpu, numa_node), the NIC counters, the peak's span and the ceiling end both.
        let shared =
            reference.lines().next().unwrap().trim_end_matches(",lane,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,peak_messages,peak_span_s,ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,peak_events_not_stored");
        assert!(header.starts_with(shared), "{header}");
        assert!(header.ends_with(",copy_time_s,rx_depth,inline_size,rx_iterations,rx_bw_peak_mib_s,rx_bw_avg_mib_s,rx_bw_peak_gbit_s,rx_bw_avg_gbit_s,rx_msg_rate_mpps,lane,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,peak_messages,peak_span_s,ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,peak_events_not_stored"));
        // Both ends' stores count, the receiver's too.
        let short = |figures: BandwidthFigures| Some(BandwidthFigures { events_not_stored: 3, ..figures });
        let both = row_of(
            &context,
            &[
                SendFigures { sent: short(client.sent.unwrap()), ..client },
                SendFigures { received: short(server.received.unwrap()), ..server },
            ],
        );
        assert_eq!(both.peak_events_not_stored, 6);

        // Lane LANE's row, its receiver counting 5000 × 64 KiB at MIB_S.
        let receiving_at = |lane: &str, mib_s: f64| {
            let context =
                RowContext { lane: lane.to_string(), device: format!("rxe{lane}"), ..context.clone() };
            let server = SendFigures { received: Some(figures(1_048_576.0 * mib_s, 5000)), ..server };
            row_of(&context, &[client, server])
        };
        let lanes = [receiving_at("0", 99.0), receiving_at("1", 99.0)];
        let all = SendBandwidthRow::aggregate(&lanes).unwrap();
        assert_eq!((all.bw_avg_mib_s, all.iterations, all.qps), (200.0, 10000, 2));
        // Equal receivers over one interval: the sum (up to the nanosecond the interval rounds to).
        assert!((all.rx_bw_avg_mib_s.unwrap() - 198.0).abs() < 1e-6, "{:?}", all.rx_bw_avg_mib_s);
        assert_eq!(
            (all.lane.as_str(), all.device.as_str(), all.validation.as_str()),
            ("all", "rxe0+rxe1", "pass")
        );
        assert!(all.console_line(BandwidthUnit::MebibytesPerSecond).ends_with("all lanes"));
        // The receivers too are all bytes over the longest interval, not a sum of rates. Lane 0's
        // receiver takes 5000 × 64 KiB at 100 MiB/s (3.125 s), lane 1's at 50 MiB/s (6.25 s):
        // 10000 × 64 KiB = 625 MiB in 6.25 s is 100 MiB/s (the sum of the rates would be 150),
        // 10000 / 6.25 s = 1600 messages/s.
        let uneven =
            SendBandwidthRow::aggregate(&[receiving_at("0", 100.0), receiving_at("1", 50.0)]).unwrap();
        assert_eq!(uneven.rx_iterations, 10000);
        assert!((uneven.rx_bw_avg_mib_s.unwrap() - 100.0).abs() < 1e-9, "{:?}", uneven.rx_bw_avg_mib_s);
        assert!((uneven.rx_bw_avg_gbit_s.unwrap() - 100.0 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9);
        assert!((uneven.rx_msg_rate_mpps.unwrap() - 0.0016).abs() < 1e-12);
        // A lane whose receiver timed nothing leaves the aggregate's receiver figures empty.
        let mut silent = receiving_at("1", 50.0);
        silent.rx_bw_avg_mib_s = None;
        assert_eq!(
            SendBandwidthRow::aggregate(&[receiving_at("0", 100.0), silent]).unwrap().rx_bw_avg_mib_s,
            None
        );

        // Staged: the sender's copies out and the receiver's copies in add up.
        let staged_client =
            SendFigures { sent: Some(BandwidthFigures { copy_seconds: 0.5, ..figures(1.0, 1) }), ..client };
        let staged_server = SendFigures {
            received: Some(BandwidthFigures { copy_seconds: 0.25, ..figures(1.0, 1) }),
            ..server
        };
        let staged = row_of(&context, &[staged_client, staged_server]);
        assert_eq!(staged.copy_time_s, 0.75);
        assert_eq!(row.copy_time_s, 0.0);

        let lonely =
            SendBandwidthRow::new(&context, BANDWIDTH, SendSettings { inline_size: 0 }, &[client], "off")
                .unwrap();
        assert_eq!(lonely.rx_bw_avg_mib_s, None);
        assert!(lonely.console_line(BandwidthUnit::MebibytesPerSecond).contains("n/a"));
    }
}
