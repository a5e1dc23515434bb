//! Did this change regress? Two sets of repeated runs joined row by row on (test, memory
//! modes, GPU, lane, size), and one decision for the whole comparison.
//!
//! The rows of one (test, memory modes, GPU, lane, metric) form a sweep over sizes; a file
//! holding GPUDirect rows beside staged-copy or host rows adds the sweep of its speed-up
//! ("cuda vs cuda-staged"), so a change that slows GPUDirect but not staged copies is judged
//! too. Every sweep is tested whole, in bands of neighbouring sizes and size by size, under one
//! 5% budget for the whole comparison ([`crate::sweep_decision`]). A size is a REGRESSION when a
//! test covering it found the new runs worse and both that group's change and the size's own
//! are worse than the tolerance; the comparison's verdict is "regression" (in JSON, the exit-code
//! contract's "fail") exactly when a row is. Where the runs cannot decide (a sweep worse than
//! the tolerance but not beyond its noise, or single runs) the verdict is "undecided". Stalled, interrupted and zero values are said;
//! runs of one side that differ in commit, host or command are warned about by name.
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
//! assert_eq!(comparison.exit_code(), 1);
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::decision::log_t_test;
pub use crate::decision::ALPHA;
use crate::error::{ReportError, Result};
use crate::results::{Better, ResultFile, ResultRow, RowKey};
use crate::run_anomalies;
use crate::significance::median;
use crate::sweep_decision::{decide, SweepLogs, FALSE_ALARM_BUDGET};

mod outcome;

