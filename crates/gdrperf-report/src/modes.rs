//! How much does GPUDirect buy? The memory modes of one run side by side per size, with each
//! mode's speed-up over a baseline mode (staged copies by default: the alternative GPUDirect
//! replaces).
//!
//! Host-memory rows carry no GPU, so they are set beside every GPU's rows of the same test and
//! size: host is the reference the GPU modes are measured against.
//!
//! Repeated runs are welcome: a row found in several files is one run per file (the k-th file
//! holding it is run k), each mode's value is the geometric mean of its runs, and with two or
//! more runs of both modes each speed-up carries the 95% interval of the t-test on the logs
//! ([`crate::decision::log_t_test`]).
//!
//! ```
//! use gdrperf_report::{compare_memory_modes, ResultFile};
//!
//! let run = ResultFile::parse_csv("run.csv", "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\n\
//!     write_bw,65536,95,host,\nwrite_bw,65536,90,cuda,GPU0\nwrite_bw,65536,45,cuda-staged,GPU0\n")?;
//! let modes = compare_memory_modes(&[run], None, None)?;
//! assert_eq!(modes.baseline, "cuda-staged");
//! assert_eq!(modes.groups[0].speedups, [Some(95.0 / 45.0), Some(1.0), Some(2.0)]);
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use gdrperf_files::columns::{self as column, ColumnName};
use serde::Serialize;

use crate::compare::index_rows;
use crate::decision::log_t_test;
use crate::error::{ReportError, Result};
use crate::format::{table, table_number};
use crate::results::{Better, ResultFile, ResultRow, RowKey};

/// (test, place, size): one line of the table; the place is the GPU, with the lane of a
/// `--concurrent` run where there is one.
type GroupKey = (String, String, u64);

/// The order modes are shown in: from the baseline of all baselines to GPUDirect.
const MODE_ORDER: [&str; 3] = ["host", "cuda-staged", "cuda"];

/// One (test, GPU, size) with a value per mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeGroup {
    pub test: String,
    pub gpu: String,
    pub bytes: u64,
    pub metric: String,
    /// One per [`ModeComparison::modes`]: the value (geometric mean of the runs); `None`
    /// where that mode has no row.
    pub values: Vec<Option<f64>>,
    /// Runs of each mode.
    pub runs: Vec<usize>,
    /// Each mode's speed-up over the baseline (> 1: faster), `None` where either is missing.
    pub speedups: Vec<Option<f64>>,
    /// The 95% interval of each speed-up, where both modes have two or more runs.
    pub intervals: Vec<Option<(f64, f64)>>,
}

/// The modes of one run compared.
#[derive(Debug, Clone, Serialize)]
pub struct ModeComparison {
    pub modes: Vec<String>,
    pub baseline: String,
    pub groups: Vec<ModeGroup>,
}

impl ModeComparison {
    /// The table of `gdrperf compare RUN --by mem`.
    pub fn render(&self) -> String {
        let unit = |metric: &str| match ColumnName::named(metric) {
            Some(column::BW_AVG_GBIT_S) => "Gb/s".to_string(),
            Some(column::T_TYPICAL_US) => "us".to_string(),
            _ => metric.to_string(),
        };
        let mut header: Vec<String> = vec!["test".into(), "gpu".into(), "bytes".into(), "unit".into()];
        header.extend(self.modes.iter().cloned());
        let others: Vec<usize> =
            (0..self.modes.len()).filter(|&index| self.modes[index] != self.baseline).collect();
        header.extend(others.iter().map(|&index| format!("{} vs {}", self.modes[index], self.baseline)));
        let rows: Vec<Vec<String>> = self
            .groups
            .iter()
            .map(|group| {
                let mut row = vec![
                    group.test.clone(),
                    if group.gpu.is_empty() { "-".into() } else { group.gpu.clone() },
                    group.bytes.to_string(),
                    unit(&group.metric),
                ];
                row.extend(
                    group.values.iter().map(|value| value.map(table_number).unwrap_or_else(|| "-".into())),
                );
                row.extend(others.iter().map(|&index| {
                    match (group.speedups[index], group.intervals[index]) {
                        (Some(speedup), Some((low, high))) => format!("{speedup:.2}x [{low:.2}, {high:.2}]"),
                        (Some(speedup), None) => format!("{speedup:.2}x"),
                        _ => "-".into(),
                    }
                }));
                row
            })
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut out = table(&header, &rows);
        out.push_str(&format!(
            "speed-up: how many times faster than {} (bandwidth ratio; for latency, {}'s time over the mode's); \
             [low, high]: its 95% interval over repeated runs (one run a mode: none)\n",
            self.baseline, self.baseline
        ));
        out
    }
}

