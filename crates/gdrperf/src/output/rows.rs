//! Result rows. Their columns, in declaration order with the shared groups of
//! [`crate::output::row_columns`] in place, are the CSV columns and JSON keys: a published
//! contract that plotting scripts and stored baselines depend on. Add columns at the end only,
//! each with its entry in the column reference ([`crate::output::columns`]), whose tests pin
//! the order and `columns/pinned/` the files byte for byte.

use gdrperf_stats::units::{BITS_PER_GBIT, BYTES_PER_MIB};
use gdrperf_stats::{aggregate_rate, BandwidthReport, LaneSpan};
use serde::{Deserialize, Serialize};

use crate::options::config::BandwidthUnit;
use crate::options::values::OutputFigure;
use crate::output::ceiling_columns::CeilingColumns;
use crate::output::context::RowContext;
use crate::output::exporter::{ConsoleStyle, Row};
use crate::output::perftest_table;
use crate::output::row_columns::{
    columns, join_distinct, IdentityColumns, MachineColumns, PlaceColumns, QosColumns,
};

columns! {
    /// One size of a bandwidth test.
    #[derive(Debug, Clone)]
    pub struct BandwidthRow {
        column test: String,
        column bytes: u64,
        /// Messages completed (all QPs; both directions when bidirectional).
        column iterations: u64,
        /// perftest's peak (fastest post-to-completion span); empty only where `peak_note` says why.
        column bw_peak_mib_s: Option<f64>,
        column bw_avg_mib_s: f64,
        column bw_peak_gbit_s: Option<f64>,
        column bw_avg_gbit_s: f64,
        column msg_rate_mpps: f64,
        column elapsed_s: f64,
        column qps: u32,
        column tx_depth: u32,
        column cq_mod: u32,
        column bidirectional: bool,
        column mtu: u32,
        /// `off`, `pass` or `fail`.
        column validation: String,
        columns place: PlaceColumns,
        /// Staged memory: the seconds during which at least one copy between payload and
        /// bounce buffer was running (the union of the intervals of all a side's QPs' copies,
        /// `gdrperf_stats::busy_nanos`: at most that side's wall time), summed over both sides,
        /// for this size, warm-up included (0 where nothing is staged).
        column copy_time_s: f64,
        /// `--concurrent`: the lane ("0", "1", ...) or "all" for the sum of the lanes; empty
        /// otherwise.
        column lane: String,
        columns machine: MachineColumns,
        /// The peak's span: messages from the post that opens it to the completion that closes
        /// it (summed over both directions with `-b`); empty where the peak is.
        column peak_messages: Option<u64>,
        /// The peak's span in seconds (the longer direction's with `-b`).
        column peak_span_s: Option<f64>,
        /// The path's ceiling for this size from both ends' facts, the row's share of it and,
        /// when the row is short, the causes (see docs/methodology.md, "Path ceilings").
        columns ceiling: CeilingColumns,
        /// Post or completion marks that did not fit the store reserved before the run (both
        /// directions, every lane): the peak was searched over the stored part only; 0 normally.
        column peak_events_not_stored: u64,
        /// `-T` and `-S` (appended after the original columns).
        columns qos: QosColumns,
        /// Why the peak cell is empty, or the mark of a peak above the path's ceiling (see
        /// docs/methodology.md, "Peak"); empty for an ordinary peak.
        column peak_note: String,
        /// The NIC's and the GPU's identities (appended last: readers by position keep working).
        columns identity: IdentityColumns,
        /// PCIe relaxed ordering on this side's registrations (appended after the identities).
        column relaxed_ordering: String,
        /// This side's messages (with `-b`, `iterations` counts both directions): the console's
        /// `#iterations`, as perftest prints its own count.
        hidden local_iterations: u64,
        /// `-b`: each direction's own figures, this side's first, as the two sides measured
        /// them (the peer's came over the control channel with its size report): perftest's
        /// `--report-both` tables. Empty otherwise.
        hidden directions: Vec<BandwidthFigures>,
    }
}

