//! `report.html`: one self-contained page per acceptance folder that a person can read, check
//! and sign. Verdict first; then per test the plot (bandwidth over size, latency
//! percentiles) as inline SVG with the path ceiling's causes; the thresholds with their
//! sources; the inventory the run was taken on; the commands; and the manifest of every raw
//! file with its SHA-256.
//!
//! Built from the folder alone (`summary.json`, `inventory.json`, the benches' JSON files), so
//! it can be written again for a folder copied off a cluster. The rows of `summary.json` and of
//! the benches' files are read through the one reader of result files ([`ResultFile`], columns
//! by their [`ColumnName`]), so a renamed column is a compile error here; what stays
//! `serde_json::Value` is free-form by nature: the metadata each file records as it was given
//! (`host`, `argv`, `warnings`), the doctor's inventory and the soak's document. Nothing is fetched: the style is
//! in the page, plots are SVG text, no script. Every string from a file is escaped, because a
//! peer's host name or a bench's message is not trusted markup. [`external_references`] is the
//! check that the page stays self-contained.

use std::path::{Path, PathBuf};

use gdrperf_files::columns::{self as column, ColumnName};
use serde_json::{Map, Value};

use crate::error::{ReportError, Result};
pub use crate::html_text::escape;
use crate::html_text::{cell, shown_verdict, text_cell};
use crate::manifest::{self, ManifestEntry};
use crate::report_inventory;
use crate::results::{ResultFile, ResultRow};
use crate::svg_chart::{self, Chart};

/// The report's name in the acceptance folder.
pub const FILE_NAME: &str = "report.html";

