//! Result files read back: the CSV and JSON that the bench binaries write.
//!
//! A row is kept as the columns it had (`BandwidthRow` and `LatencyRow` of the core crate, or
//! anything else with a `bytes` column) rather than as one fixed struct, so that files written
//! before a column was added, and files of tests that did not exist when this was written, still
//! read. What a row *is* comes from its columns: `bw_avg_gbit_s` makes a bandwidth row,
//! `t_typical_us` a latency row. Columns are looked up by their [`ColumnName`] (the names shared
//! by every crate, in `gdrperf_files::columns`), so a renamed column does not compile here;
//! a column a user names on the command line (`--metric`) is looked up by its text.
//!
//! This is the one reader of result files: the CLI's `explain`, `accept` and soak use it too.
//!
//! ```
//! use gdrperf_report::ResultFile;
//!
//! let csv = "test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,65536,91.5,cuda,cuda\n";
//! let file = ResultFile::parse_csv("run.csv", csv)?;
//! assert_eq!(file.rows[0].bytes(), 65536);
//! assert_eq!(file.rows[0].memory(), "cuda");
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use gdrperf_files::columns::{self as column, ColumnName};
use serde_json::{Map, Value};

use crate::error::{ReportError, Result};

/// A result file: its metadata (what ran, where, when) and its rows in file order.
#[derive(Debug, Clone)]
pub struct ResultFile {
    /// How to name the file in messages: its path as given.
    pub name: String,
    /// The JSON file's `metadata` object; for a CSV, its leading `# key: value` comment lines.
    pub metadata: Map<String, Value>,
    pub rows: Vec<ResultRow>,
}

impl ResultFile {
    /// Reads a `.json` or `.csv` file (by extension; other names by their first character).
    pub fn read(path: &Path) -> Result<ResultFile> {
        // Bounded, and a regular file only: /dev/zero or a FIFO given as a result is an error,
        // not a hang or an exhausted memory (issue 44).
        let text = gdrperf_files::read_named_text(path, gdrperf_files::MAX_RESULT_FILE_BYTES)
            .map_err(|error| ReportError::ReadFile { path: path.to_path_buf(), error })?;
        let name = path.display().to_string();
        let extension =
            path.extension().and_then(|extension| extension.to_str()).unwrap_or("").to_ascii_lowercase();
        let is_json = match extension.as_str() {
            "json" => true,
            "csv" => false,
            _ => text.trim_start().starts_with(['{', '[']),
        };
        if is_json {
            ResultFile::parse_json(&name, &text)
        } else {
            ResultFile::parse_csv(&name, &text)
        }
    }