/// One direction's bandwidth figures: what a side measured, in a form that crosses the exchange
/// (the stats crate's report only serialises).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BandwidthFigures {
    pub message_size_bytes: u64,
    pub messages: u64,
    pub elapsed_nanos: u64,
    /// Empty when no completion came after a post.
    pub peak_bytes_per_second: Option<f64>,
    pub average_bytes_per_second: f64,
    pub messages_per_second: f64,
    /// Staged memory: seconds this side spent in copies between payload and bounce buffer.
    #[serde(default)]
    pub copy_seconds: f64,
    /// The peak's span (messages, nanoseconds).
    #[serde(default)]
    pub peak_span: Option<(u64, u64)>,
    /// Marks left out of the peak's store (`BandwidthReport::timeline_events_not_stored`).
    #[serde(default)]
    pub events_not_stored: u64,
}

impl BandwidthFigures {
    /// The peak and the average in `unit` (the table's), as the summed row converts its sums.
    pub fn in_unit(&self, unit: BandwidthUnit) -> (Option<f64>, f64) {
        let convert = |bytes_per_second: f64| match unit {
            BandwidthUnit::MebibytesPerSecond => bytes_per_second / BYTES_PER_MIB,
            BandwidthUnit::GigabitsPerSecond => bytes_per_second * 8.0 / BITS_PER_GBIT,
        };
        (self.peak_bytes_per_second.map(convert), convert(self.average_bytes_per_second))
    }

    /// This direction as a row of perftest's table: its own count, peak, average and rate
    /// (`print_full_bw_report` with no remote report).
    pub fn console_line(&self, unit: BandwidthUnit) -> String {
        let (peak, average) = self.in_unit(unit);
        perftest_table::bandwidth_line(
            self.message_size_bytes,
            self.messages,
            peak,
            average,
            self.messages_per_second / 1e6,
            unit,
        )
    }
}

impl From<&BandwidthReport> for BandwidthFigures {
    fn from(report: &BandwidthReport) -> BandwidthFigures {
        BandwidthFigures {
            message_size_bytes: report.message_size_bytes,
            messages: report.messages,
            elapsed_nanos: report.elapsed_nanos,
            peak_bytes_per_second: report.peak.map(|peak| peak.bytes_per_second()),
            average_bytes_per_second: report.average.bytes_per_second(),
            messages_per_second: report.message_rate.messages_per_second(),
            copy_seconds: 0.0,
            peak_span: report.peak_span.map(|span| (span.messages, span.nanos)),
            events_not_stored: report.timeline_events_not_stored,
        }
    }
}

/// Settings of a bandwidth row that are not in the context.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthSettings {
    pub tx_depth: u32,
    pub cq_mod: u32,
    pub bidirectional: bool,
}

