//! Did this change regress? Two runs (or two sets of repeated runs) joined row by row on (test,
//! memory modes, GPU, size), each pair's change judged against the noise.
//!
//! A verdict needs evidence beyond the noise (two identical back-to-back sweeps under load
//! differ by 5-40% per size). With two or more runs on each side a row regresses when the
//! one-sided t-test on the logs of its runs ([`crate::decision`]) finds the new runs worse
//! (p < 0.05) *and* the ratio of the sides' geometric means is worse by more than the tolerance;
//! 3 runs a side flag a 10% drop at 3% run-to-run spread nine times in ten. Where the runs
//! cannot decide, the row says how many runs a side would. With one run per side nothing
//! measures the noise: a change beyond the tolerance is reported as "cannot tell from noise",
//! never as a regression. Runs whose parameters differ (iterations, TX depth, QPs, ...) are
//! compared but marked, each difference named.
//!
//! ```
//! use gdrperf_report::{compare_repeated, ResultFile};
//!
//! let run = |name: &str, bandwidth: f64| {
//!     ResultFile::parse_csv(name, &format!("test,bytes,bw_avg_gbit_s\nwrite_bw,4096,{bandwidth}\n"))
//! };
//! let base = [run("a1.csv", 80.0)?, run("a2.csv", 82.0)?, run("a3.csv", 79.0)?];
//! let new = [run("b1.csv", 70.0)?, run("b2.csv", 71.0)?, run("b3.csv", 69.5)?];
//! let comparison = compare_repeated(&base, &new, None, 0.05)?;
//! assert_eq!(comparison.regressions(), 1); // -12%, p < 0.001 with 3 runs a side
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::decision::ALPHA;
use crate::decision::{compare_logs, runs_needed};
use crate::error::{ReportError, Result};
use crate::format::{percent_change, table, table_number};
use crate::results::{Better, ResultFile, ResultRow, RowKey};
use crate::significance::median;

/// How a value moved between the runs, judged against the tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Worse by more than the tolerance.
    Regression,
    /// Better by more than the tolerance.
    Improvement,
    /// Within the tolerance, or not beyond the noise of repeated runs.
    Same,
    /// Beyond the tolerance with one run a side: nothing measures the noise, so no verdict.
    Untested,
}

/// One row present in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedRow {
    pub test: String,
    pub memory: String,
    pub gpu: String,
    /// The lane of a `--concurrent` run ("0", "all"); empty otherwise.
    pub lane: String,
    pub bytes: u64,
    /// The column compared ("bw_avg_gbit_s").
    pub metric: String,
    /// The value, or the geometric mean of the repeated runs' values.
    pub base: f64,
    pub new: f64,
    /// (new - base) / base.
    pub change: f64,
    pub verdict: Change,
    /// Runs with this row on each side.
    pub base_runs: usize,
    pub new_runs: usize,
    /// Repeated runs: the one-sided p-value that the new runs are worse (better, for an
    /// improvement); `None` for single runs.
    pub p_value: Option<f64>,
    /// Repeated runs: the run-to-run spread (pooled standard deviation of the logs, 0.03 for
    /// about 3%); `None` for single runs.
    pub spread: Option<f64>,
    /// Repeated runs whose change is beyond the tolerance but not the noise: the runs a side
    /// that would tell a change this large at this spread.
    pub runs_needed: Option<usize>,
}

