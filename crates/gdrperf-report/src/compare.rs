//! Did this change regress? Two runs (or two sets of repeated runs) joined row by row on (test,
//! memory modes, GPU, size), each pair's change judged against the noise.
//!
//! A verdict needs evidence beyond the noise (two identical back-to-back sweeps under load
//! differ by 5-40% per size). With repeated runs on each side a row regresses when the
//! Mann-Whitney test ([`crate::significance`]) finds the new runs worse (one-sided p < 0.05)
//! *and* their median is worse by more than the tolerance. With one run per side nothing can
//! measure the noise: a change beyond the stated tolerance is a regression "(single run)", one
//! within it reads "single run, not significant". Runs whose parameters differ (iterations,
//! TX depth, QPs, ...) are compared but marked, each difference named.
//!
//! ```
//! use gdrperf_report::{compare_runs, ResultFile};
//!
//! let base = ResultFile::parse_csv("base.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,4096,80\nwrite_bw,65536,95\n")?;
//! let new = ResultFile::parse_csv("new.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,4096,70\nwrite_bw,65536,96\n")?;
//! let comparison = compare_runs(&base, &new, None, 0.05)?;
//! assert_eq!(comparison.regressions(), 1); // 4096 bytes: -12.5%, beyond 5%
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{ReportError, Result};
use crate::format::{percent_change, table, table_number};
use crate::results::{Better, ResultFile, ResultRow, RowKey};
use crate::significance::{median, p_value_lower};

/// The significance level of a regression between repeated runs.
pub const ALPHA: f64 = 0.05;

/// How a value moved between the runs, judged against the tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Worse by more than the tolerance.
    Regression,
    /// Better by more than the tolerance.
    Improvement,
    /// Within the tolerance.
    Same,
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
    /// The value, or the median of the repeated runs' values.
    pub base: f64,
    pub new: f64,
    /// (new - base) / base.
    pub change: f64,
    pub verdict: Change,
    /// Runs with this row on each side.
    pub base_runs: usize,
    pub new_runs: usize,
    /// Repeated runs: the one-sided Mann-Whitney p-value that the new runs are worse (better,
    /// for an improvement); `None` for single runs.
    pub p_value: Option<f64>,
}

