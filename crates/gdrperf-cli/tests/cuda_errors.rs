//! The GPU subcommands on a machine without libcuda, and bad GPU flags anywhere:
//! a clear message and exit status 2, never a panic.

use std::process::{Command, Output};

fn gdrperf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gdrperf")).args(args).output().expect("the gdrperf binary runs")
}

fn assert_clean_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(expected), "expected '{expected}' in: {stderr}");
    assert!(!stderr.contains("panicked"), "panicked: {stderr}");
}

#[test]
fn without_libcuda_selftest_and_copy_bw_explain_and_exit_2() {
    if gdrperf_cuda::libcuda_present() {
        eprintln!("skipped: libcuda is present on this machine");
        return;
    }
    for args in [
        &["selftest"][..],
        &["copy-bw", "-a"],
        &["copy-bw", "--gpu", "3", "-s", "4K"],
        &["selftest", "--gpu-bus-id", "17:00.0"],
    ] {
        let output = gdrperf(args);
        assert_clean_error(&output, "libcuda.so not found");
        assert_clean_error(&output, "--mem host needs no GPU");
    }
}

#[test]
fn malformed_gpu_selections_are_refused_before_any_gpu_is_touched() {
    assert_clean_error(&gdrperf(&["copy-bw", "--gpu", "0,,1"]), "is not a GPU index");
    assert_clean_error(&gdrperf(&["selftest", "--gpu", "1,1"]), "listed twice");
    assert_clean_error(&gdrperf(&["selftest", "--gpu-bus-id", "0000:17:00"]), "bad PCI bus id");
    assert_clean_error(&gdrperf(&["copy-bw", "-s", "12Q"]), "unknown size suffix");
}

#[test]
fn csv_file_is_not_created_when_cuda_is_missing() {
    if gdrperf_cuda::libcuda_present() {
        eprintln!("skipped: libcuda is present on this machine");
        return;
    }
    let path = std::env::temp_dir().join(format!("gdrperf-copy-bw-{}.csv", std::process::id()));
    let output = gdrperf(&["copy-bw", "--csv", path.to_str().unwrap()]);
    assert_clean_error(&output, "libcuda.so not found");
    assert!(!path.exists(), "an empty CSV file was left behind");
}