impl ComparedRow {
    /// The verdict column: the verdict with its evidence.
    fn evidence(&self, tolerance: f64) -> String {
        let beyond = self.change.abs() > tolerance;
        let spread = self.spread.map(|spread| format!("spread {:.1}%", spread * 100.0)).unwrap_or_default();
        match (self.verdict, self.p_value) {
            (Change::Untested, _) => "beyond the tolerance: single run, cannot tell from noise".into(),
            (Change::Regression, Some(p)) => {
                format!("REGRESSION p={p:.3} ({} vs {} runs, {spread})", self.base_runs, self.new_runs)
            }
            (Change::Improvement, Some(p)) => format!("improved p={p:.3}"),
            (Change::Same, Some(p)) if beyond => match self.runs_needed {
                Some(runs) => {
                    format!("not significant, p={p:.2} ({spread}: about {runs} runs a side would tell)")
                }
                None => format!("not significant, p={p:.2}"),
            },
            _ => String::new(),
        }
    }
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    pub tolerance: f64,
    /// Files on each side (more than one: repeated runs, tested for significance).
    pub base_runs: usize,
    pub new_runs: usize,
    /// Run parameters that differ between the sides ("tx_depth: base 128, new 1"): the change
    /// of a row may be theirs, not the code's.
    pub parameter_differences: Vec<String>,
    pub rows: Vec<ComparedRow>,
    /// Rows of BASE that NEW lacks (a size that crashed, a test not run): listed, never dropped.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|row| row.verdict == Change::Regression).count()
    }

    /// The table `gdrperf compare` prints, then what only one run has.
    pub fn render(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                vec![
                    row.test.clone(),
                    row.memory.clone(),
                    if row.gpu.is_empty() { "-".into() } else { row.gpu.clone() },
                    if row.lane.is_empty() { "-".into() } else { row.lane.clone() },
                    row.bytes.to_string(),
                    row.metric.clone(),
                    table_number(row.base),
                    table_number(row.new),
                    percent_change(row.change),
                    row.evidence(self.tolerance),
                ]
            })
            .collect();
        let mut out = String::new();
        for difference in &self.parameter_differences {
            out.push_str(&format!("parameters differ: {difference}\n"));
        }
        out.push_str(&table(
            &["test", "mem", "gpu", "lane", "bytes", "metric", "base", "new", "change", ""],
            &rows,
        ));
        for (label, keys) in [("only in base", &self.only_in_base), ("only in new", &self.only_in_new)] {
            if !keys.is_empty() {
                out.push_str(&format!("{label} ({}): {}\n", keys.len(), keys.join("; ")));
            }
        }
        let tolerance = self.tolerance * 100.0;
        let rows = self.rows.len();
        let (base_runs, new_runs) = (self.base_runs, self.new_runs);
        let untested = self.rows.iter().filter(|row| row.verdict == Change::Untested).count();
        out.push_str(&match (self.regressions(), base_runs.min(new_runs) > 1) {
            (_, false) if untested == 0 => format!(
                "no change beyond {tolerance}% in {rows} compared rows (single runs: no test of the noise)\n"
            ),
            (_, false) => format!(
                "{untested} of {rows} rows moved beyond {tolerance}%, but single runs cannot tell a change from \
                 run-to-run noise (two identical sweeps under load differ by 5-40% a size): no verdict. Run each \
                 side 3 times and give --base a1,a2,a3 --new b1,b2,b3\n"
            ),
            (0, true) => format!(
                "no significant regression (t-test on the logs p < {ALPHA} and beyond {tolerance}%) in {rows} rows, \
                 {base_runs} vs {new_runs} runs\n"
            ),
            (n, true) => format!(
                "{n} of {rows} rows regressed: t-test on the logs p < {ALPHA} and beyond {tolerance}%, \
                 {base_runs} vs {new_runs} runs\n"
            ),
        });
        if let Some(runs) = self.rows.iter().filter_map(|row| row.runs_needed).max() {
            out.push_str(&format!(
                "some rows moved beyond {tolerance}% within their noise: about {runs} runs a side would decide them\n"
            ));
        }
        if !self.parameter_differences.is_empty() {
            out.push_str("the runs' parameters differ (above): a change may be theirs, not the code's\n");
        }
        out
    }
}