impl ComparedRow {
    /// The verdict column: the verdict with its evidence.
    fn evidence(&self, tolerance: f64) -> String {
        let beyond = self.change.abs() > tolerance;
        match (self.verdict, self.p_value) {
            (Change::Regression, None) => "REGRESSION (single run, beyond the tolerance)".into(),
            (Change::Improvement, None) => "improved (single run)".into(),
            (Change::Same, None) if self.change != 0.0 => "single run, not significant".into(),
            (Change::Regression, Some(p)) => {
                format!("REGRESSION p={p:.3} ({} vs {} runs)", self.base_runs, self.new_runs)
            }
            (Change::Improvement, Some(p)) => format!("improved p={p:.3}"),
            (Change::Same, Some(p)) if beyond => format!("not significant, p={p:.2}"),
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
        out.push_str(&match (self.regressions(), base_runs.min(new_runs) > 1) {
            (0, false) => format!(
                "no regression beyond {tolerance}% in {rows} compared rows (single runs: no test of the noise; \
                 give --base and --new 3 or more runs each for one)\n"
            ),
            (n, false) => format!("{n} of {rows} rows regressed beyond {tolerance}% (single runs: no test of the noise)\n"),
            (0, true) => format!(
                "no significant regression (Mann-Whitney p < {ALPHA} and beyond {tolerance}%) in {rows} rows, \
                 {base_runs} vs {new_runs} runs\n"
            ),
            (n, true) => format!(
                "{n} of {rows} rows regressed: Mann-Whitney p < {ALPHA} and median beyond {tolerance}%, \
                 {base_runs} vs {new_runs} runs\n"
            ),
        });
        // The smallest one-sided p-value of n vs m runs is 1 / C(n + m, n).
        let splits = (1..=base_runs).fold(1.0, |product, i| product * (new_runs + i) as f64 / i as f64);
        if base_runs.min(new_runs) > 1 && 1.0 / splits >= ALPHA {
            out.push_str(&format!("{base_runs} vs {new_runs} runs cannot reach p < {ALPHA} (at best 1/{splits:.0}): give 3 or more a side\n"));
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

/// Joins the runs of `base` and of `new` row by row and judges each row: with several runs a
/// side, by the Mann-Whitney test and the medians; with one, by the tolerance alone.
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
        let (base_value, new_value) =
            (median(&base_values).unwrap_or(0.0), median(&new_values).unwrap_or(0.0));
        let change = relative_change(base_value, new_value);
        let higher_is_better = Better::for_column(&column) == Better::Higher;
        let worse = if higher_is_better { -change } else { change };
        // The runs' values with "worse" as "lower", for the one-sided test.
        let oriented = |values: &[f64]| -> Vec<f64> {
            values.iter().map(|value| if higher_is_better { *value } else { -value }).collect()
        };
        let repeated = base_values.len() > 1 && new_values.len() > 1;
        let (p_worse, p_better) = if repeated {
            let (base_oriented, new_oriented) = (oriented(&base_values), oriented(&new_values));
            (p_value_lower(&new_oriented, &base_oriented), p_value_lower(&base_oriented, &new_oriented))
        } else {
            (None, None)
        };
        let significant = |p: Option<f64>| p.is_none_or(|p| p < ALPHA);
        let (verdict, p_value) = if worse > tolerance && significant(p_worse) {
            (Change::Regression, p_worse)
        } else if -worse > tolerance && significant(p_better) {
            (Change::Improvement, p_better)
        } else {
            (Change::Same, if worse >= 0.0 { p_worse } else { p_better })
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

    #[test]
    fn bandwidth_drops_beyond_the_tolerance_are_regressions() {
        let base = file("base.csv", "test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,1.0,host,host\nwrite_bw,4,2.0,host,host\nwrite_bw,8,4.0,host,host\n");
        let new = file("new.csv", "test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,0.96,host,host\nwrite_bw,4,1.8,host,host\nwrite_bw,8,4.4,host,host\n");
        let comparison = compare_runs(&base, &new, None, 0.05).unwrap();
        let verdicts: Vec<Change> = comparison.rows.iter().map(|row| row.verdict).collect();
        assert_eq!(verdicts, [Change::Same, Change::Regression, Change::Improvement]);
        assert_eq!(comparison.regressions(), 1);
        let text = comparison.render();
        assert!(
            text.contains("-10.0%")
                && text.contains("REGRESSION")
                && text.contains("1 of 3 rows regressed beyond 5%"),
            "{text}"
        );
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
        let base = file("base.csv", "test,bytes,t_typical_us,p99_us\nread_lat,2,2.0,3.0\n");
        let new = file("new.csv", "test,bytes,t_typical_us,p99_us\nread_lat,2,2.05,4.0\n");
        assert_eq!(
            compare_runs(&base, &new, None, 0.05).unwrap().regressions(),
            0,
            "typical +2.5% is within 5%"
        );
        let p99 = compare_runs(&base, &new, Some("p99_us"), 0.05).unwrap();
        assert_eq!(p99.rows[0].verdict, Change::Regression);
        assert!((p99.rows[0].change - 1.0 / 3.0).abs() < 1e-12);
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

    /// Five runs of one size with the given bandwidths.
    fn runs(values: &[f64]) -> Vec<ResultFile> {
        values
            .iter()
            .map(|value| file("run.csv", &format!("test,bytes,bw_avg_gbit_s\nwrite_bw,2,{value}\n")))
            .collect()
    }

    #[test]
    fn repeated_runs_regress_only_beyond_the_noise() {
        // Noise of +-10% on both sides, medians 5.2% apart: the single-run rule would call it.
        let base = runs(&[1.00, 0.90, 1.10, 0.95, 1.05]);
        let noisy = runs(&[0.948, 1.04, 0.86, 0.99, 0.91]);
        let comparison = compare_repeated(&base, &noisy, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 0, "{}", comparison.render());
        let text = comparison.render();
        assert!(text.contains("not significant, p=") && text.contains("no significant regression"), "{text}");
        // A real 20% drop, every new run below every base run: p = 1 / C(12, 7).
        let dropped = runs(&[0.80, 0.72, 0.78, 0.76, 0.84, 0.83, 0.85]);
        let comparison = compare_repeated(&base, &dropped, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 1);
        assert_eq!(comparison.rows[0].p_value, Some(1.0 / 792.0), "C(12, 5) splits");
        let text = comparison.render();
        assert!(text.contains("-20.0%") && text.contains("REGRESSION p=0.001 (5 vs 7 runs)"), "{text}");
        assert!(text.contains("1 of 1 rows regressed: Mann-Whitney p < 0.05"), "{text}");
    }

    #[test]
    fn single_runs_say_so() {
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.97])[0], None, 0.05).unwrap();
        let text = comparison.render();
        assert!(text.contains("single run, not significant"), "{text}");
        assert!(text.contains("single runs: no test of the noise"), "{text}");
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.8])[0], None, 0.05).unwrap();
        assert!(comparison.render().contains("REGRESSION (single run, beyond the tolerance)"));
    }

    #[test]
    fn relative_change_handles_zero() {
        assert_eq!(relative_change(0.0, 0.0), 0.0);
        assert_eq!(relative_change(0.0, 1.0), f64::INFINITY);
        assert_eq!(relative_change(2.0, 1.0), -0.5);
    }
}
