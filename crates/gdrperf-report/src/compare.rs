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

use gdrperf_command_line::Verdict;
use gdrperf_files::columns as column;
use serde::Serialize;

use crate::decision::log_t_test;
pub use crate::decision::ALPHA;
use crate::error::{ReportError, Result};
use crate::format::{percent_change, table, table_number};
use crate::results::{Better, ResultFile, ResultRow, RowKey};
use crate::run_anomalies;
use crate::significance::median;
use crate::sweep_decision::{decide, GroupTest, Level, SweepLogs, FALSE_ALARM_BUDGET};

/// A row's verdict. `--json` writes it as two keys: `verdict`, the exit-code contract's word
/// (a regression is "fail", an improvement "pass"), and `finding`, "regression" or
/// "improvement" where the row is one (null otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Within the tolerance, or better than it without a clear test.
    Pass,
    /// Worse than the tolerance inside a group the whole comparison's test found worse.
    Regression,
    /// Better than the tolerance beyond the noise (this size's own test, its share of 5%).
    Improvement,
    /// Worse than the tolerance, but the runs cannot tell it from their noise (or single runs).
    Undecided,
}

impl Change {
    /// The exit-code contract's word for this row.
    pub fn contract(self) -> Verdict {
        match self {
            Change::Pass | Change::Improvement => Verdict::Pass,
            Change::Regression => Verdict::Fail,
            Change::Undecided => Verdict::Undecided,
        }
    }

    /// What the row is beyond its verdict: a regression or an improvement.
    pub fn finding(self) -> Option<&'static str> {
        match self {
            Change::Regression => Some("regression"),
            Change::Improvement => Some("improvement"),
            Change::Pass | Change::Undecided => None,
        }
    }
}

/// Flattened into its row: `"verdict": "fail", "finding": "regression"`.
impl Serialize for Change {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut fields = serializer.serialize_struct("Change", 2)?;
        fields.serialize_field("verdict", &self.contract())?;
        fields.serialize_field("finding", &self.finding())?;
        fields.end()
    }
}

/// The comparison's one decision; the exit code is 1 for `Regression`, else 0. `--json` writes
/// the exit-code contract's word: pass, fail (a regression), undecided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Pass,
    Regression,
    /// No regression found, but a sweep moved worse than the tolerance within its noise, or
    /// single runs moved beyond it: more runs a side would decide.
    Undecided,
}

impl Decision {
    /// The exit-code contract's word for the decision.
    pub fn contract(self) -> Verdict {
        match self {
            Decision::Pass => Verdict::Pass,
            Decision::Regression => Verdict::Fail,
            Decision::Undecided => Verdict::Undecided,
        }
    }

    /// The word the printed verdict line uses ("regression" where JSON says "fail").
    pub fn word(self) -> &'static str {
        match self {
            Decision::Pass => "pass",
            Decision::Regression => "regression",
            Decision::Undecided => "undecided",
        }
    }
}

impl Serialize for Decision {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.contract().serialize(serializer)
    }
}

/// One row present on both sides (or one size of a speed-up sweep).
#[derive(Debug, Clone, Serialize)]
pub struct ComparedRow {
    pub test: String,
    /// The memory modes, or "cuda vs cuda-staged" for a speed-up row.
    pub memory: String,
    pub gpu: String,
    /// The lane of a `--concurrent` run ("0", "all"); empty otherwise.
    pub lane: String,
    pub bytes: u64,
    /// The column compared ("bw_avg_gbit_s"), or "speedup".
    pub metric: String,
    /// The geometric mean of the runs' values (the value itself for one run).
    pub base: f64,
    pub new: f64,
    /// (new - base) / base.
    pub change: f64,
    /// Two or more runs a side: the two-sided 95% interval of new / base.
    pub interval: Option<(f64, f64)>,
    /// `verdict` and `finding` in JSON (see [`Change`]).
    #[serde(flatten)]
    pub verdict: Change,
    /// Runs with a usable value of this row on each side.
    pub base_runs: usize,
    pub new_runs: usize,
    /// This size's own one-sided p-value (worse for a worse change, better for a better one);
    /// `None` with fewer than two runs a side.
    pub p_value: Option<f64>,
    /// The run-to-run spread (pooled standard deviation of the logs, 0.03 for about 3%).
    pub spread: Option<f64>,
    /// A regression: the test that found it ("sweep of 23 sizes -10.1% [-12.0%, -8.3%] p=0.0001").
    pub found_by: Option<String>,
}

