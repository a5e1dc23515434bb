//! Holding rows read back from a result file against thresholds, and the verdict of a whole
//! acceptance run. The thresholds themselves and the FAIL lines are `gdrperf-threshold`'s,
//! shared with the benches, which judge their rows as each size completes.

use std::fmt;

use gdrperf_command_line::Verdict as ContractVerdict;
use gdrperf_files::columns as column;
use serde::Serialize;

pub use gdrperf_threshold::{
    evaluate_bandwidth, evaluate_latency, evaluate_nic_errors, Failure, Measured, Thresholds,
};

use crate::results::ResultRow;
use crate::threshold::LatencyStatistic;

/// A row read back from a file carries its figures under their published column names.
impl Measured for ResultRow {
    fn bytes(&self) -> u64 {
        ResultRow::bytes(self)
    }

    fn bandwidth_gbit_s(&self) -> Option<f64> {
        self.number(column::BW_AVG_GBIT_S)
    }

    fn latency_us(&self, statistic: LatencyStatistic) -> Option<f64> {
        self.number(statistic.column())
    }

    fn nic_errors(&self) -> Option<u64> {
        // A value that is not a count is reported as a missing figure, never read as 0.
        self.count(column::NIC_ERRORS).ok().flatten()
    }

    fn describe(&self) -> (String, String) {
        (self.source().to_string(), ResultRow::describe(self))
    }
}

/// How an acceptance row (or a soak lane) ended: pass, skip (not run), fail (a threshold
/// missed), error (the run itself could not be made or read). Screens and `summary.csv` print
/// the upper-case [`Verdict::label`]; JSON writes the exit-code contract's word
/// ([`Verdict::contract`]: a skip is "undecided", its reason in the row's `detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Pass,
    /// Not run, for a reason that is not a fault of the node (no GPU for a cuda row).
    Skip,
    Fail,
    Error,
}

impl Verdict {
    pub fn exit_code(self) -> u8 {
        self.contract().exit_code()
    }

    /// The exit-code contract's word for this verdict: a row not run for a reason that is not
    /// the node's fault was not decided either way.
    pub fn contract(self) -> ContractVerdict {
        match self {
            Verdict::Pass => ContractVerdict::Pass,
            Verdict::Skip => ContractVerdict::Undecided,
            Verdict::Fail => ContractVerdict::Fail,
            Verdict::Error => ContractVerdict::Error,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Skip => "SKIP",
            Verdict::Fail => "FAIL",
            Verdict::Error => "ERROR",
        }
    }

    /// The verdict of a whole made of parts: the worst part's (an error outranks a failure,
    /// since an error means part of the answer is missing; a skip outranks a pass, since a row
    /// not run leaves the whole undecided). Nothing at all is an error.
    pub fn overall(parts: impl IntoIterator<Item = Verdict>) -> Verdict {
        parts.into_iter().max().unwrap_or(Verdict::Error)
    }
}

/// JSON (`summary.json`, `soak.json`) spells a verdict with the contract's four words.
impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.contract().serialize(serializer)
    }
}

impl fmt::Display for Verdict {
    /// The label, padded when a width is given (`{:<5}`).
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.pad(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threshold::{BandwidthThreshold, LatencyThreshold};

    #[test]
    fn a_row_read_back_gives_its_figures_by_column() {
        let row = ResultRow::from_json(
            "run.json",
            serde_json::json!({"test": "read_lat", "bytes": 2, "t_typical_us": 3.0, "p99_us": 9.5}),
        )
        .unwrap();
        assert_eq!(Measured::bytes(&row), 2);
        assert_eq!(row.latency_us(LatencyStatistic::P99), Some(9.5));
        assert_eq!(row.latency_us(LatencyStatistic::Maximum), None);
        assert_eq!(row.bandwidth_gbit_s(), None);
        let wrong_kind = Thresholds {
            min_bw: Some(BandwidthThreshold::parse("1Gb/s").unwrap().resolve(None, false).unwrap()),
            max_lat: Some(LatencyThreshold::parse("5us").unwrap().on(LatencyStatistic::P99)),
            max_nic_errors: None,
            min_msg_rate_mpps: None,
        };
        assert_eq!(
            wrong_kind.evaluate(&row).unwrap_err().to_string(),
            "run.json: read_lat host 2 bytes has no numeric \"bw_avg_gbit_s\" column (--min-bw applies to bandwidth results)"
        );
    }

    #[test]
    fn verdicts_combine_to_the_worst() {
        assert_eq!(Verdict::overall([Verdict::Pass, Verdict::Skip]), Verdict::Skip);
        assert_eq!(Verdict::overall([Verdict::Pass, Verdict::Skip]).contract().word(), "undecided");
        assert_eq!(Verdict::overall([Verdict::Pass, Verdict::Skip]).exit_code(), 0);
        assert_eq!(Verdict::overall([Verdict::Pass, Verdict::Fail, Verdict::Skip]), Verdict::Fail);
        assert_eq!(Verdict::overall([Verdict::Fail, Verdict::Error]), Verdict::Error);
        assert_eq!(Verdict::overall([]), Verdict::Error);
        assert_eq!([Verdict::Pass, Verdict::Fail, Verdict::Error].map(Verdict::exit_code), [0, 1, 2]);
        let words = [Verdict::Pass, Verdict::Skip, Verdict::Fail, Verdict::Error]
            .map(|verdict| serde_json::to_value(verdict).unwrap());
        assert_eq!(words, ["pass", "undecided", "fail", "error"]);
    }
}
