//! The console table, laid out like perftest's so its users read it without a legend.

use std::io::Write;

use crate::error::Result;
use crate::options::config::BandwidthUnit;
use crate::output::exporter::{Exporter, HeaderLine, Row, RunStart};

const RULE: &str = "---------------------------------------------------------------------------------------";

/// Prints the run header, then one line per size, to stdout.
pub struct Console {
    title: String,
    unit: BandwidthUnit,
}

impl Console {
    pub fn new(title: &str, unit: BandwidthUnit) -> Console {
        Console { title: title.to_string(), unit }
    }
}

impl<R: Row> Exporter<R> for Console {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{RULE}\n{:^87}", self.title);
        for HeaderLine { name, value, .. } in &run.header {
            let _ = writeln!(out, " {name:<22}: {value}");
        }
        let _ = writeln!(out, "{RULE}\n{}", R::console_header(self.unit));
        Ok(())
    }

    /// A short header for the next placement: only what changed (memory, GPU, device).
    fn section(&mut self, run: &RunStart) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{RULE}");
        for HeaderLine { name, value, .. } in run.header.iter().filter(|line| line.per_placement) {
            let _ = writeln!(out, " {name:<22}: {value}");
        }
        let _ = writeln!(out, "{RULE}\n{}", R::console_header(self.unit));
        Ok(())
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", row.console_line(self.unit));
        let _ = out.flush();
        Ok(())
    }
}
