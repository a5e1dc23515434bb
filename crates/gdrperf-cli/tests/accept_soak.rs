//! `gdrperf accept --soak` as a user runs it, on fixture trees with a stand-in bandwidth bench:
//! intervals are counted from the profile's level, PCIe AER counters that move during an
//! interval are tied to it and fail the stability verdict, a quiet soak passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gdrperf_doctor_fixtures::{Dgx, FixtureDir, Machine};

mod common;

use common::{text, Scratch};

/// A gdr-write-bw stand-in: one row at FAKE_BW Gb/s; when FAKE_AER names a file, the third
/// call writes receiver errors into it, as a flaky lane would mid-run.
fn fake_bench(scratch: &Scratch) -> PathBuf {
    let script = "#!/bin/sh\n\
        while [ $# -gt 0 ]; do case $1 in --json) json=$2;; -s) size=$2;; --mem) mem=$2;; esac; shift; done\n\
        calls=$(cat \"$FAKE_CALLS\" 2>/dev/null || echo 0); calls=$((calls + 1)); echo $calls > \"$FAKE_CALLS\"\n\
        if [ -n \"$FAKE_AER\" ] && [ $calls -eq 3 ]; then printf 'RxErr 7\\nTOTAL_ERR_COR 7\\n' > \"$FAKE_AER\"; fi\n\
        echo \"{\\\"metadata\\\":{},\\\"results\\\":[{\\\"test\\\":\\\"write_bw\\\",\\\"bytes\\\":$size,\\\"bw_avg_gbit_s\\\":$FAKE_BW,\\\"mem_local\\\":\\\"$mem\\\",\\\"nic_errors\\\":0}]}\" > \"$json\"\n";
    scratch.script("gdr-write-bw", script)
}

const PROFILE: &str = r#"
name = "soak-test"
description = "test profile"
[bandwidth]
test = "write_bw"
size = 4096
iterations = 10
source = "test"
min_bw.host = { value = "10Gb/s", source = "test figure" }
[soak]
interval_s = 10
source = "test"
levels.r1 = { duration = "40s", source = "test level" }
"#;

/// `gdrperf accept --soak LEVEL` of the bandwidth PROFILE with the bandwidth stand-in at 12.5
/// Gb/s on host memory; `env` adds to the stand-in's environment.
fn soak(root: &Path, scratch: &Scratch, level: &str, env: &[(&str, String)]) -> (Output, PathBuf) {
    let bench_dir = fake_bench(scratch);
    // The default first, so that a caller's own FAKE_BW (set later) wins, as before.
    let mut defaults = vec![("FAKE_BW", "12.5".to_string())];
    defaults.extend_from_slice(env);
    soak_with(root, scratch, &Soak { profile: PROFILE, bench_dir, mem: "host", level }, &defaults)
}

/// One soak as a user asks for it: the profile's text, the stand-ins' folder, `--mem`, `--soak`.
struct Soak<'a> {
    profile: &'a str,
    bench_dir: PathBuf,
    mem: &'a str,
    level: &'a str,
}

/// Runs `gdrperf accept` on the fixture tree `root` with the soak `run`; returns what it printed
/// and the `--out` folder. The stand-ins count their calls in `FAKE_CALLS`.
fn soak_with(root: &Path, scratch: &Scratch, run: &Soak, env: &[(&str, String)]) -> (Output, PathBuf) {
    let profile = scratch.write("profile.toml", run.profile);
    let out = scratch.0.join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["accept", "--profile", &profile, "--sysfs-root", root.to_str().unwrap()])
        .args([
            "--bench-dir",
            run.bench_dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mem",
            run.mem,
        ])
        .args(["-d", "mlx5_0", "--soak", run.level])
        .env("FAKE_CALLS", scratch.0.join("calls"))
        .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
        .output()
        .unwrap();
    (output, out)
}

fn soak_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("soak.json")).unwrap()).unwrap()
}

#[test]
fn a_quiet_soak_passes_with_one_interval_per_ten_seconds_of_the_level() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("quiet");
    let (output, out) = soak(fixture.path(), &scratch, "r1", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let soak = soak_json(&out);
    assert_eq!(soak["stability"], "pass");
    let lane = &soak["lanes"][0];
    assert_eq!(lane["intervals"].as_array().unwrap().len(), 4, "40 s in 10 s intervals");
    // The NIC and the bridges above it are watched (no GPU in a host lane).
    assert_eq!(lane["watched_pci_functions"].as_array().unwrap().last().unwrap(), Dgx::nic(0).as_str());
    assert!(out.join("soak/write_bw-host-mlx5_0-interval003.json").is_file());
}

#[test]
fn aer_errors_during_an_interval_are_tied_to_it_and_fail_the_soak() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("aer");
    let port = std::fs::canonicalize(fixture.path().join("sys/bus/pci/devices/0000:17:00.0")).unwrap();
    let aer = port.join("aer_dev_correctable").display().to_string();
    // Call 1 is the acceptance row; calls 2.. are soak intervals 0..: call 3 is interval 1.
    let (output, out) = soak(fixture.path(), &scratch, "r1", &[("FAKE_AER", aer)]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    let lane = &soak_json(&out)["lanes"][0];
    assert_eq!(lane["stability"]["verdict"], "fail");
    assert_eq!(
        lane["stability"]["marked"],
        serde_json::json!([0, 1]),
        "worst (a tie: the first) and the AER interval"
    );
    assert_eq!(lane["intervals"][1]["pcie_events"][0], "0000:17:00.0: AER correctable RxErr 0 -> 7");
    assert!(printed.contains("interval 1 (at "), "{printed}");
    // The report draws the soak with the AER interval marked and its reason listed.
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("<h2 id=\"soak\">Soak</h2>"), "{report}");
    assert!(report.contains("fill=\"#b00020\"><title>interval 1: 12.5</title></rect>"), "{report}");
    assert!(report.contains("AER correctable RxErr 0 -&gt; 7"), "{report}");
    assert!(gdrperf_report::report_html::external_references(&report).is_empty());
}