impl BandwidthRow {
    /// Builds the row from one or two directions' reports: bidirectional bandwidth is the sum of
    /// both directions, as perftest reports it; elapsed time is the longer of the two.
    pub fn new(
        context: &RowContext,
        settings: BandwidthSettings,
        reports: &[BandwidthFigures],
        validation: &str,
    ) -> BandwidthRow {
        let sum = |pick: fn(&BandwidthFigures) -> f64| reports.iter().map(pick).sum::<f64>();
        // A peak is defined when every direction has one.
        let peak = reports.iter().map(|report| report.peak_bytes_per_second).sum::<Option<f64>>();
        let spans = reports.iter().map(|report| report.peak_span).collect::<Option<Vec<_>>>();
        let bytes = reports.first().map(|report| report.message_size_bytes).unwrap_or(0);
        let bw_avg_gbit_s = sum(|report| report.average_bytes_per_second) * 8.0 / BITS_PER_GBIT;
        let ceiling = CeilingColumns::for_row(context, bytes, settings.bidirectional, bw_avg_gbit_s);
        let bw_peak_gbit_s = peak.map(|peak| peak * 8.0 / BITS_PER_GBIT);
        BandwidthRow {
            test: context.test.clone(),
            bytes,
            iterations: reports.iter().map(|report| report.messages).sum(),
            local_iterations: reports.first().map_or(0, |report| report.messages),
            bw_peak_mib_s: peak.map(|peak| peak / BYTES_PER_MIB),
            bw_avg_mib_s: sum(|report| report.average_bytes_per_second) / BYTES_PER_MIB,
            bw_peak_gbit_s,
            bw_avg_gbit_s,
            msg_rate_mpps: sum(|report| report.messages_per_second) / 1e6,
            elapsed_s: reports.iter().map(|report| report.elapsed_nanos as f64 / 1e9).fold(0.0, f64::max),
            qps: context.qps,
            tx_depth: settings.tx_depth,
            cq_mod: settings.cq_mod,
            bidirectional: settings.bidirectional,
            mtu: context.mtu,
            validation: validation.to_string(),
            place: PlaceColumns::of(context),
            copy_time_s: reports.iter().map(|report| report.copy_seconds).sum(),
            lane: context.lane.clone(),
            machine: MachineColumns::of(context),
            peak_messages: spans.as_ref().map(|spans| spans.iter().map(|span| span.0).sum()),
            peak_span_s: spans
                .as_ref()
                .map(|spans| spans.iter().map(|span| span.1).max().unwrap_or(0) as f64 / 1e9),
            peak_note: peak_note(bw_peak_gbit_s, ceiling.ceiling_gbps),
            ceiling,
            peak_events_not_stored: reports.iter().map(|report| report.events_not_stored).sum(),
            qos: QosColumns::of(context),
            identity: IdentityColumns::of(context),
            relaxed_ordering: context.relaxed_ordering.clone(),
            directions: match (settings.bidirectional, reports) {
                (true, [local, remote]) => vec![*local, *remote],
                _ => Vec::new(),
            },
        }
    }

    /// The aggregate row of one size of a `--concurrent` run: all lanes' bytes and messages over
    /// the common wall interval ([`gdrperf_stats::aggregate`]; the lanes start each size together
    /// after a barrier, so the interval is the longest lane's elapsed time), counts and copy time
    /// summed, the places joined ("mlx5_0+mlx5_1"), and `lane` "all". The peak is left empty: the
    /// lanes' peaks are over different spans and do not add. `None` without lanes.
    pub fn aggregate(lanes: &[BandwidthRow]) -> Option<BandwidthRow> {
        let first = lanes.first()?;
        let spans: Vec<LaneSpan> = lanes
            .iter()
            .map(|row| LaneSpan {
                bytes: row.iterations.saturating_mul(row.bytes),
                messages: row.iterations,
                start_nanos: 0,
                end_nanos: (row.elapsed_s * 1e9).round() as u64,
            })
            .collect();
        let rate = aggregate_rate(&spans);
        let bytes_per_second = rate.map_or(0.0, |rate| rate.bytes_per_second);
        let bw_avg_gbit_s = bytes_per_second * 8.0 / BITS_PER_GBIT;
        Some(BandwidthRow {
            iterations: lanes.iter().map(|row| row.iterations).sum(),
            local_iterations: lanes.iter().map(|row| row.local_iterations).sum(),
            bw_peak_mib_s: None,
            bw_avg_mib_s: bytes_per_second / BYTES_PER_MIB,
            bw_peak_gbit_s: None,
            bw_avg_gbit_s,
            msg_rate_mpps: rate.map_or(0.0, |rate| rate.messages_per_second / 1e6),
            peak_messages: None,
            peak_span_s: None,
            elapsed_s: lanes.iter().map(|row| row.elapsed_s).fold(0.0, f64::max),
            qps: lanes.iter().map(|row| row.qps).sum(),
            validation: combined_validation(lanes.iter().map(|row| row.validation.as_str())),
            place: PlaceColumns::aggregate(lanes.iter().map(|row| &row.place))?,
            copy_time_s: lanes.iter().map(|row| row.copy_time_s).sum(),
            lane: "all".into(),
            machine: MachineColumns::aggregate(lanes.iter().map(|row| &row.machine)),
            ceiling: CeilingColumns::aggregate(lanes.iter().map(|row| row.ceiling.clone()), bw_avg_gbit_s),
            peak_events_not_stored: lanes.iter().map(|row| row.peak_events_not_stored).sum(),
            peak_note: PEAK_NOT_SUMMED.into(),
            identity: IdentityColumns::aggregate(lanes.iter().map(|row| &row.identity)),
            relaxed_ordering: join_distinct(lanes.iter().map(|row| row.relaxed_ordering.as_str())),
            // The lanes' directions are over different spans, as their peaks.
            directions: Vec::new(),
            ..first.clone()
        })
    }
}