/// Sets the memory modes of `files` (one run, possibly one file per mode) side by side.
/// `metric`: the column (default per row kind); `baseline`: the mode speed-ups are relative to
/// (default cuda-staged, else host, else the first mode).
pub fn compare_memory_modes(
    files: &[ResultFile],
    metric: Option<&str>,
    baseline: Option<&str>,
) -> Result<ModeComparison> {
    let rows = runs_by_key(files)?;
    let present: BTreeSet<&str> = rows.keys().map(|key| key.memory.as_str()).collect();
    let mut modes: Vec<String> =
        MODE_ORDER.iter().filter(|mode| present.contains(*mode)).map(|mode| mode.to_string()).collect();
    modes.extend(present.iter().filter(|mode| !MODE_ORDER.contains(mode)).map(|mode| mode.to_string()));
    if modes.len() < 2 {
        return Err(ReportError::NothingToCompare(format!(
            "--by mem needs rows of at least two memory modes; found {} (run the bench with --mem host, --mem cuda and \
             --mem cuda-staged and pass every file)",
            if modes.is_empty() { "none".to_string() } else { modes.join(", ") }
        )));
    }
    let baseline = match baseline {
        Some(mode) if modes.iter().any(|present| present == mode) => mode.to_string(),
        Some(mode) => {
            return Err(ReportError::NothingToCompare(format!(
                "baseline mode {mode:?} has no rows; modes present: {}",
                modes.join(", ")
            )))
        }
        None => ["cuda-staged", "host"]
            .iter()
            .find(|mode| present.contains(*mode))
            .map(|mode| mode.to_string())
            .unwrap_or_else(|| modes[0].clone()),
    };

    // (test, gpu, bytes) -> mode -> runs' values. Host rows (no GPU) join every GPU of their test and size.
    let mut groups: BTreeMap<GroupKey, BTreeMap<String, (Vec<f64>, String)>> = BTreeMap::new();
    for (key, key_rows) in &rows {
        let row = key_rows[0];
        let column = match metric {
            Some(column) => column.to_string(),
            None => row.kind().default_metric().map(|(column, _)| column.to_string()).unwrap_or_default(),
        };
        let values = key_rows
            .iter()
            .map(|row| {
                row.number_named(&column).ok_or_else(|| ReportError::MissingColumn {
                    source_name: row.source().to_string(),
                    row: row.describe(),
                    column: if column.is_empty() {
                        "bw_avg_gbit_s or t_typical_us".into()
                    } else {
                        column.clone()
                    },
                    hint: if metric.is_none() {
                        "; name the column with --metric".into()
                    } else {
                        String::new()
                    },
                })
            })
            .collect::<Result<Vec<f64>>>()?;
        // A lane of a --concurrent run is a place of its own ("GPU0 (lane 0)", "(lane all)"), so
        // the lanes' rows never overwrite each other.
        let place = match key.lane.as_str() {
            "" => key.gpu.clone(),
            lane => format!("{} (lane {lane})", key.gpu).trim_start().to_string(),
        };
        groups
            .entry((key.test.clone(), place, key.bytes))
            .or_default()
            .insert(key.memory.clone(), (values, column));
    }
    let gpu_groups: Vec<(String, String, u64)> =
        groups.keys().filter(|(_, gpu, _)| !gpu.is_empty()).cloned().collect();
    let mut joined_host = BTreeSet::new();
    for (test, gpu, bytes) in gpu_groups {
        if let Some(host) = groups.get(&(test.clone(), String::new(), bytes)).cloned() {
            joined_host.insert((test.clone(), bytes));
            let group = groups.entry((test, gpu, bytes)).or_default();
            for (mode, value) in host {
                group.entry(mode).or_insert(value);
            }
        }
    }
    groups.retain(|(test, gpu, bytes), _| !(gpu.is_empty() && joined_host.contains(&(test.clone(), *bytes))));

    let baseline_index = modes.iter().position(|mode| *mode == baseline).unwrap_or(0);
    let groups = groups
        .into_iter()
        .map(|((test, gpu, bytes), by_mode)| {
            let metric = by_mode.values().next().map(|(_, column)| column.clone()).unwrap_or_default();
            let runs: Vec<&[f64]> = modes
                .iter()
                .map(|mode| by_mode.get(mode).map_or(&[][..], |(values, _)| values.as_slice()))
                .collect();
            let values: Vec<Option<f64>> = runs.iter().map(|values| geometric_mean(values)).collect();
            let sign = if Better::for_column(&metric) == Better::Higher { 1.0 } else { -1.0 };
            let oriented = |values: &[f64]| -> Option<Vec<f64>> {
                values
                    .iter()
                    .map(|value| (*value > 0.0 && value.is_finite()).then(|| sign * value.ln()))
                    .collect()
            };
            let reference = oriented(runs[baseline_index]).filter(|logs| !logs.is_empty());
            let (speedups, intervals) = runs
                .iter()
                .zip(&values)
                .enumerate()
                .map(|(index, (runs, value))| match (value, values[baseline_index], &reference) {
                    (Some(value), Some(base), Some(reference)) if *value > 0.0 && base > 0.0 => {
                        let speedup = if sign > 0.0 { value / base } else { base / value };
                        let interval = oriented(runs)
                            .filter(|_| index != baseline_index)
                            .and_then(|logs| log_t_test(reference, &logs))
                            .map(|test| test.interval);
                        (Some(speedup), interval)
                    }
                    _ => (None, None),
                })
                .unzip();
            ModeGroup {
                test,
                gpu,
                bytes,
                metric,
                values,
                runs: runs.iter().map(|values| values.len()).collect(),
                speedups,
                intervals,
            }
        })
        .collect();
    Ok(ModeComparison { modes, baseline, groups })
}

