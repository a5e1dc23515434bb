//! What the acceptance thresholds read of each row: the typed figures themselves, not the row
//! serialised and read back by column name.

use gdrperf_threshold::{LatencyStatistic, Measured};

use crate::output::latency_row::LatencyRow;
use crate::output::rows::BandwidthRow;
use crate::output::send_row::SendBandwidthRow;

/// How a row of this run is named when a threshold cannot be applied to it: the report crate's
/// row key ("write_bw host 4096 bytes"), with "this run" as its source.
fn this_run(test: &str, memory: &str, lane: &str, bytes: u64) -> (String, String) {
    let lane = match lane {
        "" => String::new(),
        "all" => " all lanes".to_string(),
        lane => format!(" lane {lane}"),
    };
    ("this run".to_string(), format!("{test} {memory}{lane} {bytes} bytes"))
}

/// The bandwidth rows (one-sided and send) are judged on `bw_avg_gbit_s`: for gdr-send-bw the
/// sender's average (the receiver's is `rx_bw_avg_gbit_s`).
impl Measured for BandwidthRow {
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn bandwidth_gbit_s(&self) -> Option<f64> {
        Some(self.bw_avg_gbit_s)
    }

    fn latency_us(&self, _: LatencyStatistic) -> Option<f64> {
        None
    }

    fn nic_errors(&self) -> Option<u64> {
        Some(self.machine.nic.nic_errors)
    }

    fn message_rate_mpps(&self) -> Option<f64> {
        Some(self.msg_rate_mpps)
    }

    fn describe(&self) -> (String, String) {
        this_run(&self.test, &self.place.mem_local, &self.lane, self.bytes)
    }
}

/// A send row is judged on its sender's columns.
impl Measured for SendBandwidthRow {
    fn bytes(&self) -> u64 {
        self.sender.bytes()
    }

    fn bandwidth_gbit_s(&self) -> Option<f64> {
        self.sender.bandwidth_gbit_s()
    }

    fn latency_us(&self, statistic: LatencyStatistic) -> Option<f64> {
        self.sender.latency_us(statistic)
    }

    fn nic_errors(&self) -> Option<u64> {
        self.sender.nic_errors()
    }

    fn message_rate_mpps(&self) -> Option<f64> {
        self.sender.message_rate_mpps()
    }

    fn describe(&self) -> (String, String) {
        self.sender.describe()
    }
}

impl Measured for LatencyRow {
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn bandwidth_gbit_s(&self) -> Option<f64> {
        None
    }

    fn latency_us(&self, statistic: LatencyStatistic) -> Option<f64> {
        Some(match statistic {
            LatencyStatistic::Minimum => self.t_min_us,
            LatencyStatistic::Typical => self.t_typical_us,
            LatencyStatistic::Average => self.t_avg_us,
            LatencyStatistic::P99 => self.p99_us,
            LatencyStatistic::P99_9 => self.p99_9_us,
            LatencyStatistic::P99_99 => self.p99_99_us,
            LatencyStatistic::Maximum => self.t_max_us,
        })
    }

    fn nic_errors(&self) -> Option<u64> {
        Some(self.machine.nic.nic_errors)
    }

    fn describe(&self) -> (String, String) {
        this_run(&self.test, &self.place.mem_local, "", self.bytes)
    }
}