/// The `lane` cell of a `--report-both` direction row: `local` or `remote` (`side`), after the
/// lane's own mark where `--concurrent` gave one (`0:local`).
pub(crate) fn direction_lane(lane: &str, side: &str) -> String {
    match lane {
        "" => side.to_string(),
        lane => format!("{lane}:{side}"),
    }
}

/// "fail" if any lane failed its data check, "pass" if all passed, else "off".
pub(crate) fn combined_validation<'a>(mut values: impl Iterator<Item = &'a str> + Clone) -> String {
    if values.clone().any(|value| value == "fail") {
        "fail".into()
    } else if values.all(|value| value == "pass") {
        "pass".into()
    } else {
        "off".into()
    }
}

/// `peak_note` of an `all` row of `--concurrent`.
pub(crate) const PEAK_NOT_SUMMED: &str = "no peak: the lanes' peaks are over different spans and do not add";
/// `peak_note` of a row whose peak is above its ceiling.
pub(crate) const PEAK_ABOVE_CEILING: &str = "above ceiling";

/// The row's `peak_note` (docs/columns.md): why a peak is missing, or the mark of a peak above
/// what the path can carry (`ceiling_gbps`). A peak is perftest's fastest post-to-completion
/// span, and a span of one or two polls can be shorter than the stamps resolve (one was
/// measured at twice the link in the Soft-RoCE VM): such a figure is kept, as perftest prints it, but marked.
pub(crate) fn peak_note(peak_gbit_s: Option<f64>, ceiling_gbps: Option<f64>) -> String {
    match (peak_gbit_s, ceiling_gbps) {
        (None, _) => "no peak: no completion was seen after a post".into(),
        (Some(peak), Some(ceiling)) if peak > ceiling => PEAK_ABOVE_CEILING.into(),
        _ => String::new(),
    }
}

/// The console's line under a row whose peak cell is empty or marked, saying why (empty
/// otherwise).
pub(crate) fn peak_console_note(note: &str) -> String {
    match note {
        "" => String::new(),
        PEAK_ABOVE_CEILING => {
            "\n     peak: above the path's ceiling, so its span (peak_messages in peak_span_s) \
                               is shorter than the stamps resolve; read the average"
                .into()
        }
        why => format!("\n     {why}"),
    }
}

/// The console's note after a lane's line: "lane 1: rxe0, cuda:1 (0000:19:00.0)", "all lanes".
pub(crate) fn lane_note(lane: &str, place: &PlaceColumns, bus_id: &str) -> String {
    let (device, mem, gpu) = (&place.device, &place.mem_local, &place.gpu_local);
    match lane {
        "" => String::new(),
        "all" => "  all lanes".into(),
        lane if gpu.is_empty() => format!("  lane {lane}: {device}, {mem}"),
        lane if bus_id.is_empty() => format!("  lane {lane}: {device}, {mem}:{gpu}"),
        lane => format!("  lane {lane}: {device}, {mem}:{gpu} ({bus_id})"),
    }
}