/// The latency statistics plotted, as (bar label, result column), fastest first.
const LATENCY_BARS: [(&str, ColumnName); 7] = [
    ("min", column::T_MIN_US),
    ("typical", column::T_TYPICAL_US),
    ("average", column::T_AVG_US),
    ("p99", column::P99_US),
    ("p99.9", column::P99_9_US),
    ("p99.99", column::P99_99_US),
    ("max", column::T_MAX_US),
];

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222}\
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}\
h3{font-size:15px;margin-bottom:4px}table{border-collapse:collapse;margin:6px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f0f0f0}\
.verdict{font-size:28px;font-weight:bold;padding:10px 16px;display:inline-block;color:#fff;border-radius:4px}\
.PASS{background:#1b7f3a}.FAIL{background:#b00020}.ERROR{background:#c25e00}.SKIP,.UNDECIDED{background:#777}\
td.PASS,td.FAIL,td.ERROR,td.SKIP,td.UNDECIDED{color:#fff;font-weight:bold}.note{color:#555;font-size:13px}\
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap;word-break:break-all}\
.test{border:1px solid #ddd;padding:8px 12px;margin:12px 0}.FAIL-text{color:#b00020}";

/// A written page: where, and its own SHA-256 (which its manifest cannot hold), for the signer
/// to record elsewhere.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub sha256: String,
}

impl Written {
    /// The line both `gdrperf report` and `gdrperf accept` print.
    pub fn describe(&self) -> String {
        format!(
            "report: {} (sha256 {}: record this digest outside the folder; the manifest inside proves the \
             files match the page, not who made them)",
            self.path.display(),
            self.sha256
        )
    }
}

/// Writes `report.html` into the acceptance `folder`; returns its path and digest.
pub fn write(folder: &Path) -> Result<Written> {
    let html = render(folder)?;
    let path = folder.join(FILE_NAME);
    gdrperf_files::write_file(&path, html.as_bytes())
        .map_err(|error| ReportError::WriteFile { path: path.clone(), error: error.to_string() })?;
    Ok(Written { path, sha256: manifest::sha256_hex(html.as_bytes()) })
}

/// The page for the acceptance `folder` (which must hold `summary.json`).
pub fn render(folder: &Path) -> Result<String> {
    // The manifest first: it refuses a folder holding a link or a special file, so that every
    // file the page reads below (inside the folder, regular) is one the manifest covers.
    let files = manifest::manifest(folder, &[FILE_NAME])?;
    let summary = read_result(folder, "summary.json")?;
    let overall = shown_verdict(&overall_verdict(folder)?);
    let inventory = read_json(folder, report_inventory::FILE_NAME).ok();
    let soak = read_json(folder, crate::report_soak::FILE_NAME).ok();
    let metadata = &summary.metadata;
    let rows = &summary.rows;
    let host = metadata_value(metadata, "host").as_str().unwrap_or("unknown host");

    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<title>gdrperf acceptance: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(host)
    );
    page.push_str(&verdict_section(metadata, overall, rows));
    page.push_str(
        "<p class=\"note\">Sections: <a href=\"#tests\">tests</a> &middot; <a href=\"#thresholds\">thresholds</a> &middot; \
         <a href=\"#inventory\">inventory</a> &middot; <a href=\"#commands\">commands</a> &middot; \
         <a href=\"#manifest-section\">manifest</a></p>\n",
    );
    page.push_str(&results_table(rows));
    page.push_str("<h2 id=\"tests\">Tests</h2>\n");
    for row in rows {
        page.push_str(&test_section(folder, row));
    }
    page.push_str(&crate::report_soak::section(soak.as_ref()));
    page.push_str(&thresholds_section(metadata, rows));
    let pairs_run: Vec<(String, String)> = rows
        .iter()
        .map(|row| (row.text(column::GPU_BUS_ID), row.text(column::NIC)))
        .filter(|(gpu, _)| !gpu.is_empty())
        .collect();
    page.push_str(&report_inventory::section(inventory.as_ref(), &pairs_run));
    page.push_str(&commands_section(folder, metadata, rows));
    page.push_str(&manifest_section(&files));
    page.push_str("</body>\n</html>\n");
    Ok(page)
}

/// The page's Content Security Policy: nothing loads or runs from anywhere (no script at all),
/// styles only from the page's own `<style>` block, images only inline (`data:`, the SVG charts
/// are inline markup). A second line of defence behind the escaping of every string the page
/// shows: markup that slipped through could still not fetch or run anything.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// A JSON file of the folder, by its name inside it (see `manifest::read_inside`: no absolute
/// path, no `..`, no link, a regular file of bounded size), as free-form JSON: for the
/// documents that are no result file (the inventory, the soak).
fn read_json(folder: &Path, relative: &str) -> Result<Value> {
    let bytes = manifest::read_inside(folder, relative)?;
    serde_json::from_slice(&bytes)
        .map_err(|error| ReportError::JsonFile { path: folder.join(relative), reason: error.to_string() })
}

/// A result file of the folder (`summary.json`, a bench's JSON file), read as [`read_json`]
/// reads and parsed by the one reader of result files.
fn read_result(folder: &Path, relative: &str) -> Result<ResultFile> {
    let bytes = manifest::read_inside(folder, relative)?;
    let path = folder.join(relative);
    let text = String::from_utf8(bytes)
        .map_err(|_| ReportError::JsonFile { path: path.clone(), reason: "is not UTF-8 text".into() })?;
    ResultFile::parse_json(&path.display().to_string(), &text)
}

/// `summary.json`'s `overall` verdict, the one field of the summary that is neither metadata
/// nor a row ("" when absent).
fn overall_verdict(folder: &Path) -> Result<String> {
    #[derive(serde::Deserialize)]
    struct Overall {
        #[serde(default)]
        overall: Value,
    }
    let bytes = manifest::read_inside(folder, "summary.json")?;
    let summary: Overall = serde_json::from_slice(&bytes).map_err(|error| ReportError::JsonFile {
        path: folder.join("summary.json"),
        reason: error.to_string(),
    })?;
    Ok(summary.overall.as_str().unwrap_or("").to_string())
}

/// One metadata value (`Value::Null` when absent). Metadata is what each file recorded of its
/// run, named by the writer, not a result column: it stays free-form JSON.
fn metadata_value<'a>(metadata: &'a Map<String, Value>, key: &str) -> &'a Value {
    metadata.get(key).unwrap_or(&Value::Null)
}