    /// `{"metadata": {...}, "results": [rows...]}` as the bench binaries write it, or a bare array of rows.
    pub fn parse_json(name: &str, text: &str) -> Result<ResultFile> {
        let fail = |reason: String| ReportError::JsonFile { path: name.into(), reason };
        let document: Value = serde_json::from_str(text).map_err(|error| fail(error.to_string()))?;
        let (metadata, results) = match document {
            Value::Object(mut object) => {
                let metadata = match object.remove("metadata") {
                    Some(Value::Object(metadata)) => metadata,
                    None | Some(Value::Null) => Map::new(),
                    Some(_) => return Err(fail("\"metadata\" is not an object".into())),
                };
                match object.remove("results") {
                    Some(Value::Array(results)) => (metadata, results),
                    _ => return Err(fail("it has no \"results\" array".into())),
                }
            }
            Value::Array(results) => (Map::new(), results),
            _ => return Err(fail("expected an object with \"results\" or an array of rows".into())),
        };
        let rows = results
            .into_iter()
            .enumerate()
            .map(|(index, value)| {
                ResultRow::from_json(name, value)
                    .map_err(|reason| fail(format!("result {} {reason}", index + 1)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ResultFile { name: name.to_string(), metadata, rows })
    }

    /// A header line of column names, then one line per row. Leading lines starting with `#` are
    /// metadata: `# key: value` becomes `metadata[key] = value`.
    pub fn parse_csv(name: &str, text: &str) -> Result<ResultFile> {
        let fail = |reason: String| ReportError::CsvFile { path: name.into(), reason };
        let mut metadata = Map::new();
        let mut body_start = 0;
        for line in text.split_inclusive('\n') {
            let Some(comment) = line.trim_start().strip_prefix('#') else { break };
            if let Some((key, value)) = comment.split_once(':') {
                metadata.insert(key.trim().to_string(), Value::String(value.trim().to_string()));
            }
            body_start += line.len();
        }
        let mut reader =
            csv::ReaderBuilder::new().flexible(false).from_reader(&text.as_bytes()[body_start..]);
        let header: Vec<String> =
            reader.headers().map_err(|error| fail(error.to_string()))?.iter().map(str::to_string).collect();
        if header.iter().all(|name| name != column::BYTES.name()) {
            return Err(fail(format!("its header has no \"bytes\" column (columns: {})", header.join(","))));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|error| fail(error.to_string()))?;
            let fields: Map<String, Value> = header
                .iter()
                .zip(record.iter())
                .map(|(column, cell)| (column.clone(), Value::String(cell.to_string())))
                .collect();
            rows.push(
                ResultRow::from_json(name, Value::Object(fields))
                    .map_err(|reason| fail(format!("row {} {reason}", rows.len() + 1)))?,
            );
        }
        Ok(ResultFile { name: name.to_string(), metadata, rows })
    }

    /// A metadata value as text ("" when absent): `metadata_text("host")`.
    pub fn metadata_text(&self, key: &str) -> String {
        match self.metadata.get(key) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// One line saying what made this file: "gdrperf 0.1.0 on node1 (mlx5_0), 2026-12-02T17:04:05Z".
    pub fn provenance(&self) -> String {
        let version = self.metadata_text("gdrperf_version");
        let commit = self.metadata_text("git_commit");
        let host = self.metadata_text("host");
        let device = self.metadata_text("device");
        let date = self.metadata_text("date");
        let mut made_by = match (version.is_empty(), commit.is_empty()) {
            (true, _) => String::new(),
            (false, true) => format!("gdrperf {version}"),
            (false, false) => format!("gdrperf {version} ({commit})"),
        };
        if !host.is_empty() {
            let on = if device.is_empty() { format!("on {host}") } else { format!("on {host} ({device})") };
            made_by = if made_by.is_empty() { on } else { format!("{made_by} {on}") };
        }
        match (made_by.is_empty(), date.is_empty()) {
            (true, true) => "no metadata".to_string(),
            (true, false) => date,
            (false, true) => made_by,
            (false, false) => format!("{made_by}, {date}"),
        }
    }
}

/// Whether a larger value of a column is better: bandwidth and message rate up, latency down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// Latency and time columns (`_us`, `_s`, `_ns`) are better lower; everything else higher.
    pub fn for_column(column: &str) -> Better {
        if ["_us", "_ns", "_s"].iter().any(|suffix| column.ends_with(suffix))
            && !column.ends_with("_mib_s")
            && !column.ends_with("_gbit_s")
        {
            Better::Lower
        } else {
            Better::Higher
        }
    }
}

/// What a row measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Bandwidth,
    Latency,
    Other,
}

impl RowKind {
    /// The column `compare` looks at unless told otherwise, and how it is shown.
    pub fn default_metric(self) -> Option<(ColumnName, &'static str)> {
        match self {
            RowKind::Bandwidth => Some((column::BW_AVG_GBIT_S, "Gb/s")),
            RowKind::Latency => Some((column::T_TYPICAL_US, "us")),
            RowKind::Other => None,
        }
    }
}

/// One row of a result file: its columns by name, numbers and text as the file had them.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    source: String,
    columns: BTreeMap<String, Value>,
}

impl ResultRow {
    /// A row from a JSON object (a CSV record is given as an object of strings). `source` names
    /// the file in messages. The row must have a non-negative integer `bytes` column.
    pub fn from_json(source: &str, value: Value) -> Result<ResultRow, String> {
        let Value::Object(object) = value else { return Err("is not an object".to_string()) };
        let row = ResultRow { source: source.to_string(), columns: object.into_iter().collect() };
        if let Some((column, value)) = row.negative_figure() {
            return Err(format!(
                "has a negative {column} ({value}): no measured figure is below 0, the file is damaged or edited"
            ));
        }
        match row.columns.get(column::BYTES.name()) {
            Some(Value::Number(number)) if number.as_u64().is_some() => Ok(row),
            Some(Value::String(text)) if text.trim().parse::<u64>().is_ok() => Ok(row),
            Some(other) => Err(format!("has a \"bytes\" value that is not a byte count: {other}")),
            None => Err("has no \"bytes\" column".to_string()),
        }
    }

