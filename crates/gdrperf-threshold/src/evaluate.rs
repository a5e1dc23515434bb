//! Holding measured sizes against thresholds. Unlike perftest, one failing size fails the run:
//! a node that reaches line rate at 64 KiB but collapses at 4 KiB is not a healthy node.
//!
//! ```
//! use gdrperf_threshold::{evaluate_bandwidth, BandwidthThreshold};
//!
//! let limit = BandwidthThreshold::parse("90Gb/s")?.resolve(None, false)?;
//! let failure = evaluate_bandwidth(2048, 41.2, &limit).expect("41.2 < 90");
//! assert_eq!(failure.to_string(), "2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)");
//! assert!(evaluate_bandwidth(65536, 92.0, &limit).is_none());
//! # Ok::<(), gdrperf_threshold::ThresholdError>(())
//! ```

use std::fmt;

use gdrperf_files::columns as column;
use serde::Serialize;

use crate::error::{Result, ThresholdError};
use crate::format::{number, percent_change};
use crate::limit::{BandwidthLimit, BandwidthUnit, LatencyLimit, LatencyStatistic};

/// The figures of one result row that thresholds are held against, in the units the
/// published columns use. The benches implement it on their typed rows; the report crate on
/// rows read back from a file.
pub trait Measured {
    /// The message size of the row.
    fn bytes(&self) -> u64;
    /// The average bandwidth in Gb/s (`bw_avg_gbit_s`); `None` for a row without one.
    fn bandwidth_gbit_s(&self) -> Option<f64>;
    /// A latency statistic in µs (the column [`LatencyStatistic::column`] names); `None` for a
    /// row without latencies.
    fn latency_us(&self, statistic: LatencyStatistic) -> Option<f64>;
    /// How many NIC error counters moved during the size (the row's `nic_errors`); `None` for a
    /// row without the column (a result file from before it existed).
    fn nic_errors(&self) -> Option<u64> {
        None
    }
    /// The message rate in millions of messages per second (`msg_rate_mpps`); `None` for a row
    /// without one.
    fn message_rate_mpps(&self) -> Option<f64> {
        None
    }
    /// Where the row comes from and which row it is ("run.csv", "write_bw 2048 bytes"), for
    /// the error when a figure is missing.
    fn describe(&self) -> (String, String);
}

/// One size that missed its threshold: what was measured, against what, by how much.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub bytes: u64,
    /// "BW average" or "latency p99".
    pub what: String,
    /// The measured value, in `unit`.
    pub measured: f64,
    /// The threshold, in `unit`.
    pub limit: f64,
    pub unit: String,
    /// `<` for a bandwidth below its minimum, `>` for a latency above its maximum.
    pub relation: &'static str,
    /// (measured - limit) / limit.
    pub relative: f64,
    /// Where a relative threshold came from ("80% of the 100 Gb/s port").
    pub basis: Option<String>,
}

impl fmt::Display for Failure {
    /// "2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)"; a count against a count limit
    /// (NIC errors against 0) in words, as it has no unit and no meaningful percentage:
    /// "65536 bytes: NIC error counters moved 12 times, more than the 0 allowed (...)".
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.relative.is_nan() {
            let times = if self.measured == 1.0 { "time" } else { "times" };
            write!(
                out,
                "{} bytes: {} moved {} {times}, more than the {} allowed",
                self.bytes,
                self.what,
                number(self.measured),
                number(self.limit)
            )?;
            return match &self.basis {
                Some(basis) => write!(out, " ({basis})"),
                None => Ok(()),
            };
        }
        write!(
            out,
            "{} bytes: {} {} {unit} {} {} {unit} ({}",
            self.bytes,
            self.what,
            number(self.measured),
            self.relation,
            number(self.limit),
            percent_change(self.relative),
            unit = self.unit,
        )?;
        if let Some(basis) = &self.basis {
            write!(out, "; {basis}")?;
        }
        write!(out, ")")
    }
}