impl Row for BandwidthRow {
    fn threshold_missed(&mut self) -> Vec<String> {
        self.ceiling.threshold_missed()
    }

    fn aggregate(lanes: &[BandwidthRow]) -> Option<BandwidthRow> {
        BandwidthRow::aggregate(lanes)
    }

    fn console_header(style: ConsoleStyle) -> String {
        perftest_table::bandwidth_header(style.unit)
    }

    fn console_line(&self, style: ConsoleStyle) -> String {
        let (peak, average) = self.figures_in(style.unit);
        perftest_table::bandwidth_line(
            self.bytes,
            self.local_iterations,
            peak,
            average,
            self.msg_rate_mpps,
            style.unit,
        )
    }

    /// `REPORT_FMT_JSON` (`REPORT_FMT_EXT_JSON`'s six decimals below 0.1 Gb/s): with `-b` the
    /// sum of both directions, `n_iterations` this side's count, as perftest's.
    fn perftest_results(&self, style: ConsoleStyle) -> serde_json::Map<String, serde_json::Value> {
        let (peak, average) = self.figures_in(style.unit);
        let decimals = if style.unit == BandwidthUnit::GigabitsPerSecond && average < 0.1 { 6 } else { 2 };
        let figure = |value: f64| perftest_table::rounded(value, decimals);
        let mut results = serde_json::Map::new();
        results.insert("MsgSize".into(), self.bytes.into());
        results.insert("n_iterations".into(), self.local_iterations.into());
        results.insert("BW_peak".into(), peak.map(figure).unwrap_or(serde_json::Value::Null));
        results.insert("BW_average".into(), figure(average));
        results.insert("MsgRate".into(), perftest_table::rounded(self.msg_rate_mpps, 6));
        results
    }

    fn perftest_figure(&self, figure: OutputFigure, style: ConsoleStyle) -> Option<f64> {
        match figure {
            OutputFigure::Bandwidth => Some(self.figures_in(style.unit).1),
            OutputFigure::MessageRate => Some(self.msg_rate_mpps),
            OutputFigure::Latency => None,
        }
    }

    fn direction_lines(&self, style: ConsoleStyle) -> Option<[String; 2]> {
        match self.directions.as_slice() {
            [local, remote] => Some([local.console_line(style.unit), remote.console_line(style.unit)]),
            _ => None,
        }
    }

    fn direction_rows(&self) -> Vec<BandwidthRow> {
        match self.directions.as_slice() {
            [local, remote] => vec![self.direction_row(local, "local"), self.direction_row(remote, "remote")],
            _ => Vec::new(),
        }
    }

    fn perftest_test_kind(&self) -> &'static str {
        if self.bidirectional {
            "Bidirectional_BW_Test"
        } else {
            "BW_Test"
        }
    }

    fn console_notes(&self, _style: ConsoleStyle) -> Vec<String> {
        let mut first = Vec::new();
        if self.validation != "off" {
            first.push(format!("check {}", self.validation));
        }
        if self.bidirectional {
            first.push(format!("both directions: {} messages", self.iterations));
        }
        let lane = lane_note(&self.lane, &self.place, &self.machine.gpu_local_bus_id);
        first.extend(Some(lane.trim().to_string()).filter(|lane| !lane.is_empty()));
        let extra = self.ceiling.console_note() + &peak_console_note(&self.peak_note);
        crate::output::console::notes_of(self.bytes, &first, &extra)
    }
}

