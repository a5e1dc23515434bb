//! Does this node pass? The plan and the verdicts of `gdrperf accept`: which bench runs on which
//! NIC and GPU in which memory mode, and how each result is judged against its profile.
//!
//! Running the benches and asking `gdrperf doctor` about the node belong to the binary; what is
//! here is pure, so that a plan for an eight-GPU node can be checked on a laptop.
//!
//! Host-memory runs go once per NIC (the GPU plays no part); GPU runs once per GPU, on the NIC
//! the doctor recommends for it. A node without a GPU gets SKIP rows for the GPU modes, not FAIL:
//! acceptance of a storage node's NICs is still an answer.

use std::fmt::Write as _;
use std::path::Path;

use gdrperf_files::columns as column;
use serde::Serialize;

use crate::error::{ReportError, Result};
use crate::evaluate::{evaluate_bandwidth, evaluate_latency, evaluate_nic_errors, Verdict};
use crate::format::{number, table};
use crate::profile::{Profile, SourcedValue};
use crate::results::{ResultFile, ResultRow};
use crate::threshold::{parse_port_rate, BandwidthThreshold, LatencyStatistic, LatencyThreshold};

/// An RDMA port to run on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nic {
    pub device: String,
    pub port: u32,
    /// sysfs words: "400 Gb/sec (4X NDR)".
    pub rate: Option<String>,
}

/// A GPU to run on, named as the doctor names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gpu {
    /// "GPU0".
    pub label: String,
    /// "0000:1b:00.0": what the benches' `--gpu-bus-id` takes (independent of CUDA's ordering).
    pub bus_id: String,
}

/// What the doctor found: the NICs for host-memory runs, and each GPU with its NIC.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    pub nics: Vec<Nic>,
    pub gpus: Vec<(Gpu, Option<Nic>)>,
}

/// Bandwidth or latency: which half of a profile a run serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    Bandwidth,
    Latency,
}

/// One bench run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub kind: CheckKind,
    pub test: String,
    /// "gdr-write-bw".
    pub binary: String,
    pub mode: String,
    pub nic: Nic,
    pub gpu: Option<Gpu>,
    /// The bench's arguments, output files not included.
    pub args: Vec<String>,
    /// Base name of this run's files: "write_bw-cuda-GPU0".
    pub stem: String,
    pub threshold: SourcedValue,
    /// The size judged.
    pub bytes: u64,
    /// Bandwidth: whether the row sums both directions (a share of the port doubles).
    pub bidirectional: bool,
    /// Latency: the statistic held against the threshold.
    pub statistic: LatencyStatistic,
    /// The profile's limit on the judged size's `nic_errors` (a row without the column, from an
    /// older gdrperf, is judged on its figure alone).
    pub max_nic_errors: u64,
    /// The run's length as the profile gives it (one of the two, or neither: the bench's default).
    pub duration_s: Option<f64>,
    pub iterations: Option<u64>,
    /// Where the run's parameters come from (the profile section's `source`).
    pub run_source: String,
    /// How this run differs from that source, in words ("" when it does not): carried into
    /// the row's `deviation` column.
    pub deviation: String,
    /// Runs with the same key start together (a section with `all_nics_at_once`): its test and
    /// memory mode. `None`: one run at a time.
    pub together: Option<String>,
    /// A PASS less than this many percent above the threshold is marked as a warning.
    pub warn_band_percent: Option<f64>,
}

/// How one profile section runs: what `plan` needs of a [`crate::BandwidthCheck`] or
/// [`crate::LatencyCheck`].
struct Shape<'a> {
    kind: CheckKind,
    test: &'a str,
    size: u64,
    duration_s: Option<f64>,
    iterations: Option<u64>,
    /// Bandwidth only: QPs and direction.
    qps: Option<u32>,
    bidirectional: bool,
    statistic: LatencyStatistic,
    max_nic_errors: u64,
    source: &'a str,
    deviation: Option<&'a str>,
    all_nics_at_once: bool,
    warn_band_percent: Option<f64>,
}

/// A step of the plan: a run, or a row that is decided without running (SKIP, ERROR) with the
/// run it stands for (its NIC or GPU a placeholder, `<RDMA device>`, `<GPU bus id>`), so that a
/// dry run on a host that cannot run the row still shows its command.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Run(PlannedRun),
    Decided(AcceptanceRow, Box<PlannedRun>),
}