/// Two sets of runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    pub tolerance: f64,
    /// The decision over every row: the exit code's ("pass", "fail", "undecided" in JSON).
    pub verdict: Decision,
    /// Files on each side.
    pub base_runs: usize,
    pub new_runs: usize,
    /// Run parameters that differ between the sides ("tx_depth: base 128, new 1").
    pub parameter_differences: Vec<String>,
    /// Runs of one side that differ in commit, host or command, by name.
    pub warnings: Vec<String>,
    /// Values left out or discounted: zeros, missing sizes, stalled runs.
    pub notes: Vec<String>,
    pub rows: Vec<ComparedRow>,
    /// The sweeps tested, by label, in the order `tests` refers to them.
    pub sweeps: Vec<String>,
    /// Every test of the decision (sweep, band, size), with its share of the 5% and its outcome.
    pub tests: Vec<GroupTest>,
    /// Rows of BASE that NEW lacks (a size that crashed, a test not run): listed, never dropped.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|row| row.verdict == Change::Regression).count()
    }

    /// 1 for a regression, 0 otherwise (pass and undecided: see [`Decision`]).
    pub fn exit_code(&self) -> u8 {
        self.verdict.contract().exit_code()
    }

    /// The table `gdrperf compare` prints, then what only one side has, then the decision.
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
                    row.evidence(),
                ]
            })
            .collect();
        let mut out = String::new();
        for warning in &self.warnings {
            out.push_str(&format!("warning: {warning}\n"));
        }
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
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        let tolerance = self.tolerance * 100.0;
        let rows = self.rows.len();
        let (base_runs, new_runs) = (self.base_runs, self.new_runs);
        let repeated = base_runs.min(new_runs) > 1;
        let undecided = self.rows.iter().filter(|row| row.verdict == Change::Undecided).count();
        let tests = self.tests.len();
        out.push_str(&match (self.verdict, repeated) {
            (Decision::Pass, false) => format!(
                "verdict: pass: no change beyond {tolerance}% in {rows} compared rows (single runs: no test of the noise)\n"
            ),
            (_, false) => format!(
                "verdict: undecided: {undecided} of {rows} rows moved beyond {tolerance}%, but single runs cannot tell a \
                 change from run-to-run noise (two identical sweeps under load differ by 5-40% a size). Run each side \
                 3 times and give --base a1,a2,a3 --new b1,b2,b3\n"
            ),
            (Decision::Pass, true) => format!(
                "verdict: pass: no regression beyond {tolerance}% in {rows} rows, {base_runs} vs {new_runs} runs \
                 ({tests} tests of sweeps, bands and sizes sharing one {FALSE_ALARM_BUDGET} false-alarm budget)\n"
            ),
            (Decision::Undecided, true) => format!(
                "verdict: undecided: no regression found, but {} moved worse than {tolerance}% within the runs' noise \
                 ({base_runs} vs {new_runs} runs): more runs a side would decide\n",
                self.undecided_sweeps().join(", ")
            ),
            (Decision::Regression, true) => format!(
                "verdict: regression: {} of {rows} rows regressed, found by {}; tests of sweeps, bands and sizes share \
                 one {FALSE_ALARM_BUDGET} false-alarm budget, each change beyond {tolerance}%, {base_runs} vs {new_runs} runs\n",
                self.regressions(),
                self.tests
                    .iter()
                    .filter(|test| test.regression)
                    .map(|test| self.describe_test(test))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        });
        if undecided > 0 && repeated {
            out.push_str(&format!(
                "{undecided} rows moved beyond {tolerance}% within their noise (undecided): the power table in \
                 docs/methodology.md says what more runs a side would tell\n"
            ));
        }
        if !self.parameter_differences.is_empty() {
            out.push_str("the runs' parameters differ (above): a change may be theirs, not the code's\n");
        }
        out
    }

    /// "write_bw host sweep of 23 sizes -10.1% [-12.0%, -8.3%] p=0.0001".
    pub fn describe_test(&self, test: &GroupTest) -> String {
        describe_test(&self.sweeps[test.sweep], &self.sizes_of(test.sweep), test)
    }

    fn sizes_of(&self, sweep: usize) -> Vec<u64> {
        let label = &self.sweeps[sweep];
        self.rows.iter().filter(|row| &sweep_label(row) == label).map(|row| row.bytes).collect()
    }

    fn undecided_sweeps(&self) -> Vec<String> {
        self.tests
            .iter()
            .filter(|test| !test.regression && sweep_is_worse(test, self.tolerance_log(test.sweep)))
            .map(|test| self.describe_test(test))
            .collect()
    }

    fn tolerance_log(&self, sweep: usize) -> f64 {
        let higher = self
            .rows
            .iter()
            .find(|row| sweep_label(row) == self.sweeps[sweep])
            .map(|row| row.metric == "speedup" || Better::for_column(&row.metric) == Better::Higher);
        worse_than(higher.unwrap_or(true), self.tolerance)
    }
}

