//! `gdrperf explain RESULT.json`: judge a stored bandwidth result again against its path
//! ceiling, with another shortfall level or an acceptance profile's thresholds.
//!
//! A bench's JSON file keeps both ends' path facts (`metadata.path_facts`, this side's;
//! `metadata.peer.path`, the peer's from the handshake), so every row's ceiling and causes can be
//! recomputed here by the same code the bench used (`gdrperf_ceiling::judge_row`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use gdrperf_ceiling::{judge_row, EndFacts, Judgement, RowEnds, RowFigures};
use gdrperf_files::columns::{self as column, ColumnName};
use gdrperf_report::{BandwidthThreshold, Profile};
use serde_json::Value;

const AFTER_HELP: &str = "\
Examples:
  gdrperf explain results/node1/write_bw.json
  gdrperf explain results/node1/write_bw.json --profile ndr-400g --shortfall 5

For each bandwidth row: the path's ceiling (the least of the wire, both NICs' PCIe links and,
with GPU memory, the GPUs' links; docs/methodology.md, \"Path ceilings\"), the limit that binds,
the row's share of it, and for a row short by more than --shortfall percent, or below the
profile's min_bw for its memory mode, why it is short and the causes found in both ends'
facts, most likely first. A latency row has no path ceiling: it is shown, and with --profile held
against the profile's max_lat for its test and memory mode (SLOW when over it).

Exit codes of gdrperf explain:
  0  no row is short or slow
  1  at least one row is short (bandwidth) or slow (latency, with --profile)
  2  the file could not be read, holds no rows, or holds no path facts (written before gdrperf
     had them)";