impl Failure {
    /// The FAIL line for a console whose table shows bandwidth in `table_unit`: a bandwidth
    /// failure worded in the other unit (a `--min-bw 90Gb/s` under a MiB/s table) gets the
    /// same comparison in the table's unit after it, so that one screen can be read in one unit.
    pub fn in_table_unit(&self, table_unit: BandwidthUnit) -> String {
        let other = [BandwidthUnit::GigabitsPerSecond, BandwidthUnit::MebibytesPerSecond]
            .into_iter()
            .find(|unit| unit.label() == self.unit);
        match other {
            Some(unit) if unit != table_unit => {
                let in_table = |value: f64| number(table_unit.from_gbit(unit.to_gbit(value)));
                format!(
                    "{self} = {} {label} {} {} {label}",
                    in_table(self.measured),
                    self.relation,
                    in_table(self.limit),
                    label = table_unit.label()
                )
            }
            _ => self.to_string(),
        }
    }
}

/// `Some(failure)` when a size's message rate (Mpps) is below `limit` (a NaN fails too).
pub fn evaluate_message_rate(bytes: u64, mpps: f64, limit: f64) -> Option<Failure> {
    if mpps >= limit {
        return None;
    }
    Some(Failure {
        bytes,
        what: "MsgRate".to_string(),
        measured: mpps,
        limit,
        unit: "Mpps".to_string(),
        relation: "<",
        relative: (mpps - limit) / limit,
        basis: None,
    })
}

/// `Some(failure)` when a size's average bandwidth (Gb/s, the row's `bw_avg_gbit_s`) is below
/// the limit. The FAIL line uses the unit the threshold was written in.
pub fn evaluate_bandwidth(bytes: u64, avg_gbit_s: f64, limit: &BandwidthLimit) -> Option<Failure> {
    // A NaN (a size that measured nothing) fails too: `!(x >= limit)` rather than `x < limit`.
    if avg_gbit_s >= limit.gbit_s {
        return None;
    }
    Some(Failure {
        bytes,
        what: "BW average".to_string(),
        measured: limit.unit.from_gbit(avg_gbit_s),
        limit: limit.unit.from_gbit(limit.gbit_s),
        unit: limit.unit.label().to_string(),
        relation: "<",
        relative: (avg_gbit_s - limit.gbit_s) / limit.gbit_s,
        basis: limit.basis.clone(),
    })
}

/// `Some(failure)` when a size's latency statistic (µs, the row's `limit.statistic.column()`)
/// is above the limit.
pub fn evaluate_latency(bytes: u64, value_us: f64, limit: &LatencyLimit) -> Option<Failure> {
    if value_us <= limit.max_us {
        return None;
    }
    Some(Failure {
        bytes,
        what: format!("latency {}", limit.statistic.label()),
        measured: value_us,
        limit: limit.max_us,
        unit: "us".to_string(),
        relation: ">",
        relative: (value_us - limit.max_us) / limit.max_us,
        basis: None,
    })
}

/// `Some(failure)` when more NIC error counters moved during a size than `limit` allows
/// (`--max-nic-errors`): a link that passes on bandwidth but retransmits is not healthy.
pub fn evaluate_nic_errors(bytes: u64, errors: u64, limit: u64) -> Option<Failure> {
    (errors > limit).then(|| Failure {
        bytes,
        what: "NIC error counters".to_string(),
        measured: errors as f64,
        limit: limit as f64,
        unit: String::new(),
        relation: ">",
        relative: f64::NAN,
        basis: Some("nic_errors: retransmissions, sequence errors, RNR NAKs, drops; see nic_counters".into()),
    })
}

/// The thresholds of one run, resolved: what every row of it is held against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thresholds {
    pub min_bw: Option<BandwidthLimit>,
    pub max_lat: Option<LatencyLimit>,
    /// `--max-nic-errors`: how many NIC error counter increments a size may have.
    pub max_nic_errors: Option<u64>,
    /// `--min-msg-rate` (perftest's `-y/--limit_msgrate`): the least message rate, Mpps.
    pub min_msg_rate_mpps: Option<f64>,
}

impl Thresholds {
    pub fn is_empty(&self) -> bool {
        self.min_bw.is_none()
            && self.max_lat.is_none()
            && self.max_nic_errors.is_none()
            && self.min_msg_rate_mpps.is_none()
    }

