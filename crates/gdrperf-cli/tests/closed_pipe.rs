//! A subcommand that only reads and prints, its reader gone (`gdrperf fleet simulate ... | head`):
//! it ends by SIGPIPE like the other writers of a pipeline, never with a panic and exit 101. The
//! subcommands that run benches keep going instead (tests/slurm.rs,
//! `a_step_whose_stdout_is_closed_still_runs_and_gathers`).

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// A pipe whose reader is already gone, for a child's stdout: its first write fails, always.
fn pipe_without_reader() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_stdout_ends_a_printing_subcommand_by_sigpipe() {
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["fleet", "simulate", "--nodes", "16", "--lanes", "1", "--schedule", "ring", "--seeds", "3"])
        .stdout(pipe_without_reader())
        .stderr(Stdio::piped())
        .output()
        .expect("gdrperf runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{:?}: {stderr}", output.status);
}
