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

use crate::options::config::BandwidthUnit;
use crate::options::values::OutputFigure;
use crate::output::context::RowContext;
use crate::output::exporter::{ConsoleStyle, Row};
use crate::output::row_columns::{columns, serialize_cells, Cell, Columns};
use crate::output::rows::{BandwidthFigures, BandwidthRow, BandwidthSettings};

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

columns! {
    /// The columns a send row adds to its sender's, after `copy_time_s`: the receive queue,
    /// the inline size, and the receiver's figures.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct SendColumns {
        /// Receives kept posted per QP (below `-r` when a `--validate` ring capped it).
        column rx_depth: u32,
        column inline_size: u32,
        /// Messages the receiver counted; the receiver's figures are empty when it timed none.
        column rx_iterations: u64,
        column rx_bw_peak_mib_s: Option<f64>,
        column rx_bw_avg_mib_s: Option<f64>,
        column rx_bw_peak_gbit_s: Option<f64>,
        column rx_bw_avg_gbit_s: Option<f64>,
        column rx_msg_rate_mpps: Option<f64>,
    }
}

/// One size of gdr-send-bw: the sender's columns are a [`BandwidthRow`], whose staging copy
/// time counts both sides' copies (the sender's out, the receiver's in), whose ceiling is the
/// headline's (the sender's, or a staged receiver's) and whose `peak_events_not_stored`
/// counts both sides' stores; [`SendColumns`] follow its `copy_time_s`.
#[derive(Debug, Clone)]
pub struct SendBandwidthRow {
    pub sender: BandwidthRow,
    pub send: SendColumns,
}

impl Columns for SendBandwidthRow {
    fn cells(&self) -> Vec<Cell<'_>> {
        let mut cells = self.sender.cells();
        let after =
            cells.iter().position(|(name, _)| *name == "copy_time_s").map_or(cells.len(), |at| at + 1);
        cells.splice(after..after, self.send.cells());
        cells
    }
}

impl Serialize for SendBandwidthRow {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_cells(serializer, "SendBandwidthRow", &self.cells())
    }
}

impl SendBandwidthRow {
    /// Builds the row from both sides' figures; `None` when nobody sent (cannot happen in a
    /// completed size, where the client always sends).
    pub fn new(
        context: &RowContext,
        bandwidth: BandwidthSettings,
        settings: SendSettings,
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
        let mut sender = BandwidthRow::new(context, bandwidth, &headline, validation);
        let both_sides =
            || reports.iter().flat_map(|report| report.sent.iter().chain(report.received.iter()));
        // Both ends' copies: the sender's out and the receiver's in.
        sender.copy_time_s = both_sides().map(|figures| figures.copy_seconds).sum();
        // Both ends' stores, whichever figures the headline took.
        sender.peak_events_not_stored = both_sides().map(|figures| figures.events_not_stored).sum();
        let rx_depth = reports.iter().map(|report| report.rx_depth).max().unwrap_or(0);
        let mut send = SendColumns { rx_depth, inline_size: settings.inline_size, ..SendColumns::default() };
        if !received.is_empty() {
            let rx = BandwidthRow::new(context, bandwidth, &received, validation);
            send.rx_iterations = rx.iterations;
            send.rx_bw_peak_mib_s = rx.bw_peak_mib_s;
            send.rx_bw_avg_mib_s = Some(rx.bw_avg_mib_s);
            send.rx_bw_peak_gbit_s = rx.bw_peak_gbit_s;
            send.rx_bw_avg_gbit_s = Some(rx.bw_avg_gbit_s);
            send.rx_msg_rate_mpps = Some(rx.msg_rate_mpps);
        }
        Some(SendBandwidthRow { sender, send })
    }

    /// The aggregate row of one size of a `--concurrent` run: the sender's columns as
    /// [`BandwidthRow::aggregate`] makes them; the receiver's likewise, all lanes' received
    /// bytes over the longest receiver's interval ([`aggregate_rate`]), where every lane has them.
    pub fn aggregate(lanes: &[SendBandwidthRow]) -> Option<SendBandwidthRow> {
        let first = lanes.first()?;
        let senders: Vec<BandwidthRow> = lanes.iter().map(|lane| lane.sender.clone()).collect();
        // The receivers' figures stay empty unless every lane has them; their peaks are over
        // different spans and do not add (see `BandwidthRow::aggregate`).
        let mut send = SendColumns {
            rx_depth: first.send.rx_depth,
            inline_size: first.send.inline_size,
            rx_iterations: lanes.iter().map(|lane| lane.send.rx_iterations).sum(),
            ..SendColumns::default()
        };
        let spans: Option<Vec<LaneSpan>> = lanes.iter().map(SendBandwidthRow::receiver_span).collect();
        if let Some(rate) = spans.as_deref().and_then(aggregate_rate) {
            send.rx_bw_avg_mib_s = Some(rate.bytes_per_second / BYTES_PER_MIB);
            send.rx_bw_avg_gbit_s = Some(rate.bytes_per_second * 8.0 / BITS_PER_GBIT);
            send.rx_msg_rate_mpps = Some(rate.messages_per_second / 1e6);
        }
        Some(SendBandwidthRow { sender: BandwidthRow::aggregate(&senders)?, send })
    }