/// The NIC a run that cannot be placed stands on in a dry run.
const NO_NIC: &str = "<RDMA device>";

/// One line of the summary: the CSV columns of `summary.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AcceptanceRow {
    pub nic: String,
    pub port_rate: String,
    pub gpu: String,
    pub gpu_bus_id: String,
    pub test: String,
    pub mem: String,
    pub bytes: u64,
    /// The result column judged: "bw_avg_gbit_s", "t_avg_us".
    pub metric: String,
    /// The measured value, in `unit`; empty when not measured.
    pub value: Option<f64>,
    pub unit: String,
    pub threshold: String,
    pub verdict: Verdict,
    /// The FAIL line, the SKIP reason (the row JSON calls "undecided") or the error.
    pub detail: String,
    pub threshold_source: String,
    /// The bench's JSON result file, relative to the summary.
    pub result_file: String,
    /// Bandwidth rows: the path's ceiling, its binding limit, the measured share and, for a
    /// short or failed row, the causes (`gdrperf explain`'s judgement; empty otherwise).
    #[serde(default)]
    pub ceiling_gbps: Option<f64>,
    #[serde(default)]
    pub ceiling_limited_by: String,
    #[serde(default)]
    pub pct_of_ceiling: Option<f64>,
    #[serde(default)]
    pub ceiling_causes: String,
    /// How the run differed from the source its threshold comes from ("" when it did not):
    /// loopback where the source runs between two nodes, another pairing of GPU and NIC.
    #[serde(default)]
    pub deviation: String,
}

/// Every step for `profile` on `node`, restricted to `modes` (the profile's own when empty).
pub fn plan(profile: &Profile, node: &Node, modes: &[String]) -> Vec<Step> {
    let mut steps = Vec::new();
    let wanted = |mode: &str| modes.is_empty() || modes.iter().any(|wanted| wanted == mode);
    let bandwidth = profile.bandwidth.iter().map(|check| {
        let shape = Shape {
            kind: CheckKind::Bandwidth,
            test: &check.test,
            size: check.size,
            duration_s: check.duration_s,
            iterations: check.iterations,
            qps: Some(check.qps),
            bidirectional: check.bidirectional,
            statistic: LatencyStatistic::default(),
            max_nic_errors: profile.max_nic_errors,
            source: &check.source,
            deviation: check.deviation.as_deref(),
            all_nics_at_once: check.all_nics_at_once,
            warn_band_percent: check.warn_band_percent(),
        };
        (shape, &check.min_bw)
    });
    let latency = profile.latency.iter().map(|check| {
        let shape = Shape {
            kind: CheckKind::Latency,
            test: &check.test,
            size: check.size,
            duration_s: check.duration_s,
            iterations: check.iterations,
            qps: None,
            bidirectional: false,
            statistic: check.statistic(),
            max_nic_errors: profile.max_nic_errors,
            source: &check.source,
            deviation: check.deviation.as_deref(),
            all_nics_at_once: false,
            warn_band_percent: None,
        };
        (shape, &check.max_lat)
    });
    let checks: Vec<_> = bandwidth.chain(latency).collect();
    for (shape, thresholds) in checks {
        for (mode, threshold) in thresholds.iter().filter(|(mode, _)| wanted(mode)) {
            let skeleton = |detail: String, verdict: Verdict| AcceptanceRow {
                nic: String::new(),
                port_rate: String::new(),
                gpu: String::new(),
                gpu_bus_id: String::new(),
                test: shape.test.to_string(),
                mem: mode.clone(),
                bytes: shape.size,
                metric: String::new(),
                value: None,
                unit: String::new(),
                threshold: threshold.value.clone(),
                verdict,
                detail,
                threshold_source: threshold.source.clone(),
                result_file: String::new(),
                ceiling_gbps: None,
                ceiling_limited_by: String::new(),
                pct_of_ceiling: None,
                ceiling_causes: String::new(),
                deviation: shape.deviation.unwrap_or_default().to_string(),
            };
            let no_nic = Nic { device: NO_NIC.into(), port: 1, rate: None };
            let no_gpu = Gpu { label: "<GPU>".into(), bus_id: "<GPU bus id>".into() };
            let standing_for =
                |nic: &Nic, gpu: Option<&Gpu>| Box::new(planned(&shape, mode, nic, gpu, threshold));
            if mode == "host" {
                if node.nics.is_empty() {
                    steps.push(Step::Decided(
                        skeleton(
                            "no RDMA device with an active port (see gdrperf doctor)".into(),
                            Verdict::Error,
                        ),
                        standing_for(&no_nic, None),
                    ));
                }
                for nic in &node.nics {
                    steps.push(Step::Run(planned(&shape, mode, nic, None, threshold)));
                }
                continue;
            }
            if node.gpus.is_empty() {
                let nic = node.nics.first().unwrap_or(&no_nic);
                steps.push(Step::Decided(
                    skeleton("no NVIDIA GPU found by gdrperf doctor".into(), Verdict::Skip),
                    standing_for(nic, Some(&no_gpu)),
                ));
            }
            for (gpu, nic) in &node.gpus {
                match nic {
                    Some(nic) => steps.push(Step::Run(planned(&shape, mode, nic, Some(gpu), threshold))),
                    None => steps.push(Step::Decided(
                        AcceptanceRow {
                            gpu: gpu.label.clone(),
                            gpu_bus_id: gpu.bus_id.clone(),
                            ..skeleton(
                                "no RDMA device to pair with this GPU (see gdrperf doctor)".into(),
                                Verdict::Error,
                            )
                        },
                        standing_for(&no_nic, Some(gpu)),
                    )),
                }
            }
        }
    }
    steps
}

