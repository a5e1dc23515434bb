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

/// Runs `binary_name` with `arguments`, sends SIGINT once its table header is out (the size is
/// under way, not a guessed delay) and returns its exit code.
pub fn interrupt_once_measuring(binary_name: &str, arguments: &[&str], settings: &str) -> Option<i32> {
    let mut child = command(binary_name, arguments, settings)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    wait_for_output_line(&mut child, "#bytes");
    // SAFETY: kill with the id of our own child, which is running (its stdout is still open).
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    child.wait().expect("the child ends").code()
}

/// Runs `binary_name` with `arguments` (its stderr kept), sends `signal` once `ready` holds (polled
/// every 20 ms, at most 120 s; the child must still be running) and returns its exit code and
/// stderr.
pub fn signal_when(
    binary_name: &str,
    arguments: &[&str],
    settings: &str,
    signal: i32,
    ready: impl Fn() -> bool,
) -> (Option<i32>, String) {
    let mut child = command(binary_name, arguments, settings)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{binary_name}: not ready to signal in 120 s");
        assert!(child.try_wait().expect("the child").is_none(), "{binary_name}: ended before the signal");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill with the id of our own child, which has not been reaped (try_wait saw it running).
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let output = child.wait_with_output().expect("the child ends");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The simulated NIC's settings for the loopback cases: the default port, fast enough for whole
/// sweeps.
pub const NIC: &str = "rate=100";

/// Runs a loopback case of `binary` over simulated0 (settings [`NIC`]) writing `csv`, expected to
/// exit `expected`; returns its output and CSV rows.
pub fn loopback(binary: &str, arguments: &[&str], csv: &str, expected: i32) -> (String, Vec<Row>) {
    let mut all = vec!["--loopback", "-d", "simulated0"];
    all.extend_from_slice(arguments);
    all.extend(["--csv", csv]);
    let (code, output) = run(binary, &all, NIC);
    assert_eq!(code, expected, "{binary} {all:?}: {output}");
    (output, rows(csv))
}