    /// This lane's receiver as a span for [`aggregate_rate`]: the bytes it counted over the
    /// interval its average was taken over (bytes / average: first to last receive, or `-D`'s
    /// window), from the common start of the size (the lanes start each size together). `None`
    /// when the lane has no receiver figures.
    fn receiver_span(&self) -> Option<LaneSpan> {
        let bytes_per_second = self.send.rx_bw_avg_mib_s? * BYTES_PER_MIB;
        let bytes = self.send.rx_iterations.saturating_mul(self.sender.bytes);
        let seconds = (bytes_per_second > 0.0).then(|| bytes as f64 / bytes_per_second)?;
        Some(LaneSpan {
            bytes,
            messages: self.send.rx_iterations,
            start_nanos: 0,
            end_nanos: (seconds * 1e9).round() as u64,
        })
    }
}

impl Row for SendBandwidthRow {
    fn threshold_missed(&mut self) -> Vec<String> {
        self.sender.ceiling.threshold_missed()
    }

    fn aggregate(lanes: &[SendBandwidthRow]) -> Option<SendBandwidthRow> {
        SendBandwidthRow::aggregate(lanes)
    }

    /// perftest's table (ib_send_bw prints the same five fields as ib_write_bw).
    fn console_header(style: ConsoleStyle) -> String {
        <BandwidthRow as Row>::console_header(style)
    }

    fn console_line(&self, style: ConsoleStyle) -> String {
        self.sender.console_line(style)
    }

    fn perftest_results(&self, style: ConsoleStyle) -> serde_json::Map<String, serde_json::Value> {
        self.sender.perftest_results(style)
    }