fn verdict_section(metadata: &Map<String, Value>, overall: &str, rows: &[ResultRow]) -> String {
    let count = |shown: &[&str]| {
        rows.iter().filter(|row| shown.contains(&shown_verdict(&row.text(column::VERDICT)))).count()
    };
    let meta = |key: &str| cell(metadata_value(metadata, key));
    let mut html = format!(
        "<h1>gdrperf acceptance of {}</h1>\n<p class=\"note\">profile {} &middot; {} &middot; gdrperf {} (commit {})</p>\n",
        escape(metadata_value(metadata, "host").as_str().unwrap_or("unknown host")),
        meta("profile"),
        meta("date"),
        meta("gdrperf_version"),
        meta("git_commit"),
    );
    html.push_str(&format!(
        "<div class=\"verdict {overall}\">{overall}</div>\n<p>{} pass, {} fail, {} undecided (not run), {} error of {} rows.</p>\n",
        count(&["PASS"]),
        count(&["FAIL"]),
        count(&["UNDECIDED", "SKIP"]),
        count(&["ERROR"]),
        rows.len()
    ));
    // Rows measured otherwise than the source of their threshold: said beside the verdict, so
    // that nobody reads a loopback figure as the two-node one.
    let deviation_texts: Vec<String> = rows.iter().map(|row| row.text(column::DEVIATION)).collect();
    let deviations = crate::acceptance::deviations(deviation_texts.iter().map(String::as_str));
    if !deviations.is_empty() {
        html.push_str("<p>Measured otherwise than the sources of the thresholds:</p>\n<ul>\n");
        for (deviation, count) in deviations {
            html.push_str(&format!("<li>{count} of {} rows: {}</li>\n", rows.len(), escape(deviation)));
        }
        html.push_str("</ul>\n");
    }
    if let Some(warnings) =
        metadata_value(metadata, "warnings").as_array().filter(|warnings| !warnings.is_empty())
    {
        html.push_str("<ul>\n");
        for warning in warnings {
            html.push_str(&format!("<li>{}</li>\n", cell(warning)));
        }
        html.push_str("</ul>\n");
    }
    html
}

fn results_table(rows: &[ResultRow]) -> String {
    let mut html = String::from(
        "<table>\n<tr><th>verdict</th><th>test</th><th>mem</th><th>NIC</th><th>GPU</th><th>bytes</th><th>measured</th><th>threshold</th><th>detail</th></tr>\n",
    );
    for row in rows {
        let verdict = shown_verdict(&row.text(column::VERDICT));
        let measured = row
            .number(column::VALUE)
            .map(|value| format!("{} {}", crate::format::table_number(value), row.text(column::UNIT)))
            .unwrap_or_else(|| "-".into());
        html.push_str(&format!(
            "<tr><td class=\"{verdict}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(verdict),
            text_cell(&row.text(column::TEST)),
            text_cell(&row.text(column::MEM)),
            text_cell(&row.text(column::NIC)),
            text_cell(&row.text(column::GPU)),
            text_cell(&row.text(column::BYTES)),
            escape(&measured),
            text_cell(&row.text(column::THRESHOLD)),
            text_cell(&row.text(column::DETAIL)),
        ));
    }
    html + "</table>\n"
}

/// The threshold's number in the row's unit (`0.01 Gb/s` -> 0.01, `typical 10000 us` -> 10000).
fn threshold_value(row: &ResultRow) -> Option<f64> {
    let unit = row.text(column::UNIT);
    let threshold = row.text(column::THRESHOLD);
    let words: Vec<&str> = threshold.split_whitespace().collect();
    words.windows(2).find(|pair| pair[1] == unit).and_then(|pair| pair[0].parse().ok())
}