    /// Every threshold the row misses. A threshold whose figure the row lacks is an error, not a
    /// pass: `--max-lat` on a bandwidth row must not silently accept it.
    pub fn evaluate<R: Measured + ?Sized>(&self, row: &R) -> Result<Vec<Failure>> {
        let mut failures = Vec::new();
        if let Some(limit) = &self.min_bw {
            let value = row.bandwidth_gbit_s().ok_or_else(|| {
                missing(
                    row,
                    "--min-bw",
                    column::BW_AVG_GBIT_S.name(),
                    " (--min-bw applies to bandwidth results)",
                )
            })?;
            failures.extend(evaluate_bandwidth(row.bytes(), value, limit));
        }
        if let Some(limit) = &self.max_lat {
            let value = row.latency_us(limit.statistic).ok_or_else(|| {
                missing(
                    row,
                    "--max-lat",
                    limit.statistic.column().name(),
                    " (--max-lat applies to latency results)",
                )
            })?;
            failures.extend(evaluate_latency(row.bytes(), value, limit));
        }
        if let Some(limit) = self.max_nic_errors {
            let value = row.nic_errors().ok_or_else(|| {
                missing(
                    row,
                    "--max-nic-errors",
                    column::NIC_ERRORS.name(),
                    " (results from a gdrperf that read no NIC counters)",
                )
            })?;
            failures.extend(evaluate_nic_errors(row.bytes(), value, limit));
        }
        if let Some(limit) = self.min_msg_rate_mpps {
            let value = row.message_rate_mpps().ok_or_else(|| {
                missing(
                    row,
                    "--min-msg-rate",
                    "msg_rate_mpps",
                    " (--min-msg-rate applies to bandwidth results)",
                )
            })?;
            failures.extend(evaluate_message_rate(row.bytes(), value, limit));
        }
        Ok(failures)
    }
}