/// Whether a whole-sweep test moved worse than the tolerance.
fn sweep_is_worse(test: &GroupTest, worse_than: f64) -> bool {
    test.level == Level::Sweep && test.ratio.ln() < worse_than
}

fn describe_test(label: &str, sizes: &[u64], test: &GroupTest) -> String {
    let group = match test.level {
        Level::Sweep if sizes.len() == 1 => format!("{} bytes", sizes[0]),
        Level::Sweep => format!("sweep of {} sizes", sizes.len()),
        Level::Band => format!(
            "band {}-{} bytes",
            sizes.get(test.first).copied().unwrap_or(0),
            sizes.get(test.last).copied().unwrap_or(0)
        ),
        Level::Size => format!("{} bytes alone", sizes.get(test.first).copied().unwrap_or(0)),
    };
    let p = test.p_worse.map(|p| format!(" p={p:.4}")).unwrap_or_default();
    let interval = if test.interval.0.is_finite() {
        format!(" [{}, {}]", percent_change(test.interval.0 - 1.0), percent_change(test.interval.1 - 1.0))
    } else {
        String::new()
    };
    format!("{label} {group} {}{interval}{p}", percent_change(test.ratio - 1.0))
}

impl ComparedRow {
    /// The verdict column: the verdict with its evidence.
    fn evidence(&self) -> String {
        let interval = self
            .interval
            .map(|(low, high)| format!(" [{}, {}]", percent_change(low - 1.0), percent_change(high - 1.0)))
            .unwrap_or_default();
        let spread = self.spread.map(|spread| format!(", spread {:.1}%", spread * 100.0)).unwrap_or_default();
        match (self.verdict, self.p_value) {
            (Change::Undecided, None) => {
                "UNDECIDED: beyond the tolerance, single run: cannot tell from noise".into()
            }
            (Change::Regression, _) => format!(
                "REGRESSION{interval} ({} vs {} runs{spread}; found by {})",
                self.base_runs,
                self.new_runs,
                self.found_by.as_deref().unwrap_or("-")
            ),
            (Change::Improvement, Some(p)) => format!("improved{interval} p={p:.4}"),
            (Change::Undecided, Some(p)) => {
                format!(
                    "UNDECIDED{interval}: within the noise, p={p:.2} ({} vs {} runs{spread})",
                    self.base_runs, self.new_runs
                )
            }
            _ => String::new(),
        }
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

/// The oriented log change below which a change is worse than `tolerance`: ln(1 - tolerance)
/// where higher is better, -ln(1 + tolerance) where lower is (a latency up by more than it).
fn worse_than(higher_is_better: bool, tolerance: f64) -> f64 {
    if higher_is_better {
        (1.0 - tolerance).max(f64::MIN_POSITIVE).ln()
    } else {
        -(1.0 + tolerance).ln()
    }
}

/// A sweep's label: the row's identity without its size.
pub(crate) fn sweep_label(row: &ComparedRow) -> String {
    let mut label = format!("{} {}", row.test, row.memory);
    if !row.gpu.is_empty() {
        label.push_str(&format!(" {}", row.gpu));
    }
    if !row.lane.is_empty() {
        label.push_str(&format!(" lane {}", row.lane));
    }
    if ![column::BW_AVG_GBIT_S.name(), column::T_TYPICAL_US.name(), "speedup"].contains(&row.metric.as_str())
    {
        label.push_str(&format!(" {}", row.metric));
    }
    label
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
        assert_eq!(verdicts, [Change::Pass, Change::Regression, Change::Improvement]);
        assert_eq!(comparison.regressions(), 1);
        let text = comparison.render();
        assert!(
            text.contains("-10.0%")
                && text.contains("REGRESSION [-12.0%, -7.9%] (3 vs 3 runs, spread 1.0%; found by write_bw host 4 bytes alone")
                && text.contains("verdict: regression: 1 of 3 rows regressed"),
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
        // Worse than the tolerance but within the noise: undecided, never a pass or a regression.
        assert_eq!(comparison.verdict, Decision::Undecided);
        assert_eq!(comparison.exit_code(), 0);
        assert!(
            text.contains("UNDECIDED [-15.0%, +6.2%]: within the noise, p=0.16")
                && text.contains("verdict: undecided"),
            "{text}"
        );
        // A real 20% drop: the new runs' geometric mean 0.7959 against 0.9976.
        let dropped = runs(&[0.80, 0.72, 0.78, 0.76, 0.84, 0.83, 0.85]);
        let comparison = compare_repeated(&base, &dropped, None, 0.05).unwrap();
        assert_eq!(comparison.regressions(), 1);
        assert!((comparison.rows[0].change + 0.2021).abs() < 1e-3, "{:?}", comparison.rows[0]);
        let text = comparison.render();
        assert!(text.contains("REGRESSION [-27.0%, -12.8%] (5 vs 7 runs"), "{text}");
        assert!(text.contains("verdict: regression: 1 of 1 rows regressed"), "{text}");
        assert_eq!(comparison.exit_code(), 1);
    }

    #[test]
    fn single_runs_say_so_and_never_call_a_regression() {
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.97])[0], None, 0.05).unwrap();
        let text = comparison.render();
        assert!(
            text.contains(
                "verdict: pass: no change beyond 5% in 1 compared rows (single runs: no test of the noise)"
            ),
            "{text}"
        );
        let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.5])[0], None, 0.05).unwrap();
        assert_eq!(comparison.rows[0].verdict, Change::Undecided);
        assert_eq!(comparison.regressions(), 0);
        assert_eq!((comparison.verdict, comparison.exit_code()), (Decision::Undecided, 0));
        let text = comparison.render();
        assert!(!text.contains("REGRESSION"), "{text}");
        assert!(
            text.contains("UNDECIDED: beyond the tolerance, single run: cannot tell from noise")
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

    /// Runs whose files hold GPUDirect and staged rows: GPUDirect 8% slower at every size of a
    /// 6-size sweep while staged copies hold is found on the cuda rows and on the speed-up
    /// (2.0x -> 1.84x), in one decision.
    #[test]
    fn a_gpudirect_slowdown_is_judged_on_its_speedup_over_staged_copies_too() {
        let run = |name: &str, cuda: f64, wiggle: f64| {
            let mut text = String::from("test,bytes,bw_avg_gbit_s,mem_local,gpu_local\n");
            for at in 0..6u32 {
                let bytes = 4096u64 << at;
                let shake = 1.0 + wiggle * if at % 2 == 0 { 1.0 } else { -1.0 };
                text.push_str(&format!("write_bw,{bytes},{},cuda,GPU0\n", cuda * shake));
                text.push_str(&format!("write_bw,{bytes},{},cuda-staged,GPU0\n", 45.0 * shake));
            }
            file(name, &text)
        };
        let base = [run("a1.csv", 90.0, 0.0), run("a2.csv", 90.0, 0.01), run("a3.csv", 90.0, -0.01)];
        let new = [run("b1.csv", 82.8, 0.0), run("b2.csv", 82.8, 0.01), run("b3.csv", 82.8, -0.01)];
        let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
        assert_eq!(
            comparison.sweeps,
            ["write_bw cuda GPU0", "write_bw cuda vs cuda-staged GPU0", "write_bw cuda-staged GPU0"]
        );
        let verdict = |memory: &str| -> Vec<Change> {
            comparison.rows.iter().filter(|row| row.memory == memory).map(|row| row.verdict).collect()
        };
        assert_eq!(verdict("cuda"), [Change::Regression; 6], "{}", comparison.render());
        assert_eq!(verdict("cuda vs cuda-staged"), [Change::Regression; 6], "{}", comparison.render());
        assert_eq!(verdict("cuda-staged"), [Change::Pass; 6], "{}", comparison.render());
        assert_eq!(comparison.verdict, Decision::Regression);
        let speedup = comparison.rows.iter().find(|row| row.memory == "cuda vs cuda-staged").unwrap();
        assert!((speedup.base - 2.0).abs() < 1e-9 && (speedup.new - 1.84).abs() < 1e-9, "{speedup:?}");
    }

    /// A zero, a missing size and runs of another commit on one side: each said, no alarm.
    #[test]
    fn zeros_gaps_and_mixed_runs_are_said_and_raise_no_alarm() {
        let run = |name: &str, commit: &str, values: &[f64]| {
            let mut text = format!("# git_commit: {commit}\ntest,bytes,bw_avg_gbit_s\n");
            for (at, value) in values.iter().enumerate() {
                text.push_str(&format!("write_bw,{},{value}\n", 2u64 << at));
            }
            file(name, &text)
        };
        let steady = [10.0, 20.0, 40.0, 80.0, 90.0, 91.0];
        let scaled = |factor: f64| steady.iter().map(|value| value * factor).collect::<Vec<f64>>();
        let base = [
            run("a1.csv", "abc", &scaled(1.0)),
            run("a2.csv", "abc", &scaled(1.01)),
            run("a3.csv", "def", &scaled(0.99)),
        ];
        let mut zero = scaled(1.0);
        zero[2] = 0.0;
        let new = [
            run("b1.csv", "123", &zero),
            run("b2.csv", "123", &scaled(1.01)[..4]),
            run("b3.csv", "123", &scaled(0.99)),
        ];
        let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
        assert_eq!(comparison.verdict, Decision::Pass, "{}", comparison.render());
        let text = comparison.render();
        assert!(
            text.contains("warning: the base runs differ in git_commit (a1.csv abc; a2.csv abc; a3.csv def)"),
            "{text}"
        );
        assert!(
            text.contains(
                "b1.csv: write_bw host 8 bytes has bw_avg_gbit_s = 0: no logarithm, left out of the tests"
            ),
            "{text}"
        );
        assert!(text.contains("b2.csv (new) has no usable value at 2 of 6 sizes of write_bw host"), "{text}");
        assert_eq!(comparison.rows[2].new_runs, 2);
    }
}
