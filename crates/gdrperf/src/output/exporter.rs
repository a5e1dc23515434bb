//! What every destination of results is given: a [`Row`] (any result row type), the run's
//! header lines and metadata ([`RunStart`]), and the [`Exporter`] trait the console table and
//! the files implement: the contract between the rows and the destinations.

use serde::Serialize;

use crate::error::Result;
use crate::options::config::BandwidthUnit;
use crate::options::values::OutputFigure;

/// How the console table is laid out: the bandwidth unit (`--report-gbits`) and whether the
/// run is timed (`-D`), where perftest's latency tests print an average and a rate only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsoleStyle {
    pub unit: BandwidthUnit,
    pub timed: bool,
    /// perftest's `--output`: only this figure, one line per size.
    pub figure: Option<OutputFigure>,
}

/// A result row: serialisable for files, printable as a line of the console table, and held
/// against the acceptance thresholds through its typed figures.
///
/// The table is perftest's, field for field (`RESULT_FMT*` and `REPORT_FMT*` in perftest's
/// `perftest_parameters.h`), so that the scripts written around perftest's stdout (`awk` on
/// the `#bytes` rows, `$4`, `$NF`, `NF == 5`, `tail -2 | head -1`) read gdrperf's the same way;
/// what gdrperf says beyond perftest's fields (the data check, the ceiling and its causes, a
/// lane, the 99.99th percentile) is [`Row::console_notes`], which the console writes on stderr.
pub trait Row: Serialize + gdrperf_threshold::Measured + Clone {
    /// Column titles of the console table: perftest's header line.
    fn console_header(style: ConsoleStyle) -> String;
    /// This row as a line of the console table: perftest's fields only.
    fn console_line(&self, style: ConsoleStyle) -> String;
    /// What the row says beyond perftest's fields, one line each (none by default).
    fn console_notes(&self, _style: ConsoleStyle) -> Vec<String> {
        Vec::new()
    }
    /// The row as perftest's `--out_json` writes its `results`: perftest's key names, its units
    /// (the bandwidth unit of the console) and its decimals.
    fn perftest_results(&self, style: ConsoleStyle) -> serde_json::Map<String, serde_json::Value>;
    /// The figure perftest's `--output` prints for this row (`None`: the row has none).
    fn perftest_figure(&self, figure: OutputFigure, style: ConsoleStyle) -> Option<f64>;
    /// perftest's `--report-both`: this row's two directions as lines of its table, this side's
    /// first ("Local results", then "Remote results"); `None` (the default) for a row that is
    /// not one of a bidirectional run's.
    fn direction_lines(&self, _style: ConsoleStyle) -> Option<[String; 2]> {
        None
    }
    /// perftest's `--report-both` in the files: this row's two directions as rows of their own,
    /// this side's then the peer's, each with its direction's figures and `lane` marked `local`
    /// or `remote`; none (the default) for a row that is not one of a bidirectional run's.
    fn direction_rows(&self) -> Vec<Self>
    where
        Self: Sized,
    {
        Vec::new()
    }
    /// The end of perftest's test name after the verb: "BW_Test", "Bidirectional_BW_Test",
    /// "Latency_Test" (`write_test_info_to_file`).
    fn perftest_test_kind(&self) -> &'static str;
    /// The aggregate row of one size of a `--concurrent` run from its lanes' rows (`None`: the
    /// test has none).
    fn aggregate(_lanes: &[Self]) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// The row missed a threshold: its causes column becomes the causes a failed row lists
    /// (short of its ceiling or not), which are returned, one per cause. None by default (a
    /// latency row has no ceiling).
    fn threshold_missed(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// One line of the run header: what the console prints above the table, and what the files'
/// metadata lists under `header` as `[name, value]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderLine {
    pub name: String,
    pub value: String,
    /// The line changes from one memory placement to the next (device, memory, GPU): the
    /// console's short header of a later placement repeats only these.
    pub per_placement: bool,
}

impl HeaderLine {
    pub fn new(name: &str, value: String) -> HeaderLine {
        HeaderLine { name: name.to_string(), value, per_placement: false }
    }

    /// A line that changes with the memory placement.
    pub fn per_placement(name: &str, value: String) -> HeaderLine {
        HeaderLine { name: name.to_string(), value, per_placement: true }
    }
}

/// What a run, or a later placement of it, starts with: the typed header lines and the rest
/// of the files' metadata.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub header: Vec<HeaderLine>,
    /// Everything else the files record (test, host, device, date, ...), without `header`.
    pub metadata: serde_json::Value,
}

impl RunStart {
    /// The files' metadata: [`RunStart::metadata`] with the header lines under `header`.
    pub fn file_metadata(&self) -> serde_json::Value {
        let mut metadata = self.metadata.clone();
        let header: Vec<[&str; 2]> =
            self.header.iter().map(|line| [line.name.as_str(), line.value.as_str()]).collect();
        if let Some(object) = metadata.as_object_mut() {
            object.insert("header".into(), serde_json::json!(header));
        }
        metadata
    }
}

/// One destination of results.
pub trait Exporter<R: Row> {
    /// The run is connected: here is what it runs on (header of the console, metadata of files).
    fn start(&mut self, run: &RunStart) -> Result<()>;
    /// A run over several memory placements moved on to the next one (new memory, GPU, device).
    fn section(&mut self, _run: &RunStart) -> Result<()> {
        Ok(())
    }
    /// The run ended (completed, stopped by a signal, or failed): how, for the files' readers.
    fn finish(&mut self, _outcome: &serde_json::Value) -> Result<()> {
        Ok(())
    }
    /// One size is done.
    fn write_row(&mut self, row: &R) -> Result<()>;
    /// `--report-both` under `-b`: the row just written, one direction at a time
    /// ([`Row::direction_rows`], the local then the remote). Ignored by default (the console
    /// prints its own direction tables, the Prometheus file keeps the sums).
    fn write_direction_row(&mut self, _row: &R) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_list_the_typed_header_lines_as_name_value_pairs() {
        let run = RunStart {
            header: vec![
                HeaderLine::per_placement("Device", "rxe0 (firmware n/a)".into()),
                HeaderLine::new("QPs", "1".into()),
            ],
            metadata: serde_json::json!({"test": "write_bw"}),
        };
        assert_eq!(
            run.file_metadata(),
            serde_json::json!({
                "test": "write_bw",
                "header": [["Device", "rxe0 (firmware n/a)"], ["QPs", "1"]],
            })
        );
    }
}
