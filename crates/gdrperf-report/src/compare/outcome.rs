//! What a comparison says: each row's verdict ([`Change`]), the one decision ([`Decision`]),
//! the compared rows and their sweeps, and the table `gdrperf compare` prints. The judging
//! itself is the parent module's.

use gdrperf_command_line::Verdict;
use gdrperf_files::columns as column;
use serde::Serialize;

use crate::format::{percent_change, table, table_number};
use crate::results::Better;
use crate::sweep_decision::{GroupTest, Level, FALSE_ALARM_BUDGET};

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
pub(super) fn sweep_is_worse(test: &GroupTest, worse_than: f64) -> bool {
    test.level == Level::Sweep && test.ratio.ln() < worse_than
}

pub(super) fn describe_test(label: &str, sizes: &[u64], test: &GroupTest) -> String {
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

/// The oriented log change below which a change is worse than `tolerance`: ln(1 - tolerance)
/// where higher is better, -ln(1 + tolerance) where lower is (a latency up by more than it).
pub(super) fn worse_than(higher_is_better: bool, tolerance: f64) -> f64 {
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