fn planned(shape: &Shape, mode: &str, nic: &Nic, gpu: Option<&Gpu>, threshold: &SourcedValue) -> PlannedRun {
    let (test, size) = (shape.test, shape.size);
    let mut args: Vec<String> =
        vec!["--loopback".into(), "-d".into(), nic.device.clone(), "-i".into(), nic.port.to_string()];
    args.extend(["-s".into(), size.to_string()]);
    if let Some(seconds) = shape.duration_s {
        args.extend(["-D".into(), number(seconds)]);
    }
    if let Some(iterations) = shape.iterations {
        args.extend(["-n".into(), iterations.to_string()]);
    }
    if let Some(qps) = shape.qps {
        args.extend(["-q".into(), qps.to_string(), "--report-gbits".into()]);
    }
    if shape.bidirectional {
        args.push("-b".into());
    }
    args.extend(["--mem".into(), mode.to_string()]);
    if let Some(gpu) = gpu {
        args.extend(["--gpu-bus-id".into(), gpu.bus_id.clone()]);
    }
    let place = gpu.map(|gpu| gpu.label.clone()).unwrap_or_else(|| nic.device.clone());
    PlannedRun {
        kind: shape.kind,
        test: test.to_string(),
        binary: format!("gdr-{}", test.replace('_', "-")),
        mode: mode.to_string(),
        nic: nic.clone(),
        gpu: gpu.cloned(),
        args,
        stem: format!("{test}-{mode}-{place}"),
        threshold: threshold.clone(),
        bytes: size,
        bidirectional: shape.bidirectional,
        statistic: shape.statistic,
        max_nic_errors: shape.max_nic_errors,
        duration_s: shape.duration_s,
        iterations: shape.iterations,
        run_source: shape.source.to_string(),
        deviation: shape.deviation.unwrap_or_default().to_string(),
        together: shape.all_nics_at_once.then(|| format!("{test} {mode}")),
        warn_band_percent: shape.warn_band_percent,
    }
}

/// What a run in loopback on one node gives up against a source that runs between two.
pub const LOOPBACK_DEVIATION: &str =
    "loopback on one node where the source runs between two nodes (run with --peer HOST to match it)";

/// Marks every step of a profile whose source runs between two nodes (`two_nodes`) with
/// [`LOOPBACK_DEVIATION`]: called for a plan that runs in loopback (no `--peer`), so that the
/// summary and the report say on every row that the figure is not measured as its source's.
pub fn note_loopback(profile: &Profile, steps: &mut [Step]) {
    if !profile.two_nodes {
        return;
    }
    note(steps, |_| true, LOOPBACK_DEVIATION);
}