/// The column compared for a row: the one asked for, else the row kind's default
/// (`bw_avg_gbit_s` for bandwidth, `t_typical_us` for latency).
fn metric_of(row: &ResultRow, metric: Option<&str>) -> Result<String> {
    let column = match metric {
        Some(column) => column.to_string(),
        None => match row.kind().default_metric() {
            Some((column, _)) => column.to_string(),
            None => {
                return Err(ReportError::MissingColumn {
                    source_name: row.source().to_string(),
                    row: row.describe(),
                    column: "bw_avg_gbit_s or t_typical_us".into(),
                    hint: "; name the column to compare with --metric".into(),
                })
            }
        },
    };
    Ok(column)
}

fn value_of(row: &ResultRow, column: &str) -> Result<f64> {
    row.number(column).ok_or_else(|| ReportError::MissingColumn {
        source_name: row.source().to_string(),
        row: row.describe(),
        column: column.to_string(),
        hint: String::new(),
    })
}

/// The rows of several files by key, refusing two rows with one key.
pub(crate) fn index_rows<'a>(
    files: impl IntoIterator<Item = &'a ResultFile>,
) -> Result<BTreeMap<RowKey, &'a ResultRow>> {
    let mut index: BTreeMap<RowKey, &ResultRow> = BTreeMap::new();
    for file in files {
        for row in &file.rows {
            if let Some(earlier) = index.insert(row.key(), row) {
                let sources = if earlier.source() == row.source() {
                    format!("{} (twice)", row.source())
                } else {
                    format!("{} and {}", earlier.source(), row.source())
                };
                return Err(ReportError::DuplicateRow { sources, key: row.describe() });
            }
        }
    }
    Ok(index)
}

/// Joins `base` and `new` and judges each pair. `metric`: the column to compare (default per
/// row kind); `tolerance`: a fraction (0.05 for 5%). One run per side: see [`compare_repeated`].
pub fn compare_runs(
    base: &ResultFile,
    new: &ResultFile,
    metric: Option<&str>,
    tolerance: f64,
) -> Result<Comparison> {
    compare_repeated(std::slice::from_ref(base), std::slice::from_ref(new), metric, tolerance)
}