/// Each key's rows, one per file that holds it, in file order: the k-th is run k. A file with
/// two rows of one key is refused (as `compare` refuses it).
fn runs_by_key(files: &[ResultFile]) -> Result<BTreeMap<RowKey, Vec<&ResultRow>>> {
    let mut rows: BTreeMap<RowKey, Vec<&ResultRow>> = BTreeMap::new();
    for file in files {
        for (key, row) in index_rows([file])? {
            rows.entry(key).or_default().push(row);
        }
    }
    Ok(rows)
}

fn geometric_mean(values: &[f64]) -> Option<f64> {
    match values {
        [] => None,
        [value] => Some(*value),
        _ if values.iter().all(|value| *value > 0.0) => {
            Some((values.iter().map(|value| value.ln()).sum::<f64>() / values.len() as f64).exp())
        }
        _ => crate::significance::median(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_line_up_per_gpu_with_host_beside_each() {
        let host = ResultFile::parse_csv(
            "host.csv",
            "test,bytes,t_typical_us,mem_local\nread_lat,2,2.0,host\nread_lat,4,2.0,host\n",
        )
        .unwrap();
        let gpus = ResultFile::parse_csv(
            "gpu.csv",
            "test,bytes,t_typical_us,mem_local,gpu_local\nread_lat,2,2.5,cuda,GPU0\nread_lat,2,8.0,cuda-staged,GPU0\nread_lat,2,2.6,cuda,GPU1\n",
        )
        .unwrap();
        let modes = compare_memory_modes(&[host, gpus], None, None).unwrap();
        assert_eq!(modes.modes, ["host", "cuda-staged", "cuda"]);
        assert_eq!(modes.baseline, "cuda-staged");
        let described: Vec<(String, u64)> =
            modes.groups.iter().map(|group| (group.gpu.clone(), group.bytes)).collect();
        assert_eq!(described, [(String::new(), 4), ("GPU0".to_string(), 2), ("GPU1".to_string(), 2)]);
        assert_eq!(modes.groups[1].values, [Some(2.0), Some(8.0), Some(2.5)]);
        assert_eq!(
            modes.groups[1].speedups,
            [Some(4.0), Some(1.0), Some(3.2)],
            "latency: staged time over the mode's"
        );
        assert_eq!(modes.groups[2].speedups, [None, None, None], "GPU1 has no staged row to compare with");
        let text = modes.render();
        assert!(text.contains("cuda vs cuda-staged") && text.contains("3.20x"), "{text}");
    }

    #[test]
    fn lanes_of_concurrent_runs_keep_their_own_lines() {
        let host = ResultFile::parse_csv(
            "host.csv",
            "test,bytes,bw_avg_gbit_s,mem_local,lane\nwrite_bw,2,1,host,0\nwrite_bw,2,2,host,1\nwrite_bw,2,3,host,all\n",
        )
        .unwrap();
        let cuda = ResultFile::parse_csv(
            "cuda.csv",
            "test,bytes,bw_avg_gbit_s,mem_local,gpu_local,lane\nwrite_bw,2,4,cuda,0,0\n",
        )
        .unwrap();
        let modes = compare_memory_modes(&[host, cuda], None, None).unwrap();
        let places: Vec<&str> = modes.groups.iter().map(|group| group.gpu.as_str()).collect();
        assert_eq!(places, ["(lane 0)", "(lane 1)", "(lane all)", "0 (lane 0)"]);
        let host_values: Vec<Option<f64>> =
            modes.groups.iter().take(3).map(|group| group.values[0]).collect();
        assert_eq!(host_values, [Some(1.0), Some(2.0), Some(3.0)], "no lane overwrote another");
    }

    #[test]
    fn one_mode_is_not_enough() {
        let host = ResultFile::parse_csv("host.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\n").unwrap();
        let error = compare_memory_modes(std::slice::from_ref(&host), None, None).unwrap_err().to_string();
        assert!(error.contains("at least two memory modes; found host"), "{error}");
        let cuda =
            ResultFile::parse_csv("cuda.csv", "test,bytes,bw_avg_gbit_s,mem_local\nwrite_bw,2,3,cuda\n")
                .unwrap();
        assert!(compare_memory_modes(&[host.clone(), cuda.clone()], None, Some("cuda-staged"))
            .unwrap_err()
            .to_string()
            .contains("has no rows"));
        let modes = compare_memory_modes(&[host, cuda], None, None).unwrap();
        assert_eq!(modes.baseline, "host");
        assert_eq!(modes.groups[0].speedups[1], Some(3.0));
    }

    #[test]
    fn repeated_runs_give_each_speedup_an_interval() {
        // Three runs, each file all three modes: staged 45 +-1%, GPUDirect 90 +-1%.
        let run = |name: &str, factor: f64| {
            ResultFile::parse_csv(
                name,
                &format!(
                    "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,65536,95,host,\n\
                     write_bw,65536,{},cuda,GPU0\nwrite_bw,65536,{},cuda-staged,GPU0\n",
                    90.0 * factor,
                    45.0 / factor
                ),
            )
            .unwrap()
        };
        let modes =
            compare_memory_modes(&[run("r1.csv", 1.0), run("r2.csv", 1.01), run("r3.csv", 0.99)], None, None)
                .unwrap();
        let group = &modes.groups[0];
        assert_eq!(group.runs, [3, 3, 3]);
        assert!((group.speedups[2].unwrap() - 2.0).abs() < 1e-3, "{group:?}");
        let (low, high) = group.intervals[2].unwrap();
        assert!(low < 2.0 && high > 2.0 && high - low < 0.2, "{group:?}");
        assert_eq!(group.intervals[1], None, "the baseline against itself");
        assert!(modes.render().contains("2.00x ["), "{}", modes.render());
    }
}