/// What a run started on every NIC at once gives up when it runs across two nodes: the sources
/// of that shape (a node's health check) load one node, each NIC in loopback.
pub const ACROSS_DEVIATION: &str =
    "between two nodes (--peer), every NIC pair at once, where the source runs each NIC \
     in loopback on one node (run without --peer to match it)";

/// Marks the runs started on every NIC at once (a section with `all_nics_at_once`) with
/// [`ACROSS_DEVIATION`]: called for a plan that runs across two nodes (`--peer`, `--serve`).
pub fn note_across(steps: &mut [Step]) {
    note(steps, |run| run.together.is_some(), ACROSS_DEVIATION);
}

/// Puts `deviation` first in the deviation of every step whose run `applies`.
fn note(steps: &mut [Step], applies: impl Fn(&PlannedRun) -> bool, deviation: &str) {
    let add = |existing: &mut String| {
        *existing =
            if existing.is_empty() { deviation.to_string() } else { format!("{deviation}; {existing}") };
    };
    for step in steps {
        match step {
            Step::Run(run) if applies(run) => add(&mut run.deviation),
            Step::Decided(row, run) if applies(run) => {
                add(&mut row.deviation);
                add(&mut run.deviation);
            }
            _ => {}
        }
    }
}

impl PlannedRun {
    /// The summary row before a verdict: where it ran and against what.
    fn row(&self, result_file: &str) -> AcceptanceRow {
        AcceptanceRow {
            nic: self.nic.device.clone(),
            port_rate: self.nic.rate.clone().unwrap_or_default(),
            gpu: self.gpu.as_ref().map(|gpu| gpu.label.clone()).unwrap_or_default(),
            gpu_bus_id: self.gpu.as_ref().map(|gpu| gpu.bus_id.clone()).unwrap_or_default(),
            test: self.test.clone(),
            mem: self.mode.clone(),
            bytes: self.bytes,
            metric: String::new(),
            value: None,
            unit: String::new(),
            threshold: self.threshold.value.clone(),
            verdict: Verdict::Error,
            detail: String::new(),
            threshold_source: self.threshold.source.clone(),
            result_file: result_file.to_string(),
            ceiling_gbps: None,
            ceiling_limited_by: String::new(),
            pct_of_ceiling: None,
            ceiling_causes: String::new(),
            deviation: self.deviation.clone(),
        }
    }

    /// The row of a run that did not produce a result (the bench is missing, exited non-zero).
    pub fn error(&self, detail: String) -> AcceptanceRow {
        AcceptanceRow { detail, ..self.row("") }
    }

    /// Judges the bench's result file against the threshold.
    pub fn judge(&self, result: &ResultFile, result_file: &str) -> AcceptanceRow {
        let mut row = self.row(result_file);
        let size = self.bytes;
        let Some(measured) = result.rows.iter().find(|candidate| candidate.bytes() == size) else {
            row.detail = format!("{} has no row for {size} bytes", result.name);
            return row;
        };
        let outcome = match self.kind {
            CheckKind::Bandwidth => self.judge_bandwidth(measured, &mut row),
            CheckKind::Latency => self.judge_latency(measured, &mut row),
        };
        if let Err(error) = outcome {
            row.verdict = Verdict::Error;
            row.detail = error.to_string();
        } else if let Err(error) = measured.count(column::NIC_ERRORS) {
            row.verdict = Verdict::Error;
            row.detail = error;
        } else if let Ok(Some(errors)) = measured.count(column::NIC_ERRORS) {
            if let Some(failure) = evaluate_nic_errors(size, errors, self.max_nic_errors) {
                row.verdict = Verdict::Fail;
                let counters = measured.text(column::NIC_COUNTERS);
                let failure = format!("{failure}: {counters}");
                row.detail =
                    if row.detail.is_empty() { failure } else { format!("{}; {failure}", row.detail) };
            }
        }
        // Receiver-not-ready NAKs fail a size whatever the profile tolerates of other errors:
        // the sender waited out RNR timers, so the figure is not the path's.
        if let Some(naks) = measured.number(column::NIC_RNR_NAKS).filter(|&naks| naks > 0.0) {
            if row.verdict != Verdict::Error {
                row.verdict = Verdict::Fail;
                let failure = format!("{naks} receiver-not-ready (RNR) NAKs: the figure includes RNR waits");
                row.detail =
                    if row.detail.is_empty() { failure } else { format!("{}; {failure}", row.detail) };
            }
        }
        row
    }