/// Joins the runs of `base` and of `new` row by row and judges each row: with two or more runs
/// a side, by the t-test on the logs and the ratio of geometric means ([`crate::decision`]);
/// with one, no verdict beyond "within the tolerance" or "cannot tell".
pub fn compare_repeated(
    base: &[ResultFile],
    new: &[ResultFile],
    metric: Option<&str>,
    tolerance: f64,
) -> Result<Comparison> {
    let base_rows = base.iter().map(|file| index_rows([file])).collect::<Result<Vec<_>>>()?;
    let new_rows = new.iter().map(|file| index_rows([file])).collect::<Result<Vec<_>>>()?;
    let keys = |side: &[BTreeMap<RowKey, &ResultRow>]| {
        side.iter().flat_map(|rows| rows.keys().cloned()).collect::<std::collections::BTreeSet<RowKey>>()
    };
    let (base_keys, new_keys) = (keys(&base_rows), keys(&new_rows));
    let mut rows = Vec::new();
    for key in base_keys.intersection(&new_keys) {
        let base_side: Vec<&ResultRow> = base_rows.iter().filter_map(|rows| rows.get(key).copied()).collect();
        let new_side: Vec<&ResultRow> = new_rows.iter().filter_map(|rows| rows.get(key).copied()).collect();
        let column = metric_of(base_side[0], metric)?;
        let values =
            |side: &[&ResultRow]| side.iter().map(|row| value_of(row, &column)).collect::<Result<Vec<f64>>>();
        let (base_values, new_values) = (values(&base_side)?, values(&new_side)?);
        let higher_is_better = Better::for_column(&column) == Better::Higher;
        let logs = compare_logs(&base_values, &new_values);
        // Repeated runs: the geometric means (the t-test's centre); single runs (or values with no
        // logarithm): the medians.
        let (base_value, new_value) = match logs {
            Some(_) => (geometric_mean(&base_values), geometric_mean(&new_values)),
            None => (median(&base_values).unwrap_or(0.0), median(&new_values).unwrap_or(0.0)),
        };
        let change = relative_change(base_value, new_value);
        let worse = if higher_is_better { -change } else { change };
        let repeated = base_values.len() > 1 && new_values.len() > 1;
        let (p_worse, p_better) = match logs {
            Some(logs) if higher_is_better => (Some(logs.p_lower), Some(logs.p_higher)),
            Some(logs) => (Some(logs.p_higher), Some(logs.p_lower)),
            None => (None, None),
        };
        let significant = |p: Option<f64>| p.is_some_and(|p| p < ALPHA);
        let (verdict, p_value) = if !repeated || logs.is_none() {
            (if worse.abs() > tolerance { Change::Untested } else { Change::Same }, None)
        } else if worse > tolerance && significant(p_worse) {
            (Change::Regression, p_worse)
        } else if -worse > tolerance && significant(p_better) {
            (Change::Improvement, p_better)
        } else {
            (Change::Same, if worse >= 0.0 { p_worse } else { p_better })
        };
        let spread = logs.map(|logs| logs.spread);
        let runs_needed = match (verdict, logs) {
            (Change::Same, Some(logs)) if worse.abs() > tolerance => runs_needed(logs.ratio, logs.spread),
            _ => None,
        };
        rows.push(ComparedRow {
            test: key.test.clone(),
            memory: key.memory.clone(),
            gpu: key.gpu.clone(),
            lane: key.lane.clone(),
            bytes: key.bytes,
            metric: column,
            base: base_value,
            new: new_value,
            change,
            verdict,
            base_runs: base_values.len(),
            new_runs: new_values.len(),
            p_value,
            spread,
            runs_needed,
        });
    }
    let names =
        |side: &[ResultFile]| side.iter().map(|file| file.name.as_str()).collect::<Vec<_>>().join(", ");
    if rows.is_empty() {
        return Err(ReportError::NothingToCompare(format!(
            "{} and {} have no row in common (joined on test, memory modes, GPU and size): {} rows vs {} rows",
            names(base),
            names(new),
            base.iter().map(|file| file.rows.len()).sum::<usize>(),
            new.iter().map(|file| file.rows.len()).sum::<usize>()
        )));
    }
    Ok(Comparison {
        base: names(base),
        new: names(new),
        tolerance,
        base_runs: base.len(),
        new_runs: new.len(),
        parameter_differences: crate::compare_parameters::differences(base, new),
        only_in_base: base_keys.difference(&new_keys).map(RowKey::to_string).collect(),
        only_in_new: new_keys.difference(&base_keys).map(RowKey::to_string).collect(),
        rows,
    })
}

