//! `gdrperf doctor` as a user runs it: the built binary on fixture trees.

use std::path::Path;
use std::process::{Command, Output};

use gdrperf_doctor_fixtures::{FixtureDir, Machine};

fn doctor(extra_args: &[&str], root: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .arg("doctor")
        .arg("--sysfs-root")
        .arg(root)
        .args(extra_args)
        .output()
        .expect("running gdrperf")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

#[test]
fn dgx_fixture_pairs_gpus_with_nics_and_warns_that_cuda_was_not_asked() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let output = doctor(&[], fixture.path());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "warnings only: {text}");
    assert!(
        text.contains(
            "  GPU0  PIX     NODE    NODE    NODE    SYS     SYS     SYS     SYS     NODE    0     mlx5_0 (PIX)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  GPU7  SYS     SYS     SYS     SYS     NODE    NODE    NODE    PIX     SYS     1     mlx5_7 (PIX)"
        ),
        "{text}"
    );
    assert!(text.contains("CUDA not queried: --sysfs-root"), "{text}");
    assert!(text.contains("WARN  cuda:"), "{text}");
    assert!(text.contains("--gdr auto would take: peermem"), "{text}");
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn json_output_is_one_document_agreeing_with_the_exit_code() {
    let fixture = FixtureDir::with(&Machine::cross_socket()).unwrap();
    let output = doctor(&["--json"], fixture.path());
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!((&json["exit_code"], &json["verdict"]), (&0.into(), &"pass".into()), "a WARN alone passes");
    let strict = doctor(&["--json", "--strict"], fixture.path());
    let json: serde_json::Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(
        (strict.status.code(), json["exit_code"].as_u64()),
        (Some(1), Some(1)),
        "--strict: a WARN is a miss"
    );
    assert_eq!(json["verdict"], "fail", "the exit-code contract's word for 1");
    assert_eq!(json["recommendations"][0]["nic"], "mlx5_0");
    assert_eq!(json["recommendations"][0]["relation"], "SYS");
    assert_eq!(json["gpudirect"]["auto"], "peermem");
}

#[test]
fn gpu_node_without_nic_is_a_miss_and_exits_one() {
    let fixture = FixtureDir::with(&Machine::gpu_without_nic()).unwrap();
    let output = doctor(&["--no-cuda"], fixture.path());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL  rdma-devices: no RDMA device"), "{text}");
    assert!(text.contains("CUDA not queried: --no-cuda"), "{text}");
    assert!(text.trim_end().ends_with("exit code 1: GPUDirect RDMA cannot work as found"), "{text}");
}

#[test]
fn soft_roce_vm_lists_rxe0() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let output = doctor(&[], fixture.path());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("rxe0: software (rxe on eth0)"), "{text}");
    assert!(text.contains("MTU 1024 (eth0 MTU 1500)"), "{text}");
}

#[test]
fn a_root_without_sys_is_a_clear_error_not_a_panic() {
    let empty = FixtureDir::empty().unwrap();
    let output = doctor(&[], empty.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("has no sys/ directory"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn help_documents_the_exit_codes() {
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf")).args(["doctor", "--help"]).output().unwrap();
    let text = stdout(&output);
    assert!(output.status.success());
    for line in [
        "Exit codes of gdrperf doctor:",
        "  0  no FAIL",
        "  1  at least one FAIL",
        "  2  the doctor could not examine the node",
        "Exit codes (the same for every gdrperf tool and script):",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}

/// A fatal AER count on a GPU (gdrperf-doctor-fixtures' `Fault::all`) fails the node: the verdict
/// line names the GPU with its fix and source, and the exit code is 1 (a miss).
#[test]
fn a_fatal_aer_count_on_a_gpu_fails_the_node_with_its_device_fix_and_source() {
    let fault = gdrperf_doctor_fixtures::Fault::all().into_iter().find(|fault| fault.fails).unwrap();
    let fixture = FixtureDir::with(&fault.machine).unwrap();
    let output = doctor(&[], fixture.path());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("  FAIL  aer: {} AER counts since boot: ", fault.device)), "{text}");
    assert!(
        text.contains("        source: Linux Documentation/ABI/testing/sysfs-bus-pci-devices-aer"),
        "{text}"
    );
}