impl BandwidthRow {
    /// One direction of this `-b` row as a row of its own (`--report-both` in the files): the
    /// summed row's settings and places with `figures`' own count, peak, average, rate, time,
    /// copies and peak span, `lane` marked with `side` ([`direction_lane`]). Its ceiling columns
    /// are empty: the path's ceiling is judged for the run as a whole, the summed row's.
    pub(crate) fn direction_row(&self, figures: &BandwidthFigures, side: &str) -> BandwidthRow {
        let (peak_mib_s, average_mib_s) = figures.in_unit(BandwidthUnit::MebibytesPerSecond);
        let (peak_gbit_s, average_gbit_s) = figures.in_unit(BandwidthUnit::GigabitsPerSecond);
        BandwidthRow {
            iterations: figures.messages,
            local_iterations: figures.messages,
            bw_peak_mib_s: peak_mib_s,
            bw_avg_mib_s: average_mib_s,
            bw_peak_gbit_s: peak_gbit_s,
            bw_avg_gbit_s: average_gbit_s,
            msg_rate_mpps: figures.messages_per_second / 1e6,
            elapsed_s: figures.elapsed_nanos as f64 / 1e9,
            copy_time_s: figures.copy_seconds,
            lane: direction_lane(&self.lane, side),
            peak_messages: figures.peak_span.map(|span| span.0),
            peak_span_s: figures.peak_span.map(|span| span.1 as f64 / 1e9),
            ceiling: CeilingColumns::default(),
            peak_events_not_stored: figures.events_not_stored,
            peak_note: peak_note(peak_gbit_s, None),
            directions: Vec::new(),
            ..self.clone()
        }
    }