fn test_section(folder: &Path, row: &ResultRow) -> String {
    let test = row.test();
    let place = match (row.text(column::GPU).as_str(), row.text(column::NIC)) {
        ("", nic) => nic,
        (gpu, nic) => format!("{gpu} on {nic}"),
    };
    let title = format!("{test} · {} · {place}", row.text(column::MEM));
    let mut html = format!(
        "<div class=\"test\">\n<h3>{} <span class=\"note\">{}</span></h3>\n",
        escape(&title),
        shown_verdict(&row.text(column::VERDICT))
    );
    let result_file = row.text(column::RESULT_FILE);
    let result = if result_file.is_empty() { None } else { read_result(folder, &result_file).ok() };
    let result_rows: &[ResultRow] = result.as_ref().map_or(&[], |result| &result.rows);
    // The judged column as the summary names it (`bw_avg_gbit_s`, `t_typical_us`): looked up
    // by its text, as a column a user names is.
    let metric = row.text(column::METRIC);
    let unit = row.text(column::UNIT);
    let chart = Chart { title: &title, y_label: &unit, threshold: threshold_value(row) };
    if result.is_none() {
        html.push_str(&format!(
            "<p class=\"note\">No result file to plot{}.</p>\n",
            if result_file.is_empty() {
                String::new()
            } else {
                format!(" ({} unreadable)", escape(&result_file))
            }
        ));
    } else if metric.starts_with("bw") {
        let points: Vec<(u64, f64)> = result_rows
            .iter()
            .filter_map(|measured| Some((measured.bytes(), measured.number_named(&metric)?)))
            .collect();
        html.push_str(&svg_chart::over_size(&chart, &points));
    } else {
        let measured = result_rows.iter().find(|measured| measured.bytes() == row.bytes());
        let bars: Vec<(&str, f64)> = LATENCY_BARS
            .iter()
            .filter_map(|(label, column)| Some((*label, measured?.number(*column)?)))
            .collect();
        html.push_str(&svg_chart::bars(&chart, &bars));
    }
    html.push_str(&ceiling_lines(row));
    if let Some(counters) = result_rows
        .iter()
        .find(|measured| measured.bytes() == row.bytes())
        .map(|measured| measured.text(column::NIC_COUNTERS))
        .filter(|counters| !counters.is_empty())
    {
        html.push_str(&format!("<p class=\"note\">NIC counters over the run: {}</p>\n", escape(&counters)));
    }
    html + "</div>\n"
}

/// The path ceiling and its causes, from the summary's columns (`gdrperf explain`'s judgement).
fn ceiling_lines(row: &ResultRow) -> String {
    let limited_by = row.text(column::CEILING_LIMITED_BY);
    if limited_by.is_empty() {
        return String::new();
    }
    let text = match (row.number(column::PCT_OF_CEILING), row.number(column::CEILING_GBPS)) {
        (Some(pct), Some(gbps)) => format!("{pct:.1}% of a {gbps:.2} Gb/s ceiling, limited by {limited_by}"),
        _ => limited_by,
    };
    let mut html = format!("<p>Path ceiling: {}</p>\n", escape(&text));
    let causes_text = row.text(column::CEILING_CAUSES);
    let causes: Vec<&str> = causes_text.split(" | ").filter(|cause| !cause.is_empty()).collect();
    if !causes.is_empty() {
        html.push_str("<ul>\n");
        for cause in causes {
            html.push_str(&format!("<li>cause: {}</li>\n", escape(cause)));
        }
        html.push_str("</ul>\n");
    }
    html
}

fn thresholds_section(metadata: &Map<String, Value>, rows: &[ResultRow]) -> String {
    let mut html = format!(
        "<h2 id=\"thresholds\">Thresholds and their sources</h2>\n<p>Profile {} (given as {}).</p>\n<table>\n<tr><th>test</th><th>mem</th><th>threshold</th><th>source</th><th>deviation from the source</th></tr>\n",
        cell(metadata_value(metadata, "profile")),
        cell(metadata_value(metadata, "profile_source"))
    );
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for row in rows {
        let key = (row.test(), row.text(column::MEM), row.text(column::THRESHOLD));
        if key.2.is_empty() || seen.contains(&key) {
            continue;
        }
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&key.0),
            escape(&key.1),
            escape(&key.2),
            text_cell(&row.text(column::THRESHOLD_SOURCE)),
            text_cell(&row.text(column::DEVIATION))
        ));
        seen.push(key);
    }
    html + "</table>\n"
}

