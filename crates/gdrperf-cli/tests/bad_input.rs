//! Bad input that must end in exit 2 and a message, never a panic (exit 101): an argument that
//! is not UTF-8, in every subcommand, and timeouts so large that `Instant::now() + timeout`
//! would overflow.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// Runs `gdrperf` with `arguments`; returns its exit code and stderr, failing on a panic.
fn gdrperf(arguments: &[&OsStr]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(arguments)
        .env("RUST_BACKTRACE", "1")
        .env_remove("GDRPERF_TOKEN")
        .output()
        .expect("gdrperf runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{arguments:?} panicked: {stderr}");
    (output.status.code(), stderr)
}

const SUBCOMMANDS: [&str; 7] = ["doctor", "copy-bw", "selftest", "accept", "compare", "slurm", "explain"];

#[test]
fn an_argument_that_is_not_utf8_exits_2_in_every_subcommand() {
    let not_text = OsStr::from_bytes(b"/tmp/a\xff.json");
    for subcommand in SUBCOMMANDS {
        let (code, stderr) = gdrperf(&[OsStr::new(subcommand), not_text]);
        assert_eq!(code, Some(2), "{subcommand}: {stderr}");
        assert!(
            stderr.contains("argument 2 (/tmp/a\u{fffd}.json) is not valid UTF-8"),
            "{subcommand}: {stderr}"
        );
    }
}

#[test]
fn timeouts_beyond_30_days_exit_2() {
    let cases: [&[&str]; 4] = [
        &["accept", "--run-timeout", "18446744073709551615"],
        &["slurm", "--round-timeout", "18446744073709551615"],
        &["slurm", "--pair-timeout", "2592001"],
        &["slurm", "--gather-timeout", "18446744073709551615"],
    ];
    for arguments in cases {
        let arguments: Vec<&OsStr> = arguments.iter().map(OsStr::new).collect();
        let (code, stderr) = gdrperf(&arguments);
        assert_eq!(code, Some(2), "{arguments:?}: {stderr}");
        assert!(stderr.contains("0..=2592000"), "{arguments:?}: {stderr}");
    }
}
