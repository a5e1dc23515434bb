//! What the tests over the simulated NIC share: a scratch folder per case, the bench binaries
//! run with `GDRPERF_SIMULATED_NIC` set, and result CSVs read by column name.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A folder of its own for one case's files (in the system's temporary directory, never in the
/// checkout), removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let folder = std::env::temp_dir().join(format!("gdrperf-simulated-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("a temporary folder");
        Scratch(folder)
    }

    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bench binary `name` ("gdr-write-bw"), built by cargo next to this test's `deps/` folder.
pub fn binary(name: &str) -> PathBuf {
    let test = std::env::current_exe().expect("the test knows its path");
    let folder = test.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    folder.join(name)
}

/// A command of `binary` over the simulated NIC (its settings `settings`), no token.
pub fn command(binary_name: &str, arguments: &[&str], settings: &str) -> Command {
    let mut command = Command::new(binary(binary_name));
    command
        .args(arguments)
        .env("RUST_BACKTRACE", "1")
        .env("GDRPERF_SIMULATED_NIC", settings)
        .env_remove("GDRPERF_TOKEN")
        .env_remove("GDRPERF_TEST_SHARED_BOUNCE");
    command
}

/// Runs a command to the end: exit code and its stdout then stderr (a panic fails at once).
pub fn finish(what: &str, command: &mut Command) -> (i32, String) {
    let output = command.output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
    (output.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

/// Runs `binary_name` with `arguments` to the end: exit code and output.
pub fn run(binary_name: &str, arguments: &[&str], settings: &str) -> (i32, String) {
    finish(&format!("{binary_name} {arguments:?}"), &mut command(binary_name, arguments, settings))
}

/// One data row of a result CSV: column name -> cell.
pub type Row = HashMap<String, String>;

/// The data rows of a result CSV (none if it is missing), its `#` lines skipped.
pub fn rows(path: &str) -> Vec<Row> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let body: String =
        text.lines().filter(|line| !line.starts_with('#')).map(|line| format!("{line}\n")).collect();
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let header = reader.headers().expect("a header line").clone();
    reader
        .records()
        .map(|record| {
            let record = record.expect("every row whole (as many fields as the header)");
            header
                .iter()
                .zip(record.iter())
                .map(|(name, cell)| (name.to_string(), cell.to_string()))
                .collect()
        })
        .collect()
}

/// The cells of `column` of every row, in order (empty where a row lacks it).
pub fn column<'a>(rows: &'a [Row], column: &str) -> Vec<&'a str> {
    rows.iter().map(|row| row.get(column).map_or("", String::as_str)).collect()
}

/// The number in `column` of `row` (NaN where it is missing or not a number).
pub fn number(row: &Row, column: &str) -> f64 {
    row.get(column).and_then(|cell| cell.parse().ok()).unwrap_or(f64::NAN)
}

/// Every row says it was made on the simulated NIC and passed its data check.
pub fn assert_simulated_and_checked(what: &str, rows: &[Row]) {
    for row in rows {
        assert_eq!(row.get("device").map(String::as_str), Some("simulated0"), "{what}: {row:?}");
        let check = row.get("validation").or_else(|| row.get("check")).map(String::as_str);
        assert_eq!(check, Some("pass"), "{what}: {row:?}");
    }
}

/// Reads `child`'s stdout (piped) until a line contains `text`: the condition to signal on,
/// instead of a guessed delay. Panics if the child closes its output first.
pub fn wait_for_output_line(child: &mut std::process::Child, text: &str) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains(text) => break,
            Some(Ok(_)) => continue,
            _ => panic!("the child ended its output before a line with {text:?}"),
        }
    }
    // Keep reading on a thread, so that the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
}