    /// The first measured column (a time, a rate, a count, a share: named by its unit) holding a
    /// negative number. A -1 latency would pass every `--max-lat`, so the whole file is refused.
    fn negative_figure(&self) -> Option<(&str, f64)> {
        const UNIT_SUFFIXES: [&str; 3] = ["_us", "_s", "_mpps"];
        const COUNT_PREFIXES: [&str; 2] = ["nic_", "pct_"];
        const COUNTS: [ColumnName; 5] = [
            column::ITERATIONS,
            column::RX_ITERATIONS,
            column::PEAK_MESSAGES,
            column::CEILING_GBPS,
            column::SATURATED_SAMPLES,
        ];
        self.columns.keys().find_map(|name| {
            let measured = UNIT_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
                || COUNT_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
                || COUNTS.iter().any(|count| count.name() == name);
            let value = self.number_named(name).filter(|value| *value < 0.0)?;
            measured.then_some((name.as_str(), value))
        })
    }

    /// The file this row came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// A numeric column; `None` when absent, empty or not a finite number: a NaN or an "inf"
    /// is no figure (compared, it would read as unchanged; judged, it would pass every limit), so
    /// whoever needs the figure reports it missing.
    pub fn number(&self, column: ColumnName) -> Option<f64> {
        self.number_named(column.name())
    }

    /// [`number`](Self::number) of a column named by text: one a user chose (`--metric`) or one
    /// the file has.
    pub fn number_named(&self, name: &str) -> Option<f64> {
        let value = match self.columns.get(name)? {
            Value::Number(number) => number.as_f64(),
            Value::String(text) => text.trim().parse().ok(),
            _ => None,
        };
        value.filter(|value: &f64| value.is_finite())
    }

    /// A count column (`nic_errors`): `Ok(None)` when absent or empty, an error naming the value
    /// when it is there but not a whole number from 0 (a -1 or a NaN cast to an integer would
    /// read as 0 errors).
    pub fn count(&self, column: ColumnName) -> std::result::Result<Option<u64>, String> {
        let text = self.text(column);
        if text.trim().is_empty() {
            return Ok(None);
        }
        match self.number(column) {
            Some(value) if value >= 0.0 && value.fract() == 0.0 && value <= u64::MAX as f64 => {
                Ok(Some(value as u64))
            }
            _ => Err(format!("{}: {column} is {text:?}, not a count", self.describe())),
        }
    }

    /// A column as text; "" when absent.
    pub fn text(&self, column: ColumnName) -> String {
        self.text_named(column.name())
    }

    /// [`text`](Self::text) of a column named by text (one the file has).
    pub fn text_named(&self, name: &str) -> String {
        match self.columns.get(name) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// A yes/no column (`bidirectional`): JSON's `true`, or the `true` a CSV cell holds; `false`
    /// when absent.
    pub fn flag(&self, column: ColumnName) -> bool {
        match self.columns.get(column.name()) {
            Some(Value::Bool(flag)) => *flag,
            Some(Value::String(text)) => text.trim() == "true",
            _ => false,
        }
    }

    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.columns.keys().map(String::as_str)
    }

    pub fn bytes(&self) -> u64 {
        self.number(column::BYTES).map(|bytes| bytes as u64).unwrap_or(0)
    }

    pub fn test(&self) -> String {
        self.text(column::TEST)
    }

    /// The memory modes as one label: "cuda" when both sides use the same, "cuda/host"
    /// (local/remote) when they differ, "host" when the file does not say.
    pub fn memory(&self) -> String {
        pair_label(&self.text(column::MEM_LOCAL), &self.text(column::MEM_REMOTE), "host")
    }