/// Flags of `gdrperf explain`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// A bench's JSON result file (its --json output).
    #[arg(value_name = "RESULT.json")]
    file: PathBuf,
    /// An acceptance profile (built-in name or TOML file): a row below its min_bw for the row's
    /// memory mode is short whatever its share of the ceiling.
    #[arg(long, value_name = "NAME|PATH")]
    profile: Option<String>,
    /// How far below its ceiling a row may fall, in percent, before its causes are listed
    /// [default: the profile's `shortfall`, else 10].
    #[arg(long, value_name = "PERCENT")]
    shortfall: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let profile = args.profile.as_deref().map(Profile::load).transpose()?;
    let from_profile = profile.as_ref().and_then(Profile::shortfall_percent);
    let shortfall = args.shortfall.or(from_profile).unwrap_or(gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT);
    if !(0.0..100.0).contains(&shortfall) {
        bail!("--shortfall {shortfall} is not a percentage below 100");
    }
    let stored = StoredResult::read(&args.file)?;
    if stored.rows().is_empty() {
        bail!("{} holds no result rows", args.file.display());
    }
    let mut short_rows = 0;
    for row in stored.rows() {
        if row[column::BW_AVG_GBIT_S.name()].as_f64().is_none() {
            // A latency row: a path ceiling bounds bandwidth only, so it is held against the
            // profile's max_lat when there is one, and otherwise only shown.
            let slow = latency_line(row, profile.as_ref())?;
            short_rows += usize::from(slow.1);
            print!("{}", slow.0);
            continue;
        }
        let Some(judged) = stored.judge(row, profile.as_ref(), shortfall, false)? else { continue };
        short_rows += usize::from(judged.short);
        let threshold = min_bw_of(row, profile.as_ref(), stored.local.port_rate.as_deref())?;
        print!("{}", describe(row, &judged, shortfall, threshold.as_ref()));
    }
    Ok(if short_rows > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The profile's min_bw for a bandwidth row's test and memory mode, resolved on this end's port
/// rate: (the limit in Gb/s, its words), if the profile has one.
fn min_bw_of(
    row: &Value,
    profile: Option<&Profile>,
    port_rate: Option<&str>,
) -> anyhow::Result<Option<(f64, String)>> {
    let test = row[column::TEST.name()].as_str().unwrap_or("");
    let mode = row[column::MEM_LOCAL.name()].as_str().unwrap_or("host");
    let Some(minimum) = profile
        .and_then(|profile| profile.bandwidth.iter().find(|check| check.test == test))
        .and_then(|check| check.min_bw.get(mode))
    else {
        return Ok(None);
    };
    let limit = BandwidthThreshold::parse(&minimum.value)?
        .resolve(port_rate, row[column::BIDIRECTIONAL.name()].as_bool().unwrap_or(false))?;
    Ok(Some((limit.gbit_s, limit.to_string())))
}

/// A latency row in words, and whether it is over the profile's max_lat for its test and mode
/// (on the statistic the profile names). Latency has no path ceiling.
fn latency_line(row: &Value, profile: Option<&Profile>) -> anyhow::Result<(String, bool)> {
    let bytes = row[column::BYTES.name()].as_u64().unwrap_or(0);
    let mode = row[column::MEM_LOCAL.name()].as_str().unwrap_or("host");
    let test = row[column::TEST.name()].as_str().unwrap_or("?");
    let figure = |column: &ColumnName| row[column.name()].as_f64().map(|value| format!("{value:.2} us"));
    let shown = [
        ("median", column::T_TYPICAL_US),
        ("average", column::T_AVG_US),
        ("99th percentile", column::P99_US),
    ]
    .iter()
    .filter_map(|(name, column)| figure(column).map(|value| format!("{name} {value}")))
    .collect::<Vec<_>>()
    .join(", ");
    let mut text =
        format!("{bytes} B {mode} {test}: {shown}; no path ceiling: a ceiling bounds bandwidth, not latency");
    let check = profile.and_then(|profile| profile.latency.iter().find(|check| check.test == test));
    let Some((check, maximum)) = check.and_then(|check| Some((check, check.max_lat.get(mode)?))) else {
        return Ok((text + "\n", false));
    };
    let statistic = check.statistic();
    let limit = gdrperf_report::threshold::LatencyThreshold::parse(&maximum.value)?.on(statistic);
    let Some(value) = row[statistic.column().name()].as_f64() else {
        return Ok((text + &format!("; no {} column to hold against {limit}\n", statistic.column()), false));
    };
    let slow = value > limit.max_us;
    if slow {
        text += &format!(
            ": SLOW: {} {value:.2} us is over the profile's {limit} ({})",
            statistic.label(),
            maximum.source
        );
    }
    Ok((text + "\n", slow))
}

/// A bench's JSON result with both ends' path facts.
pub struct StoredResult {
    document: Value,
    local: EndFacts,
    peer: Option<EndFacts>,
    local_is_client: bool,
}

impl StoredResult {
    pub fn read(path: &Path) -> anyhow::Result<StoredResult> {
        let text = gdrperf_files::read_named_text(path, gdrperf_files::MAX_RESULT_FILE_BYTES)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let document: Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
        let metadata = &document["metadata"];
        let local: EndFacts = serde_json::from_value(metadata["path_facts"].clone()).with_context(|| {
            format!(
                "{} holds no path facts (metadata.path_facts): written by a gdrperf without ceilings?",
                path.display()
            )
        })?;
        let peer: Option<EndFacts> = serde_json::from_value(metadata["peer"]["path"].clone()).ok();
        let local_is_client = metadata["role"].as_str() != Some("server");
        Ok(StoredResult { document, local, peer, local_is_client })
    }

    pub fn rows(&self) -> &[Value] {
        self.document["results"].as_array().map(Vec::as_slice).unwrap_or_default()
    }

    /// One row judged again: short below `shortfall` percent of its ceiling, below the
    /// profile's min_bw for its memory mode, or when `failed` (a verdict reached elsewhere).
    /// `None` for a row without a bandwidth figure (latency).
    pub fn judge(
        &self,
        row: &Value,
        profile: Option<&Profile>,
        shortfall: f64,
        failed: bool,
    ) -> anyhow::Result<Option<Judgement>> {
        let ends =
            RowEnds { local_is_client: self.local_is_client, local: &self.local, peer: self.peer.as_ref() };
        explain_row(row, ends, profile, shortfall, failed)
    }
}

/// One bandwidth row judged again; `None` for a row without a bandwidth figure (latency).
fn explain_row(
    row: &Value,
    ends: RowEnds,
    profile: Option<&Profile>,
    shortfall: f64,
    failed: bool,
) -> anyhow::Result<Option<Judgement>> {
    let (Some(test), Some(bytes), Some(measured)) = (
        row[column::TEST.name()].as_str(),
        row[column::BYTES.name()].as_u64(),
        row[column::BW_AVG_GBIT_S.name()].as_f64(),
    ) else {
        return Ok(None);
    };
    let nic_errors = row[column::NIC_ERRORS.name()].as_u64().unwrap_or(0);
    let figures = RowFigures {
        test,
        message_bytes: bytes,
        bidirectional: row[column::BIDIRECTIONAL.name()].as_bool().unwrap_or(false),
        measured_gbps: measured,
        nic_errors_moved: (nic_errors > 0).then(|| row[column::NIC_COUNTERS.name()].as_str().unwrap_or("")),
    };
    let threshold_failed =
        min_bw_of(row, profile, ends.local.port_rate.as_deref())?.is_some_and(|(gbps, _)| measured < gbps);
    Ok(Some(judge_row(ends, figures, shortfall, threshold_failed || failed)))
}

/// One bandwidth row in words: its share of the ceiling and, for a short row, why it is short
/// (below the profile's min_bw, further below its ceiling than the shortfall level, or both)
/// and the causes found.
fn describe(row: &Value, judged: &Judgement, shortfall: f64, min_bw: Option<&(f64, String)>) -> String {
    let bytes = row[column::BYTES.name()].as_u64().unwrap_or(0);
    let measured = row[column::BW_AVG_GBIT_S.name()].as_f64().unwrap_or(0.0);
    let mem = row[column::MEM_LOCAL.name()].as_str().unwrap_or("?");
    let mut text = match (judged.ceiling_gbps, judged.pct_of_ceiling) {
        (Some(ceiling), Some(pct)) => format!(
            "{bytes} B {mem}: {measured:.2} Gb/s, {pct:.1}% of {ceiling:.2} Gb/s ({})",
            judged.ceiling_limited_by
        ),
        _ => format!("{bytes} B {mem}: {measured:.2} Gb/s, {}", judged.ceiling_limited_by),
    };
    if judged.short {
        let mut reasons = Vec::new();
        if let Some((gbps, words)) = min_bw.filter(|(gbps, _)| measured < *gbps) {
            reasons.push(format!(
                "below the profile's min_bw {words} ({:.1}% short of it)",
                100.0 * (1.0 - measured / gbps)
            ));
        }
        if let Some(pct) = judged.pct_of_ceiling.filter(|pct| *pct < 100.0 - shortfall) {
            reasons.push(format!(
                "{:.1}% below the ceiling, more than the shortfall level of {shortfall}%",
                100.0 - pct
            ));
        }
        if reasons.is_empty() {
            reasons.push("judged short by the run that wrote it".into());
        }
        text.push_str(&format!(": SHORT: {}\n", reasons.join("; ")));
    } else {
        text.push('\n');
    }
    for cause in &judged.causes {
        text.push_str(&format!("    cause: {}\n", cause.line()));
    }
    if judged.short && judged.causes.is_empty() && judged.ceiling_gbps.is_some() {
        text.push_str("    no cause found in either end's facts\n");
    }
    text
}