fn commands_section(folder: &Path, metadata: &Map<String, Value>, rows: &[ResultRow]) -> String {
    let mut html =
        format!("<h2 id=\"commands\">Commands</h2>\n<pre>{}\n", cell(metadata_value(metadata, "command")));
    let mut files: Vec<String> = rows.iter().map(|row| row.text(column::RESULT_FILE)).collect();
    files.retain(|file| !file.is_empty());
    files.dedup();
    for file in files {
        let Ok(result) = read_result(folder, &file) else { continue };
        let argv: Vec<&str> = metadata_value(&result.metadata, "argv")
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !argv.is_empty() {
            html.push_str(&format!("{}\n", escape(&argv.join(" "))));
        }
    }
    html + "</pre>\n"
}

fn manifest_section(files: &[ManifestEntry]) -> String {
    let mut html = String::from(
        "<h2 id=\"manifest-section\">Manifest</h2>\n<p class=\"note\">Every file of the folder but this report, as <code>sha256sum</code> writes it: \
         save the block as SHA256SUMS beside the files and run <code>sha256sum -c SHA256SUMS</code>, or run \
         <code>gdrperf report DIR --check</code> (which also names files added since).</p>\n\
         <p class=\"note\">What it proves: that the folder holds the files this page was made from, unchanged. \
         It does not prove who made them: anyone who can edit the folder can edit a result and write the page again, \
         and the new manifest matches. <code>gdrperf report</code> and <code>gdrperf accept</code> print this page's own \
         SHA-256 when they write it: record that digest where the folder's writers cannot change it (a ticket, a signed \
         mail); a page with that digest whose manifest checks is the evidence as it was recorded.</p>\n<pre id=\"manifest\">",
    );
    html.push_str(&escape(&manifest::sha256sum_text(files)));
    html.push_str("</pre>\n<table>\n<tr><th>file</th><th>bytes</th></tr>\n");
    for entry in files {
        html.push_str(&format!("<tr><td>{}</td><td>{}</td></tr>\n", escape(&entry.path), entry.bytes));
    }
    html + "</table>\n"
}

/// The manifest block of a rendered page, unescaped: `sha256sum` text to verify the folder with.
pub fn manifest_text(html: &str) -> Option<String> {
    let start = html.find("<pre id=\"manifest\">")? + "<pre id=\"manifest\">".len();
    let end = start + html[start..].find("</pre>")?;
    Some(
        html[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&"),
    )
}

/// Everything in `html` that would make a browser fetch or run something from outside the
/// file: in a tag or a style block, `src=`/`href=` not to `#` or `data:`, `url(` not of
/// `data:`, `@import`; and script, link, iframe, object or embed elements. Escaped text (a
/// peer string reading `<img src=...>`) is not markup and is not counted. Empty for a
/// self-contained page.
pub fn external_references(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    // The markup: every tag, plus the text of style elements (where CSS could fetch).
    let mut markup = String::new();
    let mut rest = lower.as_str();
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').map(|close| open + close + 1).unwrap_or(rest.len());
        markup.push_str(&rest[open..close]);
        markup.push('\n');
        if rest[open..close].starts_with("<style") {
            let end = rest[close..].find("</style").map(|end| close + end).unwrap_or(rest.len());
            markup.push_str(&rest[close..end]);
            rest = &rest[end..];
        } else {
            rest = &rest[close..];
        }
    }
    let mut found = Vec::new();
    for element in ["<script", "<link", "<iframe", "<object", "<embed", "@import"] {
        if markup.contains(element) {
            found.push(element.to_string());
        }
    }
    for attribute in ["src=", "href=", "url("] {
        let mut rest = markup.as_str();
        while let Some(at) = rest.find(attribute) {
            let value = rest[at + attribute.len()..].trim_start_matches(['"', '\'', ' ']);
            if !(value.starts_with('#') || value.starts_with("data:")) {
                found.push(format!("{attribute}{}", value.chars().take(40).collect::<String>()));
            }
            rest = &rest[at + attribute.len()..];
        }
    }
    found
}
