//! Where results go: the console table, a CSV file, a JSON file, perftest's JSON and a
//! Prometheus textfile (`--prom`), behind one small trait.
//!
//! Files are created before anything is measured (an unwritable path fails at once, not after
//! an hour of sweeping) and every row is written the moment its size completes, so a crash at
//! size 20 keeps sizes 1 to 19.
//!
//! The traits and the run's header are in `exporter.rs`, the facts every row repeats in
//! `context.rs`; this module gathers the exporters of a run ([`Outputs`]).

pub mod ceiling_columns;
pub mod columns;
mod console;
mod context;
mod exporter;
mod files;
pub mod latency_row;
mod measured;
pub mod perftest_json;
pub mod perftest_table;
mod prometheus;
pub mod row_columns;
pub mod rows;
pub mod send_row;

use std::path::Path;

pub use console::Console;
pub use context::RowContext;
pub use exporter::{ConsoleStyle, Exporter, HeaderLine, Row, RunStart};
pub use files::{CsvFile, JsonFile};
pub use perftest_json::PerftestJsonFile;
pub use prometheus::PrometheusFile;
pub use rows::BandwidthRow;

use crate::error::Result;

/// Every exporter of a run, fed together.
pub struct Outputs<R: Row> {
    exporters: Vec<Box<dyn Exporter<R>>>,
    /// `--report-both` under `-b`: each row's directions follow it into the files.
    report_both: bool,
}

impl<R: Row + 'static> Outputs<R> {
    /// Creates the files now (so a bad path fails before measuring) and the console table;
    /// `perftest_json` is perftest's `--out_json` file, its figures in `style`'s unit;
    /// `prometheus` the `--prom` textfile.
    pub fn create(
        csv: Option<&Path>,
        json: Option<&Path>,
        perftest_json: Option<(&Path, ConsoleStyle)>,
        prometheus: Option<&Path>,
        console: Option<Console>,
    ) -> Result<Outputs<R>> {
        let mut exporters: Vec<Box<dyn Exporter<R>>> = Vec::new();
        if let Some((path, style)) = perftest_json {
            exporters.push(Box::new(PerftestJsonFile::create(path, style)?));
        }
        if let Some(console) = console {
            exporters.push(Box::new(console));
        }
        if let Some(path) = csv {
            exporters.push(Box::new(CsvFile::create(path)?));
        }
        if let Some(path) = json {
            exporters.push(Box::new(JsonFile::create(path)?));
        }
        if let Some(path) = prometheus {
            exporters.push(Box::new(PrometheusFile::create(path)?));
        }
        Ok(Outputs { exporters, report_both: false })
    }

    /// perftest's `--report-both` under `-b`: after each row, its two directions go to the files
    /// too ([`Exporter::write_direction_row`]).
    pub fn reporting_both(mut self, report_both: bool) -> Outputs<R> {
        self.report_both = report_both;
        self
    }

    pub fn start(&mut self, run: &RunStart) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.start(run))
    }

    pub fn section(&mut self, run: &RunStart) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.section(run))
    }

    pub fn finish(&mut self, outcome: &serde_json::Value) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.finish(outcome))
    }

    pub fn write_row(&mut self, row: &R) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.write_row(row))?;
        if self.report_both {
            for direction in row.direction_rows() {
                self.exporters
                    .iter_mut()
                    .try_for_each(|exporter| exporter.write_direction_row(&direction))?;
            }
        }
        Ok(())
    }
}