    /// The GPUs as one label, the same way; "" for host memory.
    pub fn gpu(&self) -> String {
        pair_label(&self.text(column::GPU_LOCAL), &self.text(column::GPU_REMOTE), "")
    }

    pub fn kind(&self) -> RowKind {
        if self.columns.contains_key(column::BW_AVG_GBIT_S.name()) {
            RowKind::Bandwidth
        } else if self.columns.contains_key(column::T_TYPICAL_US.name()) {
            RowKind::Latency
        } else {
            RowKind::Other
        }
    }

    /// What `compare` joins on: (test, memory modes, GPUs, lane of a concurrent run, size).
    pub fn key(&self) -> RowKey {
        RowKey {
            test: self.test(),
            memory: self.memory(),
            gpu: self.gpu(),
            lane: self.text(column::LANE),
            bytes: self.bytes(),
        }
    }

    /// "write_bw cuda GPU0 65536 bytes", for messages.
    pub fn describe(&self) -> String {
        self.key().to_string()
    }
}

/// Joins a local and a remote label: one when equal (or the remote one unknown), both otherwise.
fn pair_label(local: &str, remote: &str, default: &str) -> String {
    match (local.trim(), remote.trim()) {
        ("", "") => default.to_string(),
        (local, remote) if local == remote || remote.is_empty() => local.to_string(),
        ("", remote) => format!("{default}/{remote}"),
        (local, remote) => format!("{local}/{remote}"),
    }
}

/// The identity of a row across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    pub test: String,
    pub memory: String,
    pub gpu: String,
    /// `--concurrent` runs: "0", "1", ... or "all" (the aggregate); empty otherwise.
    pub lane: String,
    pub bytes: u64,
}