pub(crate) use outcome::sweep_label;
use outcome::{describe_test, sweep_is_worse, worse_than};
pub use outcome::{Change, ComparedRow, Comparison, Decision};

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
    row.number_named(column).ok_or_else(|| ReportError::MissingColumn {
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

/// A row's column and each run's oriented log on the base and the new side (`None` where the
/// run lacks it).
type RowLogs = (String, Vec<Option<f64>>, Vec<Option<f64>>);

/// One sweep being assembled: its rows (one per size, in size order) and each run's oriented
/// log per size.
struct SweepRows {
    rows: Vec<ComparedRow>,
    higher_is_better: bool,
    base: Vec<Vec<Option<f64>>>,
    new: Vec<Vec<Option<f64>>>,
}

/// Joins the runs of `base` and of `new` row by row and decides the whole comparison
/// ([`crate::sweep_decision`]); with one run a side, no verdict beyond "pass" (within the
/// tolerance) or "undecided".
pub fn compare_repeated(
    base: &[ResultFile],
    new: &[ResultFile],
    metric: Option<&str>,
    tolerance: f64,
) -> Result<Comparison> {
    compare_sharing(base, new, metric, tolerance, 1)
}

/// [`compare_repeated`] as one of `comparisons` comparisons that make one decision (the bench
/// files of two acceptance folders): each gets an equal share of the false-alarm budget, so the
/// decision over all of them keeps it.
pub fn compare_sharing(
    base: &[ResultFile],
    new: &[ResultFile],
    metric: Option<&str>,
    tolerance: f64,
    comparisons: usize,
) -> Result<Comparison> {
    let base_rows = base.iter().map(|file| index_rows([file])).collect::<Result<Vec<_>>>()?;
    let new_rows = new.iter().map(|file| index_rows([file])).collect::<Result<Vec<_>>>()?;
    let keys = |side: &[BTreeMap<RowKey, &ResultRow>]| {
        side.iter().flat_map(|rows| rows.keys().cloned()).collect::<BTreeSet<RowKey>>()
    };
    let (base_keys, new_keys) = (keys(&base_rows), keys(&new_rows));
    let names =
        |side: &[ResultFile]| side.iter().map(|file| file.name.as_str()).collect::<Vec<_>>().join(", ");
    let mut notes = Vec::new();
    // Each run's oriented log per key, `None` where it lacks the row or the value has no log.
    let mut sweeps: BTreeMap<String, SweepRows> = BTreeMap::new();
    let mut logs_by_key: BTreeMap<RowKey, RowLogs> = BTreeMap::new();
    for key in base_keys.intersection(&new_keys) {
        let first = base_rows.iter().find_map(|rows| rows.get(key).copied()).expect("key on the base side");
        let column = metric_of(first, metric)?;
        let higher_is_better = Better::for_column(&column) == Better::Higher;
        let side_logs =
            |side: &[BTreeMap<RowKey, &ResultRow>], files: &[ResultFile], notes: &mut Vec<String>| {
                side.iter()
                    .zip(files)
                    .map(|(rows, file)| match rows.get(key) {
                        None => Ok(None),
                        Some(row) => {
                            let value = value_of(row, &column)?;
                            if value > 0.0 && value.is_finite() {
                                Ok(Some(if higher_is_better { value.ln() } else { -value.ln() }))
                            } else {
                                notes.push(format!(
                                    "{}: {key} has {column} = {value}: no logarithm, left out of the tests",
                                    file.name
                                ));
                                Ok(None)
                            }
                        }
                    })
                    .collect::<Result<Vec<Option<f64>>>>()
            };
        let base_logs = side_logs(&base_rows, base, &mut notes)?;
        let new_logs = side_logs(&new_rows, new, &mut notes)?;
        let row = compared_row(key, &column, higher_is_better, &base_logs, &new_logs);
        let label = sweep_label(&row);
        logs_by_key.insert(key.clone(), (column.clone(), base_logs.clone(), new_logs.clone()));
        let sweep = sweeps.entry(label).or_insert_with(|| SweepRows {
            rows: Vec::new(),
            higher_is_better,
            base: vec![Vec::new(); base.len()],
            new: vec![Vec::new(); new.len()],
        });
        sweep.rows.push(row);
        for (run, value) in sweep.base.iter_mut().zip(&base_logs) {
            run.push(*value);
        }
        for (run, value) in sweep.new.iter_mut().zip(&new_logs) {
            run.push(*value);
        }
    }
    if sweeps.is_empty() {
        return Err(ReportError::NothingToCompare(format!(
            "{} and {} have no row in common (joined on test, memory modes, GPU and size): {} rows vs {} rows",
            names(base),
            names(new),
            base.iter().map(|file| file.rows.len()).sum::<usize>(),
            new.iter().map(|file| file.rows.len()).sum::<usize>()
        )));
    }
    for speedup in speedup_sweeps(&logs_by_key, base.len(), new.len()) {
        sweeps.insert(sweep_label(&speedup.rows[0]), speedup);
    }
    let labels: Vec<String> = sweeps.keys().cloned().collect();
    let side_names = |files: &[ResultFile]| files.iter().map(|file| file.name.clone()).collect::<Vec<_>>();
    for (label, sweep) in &sweeps {
        notes.extend(run_anomalies::describe(label, "base", &side_names(base), &sweep.base));
        notes.extend(run_anomalies::describe(label, "new", &side_names(new), &sweep.new));
    }
    let logs: Vec<SweepLogs> = sweeps
        .values()
        .map(|sweep| SweepLogs {
            base: sweep.base.clone(),
            new: sweep.new.clone(),
            worse_than: worse_than(sweep.higher_is_better, tolerance),
        })
        .collect();
    let tests = decide(&logs, FALSE_ALARM_BUDGET / comparisons.max(1) as f64);
    let row_count: usize = sweeps.values().map(|sweep| sweep.rows.len()).sum();
    let mut rows = Vec::new();
    for (index, (label, sweep)) in sweeps.into_iter().enumerate() {
        let sizes: Vec<u64> = sweep.rows.iter().map(|row| row.bytes).collect();
        let limit = logs[index].worse_than;
        for (at, mut row) in sweep.rows.into_iter().enumerate() {
            let sign = if sweep.higher_is_better { 1.0 } else { -1.0 };
            let own = if row.base > 0.0 && row.new > 0.0 { sign * (row.new / row.base).ln() } else { 0.0 };
            let repeated = row.base_runs > 1 && row.new_runs > 1;
            // Marked inside a group only where the size's typical run moved too: with 3 or more
            // runs a side, the difference of the sides' medians, so that one stalled run does
            // not mark its sizes inside a group that regressed elsewhere.
            let column =
                |runs: &[Vec<Option<f64>>]| runs.iter().filter_map(|run| run[at]).collect::<Vec<f64>>();
            let (base_column, new_column) = (column(&logs[index].base), column(&logs[index].new));
            let typical = match (
                base_column.len() >= 3 && new_column.len() >= 3,
                median(&base_column),
                median(&new_column),
            ) {
                (true, Some(base), Some(new)) => new - base,
                _ => own,
            };
            let found = tests
                .iter()
                .filter(|test| test.sweep == index && test.regression && test.first <= at && at <= test.last)
                .min_by(|a, b| a.p_worse.unwrap_or(1.0).total_cmp(&b.p_worse.unwrap_or(1.0)));
            row.verdict = if own < limit && typical < limit && found.is_some() {
                row.found_by = found.map(|test| describe_test(&label, &sizes, test));
                Change::Regression
            } else if repeated && own > -limit && row.p_value.is_some_and(|p| p < ALPHA / row_count as f64) {
                Change::Improvement
            } else if own < limit || (!repeated && own.abs() > -limit) {
                Change::Undecided
            } else {
                Change::Pass
            };
            rows.push(row);
        }
    }
    let regression = rows.iter().any(|row| row.verdict == Change::Regression);
    let repeated = base.len().min(new.len()) > 1;
    let undecided_sweep = tests.iter().any(|test| sweep_is_worse(test, logs[test.sweep].worse_than));
    let verdict = if regression {
        Decision::Regression
    } else if (repeated && undecided_sweep)
        || (!repeated && rows.iter().any(|row| row.verdict == Change::Undecided))
    {
        Decision::Undecided
    } else {
        Decision::Pass
    };
    let mut warnings = crate::compare_parameters::mixed_runs("base", base);
    warnings.extend(crate::compare_parameters::mixed_runs("new", new));
    Ok(Comparison {
        base: names(base),
        new: names(new),
        tolerance,
        verdict,
        base_runs: base.len(),
        new_runs: new.len(),
        parameter_differences: crate::compare_parameters::differences(base, new),
        warnings,
        notes,
        rows,
        sweeps: labels,
        tests,
        only_in_base: base_keys.difference(&new_keys).map(RowKey::to_string).collect(),
        only_in_new: new_keys.difference(&base_keys).map(RowKey::to_string).collect(),
    })
}

/// A row of the table from each run's oriented logs (missing runs left out), its verdict still
/// to be decided.
fn compared_row(
    key: &RowKey,
    metric: &str,
    higher_is_better: bool,
    base_logs: &[Option<f64>],
    new_logs: &[Option<f64>],
) -> ComparedRow {
    let present = |logs: &[Option<f64>]| logs.iter().flatten().copied().collect::<Vec<f64>>();
    let (base_present, new_present) = (present(base_logs), present(new_logs));
    let sign = if higher_is_better { 1.0 } else { -1.0 };
    let level = |logs: &[f64]| {
        if logs.is_empty() {
            0.0
        } else {
            (sign * logs.iter().sum::<f64>() / logs.len() as f64).exp()
        }
    };
    let (base_value, new_value) = (level(&base_present), level(&new_present));
    let test = log_t_test(&base_present, &new_present);
    let p_value = test.map(|test| if test.ratio < 1.0 { test.p_lower } else { test.p_higher });
    let interval = test.map(|test| {
        let (low, high) = test.interval;
        if higher_is_better {
            (low, high)
        } else {
            (1.0 / high, 1.0 / low)
        }
    });
    ComparedRow {
        test: key.test.clone(),
        memory: key.memory.clone(),
        gpu: key.gpu.clone(),
        lane: key.lane.clone(),
        bytes: key.bytes,
        metric: metric.to_string(),
        base: base_value,
        new: new_value,
        change: relative_change(base_value, new_value),
        interval,
        verdict: Change::Pass,
        base_runs: base_present.len(),
        new_runs: new_present.len(),
        p_value,
        spread: test.map(|test| test.spread),
        found_by: None,
    }
}

/// The speed-up sweeps of files that hold GPUDirect (`cuda`) rows beside staged-copy or host
/// rows of the same test, lane and size: per run, the log of the GPUDirect figure over the
/// other's (both oriented, so a latency's speed-up is the other's time over GPUDirect's).
fn speedup_sweeps(logs: &BTreeMap<RowKey, RowLogs>, base_runs: usize, new_runs: usize) -> Vec<SweepRows> {
    let mut sweeps: BTreeMap<(String, String, String, String, String), SweepRows> = BTreeMap::new();
    for (key, (column, base, new)) in logs.iter().filter(|(key, _)| key.memory == "cuda") {
        for reference in ["cuda-staged", "host"] {
            let gpu = if reference == "host" { String::new() } else { key.gpu.clone() };
            let other = RowKey { memory: reference.to_string(), gpu, ..key.clone() };
            let Some((other_column, other_base, other_new)) = logs.get(&other) else { continue };
            if other_column != column {
                continue;
            }
            let difference = |a: &[Option<f64>], b: &[Option<f64>]| -> Vec<Option<f64>> {
                a.iter().zip(b).map(|(a, b)| Some((*a)? - (*b)?)).collect()
            };
            let (base_speedup, new_speedup) = (difference(base, other_base), difference(new, other_new));
            let memory = format!("cuda vs {reference}");
            let row_key = RowKey { memory: memory.clone(), ..key.clone() };
            let row = compared_row(&row_key, "speedup", true, &base_speedup, &new_speedup);
            let sweep = sweeps
                .entry((key.test.clone(), memory, key.gpu.clone(), key.lane.clone(), column.clone()))
                .or_insert_with(|| SweepRows {
                    rows: Vec::new(),
                    higher_is_better: true,
                    base: vec![Vec::new(); base_runs],
                    new: vec![Vec::new(); new_runs],
                });
            sweep.rows.push(row);
            for (run, value) in sweep.base.iter_mut().zip(base_speedup) {
                run.push(value);
            }
            for (run, value) in sweep.new.iter_mut().zip(new_speedup) {
                run.push(value);
            }
        }
    }
    sweeps.into_values().collect()
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
mod tests;