/// The geometric mean of values above zero.
fn geometric_mean(values: &[f64]) -> f64 {
    (values.iter().map(|value| value.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// (new - base) / base, with 0 -> 0 as no change and 0 -> x as an infinite one.
pub(crate) fn relative_change(base: f64, new: f64) -> f64 {
    if base == new {
        0.0
    } else if base == 0.0 {
        f64::INFINITY.copysign(new)
    } else {
        (new - base) / base.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, csv: &str) -> ResultFile {
        ResultFile::parse_csv(name, csv).unwrap()
    }

    /// Three runs of one file's rows, each value scaled by 1.00, 1.01 and 0.99 (a 1% spread).
    fn three_runs(csv: &str, numeric_columns: &[usize]) -> Vec<ResultFile> {
        [1.0, 1.01, 0.99]
            .iter()
            .enumerate()
            .map(|(run, factor)| {
                let mut text = String::new();
                for (line_number, line) in csv.lines().enumerate() {
                    let cells: Vec<String> = line
                        .split(',')
                        .enumerate()
                        .map(|(column, cell)| match cell.parse::<f64>() {
                            Ok(value) if line_number > 0 && numeric_columns.contains(&column) => {
                                (value * factor).to_string()
                            }
                            _ => cell.to_string(),
                        })
                        .collect();
                    text.push_str(&cells.join(","));
                    text.push('\n');
                }
                file(&format!("run{run}.csv"), &text)
            })
            .collect()
    }

    #[test]
    fn bandwidth_drops_beyond_the_tolerance_are_regressions() {
        let base = three_runs("test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,1.0,host,host\nwrite_bw,4,2.0,host,host\nwrite_bw,8,4.0,host,host\n", &[2]);
        let new = three_runs("test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,0.96,host,host\nwrite_bw,4,1.8,host,host\nwrite_bw,8,4.4,host,host\n", &[2]);
        let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
        let verdicts: Vec<Change> = comparison.rows.iter().map(|row| row.verdict).collect();
        assert_eq!(verdicts, [Change::Same, Change::Regression, Change::Improvement]);
        assert_eq!(comparison.regressions(), 1);
        let text = comparison.render();
        assert!(
            text.contains("-10.0%")
                && text.contains("REGRESSION p=0.000 (3 vs 3 runs, spread 1.0%)")
                && text.contains(
                    "1 of 3 rows regressed: t-test on the logs p < 0.05 and beyond 5%, 3 vs 3 runs"
                ),
            "{text}"
        );
    }

    /// The README's recipe, 3 runs a side, finds a halving (the exact Mann-Whitney test
    /// that came before said "not significant, p=0.05" here: 3 against 3 cannot go lower).
    #[test]
    fn three_runs_a_side_find_a_halving() {
        let base = runs(&[10.0, 10.4, 9.7]);
        let halved = runs(&[5.1, 4.9, 5.0]);
        let comparison = compare_repeated(&base, &halved, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 1, "{}", comparison.render());
    }
    #[test]
    fn a_figure_that_is_not_a_number_is_an_error_not_unchanged() {
        let base = file("base.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1.0\n");
        let new = file("new.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,NaN\n");
        for (one, other) in [(&base, &new), (&new, &base)] {
            let error = compare_runs(one, other, None, 0.05).unwrap_err().to_string();
            assert!(error.contains("has no numeric \"bw_avg_gbit_s\" column"), "{error}");
        }
    }

    #[test]
    fn latency_rises_are_regressions() {
        let base = three_runs("test,bytes,t_typical_us,p99_us\nread_lat,2,2.0,3.0\n", &[2, 3]);
        let new = three_runs("test,bytes,t_typical_us,p99_us\nread_lat,2,2.05,4.0\n", &[2, 3]);
        assert_eq!(
            compare_repeated(&base, &new, None, 0.05).unwrap().regressions(),
            0,
            "typical +2.5% is within 5%"
        );
        let p99 = compare_repeated(&base, &new, Some("p99_us"), 0.05).unwrap();
        assert_eq!(p99.rows[0].verdict, Change::Regression);
        assert!((p99.rows[0].change - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn rows_only_in_one_run_are_listed_and_joins_respect_memory_and_gpu() {
        let base = file(
            "base.csv",
            "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,2,1,host,\nwrite_bw,2,1,cuda,GPU0\n",
        );
        let new = file(
            "new.csv",
            "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,2,1,cuda,GPU0\nwrite_bw,2,1,cuda,GPU1\n",
        );
        let comparison = compare_runs(&base, &new, None, 0.05).unwrap();
        assert_eq!(comparison.rows.len(), 1);
        assert_eq!(comparison.only_in_base, ["write_bw host 2 bytes"]);
        assert_eq!(comparison.only_in_new, ["write_bw cuda GPU1 2 bytes"]);
        assert!(comparison.render().contains("only in new (1): write_bw cuda GPU1 2 bytes"));
    }

    #[test]
    fn unjoinable_inputs_are_errors() {
        let base = file("base.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\n");
        let other = file("other.csv", "test,bytes,bw_avg_gbit_s\nread_bw,2,1\n");
        assert!(compare_runs(&base, &other, None, 0.05)
            .unwrap_err()
            .to_string()
            .contains("no row in common"));
        let twice = file("twice.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\nwrite_bw,2,3\n");
        assert!(compare_runs(&twice, &base, None, 0.05)
            .unwrap_err()
            .to_string()
            .contains("twice.csv (twice) hold more than one row for write_bw host 2 bytes: rows are joined"));
        let error = compare_runs(&base, &base, Some("nope"), 0.05).unwrap_err().to_string();
        assert!(error.contains("no numeric \"nope\" column"), "{error}");
    }

    #[test]
    fn lanes_of_a_concurrent_run_are_rows_of_their_own() {
        let lanes = "test,bytes,bw_avg_gbit_s,lane\nwrite_bw,2,1,0\nwrite_bw,2,1,1\nwrite_bw,2,2,all\n";
        let base = file("lanes.csv", lanes);
        let new = file("lanes2.csv", &lanes.replace(",2,all", ",1.5,all"));
        let report = compare_runs(&base, &new, None, 0.05).unwrap();
        assert_eq!(report.rows.len(), 3);
        let lanes: Vec<&str> = report.rows.iter().map(|row| row.lane.as_str()).collect();
        assert_eq!(lanes, ["0", "1", "all"]);
        assert!(
            report.render().lines().any(|line| line.contains("all") && line.contains("-25")),
            "{}",
            report.render()
        );
    }

    /// One run of one size per value, with that bandwidth.
    fn runs(values: &[f64]) -> Vec<ResultFile> {
        values
            .iter()
            .map(|value| file("run.csv", &format!("test,bytes,bw_avg_gbit_s\nwrite_bw,2,{value}\n")))
            .collect()
    }

    #[test]
    fn repeated_runs_regress_only_beyond_the_noise() {
        // Noise of +-10% on both sides, geometric means 5% apart: spread 7.6%, t = -1.06 with 8
        // degrees of freedom, one-sided p = 0.160.
        let base = runs(&[1.00, 0.90, 1.10, 0.95, 1.05]);
        let noisy = runs(&[0.948, 1.04, 0.86, 0.99, 0.91]);
        let comparison = compare_repeated(&base, &noisy, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 0, "{}", comparison.render());
        let text = comparison.render();
        assert!(
            text.contains("not significant, p=0.16") && text.contains("no significant regression"),
            "{text}"
        );
        // Where the runs cannot decide, the row and the summary say how many would.
        assert!(
            text.contains("runs a side would tell") && text.contains("runs a side would decide them"),
            "{text}"
        );
        // A real 20% drop: the new runs' geometric mean 0.7959 against 0.9976.
        let dropped = runs(&[0.80, 0.72, 0.78, 0.76, 0.84, 0.83, 0.85]);
        let comparison = compare_repeated(&base, &dropped, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 1);
        assert!((comparison.rows[0].change + 0.2021).abs() < 1e-3, "{:?}", comparison.rows[0]);
        let text = comparison.render();
        assert!(text.contains("REGRESSION p=0.000 (5 vs 7 runs"), "{text}");
        assert!(text.contains("1 of 1 rows regressed: t-test on the logs p < 0.05"), "{text}");
    }

    #[test]
    fn single_runs_say_so_and_never_call_a_regression() {
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.97])[0], None, 0.05).unwrap();
        let text = comparison.render();
        assert!(
            text.contains("no change beyond 5% in 1 compared rows (single runs: no test of the noise)"),
            "{text}"
        );
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.5])[0], None, 0.05).unwrap();
        assert_eq!(comparison.rows[0].verdict, Change::Untested);
        assert_eq!(comparison.regressions(), 0);
        let text = comparison.render();
        assert!(!text.contains("REGRESSION"), "{text}");
        assert!(
            text.contains("beyond the tolerance: single run, cannot tell from noise")
                && text.contains("single runs cannot tell a change from run-to-run noise")
                && text.contains("Run each side 3 times"),
            "{text}"
        );
    }

    #[test]
    fn relative_change_handles_zero() {
        assert_eq!(relative_change(0.0, 0.0), 0.0);
        assert_eq!(relative_change(0.0, 1.0), f64::INFINITY);
        assert_eq!(relative_change(2.0, 1.0), -0.5);
    }
}