    fn perftest_test_kind(&self) -> &'static str {
        self.sender.perftest_test_kind()
    }

    /// The senders' directions (each side's sent figures), as ib_send_bw's `--report-both`.
    fn direction_lines(&self, style: ConsoleStyle) -> Option<[String; 2]> {
        self.sender.direction_lines(style)
    }

    /// The senders' directions as rows; their receiver columns are empty (`rx_iterations` 0):
    /// a direction is what one side sent, and its receiver's figures are in the summed row's.
    fn direction_rows(&self) -> Vec<SendBandwidthRow> {
        let send = SendColumns {
            rx_depth: self.send.rx_depth,
            inline_size: self.send.inline_size,
            ..SendColumns::default()
        };
        self.sender
            .direction_rows()
            .into_iter()
            .map(|sender| SendBandwidthRow { sender, send: send.clone() })
            .collect()
    }

    fn perftest_figure(&self, figure: OutputFigure, style: ConsoleStyle) -> Option<f64> {
        self.sender.perftest_figure(figure, style)
    }

    /// The sender's notes, and the receiver's average (perftest's receiver prints its own row).
    fn console_notes(&self, style: ConsoleStyle) -> Vec<String> {
        let (unit, received) = match style.unit {
            BandwidthUnit::MebibytesPerSecond => ("MiB/sec", self.send.rx_bw_avg_mib_s),
            BandwidthUnit::GigabitsPerSecond => ("Gb/sec", self.send.rx_bw_avg_gbit_s),
        };
        let received = received.map(|value| format!("{value:.2}")).unwrap_or_else(|| "n/a".into());
        let mut notes = self.sender.console_notes(style);
        let line = format!("RX BW average[{unit}] {received}");
        match notes.first_mut() {
            Some(first) => first.push_str(&format!("; {line}")),
            None => notes.push(format!("{} B: {line}", self.sender.bytes)),
        }
        notes
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
        assert_eq!((staged.sender.bw_avg_mib_s, staged.send.rx_bw_avg_mib_s), (80.0, Some(80.0)));
        let host = row(MemoryKind::Host);
        assert_eq!(
            host.sender.bw_avg_mib_s, 100.0,
            "a receiver that does not copy: the sender's, as perftest"
        );
        // A staged receiver faster than the sender (its clock starts later) leaves the sender's.
        let fast = SendFigures { received: Some(figures(1_048_576.0 * 120.0, 5000)), ..server };
        let context = RowContext {
            test: "send_bw".into(),
            qps: 1,
            mem_remote: MemoryKind::CudaStaged,
            ..RowContext::default()
        };
        let row = row_of(&context, &[client, fast]);
        assert_eq!(row.sender.bw_avg_mib_s, 100.0);
    }

    #[test]
    fn sender_columns_match_bandwidth_row_and_receiver_columns_follow() {
        let context = RowContext { test: "send_bw".into(), qps: 1, ..RowContext::default() };
        let client =
            SendFigures { sent: Some(figures(1_048_576.0 * 100.0, 5000)), received: None, rx_depth: 0 };
        let server =
            SendFigures { sent: None, received: Some(figures(1_048_576.0 * 99.0, 5000)), rx_depth: 512 };
        let row = row_of(&context, &[client, server]);
        assert_eq!((row.sender.bw_avg_mib_s, row.send.rx_bw_avg_mib_s), (100.0, Some(99.0)));
        assert_eq!((row.sender.iterations, row.send.rx_iterations, row.send.rx_depth), (5000, 5000, 512));

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
            reference.lines().next().unwrap().trim_end_matches(",lane,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,peak_messages,peak_span_s,ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,peak_events_not_stored,traffic_class,service_level,peak_note,nic_node_guid,gpu_local_uuid,relaxed_ordering");
        assert!(header.starts_with(shared), "{header}");
        assert!(header.ends_with(",copy_time_s,rx_depth,inline_size,rx_iterations,rx_bw_peak_mib_s,rx_bw_avg_mib_s,rx_bw_peak_gbit_s,rx_bw_avg_gbit_s,rx_msg_rate_mpps,lane,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,peak_messages,peak_span_s,ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,peak_events_not_stored,traffic_class,service_level,peak_note,nic_node_guid,gpu_local_uuid,relaxed_ordering"));
        // Both ends' stores count, the receiver's too.
        let short = |figures: BandwidthFigures| Some(BandwidthFigures { events_not_stored: 3, ..figures });
        let both = row_of(
            &context,
            &[
                SendFigures { sent: short(client.sent.unwrap()), ..client },
                SendFigures { received: short(server.received.unwrap()), ..server },
            ],
        );
        assert_eq!(both.sender.peak_events_not_stored, 6);

        // Lane LANE's row, its receiver counting 5000 × 64 KiB at MIB_S.
        let receiving_at = |lane: &str, mib_s: f64| {
            let context =
                RowContext { lane: lane.to_string(), device: format!("rxe{lane}"), ..context.clone() };
            let server = SendFigures { received: Some(figures(1_048_576.0 * mib_s, 5000)), ..server };
            row_of(&context, &[client, server])
        };
        let lanes = [receiving_at("0", 99.0), receiving_at("1", 99.0)];
        let all = SendBandwidthRow::aggregate(&lanes).unwrap();
        assert_eq!((all.sender.bw_avg_mib_s, all.sender.iterations, all.sender.qps), (200.0, 10000, 2));
        // Equal receivers over one interval: the sum (up to the nanosecond the interval rounds to).
        assert!((all.send.rx_bw_avg_mib_s.unwrap() - 198.0).abs() < 1e-6, "{:?}", all.send.rx_bw_avg_mib_s);
        assert_eq!(
            (all.sender.lane.as_str(), all.sender.place.device.as_str(), all.sender.validation.as_str()),
            ("all", "rxe0+rxe1", "pass")
        );
        let style = ConsoleStyle { unit: BandwidthUnit::MebibytesPerSecond, timed: false, figure: None };
        // The table row holds perftest's five fields; the lane and the empty peak are notes.
        let console = all.console_line(style);
        assert_eq!(console.split_whitespace().count(), 5, "{console}");
        assert_eq!(console.split_whitespace().nth(2), Some("-"), "{console}");
        let notes = all.console_notes(style);
        assert!(notes[0].starts_with("65536 B: check pass; all lanes; RX BW average[MiB/sec] "), "{notes:?}");
        assert_eq!(notes[1], "  no peak: the lanes' peaks are over different spans and do not add");
        // The receivers too are all bytes over the longest interval, not a sum of rates. Lane 0's
        // receiver takes 5000 × 64 KiB at 100 MiB/s (3.125 s), lane 1's at 50 MiB/s (6.25 s):
        // 10000 × 64 KiB = 625 MiB in 6.25 s is 100 MiB/s (the sum of the rates would be 150),
        // 10000 / 6.25 s = 1600 messages/s.
        let uneven =
            SendBandwidthRow::aggregate(&[receiving_at("0", 100.0), receiving_at("1", 50.0)]).unwrap();
        assert_eq!(uneven.send.rx_iterations, 10000);
        assert!(
            (uneven.send.rx_bw_avg_mib_s.unwrap() - 100.0).abs() < 1e-9,
            "{:?}",
            uneven.send.rx_bw_avg_mib_s
        );
        assert!((uneven.send.rx_bw_avg_gbit_s.unwrap() - 100.0 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9);
        assert!((uneven.send.rx_msg_rate_mpps.unwrap() - 0.0016).abs() < 1e-12);
        // A lane whose receiver timed nothing leaves the aggregate's receiver figures empty.
        let mut silent = receiving_at("1", 50.0);
        silent.send.rx_bw_avg_mib_s = None;
        assert_eq!(
            SendBandwidthRow::aggregate(&[receiving_at("0", 100.0), silent]).unwrap().send.rx_bw_avg_mib_s,
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
        assert_eq!(staged.sender.copy_time_s, 0.75);
        assert_eq!(row.sender.copy_time_s, 0.0);

        let lonely =
            SendBandwidthRow::new(&context, BANDWIDTH, SendSettings { inline_size: 0 }, &[client], "off")
                .unwrap();
        assert_eq!(lonely.send.rx_bw_avg_mib_s, None);
        assert!(lonely.console_notes(style)[0].ends_with("RX BW average[MiB/sec] n/a"));
    }
}
