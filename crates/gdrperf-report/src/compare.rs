//! Did this change regress? Two runs joined row by row on (test, memory modes, GPU, size), each
//! pair's change judged against a tolerance.
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
    pub base: f64,
    pub new: f64,
    /// (new - base) / base.
    pub change: f64,
    pub verdict: Change,
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    pub tolerance: f64,
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
                    match row.verdict {
                        Change::Regression => "REGRESSION".into(),
                        Change::Improvement => "improved".into(),
                        Change::Same => String::new(),
                    },
                ]
            })
            .collect();
        let mut out =
            table(&["test", "mem", "gpu", "lane", "bytes", "metric", "base", "new", "change", ""], &rows);
        for (label, keys) in [("only in base", &self.only_in_base), ("only in new", &self.only_in_new)] {
            if !keys.is_empty() {
                out.push_str(&format!("{label} ({}): {}\n", keys.len(), keys.join("; ")));
            }
        }
        let tolerance = self.tolerance * 100.0;
        out.push_str(&match self.regressions() {
            0 => format!("no regression beyond {tolerance}% in {} compared rows\n", self.rows.len()),
            n => format!("{n} of {} rows regressed beyond {tolerance}%\n", self.rows.len()),
        });
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
/// row kind); `tolerance`: a fraction (0.05 for 5%).
pub fn compare_runs(
    base: &ResultFile,
    new: &ResultFile,
    metric: Option<&str>,
    tolerance: f64,
) -> Result<Comparison> {
    let base_rows = index_rows([base])?;
    let new_rows = index_rows([new])?;
    let mut rows = Vec::new();
    for (key, base_row) in &base_rows {
        let Some(new_row) = new_rows.get(key) else { continue };
        let column = metric_of(base_row, metric)?;
        let (base_value, new_value) = (value_of(base_row, &column)?, value_of(new_row, &column)?);
        let change = relative_change(base_value, new_value);
        let worse = match Better::for_column(&column) {
            Better::Higher => -change,
            Better::Lower => change,
        };
        let verdict = if worse > tolerance {
            Change::Regression
        } else if -worse > tolerance {
            Change::Improvement
        } else {
            Change::Same
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
        });
    }
    if rows.is_empty() {
        return Err(ReportError::NothingToCompare(format!(
            "{} and {} have no row in common (joined on test, memory modes, GPU and size): {} rows vs {} rows",
            base.name,
            new.name,
            base.rows.len(),
            new.rows.len()
        )));
    }
    let missing = |from: &BTreeMap<RowKey, &ResultRow>, other: &BTreeMap<RowKey, &ResultRow>| {
        from.keys().filter(|key| !other.contains_key(key)).map(RowKey::to_string).collect::<Vec<_>>()
    };
    Ok(Comparison {
        base: base.name.clone(),
        new: new.name.clone(),
        tolerance,
        only_in_base: missing(&base_rows, &new_rows),
        only_in_new: missing(&new_rows, &base_rows),
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

    #[test]
    fn relative_change_handles_zero() {
        assert_eq!(relative_change(0.0, 0.0), 0.0);
        assert_eq!(relative_change(0.0, 1.0), f64::INFINITY);
        assert_eq!(relative_change(2.0, 1.0), -0.5);
    }
}