impl fmt::Display for RowKey {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let test = if self.test.is_empty() { "(no test)" } else { &self.test };
        write!(out, "{test} {}", self.memory)?;
        if !self.gpu.is_empty() {
            write!(out, " {}", self.gpu)?;
        }
        match self.lane.as_str() {
            "" => {}
            "all" => write!(out, " all lanes")?,
            lane => write!(out, " lane {lane}")?,
        }
        write!(out, " {} bytes", self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{"metadata": {"gdrperf_version": "0.1.0", "host": "node1", "device": "mlx5_0", "date": "2026-12-02T17:04:05Z"},
        "results": [{"test": "write_bw", "bytes": 2, "bw_avg_gbit_s": 0.5, "mem_local": "cuda", "mem_remote": "host", "gpu_local": "GPU0", "gpu_remote": ""}]}"#;

    #[test]
    fn a_figure_that_is_not_a_number_is_no_figure_and_a_bad_count_is_an_error() {
        let text =
            "test,bytes,bw_avg_gbit_s,nic_errors\nwrite_bw,2,NaN,1.5\nwrite_bw,4,inf,NaN\nwrite_bw,8,1.5,3\n";
        let file = ResultFile::parse_csv("run.csv", text).unwrap();
        assert_eq!(file.rows[0].number(column::BW_AVG_GBIT_S), None);
        assert_eq!(file.rows[1].number(column::BW_AVG_GBIT_S), None);
        assert_eq!(file.rows[2].number(column::BW_AVG_GBIT_S), Some(1.5));
        assert!(file.rows[0].count(column::NIC_ERRORS).unwrap_err().contains("\"1.5\", not a count"));
        assert!(file.rows[1].count(column::NIC_ERRORS).is_err());
        assert_eq!(file.rows[2].count(column::NIC_ERRORS), Ok(Some(3)));
        assert_eq!(file.rows[2].count(column::PEAK_MESSAGES), Ok(None));
    }

    #[test]
    fn a_negative_figure_refuses_the_file() {
        let cases = [
            ("t_typical_us", "-1"),
            ("bw_avg_gbit_s", "-0.5"),
            ("msg_rate_mpps", "-2"),
            ("nic_errors", "-1"),
            ("iterations", "-5"),
            ("elapsed_s", "-0.1"),
        ];
        for (column, value) in cases {
            let text = format!("test,bytes,{column}\nwrite_lat,2,{value}\n");
            let error = ResultFile::parse_csv("run.csv", &text).unwrap_err().to_string();
            assert!(error.contains(&format!("negative {column}")), "{column}: {error}");
        }
        let json = r#"{"results": [{"test": "write_lat", "bytes": 2, "t_typical_us": -1}]}"#;
        assert!(ResultFile::parse_json("x.json", json)
            .unwrap_err()
            .to_string()
            .contains("negative t_typical_us"));
        // Zero is a figure (no errors), text columns are not figures.
        let text = "test,bytes,t_typical_us,nic_errors,gpu_local\nwrite_lat,2,0,0,-1\n";
        assert!(ResultFile::parse_csv("run.csv", text).is_ok());
    }

    #[test]
    fn json_files_read_with_their_metadata() {
        let file = ResultFile::parse_json("a.json", JSON).unwrap();
        assert_eq!(file.provenance(), "gdrperf 0.1.0 on node1 (mlx5_0), 2026-12-02T17:04:05Z");
        let row = &file.rows[0];
        assert_eq!(
            (row.bytes(), row.memory(), row.gpu(), row.kind()),
            (2, "cuda/host".to_string(), "GPU0".to_string(), RowKind::Bandwidth)
        );
        assert_eq!(row.describe(), "write_bw cuda/host GPU0 2 bytes");
        assert_eq!(row.number(column::BW_AVG_GBIT_S), Some(0.5));
    }

    #[test]
    fn csv_files_read_with_comment_metadata() {
        let text = "# command: gdr-write-bw -a\n# host: node2\ntest,bytes,t_typical_us\nread_lat,2,1.75\nread_lat,4,1.80\n";
        let file = ResultFile::parse_csv("b.csv", text).unwrap();
        assert_eq!(file.metadata_text("command"), "gdr-write-bw -a");
        assert_eq!(file.rows.len(), 2);
        assert_eq!(file.rows[1].number(column::T_TYPICAL_US), Some(1.8));
        assert_eq!(file.rows[1].kind(), RowKind::Latency);
        assert_eq!(file.rows[1].memory(), "host");
    }

    /// Issue 44: every input read from a file is bounded and from a regular file.
    #[test]
    fn a_device_or_a_fifo_given_as_a_result_is_an_error_not_a_hang() {
        let error = ResultFile::read(Path::new("/dev/zero")).expect_err("refused").to_string();
        assert!(error.contains("not a regular file"), "{error}");
        let fifo = std::env::temp_dir().join(format!("gdrperf-result-fifo-{}.json", std::process::id()));
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = ResultFile::read(&fifo).expect_err("refused").to_string();
        std::fs::remove_file(&fifo).unwrap();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let cases = [
            (ResultFile::parse_json("x.json", "{\"metadata\": {}}"), "no \"results\" array"),
            (
                ResultFile::parse_json("x.json", "{\"results\": [{\"test\": \"a\"}]}"),
                "result 1 has no \"bytes\" column",
            ),
            (ResultFile::parse_json("x.json", "{\"results\": [{\"bytes\": -3}]}"), "not a byte count"),
            (ResultFile::parse_json("x.json", "not json"), "x.json is not a gdrperf JSON result file"),
            (ResultFile::parse_csv("x.csv", "test,size\na,1\n"), "no \"bytes\" column"),
            (ResultFile::parse_csv("x.csv", "test,bytes\na,1,7\n"), "x.csv is not a readable CSV"),
            (ResultFile::parse_csv("x.csv", "test,bytes\na,many\n"), "row 1 has a \"bytes\" value"),
        ];
        for (result, expected) in cases {
            let message = result.unwrap_err().to_string();
            assert!(message.contains(expected), "{message:?} lacks {expected:?}");
        }
    }

    #[test]
    fn better_direction_follows_the_unit() {
        assert_eq!(Better::for_column("bw_avg_gbit_s"), Better::Higher);
        assert_eq!(Better::for_column("bw_peak_mib_s"), Better::Higher);
        assert_eq!(Better::for_column("msg_rate_mpps"), Better::Higher);
        assert_eq!(Better::for_column("p99_us"), Better::Lower);
        assert_eq!(Better::for_column("elapsed_s"), Better::Lower);
    }
}
