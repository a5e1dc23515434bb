//! CSV and JSON result files.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::output::exporter::{Exporter, Row, RunStart};

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output { path: path.display().to_string(), source }
}

/// One CSV row per size, flushed as written. The header comes from the row type's field names:
/// those names are a published contract, see `BandwidthRow`.
pub struct CsvFile {
    path: PathBuf,
    /// The same open file as `writer`'s (a duplicate descriptor, sharing its offset), for the
    /// comment lines written at `start`, before the csv writer has written anything.
    head: File,
    writer: csv::Writer<File>,
    /// Whether the header line is out (it goes with the first row).
    header_written: bool,
}

/// One rule for every CSV gdrperf writes (the benches' files, accept's summary.csv), kept in
/// `gdrperf-files` with the cleaning of text from outside.
pub use gdrperf_files::text::spreadsheet_safe;

/// Checks a result file's path before the run writes it: a symbolic link there is refused (in
/// a shared folder another user's link would make this run overwrite the file it points to),
/// and an earlier result already there is named on stderr, since this run replaces it (a
/// rerun with the same `--csv` is common; finding out later that a run was lost is not).
/// Returns whether a file was there.
pub(super) fn check_result_path(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(output_error(
            path,
            std::io::Error::other("is a symbolic link: give the file's real path (a link is never followed)"),
        )),
        Ok(_) => {
            eprintln!("note: replacing the existing {} with this run's results", path.display());
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

impl CsvFile {
    pub fn create(path: &Path) -> Result<CsvFile> {
        check_result_path(path)?;
        // The project's one output path (a new file made with O_CREAT|O_EXCL, renamed onto the
        // name at once, then written row by row): a link planted at the name after the check is
        // refused, and an earlier file is replaced, never truncated in place (a hard link to
        // someone's file at the name leaves that file untouched).
        let file = gdrperf_files::create_fresh(path).map_err(|source| output_error(path, source))?;
        let head = file.try_clone().map_err(|source| output_error(path, source))?;
        Ok(CsvFile {
            path: path.to_path_buf(),
            head,
            writer: csv::Writer::from_writer(file),
            header_written: false,
        })
    }
}

impl<R: Row> Exporter<R> for CsvFile {
    /// Opens the file with `# key: value` lines naming the test, command, git commit, version,
    /// date and host (the JSON's metadata keys; `gdrperf compare` and the plot scripts read them
    /// back), so the CSV says what made it without its JSON beside it.
    fn start(&mut self, run: &RunStart) -> Result<()> {
        let text = |key: &str| run.metadata[key].as_str().unwrap_or_default().to_string();
        let argv: Vec<String> = run.metadata["argv"]
            .as_array()
            .map(|words| words.iter().filter_map(|word| word.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let mut lines = gdrperf_command_line::provenance::comment_lines(
            &text("test"),
            &argv,
            &text("date"),
            &text("host"),
        );
        // The clock the run timed with, as its header names it (TSC or monotonic, pinned or not).
        if let Some(clock) = run.header.iter().find(|line| line.name == "Clock") {
            lines.push_str(&format!("# clock: {}\n", clock.value));
        }
        self.head.write_all(lines.as_bytes()).map_err(|source| output_error(&self.path, source))
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        let csv_error =
            |error: csv::Error| output_error(&self.path, std::io::Error::other(error.to_string()));
        // The row as serde writes it (header first, once), then each cell made spreadsheet-safe.
        let mut buffer = csv::WriterBuilder::new().has_headers(!self.header_written).from_writer(Vec::new());
        buffer.serialize(row).map_err(csv_error)?;
        let bytes = buffer.into_inner().map_err(|error| csv_error(error.into_error().into()))?;
        let mut records = csv::ReaderBuilder::new().has_headers(false).from_reader(bytes.as_slice());
        for record in records.records() {
            let record = record.map_err(csv_error)?;
            self.writer
                .write_record(record.iter().map(spreadsheet_safe).map(|cell| cell.into_owned()))
                .map_err(csv_error)?;
        }
        self.header_written = true;
        self.writer.flush().map_err(|source| output_error(&self.path, source))
    }

    /// A direction row is a row of its own, marked by its `lane` (`local`, `remote`).
    fn write_direction_row(&mut self, row: &R) -> Result<()> {
        Exporter::<R>::write_row(self, row)
    }
}

/// `{"metadata": {...}, "results": [...], "outcome": {...}}`, rewritten whole (through a
/// temporary file and a rename, so a reader never sees half a document) each time a size
/// completes. `outcome` stays null until the run ends: null in a finished file means the process
/// died before it could say how the run ended.
pub struct JsonFile {
    path: PathBuf,
    metadata: serde_json::Value,
    results: Vec<serde_json::Value>,
    outcome: serde_json::Value,
}

impl JsonFile {
    pub fn create(path: &Path) -> Result<JsonFile> {
        // The rename in `rewrite` replaces a link itself, never its target; refused all the same.
        check_result_path(path)?;
        let file = JsonFile {
            path: path.to_path_buf(),
            metadata: serde_json::json!({}),
            results: Vec::new(),
            outcome: serde_json::Value::Null,
        };
        file.rewrite()?;
        Ok(file)
    }

    fn rewrite(&self) -> Result<()> {
        let document = serde_json::json!({ "metadata": self.metadata, "results": self.results, "outcome": self.outcome });
        replace_document(&self.path, &document)
    }
}

/// Replaces the file at `path` with `document`, pretty-printed, through a temporary file and a
/// rename, so that a reader never sees half a document.
/// Through the project's one output path (`gdrperf_files::write_file`: a new temporary file made
/// with `O_CREAT|O_EXCL`, so a link planted at its name is never followed, then renamed onto
/// `path`, refused when `path` is a link).
pub(super) fn replace_document(path: &Path, document: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(document).map_err(|error| output_error(path, error.into()))?;
    gdrperf_files::write_file(path, (text + "\n").as_bytes()).map_err(|source| output_error(path, source))
}

impl<R: Row> Exporter<R> for JsonFile {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        self.metadata = run.file_metadata();
        self.rewrite()
    }

    /// Later placements keep the run's metadata and add theirs under `sections`, in order: the
    /// rows say which placement they belong to (`mem_local`, `gpu_local`, `device`).
    fn section(&mut self, section: &RunStart) -> Result<()> {
        if let Some(run) = self.metadata.as_object_mut() {
            let sections = run.entry("sections").or_insert_with(|| serde_json::json!([]));
            if let Some(list) = sections.as_array_mut() {
                list.push(section.file_metadata());
            }
        }
        self.rewrite()
    }

    fn finish(&mut self, outcome: &serde_json::Value) -> Result<()> {
        self.outcome = outcome.clone();
        self.rewrite()
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        let value = serde_json::to_value(row).map_err(|error| output_error(&self.path, error.into()))?;
        self.results.push(value);
        self.rewrite()
    }

    /// An entry of `results` of its own, after its summed row, marked by its `lane`.
    fn write_direction_row(&mut self, row: &R) -> Result<()> {
        Exporter::<R>::write_row(self, row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::BandwidthRow;

    #[test]
    fn csv_files_open_with_what_made_them() {
        let path = std::env::temp_dir().join(format!("gdrperf-csv-head-{}.csv", std::process::id()));
        let mut file = CsvFile::create(&path).unwrap();
        let clock = "monotonic clock (bandwidth timing, thread not pinned; kernel clocksource tsc)";
        let run = RunStart {
            header: vec![crate::output::HeaderLine::new("Clock", clock.into())],
            metadata: serde_json::json!({
                "test": "write_bw", "argv": ["gdr-write-bw", "--mem", "a b"],
                "date": "2026-12-03T00:00:00Z", "host": "node1",
            }),
        };
        Exporter::<BandwidthRow>::start(&mut file, &run).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let expected = gdrperf_command_line::provenance::comment_lines(
            "write_bw",
            &["gdr-write-bw".into(), "--mem".into(), "a b".into()],
            "2026-12-03T00:00:00Z",
            "node1",
        );
        assert_eq!(text, format!("{expected}# clock: {clock}\n"));
        assert!(expected.contains("# command: gdr-write-bw --mem 'a b'\n"), "{expected}");
    }

    /// A hard link at the result's name (another file of the folder, or someone's) is replaced by
    /// the new file, not written through: the CSV was once truncated in place, emptying the
    /// linked file. (A link planted at the temporary name: `gdrperf_files::write`'s tests.)
    #[test]
    fn a_hard_link_at_a_result_name_is_replaced_not_written_through() {
        let folder = std::env::temp_dir().join(format!("gdrperf-hard-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let victim = folder.join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        for name in ["run.csv", "run.json"] {
            let result = folder.join(name);
            std::fs::hard_link(&victim, &result).unwrap();
            if name.ends_with(".csv") {
                CsvFile::create(&result).map(drop).unwrap();
            } else {
                JsonFile::create(&result).map(drop).unwrap();
            }
            assert_eq!(
                std::fs::read_to_string(&victim).unwrap(),
                "mine\n",
                "{name}: written through the link"
            );
        }
        let leftovers: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".partial"))
            .collect();
        assert!(leftovers.is_empty(), "no temporary file is left: {leftovers:?}");
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn a_result_path_that_is_a_link_is_refused_and_an_existing_file_is_replaced_aloud() {
        let folder = std::env::temp_dir().join(format!("gdrperf-result-path-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let victim = folder.join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        for name in ["run.csv", "run.json"] {
            let link = folder.join(name);
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            let error = if name.ends_with(".csv") {
                CsvFile::create(&link).err()
            } else {
                JsonFile::create(&link).err()
            };
            let error = error.expect("a link at the result path stops the run");
            assert!(error.to_string().contains("is a symbolic link"), "{error}");
            std::fs::remove_file(&link).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "the link was followed");
        let earlier = folder.join("earlier.csv");
        assert!(!check_result_path(&earlier).unwrap(), "nothing there yet");
        std::fs::write(&earlier, "an earlier run\n").unwrap();
        assert!(check_result_path(&earlier).unwrap(), "an earlier result is named");
        CsvFile::create(&earlier).unwrap();
        assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "", "replaced, as said");
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn cells_a_spreadsheet_would_run_are_written_as_text() {
        for (cell, written) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1+2", "'+1+2"),
            ("-cmd", "'-cmd"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("-1.5", "-1.5"),
            ("+3", "+3"),
            ("node1", "node1"),
            ("", ""),
        ] {
            assert_eq!(spreadsheet_safe(cell), written, "{cell}");
        }
    }
}