fn missing<R: Measured + ?Sized>(
    row: &R,
    flag: &'static str,
    column: &'static str,
    hint: &'static str,
) -> ThresholdError {
    let (source_name, row) = row.describe();
    ThresholdError::MissingFigure { source_name, row, column, hint, flag }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{BandwidthThreshold, LatencyThreshold};

    #[test]
    fn a_bandwidth_below_the_limit_fails_with_the_shortfall() {
        let limit = BandwidthThreshold::parse("90Gb/s").unwrap().resolve(None, false).unwrap();
        let failure = evaluate_bandwidth(2048, 41.2, &limit).unwrap();
        assert_eq!(failure.to_string(), "2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)");
        assert!(evaluate_bandwidth(2048, 90.0, &limit).is_none(), "equal to the limit passes");
        assert!(evaluate_bandwidth(2048, f64::NAN, &limit).is_some(), "NaN fails");
    }

    #[test]
    fn a_mib_threshold_reports_in_mib() {
        let limit = BandwidthThreshold::parse("11000MiB/s").unwrap().resolve(None, false).unwrap();
        let failure = evaluate_bandwidth(65536, 46.137344, &limit).unwrap(); // 5500 MiB/s
        assert_eq!(failure.to_string(), "65536 bytes: BW average 5500 MiB/s < 11000 MiB/s (-50.0%)");
        assert_eq!(failure.in_table_unit(BandwidthUnit::MebibytesPerSecond), failure.to_string());
        assert_eq!(
            failure.in_table_unit(BandwidthUnit::GigabitsPerSecond),
            "65536 bytes: BW average 5500 MiB/s < 11000 MiB/s (-50.0%) = 46.1 Gb/s < 92.3 Gb/s"
        );
    }

    #[test]
    fn a_percent_threshold_names_the_port() {
        let limit =
            BandwidthThreshold::parse("90%").unwrap().resolve(Some("200 Gb/sec (4X HDR)"), false).unwrap();
        let failure = evaluate_bandwidth(4096, 150.0, &limit).unwrap();
        assert_eq!(
            failure.to_string(),
            "4096 bytes: BW average 150 Gb/s < 180 Gb/s (-16.7%; 90% of the 200 Gb/s port)"
        );
    }

    #[test]
    fn nic_errors_above_the_limit_fail_without_a_percentage() {
        let failure = evaluate_nic_errors(65536, 12, 0).unwrap();
        assert_eq!(
            failure.to_string(),
            "65536 bytes: NIC error counters moved 12 times, more than the 0 allowed (nic_errors: retransmissions, sequence errors, RNR NAKs, drops; see nic_counters)"
        );
        assert!(evaluate_nic_errors(65536, 3, 3).is_none());
        let thresholds = Thresholds { max_nic_errors: Some(0), ..Thresholds::default() };
        let error = thresholds.evaluate(&LatencyRow).unwrap_err().to_string();
        assert!(
            error.contains(
                "no numeric \"nic_errors\" column (results from a gdrperf that read no NIC counters)"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_latency_above_the_limit_fails() {
        let limit = LatencyThreshold::parse("5us").unwrap().on(LatencyStatistic::P99);
        let failure = evaluate_latency(2, 7.31, &limit).unwrap();
        assert_eq!(failure.to_string(), "2 bytes: latency p99 7.31 us > 5 us (+46.2%)");
        assert!(evaluate_latency(2, 5.0, &limit).is_none());
    }

    /// A latency row of 2 bytes: typical 3 us, p99 9.5 us, nothing else.
    struct LatencyRow;

    impl Measured for LatencyRow {
        fn bytes(&self) -> u64 {
            2
        }
        fn bandwidth_gbit_s(&self) -> Option<f64> {
            None
        }
        fn latency_us(&self, statistic: LatencyStatistic) -> Option<f64> {
            match statistic {
                LatencyStatistic::Typical => Some(3.0),
                LatencyStatistic::P99 => Some(9.5),
                _ => None,
            }
        }
        fn describe(&self) -> (String, String) {
            ("test".into(), "read_lat 2 bytes".into())
        }
    }

    #[test]
    fn a_message_rate_below_its_floor_fails_and_a_row_without_one_is_an_error() {
        let failure = evaluate_message_rate(64, 1.5, 2.0).unwrap();
        assert_eq!(failure.to_string(), "64 bytes: MsgRate 1.5 Mpps < 2 Mpps (-25.0%)");
        assert!(evaluate_message_rate(64, 2.0, 2.0).is_none(), "at the floor passes");
        assert!(evaluate_message_rate(64, f64::NAN, 2.0).is_some(), "nothing measured fails");
        let floor = Thresholds { min_msg_rate_mpps: Some(2.0), ..Thresholds::default() };
        let error = floor.evaluate(&LatencyRow).unwrap_err().to_string();
        assert!(error.contains("\"msg_rate_mpps\""), "{error}");
    }

    #[test]
    fn rows_are_held_against_their_figures() {
        let thresholds = Thresholds {
            min_bw: None,
            max_lat: Some(LatencyThreshold::parse("5us").unwrap().on(LatencyStatistic::P99)),
            max_nic_errors: None,
            min_msg_rate_mpps: None,
        };
        let failures = thresholds.evaluate(&LatencyRow).unwrap();
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].to_string(), "2 bytes: latency p99 9.5 us > 5 us (+90.0%)");

        let typical = Thresholds {
            min_bw: None,
            max_lat: Some(LatencyThreshold::parse("5us").unwrap().on(LatencyStatistic::Typical)),
            max_nic_errors: None,
            min_msg_rate_mpps: None,
        };
        assert!(typical.evaluate(&LatencyRow).unwrap().is_empty());

        let wrong_kind = Thresholds {
            min_bw: Some(BandwidthThreshold::parse("1Gb/s").unwrap().resolve(None, false).unwrap()),
            max_lat: None,
            max_nic_errors: None,
            min_msg_rate_mpps: None,
        };
        let error = wrong_kind.evaluate(&LatencyRow).unwrap_err().to_string();
        assert_eq!(
            error,
            "test: read_lat 2 bytes has no numeric \"bw_avg_gbit_s\" column (--min-bw applies to bandwidth results)"
        );
    }
}