#[test]
fn a_soak_the_profile_cannot_run_is_a_usage_error() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("bad");
    let (output, _) = soak(fixture.path(), &scratch, "r9", &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--soak r9: neither a level of this profile (r1)"), "{}", text(&output));
}

/// A gdr-read-lat stand-in: one row whose typical latency is 2 us, and 5 us on its fourth call
/// (the acceptance row is call 1, so soak interval 2).
fn fake_latency_bench(scratch: &Scratch) -> PathBuf {
    let script = "#!/bin/sh\n\
        while [ $# -gt 0 ]; do case $1 in --json) json=$2;; -s) size=$2;; --mem) mem=$2;; esac; shift; done\n\
        calls=$(cat \"$FAKE_CALLS\" 2>/dev/null || echo 0); calls=$((calls + 1)); echo $calls > \"$FAKE_CALLS\"\n\
        typical=2.0; [ $calls -eq 4 ] && typical=5.0\n\
        echo \"{\\\"metadata\\\":{},\\\"results\\\":[{\\\"test\\\":\\\"read_lat\\\",\\\"bytes\\\":$size,\\\"t_typical_us\\\":$typical,\\\"mem_local\\\":\\\"$mem\\\",\\\"nic_errors\\\":0}]}\" > \"$json\"\n";
    scratch.script("gdr-read-lat", script)
}

#[test]
fn a_latency_lane_soaks_too_and_a_rise_past_max_rise_fails_it() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("latency");
    let profile = r#"
name = "soak-latency-test"
description = "test profile"
[latency]
test = "read_lat"
size = 2
iterations = 10
statistic = "typical"
source = "test"
max_lat.host = { value = "10ms", source = "test figure" }
[soak]
interval_s = 10
source = "test"
max_rise = { value = "50%", source = "test level" }
levels.r1 = { duration = "40s", source = "test level" }
"#;
    let bench_dir = fake_latency_bench(&scratch);
    let (output, out) =
        soak_with(fixture.path(), &scratch, &Soak { profile, bench_dir, mem: "host", level: "r1" }, &[]);
    let printed = text(&output);
    // The acceptance row passes (2 us against 10 ms); the soak fails on its rise alone.
    assert_eq!(output.status.code(), Some(1), "{printed}");
    let lane = &soak_json(&out)["lanes"][0];
    assert_eq!(lane["lane"], "read_lat-host-mlx5_0");
    let intervals: Vec<f64> = lane["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|interval| interval["latency_us"].as_f64().unwrap())
        .collect();
    assert_eq!(intervals, [2.0, 2.0, 5.0, 2.0]);
    assert_eq!(lane["stability"]["verdict"], "fail");
    assert_eq!(lane["stability"]["median_latency_us"], 2.0);
    // (5 - 2) / 2 = 150 % above the median, past the 50 % level.
    assert_eq!(lane["stability"]["rise_percent"], 150.0);
    assert_eq!(
        lane["stability"]["reasons"][0],
        "interval 2: 150.0% above the median 2.00 us (level 50%); nothing else moved in that interval"
    );
    assert!(printed.contains("read_lat-host-mlx5_0 interval 2: 5.00 us t_typical_us"), "{printed}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("<p>Median 2.00 us, worst interval 2 (150.0 % above). Rise level: "), "{report}");
}

/// Whether this machine has NVML (`libnvidia-ml.so.1`); CI and the build host have none.
fn nvml_present() -> bool {
    let name = c"libnvidia-ml.so.1";
    // SAFETY: dlopen with a NUL-terminated name; the handle, if any, is closed at once.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY);
        if !handle.is_null() {
            libc::dlclose(handle);
        }
        !handle.is_null()
    }
}

#[test]
fn a_gpu_lane_without_nvml_soaks_on_and_says_the_gpu_was_not_watched() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("nvml");
    let profile = PROFILE.replace("min_bw.host", "min_bw.cuda");
    let bench_dir = fake_bench(&scratch);
    let run = Soak { profile: &profile, bench_dir, mem: "cuda", level: "r1" };
    let (output, out) = soak_with(fixture.path(), &scratch, &run, &[("FAKE_BW", "12.5".to_string())]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "absent NVML is said, not an error: {printed}");
    let soak = soak_json(&out);
    let lane = &soak["lanes"][0];
    assert!(lane["gpu"].is_string(), "the lane runs on a GPU: {lane}");
    let words = soak["gpu_watch"].as_str().unwrap();
    if !nvml_present() {
        assert!(words.starts_with("GPUs not watched: NVML not loaded (libnvidia-ml.so.1"), "{words}");
        assert!(printed.contains("soak: GPU watch: GPUs not watched: NVML not loaded"), "{printed}");
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(report.contains("<p>GPU watch: GPUs not watched: NVML not loaded"), "{report}");
    }
    // No GPU word was made up: the intervals carry none.
    for interval in lane["intervals"].as_array().unwrap() {
        assert!(
            interval.get("gpu_events").is_none() && interval.get("gpu_held_back").is_none(),
            "{interval}"
        );
    }
}
