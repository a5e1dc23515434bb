//! Bad input to the bench binaries, checked where no RDMA device or GPU exists (CI): each case
//! must exit 2 with a message naming the problem, and nothing may panic.

use std::process::Command;

fn run(arguments: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gdr-write-bw"))
        .args(arguments)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{arguments:?} panicked: {stderr}");
    (output.status.code().unwrap_or(-1), stderr)
}

#[test]
fn configuration_errors_exit_2_and_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--loopback", "-s", "0"], "-s/--size must be at least 1 byte"),
        (&["--loopback", "-n", "0"], "-n/--iters must be at least 1"),
        (&["--loopback", "-D", "0"], "-D/--duration"),
        (&["--loopback", "-m", "1500"], "-m/--mtu must be one of"),
        (&["--loopback", "-t", "8", "-Q", "9"], "-Q/--cq-mod (9) must not exceed -t/--tx-depth (8)"),
        (&["--loopback", "--gpu", "1"], "add --mem cuda"),
        (&["--loopback", "--mem", "cuda", "--gpu", "0,1"], "one GPU per run"),
        (&["--loopback", "--mem", "cuda", "--gpu-bus-id", "zz"], "--gpu-bus-id zz"),
    ];
    for (arguments, expected) in cases {
        let (code, stderr) = run(arguments);
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(stderr.contains(expected), "{arguments:?}: expected {expected:?} in {stderr:?}");
    }
}

#[test]
fn clap_rejects_unknown_flags_and_conflicts_with_exit_2() {
    for arguments in [&["--no-such-flag"][..], &["-n", "5", "-D", "1"], &["--loopback", "host1"], &["--mem", "tpu"]] {
        let (code, stderr) = run(arguments);
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(stderr.contains("error"), "{arguments:?}: {stderr}");
    }
}

#[test]
fn gpu_memory_without_a_cuda_driver_is_a_clear_error() {
    if gdrperf_cuda::libcuda_present() {
        eprintln!("libcuda is installed here: this case is covered on machines without it");
        return;
    }
    let (code, stderr) = run(&["--loopback", "--mem", "cuda", "-n", "5"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("libcuda.so not found"), "{stderr}");
}

#[test]
fn no_rdma_device_is_a_clear_error() {
    if std::path::Path::new("/sys/class/infiniband").exists() {
        eprintln!("this host has RDMA devices: the missing-device case is covered elsewhere");
        return;
    }
    let (code, stderr) = run(&["--loopback", "-n", "5"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no RDMA device found"), "{stderr}");
    assert!(stderr.contains("scripts/softroce.sh"), "{stderr}");
}
