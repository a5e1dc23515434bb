//! perftest's `--out_json` report, beside gdrperf's own `--json`: `{"test_info": {...},
//! "results": {...}}` with perftest's key names (`write_test_info_to_file`,
//! `REPORT_FMT_JSON`, `REPORT_FMT_LAT_JSON`, `REPORT_FMT_LAT_DUR_JSON` in perftest's
//! `perftest_parameters.c`/`.h`, 00b55b6), so that scripts written around perftest's file
//! (`jq .results.BW_average`, `.results.t_avg`) read gdrperf's unchanged.
//!
//! perftest opens the file with `O_TRUNC` at every size's report, so a sweep leaves the last
//! size alone. gdrperf keeps `results` as that last size (what those scripts read) and adds
//! `all_results`, every size in order, so nothing measured is dropped; the file is rewritten
//! whole at each size (a temporary file and a rename: always valid JSON).
//!
//! `--report-both` under `-b`: perftest's send_bw.c, write_bw.c, ... call `print_full_bw_report`
//! three times for its single size (the sum, then the local and the remote direction alone), each
//! call rewriting the file, so its `results` ends up the remote direction's, under the same keys;
//! it writes no other key for either side. gdrperf's `results` is that too for a single size (a
//! sweep, where perftest prints no directions, keeps the last size's sum), and it adds
//! `local_results` and `remote_results`, each direction of every size in order, in perftest's
//! keys, beside `all_results` (which keeps the sums).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::options::values::OutputFigure;
use crate::output::exporter::{ConsoleStyle, Exporter, Row, RunStart};
use crate::output::files::{check_result_path, replace_document};
use crate::output::perftest_table::rounded;

/// The `--out_json` file of a run.
pub struct PerftestJsonFile {
    path: PathBuf,
    style: ConsoleStyle,
    /// perftest's `test_info` without its `test` (which the rows complete), from the run header.
    test_info: serde_json::Map<String, serde_json::Value>,
    /// perftest's verb in its test name ("RDMA_Write", "Send", "Atomic_FETCH_AND_ADD").
    verb: String,
    results: Vec<serde_json::Value>,
    /// `--report-both`: each size's directions, this side's and the peer's.
    local_results: Vec<serde_json::Value>,
    remote_results: Vec<serde_json::Value>,
    test: Option<String>,
}

impl PerftestJsonFile {
    /// Checks the path now (a bad one fails before measuring) and writes an empty report.
    pub fn create(path: &Path, style: ConsoleStyle) -> Result<PerftestJsonFile> {
        check_result_path(path)?;
        let file = PerftestJsonFile {
            path: path.to_path_buf(),
            style,
            test_info: serde_json::Map::new(),
            verb: String::new(),
            results: Vec::new(),
            local_results: Vec::new(),
            remote_results: Vec::new(),
            test: None,
        };
        file.rewrite()?;
        Ok(file)
    }

    fn rewrite(&self) -> Result<()> {
        let mut test_info = serde_json::Map::new();
        if let Some(test) = &self.test {
            test_info.insert("test".into(), test.clone().into());
        }
        test_info.extend(self.test_info.clone());
        // perftest's last write: the remote direction of a single size under --report-both.
        let last = match (self.results.as_slice(), self.remote_results.as_slice()) {
            ([_], [remote]) => Some(remote),
            _ => self.results.last(),
        };
        let mut document = serde_json::json!({
            "test_info": test_info,
            "results": last.cloned().unwrap_or_else(|| serde_json::json!({})),
            "all_results": self.results,
        });
        if !self.local_results.is_empty() {
            document["local_results"] = self.local_results.clone().into();
            document["remote_results"] = self.remote_results.clone().into();
        }
        replace_document(&self.path, &document)
    }

    /// `row` as perftest's `results`: its keys, or with `--output` its one figure.
    fn results_of<R: Row>(&self, row: &R) -> serde_json::Value {
        // perftest's --output writes its one figure under its own key ("%lf": six decimals).
        match self.style.figure {
            Some(figure) => {
                let key = match figure {
                    OutputFigure::Bandwidth => "bw_avg",
                    OutputFigure::MessageRate => "msgRate_avg",
                    OutputFigure::Latency => "avg_lat",
                };
                let value = row.perftest_figure(figure, self.style).map(|value| rounded(value, 6));
                serde_json::json!({ key: value })
            }
            None => serde_json::Value::Object(row.perftest_results(self.style)),
        }
    }
}

impl<R: Row> Exporter<R> for PerftestJsonFile {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        let info = &run.metadata["perftest_test_info"];
        self.verb = info["verb"].as_str().unwrap_or_default().to_string();
        self.test_info = info["test_info"].as_object().cloned().unwrap_or_default();
        self.rewrite()
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        // perftest's name: the verb, "Bidirectional_", "Post_List_" (with -l above 1), "BW_Test".
        let kind = match self.test_info.contains_key("Post_List") {
            true => row.perftest_test_kind().replace("BW_Test", "Post_List_BW_Test"),
            false => row.perftest_test_kind().to_string(),
        };
        self.test = Some(format!("{}_{}", self.verb, kind));
        let results = self.results_of(row);
        self.results.push(results);
        self.rewrite()
    }

    /// The directions come in pairs, this side's first ([`Row::direction_rows`]).
    fn write_direction_row(&mut self, row: &R) -> Result<()> {
        let results = self.results_of(row);
        match self.local_results.len() == self.remote_results.len() {
            true => self.local_results.push(results),
            false => self.remote_results.push(results),
        }
        self.rewrite()
    }
}

#[cfg(test)]
mod tests;