    /// The peak and the average in `unit`.
    pub(crate) fn figures_in(&self, unit: BandwidthUnit) -> (Option<f64>, f64) {
        match unit {
            BandwidthUnit::MebibytesPerSecond => (self.bw_peak_mib_s, self.bw_avg_mib_s),
            BandwidthUnit::GigabitsPerSecond => (self.bw_peak_gbit_s, self.bw_avg_gbit_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_above_the_ceiling_is_marked_and_an_empty_one_explained() {
        assert_eq!(peak_note(Some(99.0), Some(100.0)), "");
        assert_eq!(peak_note(Some(100.0), Some(100.0)), "", "at the ceiling is possible");
        assert_eq!(peak_note(Some(100.5), Some(100.0)), PEAK_ABOVE_CEILING);
        assert_eq!(peak_note(Some(500.0), None), "", "no ceiling known: nothing to judge against");
        assert!(peak_note(None, Some(100.0)).starts_with("no peak: "));
        assert_eq!(peak_console_note(""), "");
        assert!(peak_console_note(PEAK_ABOVE_CEILING).contains("above the path's ceiling"));
        assert_eq!(peak_console_note(PEAK_NOT_SUMMED), format!("\n     {PEAK_NOT_SUMMED}"));
    }

    /// Under `-b` the table's `#iterations` is this side's count, as perftest prints it; the
    /// sum of both directions (the files' `iterations`) and the check are notes.
    #[test]
    fn a_bidirectional_row_prints_the_local_count_and_says_the_rest_in_notes() {
        let settings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: true };
        let direction = |messages: u64| BandwidthFigures {
            message_size_bytes: 4096,
            messages,
            elapsed_nanos: 1_000_000_000,
            peak_bytes_per_second: Some(2.0 * BYTES_PER_MIB),
            average_bytes_per_second: BYTES_PER_MIB,
            messages_per_second: 256.0,
            copy_seconds: 0.0,
            peak_span: Some((10, 1000)),
            events_not_stored: 0,
        };
        let row =
            BandwidthRow::new(&RowContext::default(), settings, &[direction(300), direction(200)], "pass");
        assert_eq!(row.iterations, 500);
        let style = ConsoleStyle { unit: BandwidthUnit::MebibytesPerSecond, timed: false, figure: None };
        let fields: Vec<String> = row.console_line(style).split_whitespace().map(String::from).collect();
        assert_eq!(fields, ["4096", "300", "4.00", "2.00", "0.000512"]);
        assert_eq!(row.console_notes(style), ["4096 B: check pass; both directions: 500 messages"]);
        let quiet = BandwidthRow::new(
            &RowContext::default(),
            BandwidthSettings { bidirectional: false, ..settings },
            &[direction(300)],
            "off",
        );
        assert_eq!(quiet.console_notes(style), Vec::<String>::new(), "nothing beyond perftest's fields");
        // --report-both's rows: each direction on its own, marked in `lane`; none one way.
        let directions = row.direction_rows();
        let lanes: Vec<&str> = directions.iter().map(|direction| direction.lane.as_str()).collect();
        assert_eq!(lanes, ["local", "remote"]);
        let counts: Vec<(u64, u64)> =
            directions.iter().map(|direction| (direction.iterations, direction.local_iterations)).collect();
        assert_eq!(counts, [(300, 300), (200, 200)]);
        assert!(directions
            .iter()
            .all(|direction| direction.bidirectional && direction.direction_rows().is_empty()));
        assert!(quiet.direction_rows().is_empty());
        assert_eq!(direction_lane("1", "remote"), "1:remote", "a --concurrent lane's direction");
    }

    #[test]
    fn every_gpu_index_comes_with_its_bus_id_and_the_placement_columns_come_before_the_peak_span() {
        let place = |device: &str, mem: &str, gpu: &str| PlaceColumns {
            device: device.into(),
            mem_local: mem.into(),
            gpu_local: gpu.into(),
            ..PlaceColumns::default()
        };
        assert_eq!(
            lane_note("1", &place("mlx5_1", "cuda", "1"), "0000:19:00.0"),
            "  lane 1: mlx5_1, cuda:1 (0000:19:00.0)"
        );
        assert_eq!(lane_note("0", &place("rxe0", "host", ""), ""), "  lane 0: rxe0, host");
        let context = RowContext {
            gpu_local: "1".into(),
            gpu_local_bus_id: "0000:19:00.0".into(),
            cpu: "0-15".into(),
            numa_node: Some(0),
            ..RowContext::default()
        };
        let settings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: false };
        let figures = BandwidthFigures {
            message_size_bytes: 65536,
            messages: 10,
            elapsed_nanos: 1000,
            peak_bytes_per_second: Some(1.0),
            average_bytes_per_second: 1.0,
            messages_per_second: 1.0,
            copy_seconds: 0.0,
            peak_span: Some((10, 1000)),
            events_not_stored: 0,
        };
        let row = BandwidthRow::new(&context, settings, &[figures], "off");
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(&row).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        let mut lines = text.lines();
        assert!(
            lines.next().unwrap().ends_with(",copy_time_s,lane,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,peak_messages,peak_span_s,ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,peak_events_not_stored,traffic_class,service_level,peak_note,nic_node_guid,gpu_local_uuid,relaxed_ordering"),
            "{text}"
        );
        assert!(
            lines.next().unwrap().ends_with(",0-15,0,0000:19:00.0,0,0,0,0,0,0,,10,1e-6,,,,,0,,,,,,"),
            "{text}"
        );
        let mut second = row.clone();
        second.machine.numa_node = Some(1);
        second.machine.gpu_local_bus_id = "0000:2a:00.0".into();
        let all = BandwidthRow::aggregate(&[row, second]).unwrap();
        assert_eq!(
            (all.machine.numa_node, all.machine.gpu_local_bus_id.as_str()),
            (None, "0000:19:00.0+0000:2a:00.0")
        );
        // Marks left out of the peak's store: summed over directions and over lanes.
        let short = BandwidthFigures { events_not_stored: 7, ..figures };
        let both = BandwidthRow::new(&context, settings, &[short, short], "off");
        assert_eq!(both.peak_events_not_stored, 14);
        assert_eq!(BandwidthRow::aggregate(&[both.clone(), both]).unwrap().peak_events_not_stored, 28);
    }
}