    fn judge_bandwidth(&self, measured: &ResultRow, row: &mut AcceptanceRow) -> Result<()> {
        let limit = BandwidthThreshold::parse(&self.threshold.value)?
            .resolve(self.nic.rate.as_deref(), self.bidirectional)?;
        row.metric = column::BW_AVG_GBIT_S.to_string();
        row.threshold = limit.to_string();
        let Some(value) = measured.number(column::BW_AVG_GBIT_S) else {
            row.detail = format!("{} has no bw_avg_gbit_s column", measured.source());
            return Ok(());
        };
        row.value = Some(limit.unit.from_gbit(value));
        row.unit = limit.unit.label().into();
        let failure = evaluate_bandwidth(row.bytes, value, &limit);
        row.verdict = if failure.is_some() { Verdict::Fail } else { Verdict::Pass };
        row.detail = failure.map(|failure| failure.to_string()).unwrap_or_default();
        if let Some(band) = self.warn_band_percent.filter(|_| row.verdict == Verdict::Pass) {
            if value < limit.gbit_s * (1.0 + band / 100.0) {
                row.detail = format!(
                    "WARN: {} Gb/s passes, but less than {}% above the threshold {limit}: near a failure",
                    number(value),
                    number(band)
                );
            }
        }
        Ok(())
    }

    fn judge_latency(&self, measured: &ResultRow, row: &mut AcceptanceRow) -> Result<()> {
        let statistic = self.statistic;
        let limit = LatencyThreshold::parse(&self.threshold.value)?.on(statistic);
        row.metric = statistic.column().to_string();
        row.threshold = limit.to_string();
        row.unit = "us".into();
        let Some(value) = measured.number(statistic.column()) else {
            row.detail = format!("{} has no {} column", measured.source(), statistic.column());
            return Ok(());
        };
        row.value = Some(value);
        let failure = evaluate_latency(row.bytes, value, &limit);
        row.verdict = if failure.is_some() { Verdict::Fail } else { Verdict::Pass };
        row.detail = failure.map(|failure| failure.to_string()).unwrap_or_default();
        Ok(())
    }
}

/// Lines warning that a NIC's port runs at another rate than the profile is meant for.
pub fn port_rate_warnings(profile: &Profile, node: &Node) -> Vec<String> {
    let Some(expected) = profile.port_rate.as_deref() else { return Vec::new() };
    let expected_gbit_s = parse_port_rate(expected);
    let mut nics: Vec<&Nic> =
        node.nics.iter().chain(node.gpus.iter().filter_map(|(_, nic)| nic.as_ref())).collect();
    nics.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
    nics.dedup_by(|a, b| a.device == b.device && a.port == b.port);
    nics.into_iter()
        .filter(|nic| nic.rate.as_deref().and_then(parse_port_rate) != expected_gbit_s)
        .map(|nic| {
            format!(
                "WARN {} port {} runs at {}, profile {} expects {expected}",
                nic.device,
                nic.port,
                nic.rate.as_deref().unwrap_or("an unknown rate"),
                profile.name
            )
        })
        .collect()
}

/// Each distinct non-empty deviation of `rows`, in first-seen order, with how many rows have it:
/// what the screen summary and the report say beside the verdict.
pub fn deviations<'a>(rows: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    let mut distinct: Vec<(&str, usize)> = Vec::new();
    for deviation in rows.into_iter().filter(|text| !text.is_empty()) {
        match distinct.iter_mut().find(|(known, _)| *known == deviation) {
            Some((_, count)) => *count += 1,
            None => distinct.push((deviation, 1)),
        }
    }
    distinct
}

