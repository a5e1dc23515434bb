//! Where results go: the console table, a CSV file and a JSON file, behind one small trait.
//!
//! Files are created before anything is measured (an unwritable path fails at once, not after
//! an hour of sweeping) and every row is written the moment its size completes, so a crash at
//! size 20 keeps sizes 1 to 19.

mod console;
mod files;
pub mod latency_row;
pub mod rows;
pub mod send_row;

use std::path::Path;

use serde::Serialize;

pub use console::Console;
pub use files::{CsvFile, JsonFile};
pub use rows::{BandwidthRow, RowContext};

use crate::error::Result;
use crate::harness::config::BandwidthUnit;

/// A result row: serialisable for files, printable as a line of the console table.
pub trait Row: Serialize {
    /// Column titles of the console table.
    fn console_header(unit: BandwidthUnit) -> String;
    /// This row as a line of the console table.
    fn console_line(&self, unit: BandwidthUnit) -> String;
}

/// One destination of results.
pub trait Exporter<R: Row> {
    /// The run is connected: here is what it runs on (header of the console, metadata of files).
    fn start(&mut self, metadata: &serde_json::Value) -> Result<()>;
    /// A run over several memory placements moved on to the next one (new memory, GPU, device).
    fn section(&mut self, _metadata: &serde_json::Value) -> Result<()> {
        Ok(())
    }
    /// The run ended (completed, stopped by a signal, or failed): how, for the files' readers.
    fn finish(&mut self, _outcome: &serde_json::Value) -> Result<()> {
        Ok(())
    }
    /// One size is done.
    fn write_row(&mut self, row: &R) -> Result<()>;
}

/// Every exporter of a run, fed together.
pub struct Outputs<R: Row> {
    exporters: Vec<Box<dyn Exporter<R>>>,
}

impl<R: Row + 'static> Outputs<R> {
    /// Creates the files now (so a bad path fails before measuring) and the console table.
    pub fn create(csv: Option<&Path>, json: Option<&Path>, console: Option<Console>) -> Result<Outputs<R>> {
        let mut exporters: Vec<Box<dyn Exporter<R>>> = Vec::new();
        if let Some(console) = console {
            exporters.push(Box::new(console));
        }
        if let Some(path) = csv {
            exporters.push(Box::new(CsvFile::create(path)?));
        }
        if let Some(path) = json {
            exporters.push(Box::new(JsonFile::create(path)?));
        }
        Ok(Outputs { exporters })
    }

    pub fn start(&mut self, metadata: &serde_json::Value) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.start(metadata))
    }

    pub fn section(&mut self, metadata: &serde_json::Value) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.section(metadata))
    }

    pub fn finish(&mut self, outcome: &serde_json::Value) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.finish(outcome))
    }

    pub fn write_row(&mut self, row: &R) -> Result<()> {
        self.exporters.iter_mut().try_for_each(|exporter| exporter.write_row(row))
    }
}

/// Now, as an RFC 3339 UTC timestamp ("2026-12-02T17:04:05Z"), without a date crate: days since
/// the epoch to a civil date (Howard Hinnant's algorithm).
pub fn utc_timestamp() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    let (days, of_day) = ((seconds / 86_400) as i64, seconds % 86_400);
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamp_has_rfc3339_shape_and_a_plausible_year() {
        let stamp = super::utc_timestamp();
        assert_eq!(stamp.len(), 20, "{stamp}");
        assert!(stamp.ends_with('Z'));
        let year: u32 = stamp[..4].parse().unwrap();
        assert!((2024..2200).contains(&year), "{stamp}");
        assert_eq!(&stamp[4..5], "-");
        assert_eq!(&stamp[10..11], "T");
    }
}
