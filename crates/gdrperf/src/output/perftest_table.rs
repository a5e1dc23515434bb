//! perftest's console table, byte for byte: its header lines (`RESULT_FMT`, `RESULT_FMT_G`,
//! `RESULT_FMT_LAT`, `RESULT_FMT_LAT_DUR`) and row formats (`REPORT_FMT`, `REPORT_FMT_EXT`,
//! `REPORT_FMT_LAT`, `REPORT_FMT_LAT_DUR`) of `perftest_parameters.h` (linux-rdma/perftest
//! 00b55b6), tabs included, so that a script written around perftest's stdout reads gdrperf's
//! rows with the same `awk` fields. One place for the formats; the row types fill them.

use crate::options::config::BandwidthUnit;

/// The bandwidth header (`RESULT_FMT`, or `RESULT_FMT_G` with `--report_gbits`).
pub fn bandwidth_header(unit: BandwidthUnit) -> String {
    match unit {
        BandwidthUnit::MebibytesPerSecond => {
            " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]".into()
        }
        BandwidthUnit::GigabitsPerSecond => {
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]".into()
        }
    }
}

/// A bandwidth row (`REPORT_FMT`; `REPORT_FMT_EXT`, six decimals, where perftest uses it: an
/// average below 0.1 Gb/s). A peak gdrperf could not define is "-" (one field, as a number).
pub fn bandwidth_line(
    bytes: u64,
    iterations: u64,
    peak: Option<f64>,
    average: f64,
    message_rate_mpps: f64,
    unit: BandwidthUnit,
) -> String {
    let fine = unit == BandwidthUnit::GigabitsPerSecond && average < 0.1;
    let peak = match (peak, fine) {
        (Some(peak), true) => format!("{peak:.6}"),
        (Some(peak), false) => format!("{peak:.2}"),
        (None, _) => "-".into(),
    };
    if fine {
        format!(" {bytes:<7}    {iterations}           {peak:<7}            {average:<7.6}            {message_rate_mpps:<7.6}")
    } else {
        format!(" {bytes:<7}    {iterations:<10}       {peak:<7}            {average:<7.2}\t\t     {message_rate_mpps:<7.6}")
    }
}

/// The latency header (`RESULT_FMT_LAT`, its trailing space included).
pub const LATENCY_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

/// The latency header of a `-D` run (`RESULT_FMT_LAT_DUR`).
pub const LATENCY_DURATION_HEADER: &str = " #bytes        #iterations       t_avg[usec]    tps average";

/// A latency row's figures in perftest's order, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyFields {
    pub bytes: u64,
    pub iterations: u64,
    pub t_min: f64,
    pub t_max: f64,
    pub t_typical: f64,
    pub t_avg: f64,
    pub t_stdev: f64,
    pub p99: f64,
    pub p99_9: f64,
}

/// A latency row (`REPORT_FMT_LAT`).
pub fn latency_line(fields: &LatencyFields) -> String {
    let LatencyFields { bytes, iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99_9 } = *fields;
    format!(
        " {bytes:<7} {iterations}          {t_min:<7.2}        {t_max:<7.2}      {t_typical:<7.2}  \t       {t_avg:<7.2}     \t{t_stdev:<7.2}\t\t{p99:<7.2} \t\t{p99_9:<7.2}"
    )
}

/// A `-D` latency row (`REPORT_FMT_LAT_DUR`): the average and the transactions per second.
pub fn latency_duration_line(
    bytes: u64,
    iterations: u64,
    t_avg: f64,
    transactions_per_second: f64,
) -> String {
    format!(" {bytes:<7}       {iterations}            {t_avg:<7.2}        {transactions_per_second:<7.2}")
}

/// A figure with `decimals` decimals, as perftest's `%.2f` prints it into its `--out_json` file.
pub fn rounded(value: f64, decimals: i32) -> serde_json::Value {
    let scale = 10f64.powi(decimals);
    serde_json::json!((value * scale).round() / scale)
}

#[cfg(test)]
mod tests;