/// The summary table printed on screen.
pub fn render(rows: &[AcceptanceRow]) -> String {
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                if row.nic.is_empty() { "-".into() } else { row.nic.clone() },
                if row.gpu.is_empty() { "-".into() } else { row.gpu.clone() },
                row.test.clone(),
                row.mem.clone(),
                row.bytes.to_string(),
                row.value
                    .map(|value| format!("{} {}", number(value), row.unit))
                    .unwrap_or_else(|| "-".into()),
                row.threshold.clone(),
                row.verdict.to_string(),
                row.detail.clone(),
            ]
        })
        .collect();
    let mut out =
        table(&["nic", "gpu", "test", "mem", "bytes", "measured", "threshold", "verdict", "detail"], &lines);
    for (deviation, count) in deviations(rows.iter().map(|row| row.deviation.as_str())) {
        let _ = writeln!(out, "deviation ({count} of {} rows): {deviation}", rows.len());
    }
    let overall = Verdict::overall(rows.iter().map(|row| row.verdict));
    let count = |verdict: Verdict| rows.iter().filter(|row| row.verdict == verdict).count();
    let _ = writeln!(
        out,
        "overall: {} ({} pass, {} fail, {} skip, {} error)",
        overall.contract().word().to_uppercase(),
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Skip),
        count(Verdict::Error)
    );
    out
}

/// Writes `summary.csv` (`# key: value` lines for the metadata's `command`, `git_commit`,
/// `host` and `date`, then one line per row, the columns of [`AcceptanceRow`]) and
/// `summary.json` (`{"metadata": ..., "overall": "pass", "results": [rows]}`, every verdict in
/// the exit-code contract's words: pass, undecided, fail, error) into `folder`.
pub fn write_summary(folder: &Path, metadata: serde_json::Value, rows: &[AcceptanceRow]) -> Result<()> {
    let fail = |path: &Path, error: String| ReportError::WriteFile { path: path.to_path_buf(), error };
    let csv_path = folder.join("summary.csv");
    let head: String = ["command", "git_commit", "host", "date"]
        .iter()
        .filter_map(|key| metadata[key].as_str().map(|value| format!("# {key}: {value}\n")))
        .collect();
    let csv_error = |error: csv::Error| fail(&csv_path, error.to_string());
    // The rows as serde writes them, then each cell made spreadsheet-safe (host, device and
    // detail cells hold a peer's and a bench's text), as the benches' CSV files are.
    let mut serialised = csv::Writer::from_writer(Vec::new());
    for row in rows {
        serialised.serialize(row).map_err(csv_error)?;
    }
    let serialised = serialised.into_inner().map_err(|error| fail(&csv_path, error.to_string()))?;
    let mut writer = csv::Writer::from_writer(head.into_bytes());
    let mut records = csv::ReaderBuilder::new().has_headers(false).from_reader(serialised.as_slice());
    // The `verdict` column keeps its published upper-case words (PASS, FAIL, SKIP, ERROR:
    // docs/columns.md); only JSON spells the exit-code contract's.
    let mut verdict_column = None;
    for (index, record) in records.records().enumerate() {
        let record = record.map_err(csv_error)?;
        if index == 0 {
            verdict_column = record.iter().position(|name| name == column::VERDICT.name());
        }
        let label = index.checked_sub(1).and_then(|row| rows.get(row)).map(|row| row.verdict.label());
        let cells = record.iter().enumerate().map(|(column, cell)| match label {
            Some(label) if Some(column) == verdict_column => label.to_string(),
            _ => gdrperf_files::text::spreadsheet_safe(cell).into_owned(),
        });
        writer.write_record(cells).map_err(csv_error)?;
    }
    let csv = writer.into_inner().map_err(|error| fail(&csv_path, error.to_string()))?;
    // Through a new temporary file and a rename: a link planted at either name is refused,
    // never followed (issue 44).
    gdrperf_files::write_file(&csv_path, &csv).map_err(|error| fail(&csv_path, error.to_string()))?;
    let json_path = folder.join("summary.json");
    let overall = Verdict::overall(rows.iter().map(|row| row.verdict));
    let document = serde_json::json!({ "metadata": metadata, "overall": overall, "results": rows });
    let text =
        serde_json::to_string_pretty(&document).map_err(|error| fail(&json_path, error.to_string()))?;
    gdrperf_files::write_file(&json_path, (text + "\n").as_bytes())
        .map_err(|error| fail(&json_path, error.to_string()))
}

#[cfg(test)]
mod tests;
