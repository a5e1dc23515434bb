//! Every bench binary over the simulated NIC (`-d simulated0`, gdrperf-verbs' `simulated`
//! module): the whole harness (roles, sweep, lanes, staged copies, validation, Ctrl-C, error
//! completions) in seconds, without an RDMA device.
//!
//! Each case runs a real binary in loopback (server and client are two threads of one process,
//! as the simulated NIC needs) and asserts decisions only: the exit status, the message, the rows
//! kept and each row's data check; never a figure, which the simulated NIC makes up from its
//! configured rate. The results go to a folder of the system's temporary directory, removed at
//! the end.

mod common;

use std::time::Instant;

use common::{assert_simulated_and_checked, rows, run, Scratch};
use gdrperf::bench::{Measures, BENCHES};

/// Sizes of `-a`: 2 bytes to 8 MiB.
const SWEEP_SIZES: usize = 23;

/// Every bench on `memory`, each its own process, side by side: a checked `-a` sweep.
fn every_bench_checks_every_size(memory: &str) {
    let scratch = Scratch::new(&format!("sweeps-{memory}"));
    std::thread::scope(|scope| {
        for bench in BENCHES {
            let scratch = &scratch;
            scope.spawn(move || {
                // An atomic is 8 bytes, the one size the atomic benches run. gdr-send-bw checks every
                // message as it arrives, which in a debug build costs about 0.1 s per MiB: one size
                // of 1 MiB keeps it in seconds (its sweep runs in simulated_bandwidth.rs).
                let (sizes, count) = match bench.name {
                    "atomic_lat" | "atomic_bw" => (&["-s", "8"][..], 1),
                    "send_bw" => (&["-s", "1M"][..], 1),
                    _ => (&["-a"][..], SWEEP_SIZES),
                };
                let csv = scratch.file(&format!("{}.csv", bench.name));
                let mut arguments =
                    vec!["--loopback", "-d", "simulated0", "--mem", memory, "-n", "20", "--validate"];
                arguments.extend_from_slice(sizes);
                arguments.extend(["--csv", &csv]);
                let started = Instant::now();
                let (code, output) = run(bench.binary, &arguments, "rate=100");
                eprintln!("{} --mem {memory}: {:.1} s", bench.binary, started.elapsed().as_secs_f64());
                let what = format!("{} --mem {memory}", bench.binary);
                assert_eq!(code, 0, "{what}: {output}");
                // The run header says what this is; the rows say it in their device column.
                assert!(output.contains("SIMULATED NIC, not a measurement"), "{what}: {output}");
                let rows = rows(&csv);
                assert_eq!(rows.len(), count, "{what}: {output}");
                assert_simulated_and_checked(&what, &rows);
            });
        }
    });
}

#[test]
fn every_bench_over_host_memory_checks_every_size() {
    every_bench_checks_every_size("host");
}

#[test]
fn every_bench_over_host_staged_memory_checks_every_size() {
    every_bench_checks_every_size("host-staged");
}

/// `-I` on gdr-write-bw: the sizes up to it are posted inline (the simulated NIC, like a real
/// one, refuses an inline request longer than the QP's max_inline_data), the data arrives whole
/// either way, and the header says what was asked.
#[test]
fn write_bw_posts_inline_up_to_its_inline_size() {
    let scratch = Scratch::new("inline");
    let csv = scratch.file("write_bw.csv");
    let arguments = [
        "--loopback",
        "-d",
        "simulated0",
        "--mem",
        "host",
        "-I",
        "256",
        "-a",
        "-n",
        "20",
        "--validate",
        "--csv",
        &csv,
    ];
    let (code, output) = run("gdr-write-bw", &arguments, "rate=100");
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("up to 256 bytes (-I)"), "{output}");
    let rows = rows(&csv);
    assert_eq!(rows.len(), SWEEP_SIZES, "{output}");
    assert_simulated_and_checked("gdr-write-bw -I 256", &rows);
}

#[test]
fn every_bandwidth_bench_runs_two_lanes_and_checks_each() {
    let scratch = Scratch::new("lanes");
    // Lanes (--concurrent) are the bandwidth benches' alone.
    for bench in BENCHES.iter().filter(|bench| bench.measures == Measures::Bandwidth) {
        let csv = scratch.file(&format!("{}.csv", bench.name));
        let size = if bench.name == "atomic_bw" { "8" } else { "65536" };
        let arguments = [
            "--loopback",
            "--concurrent",
            "-d",
            "simulated0,simulated0",
            "-s",
            size,
            "-n",
            "50",
            "--validate",
            "--csv",
            &csv,
        ];
        let (code, output) = run(bench.binary, &arguments, "rate=100");
        assert_eq!(code, 0, "{} --concurrent: {output}", bench.binary);
        let rows = rows(&csv);
        let lanes: Vec<&str> = rows.iter().filter_map(|row| row.get("lane").map(String::as_str)).collect();
        assert_eq!(lanes, ["0", "1", "all"], "{}: {output}", bench.binary);
        assert_simulated_and_checked(bench.binary, &rows);
    }
}

#[test]
fn an_error_completion_mid_sweep_names_the_size_and_keeps_the_finished_rows() {
    let scratch = Scratch::new("error-completion");
    for binary_name in ["gdr-write-bw", "gdr-read-bw", "gdr-send-bw"] {
        let csv = scratch.file(&format!("{binary_name}.csv"));
        // The 1000th request fails as towards a vanished peer: in the sweep's ninth size or so
        // (116 requests a size), never in the first.
        let arguments = ["--loopback", "-a", "-n", "100", "--validate", "--csv", &csv];
        let (code, output) = run(binary_name, &arguments, "fail_after=1000");
        assert_eq!(code, 2, "{binary_name}: {output}");
        assert!(
            output.contains("work completion error: transport retry counter exceeded"),
            "{binary_name}: {output}"
        );
        let at = output.split("error: at ").nth(1).and_then(|rest| rest.split(' ').next());
        let failed_size: usize = at.and_then(|size| size.parse().ok()).expect("the error names the size");
        let rows = rows(&csv);
        assert!(!rows.is_empty() && rows.len() < SWEEP_SIZES, "{binary_name}: {} rows: {output}", rows.len());
        // The rows kept are exactly the sizes finished before the failing one.
        let last: usize = rows.last().and_then(|row| row["bytes"].parse().ok()).expect("a size");
        assert_eq!(last * 2, failed_size, "{binary_name}: {output}");
        assert_simulated_and_checked(binary_name, &rows);
    }
}

#[test]
fn ctrl_c_in_loopback_exits_130_and_keeps_exactly_the_finished_sizes() {
    let scratch = Scratch::new("sigint");
    let (csv, json) = (scratch.file("sigint.csv"), scratch.file("sigint.json"));
    // Slow enough that the sweep is still running when the signal comes (1 Gb/s, 20000 messages).
    let arguments = ["--loopback", "-a", "-n", "20000", "--csv", &csv, "--json", &json];
    let three_sizes_done = || rows(&csv).len() >= 3;
    let (code, stderr) =
        common::signal_when("gdr-write-bw", &arguments, "rate=1", libc::SIGINT, three_sizes_done);
    assert_eq!(code, Some(130), "{stderr}");
    let finished: usize = stderr
        .split(" sizes finished")
        .next()
        .and_then(|before| before.rsplit(", ").next())
        .and_then(|count| count.split(" of ").next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("the message says how many sizes finished: {stderr}"));
    assert!(stderr.contains("stopped by SIGINT at"), "{stderr}");
    assert_eq!(rows(&csv).len(), finished, "{stderr}");
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    assert_eq!(json.matches("\"bw_avg_mib_s\"").count(), finished, "{json}");
    assert!(json.contains("\"status\": \"interrupted\""), "{json}");
}

#[test]
fn a_send_queue_deeper_than_the_receives_waits_for_them_and_checks_its_data() {
    // Fewer receives than the sender keeps in flight: the receiver-not-ready path (the simulated
    // NIC holds the SEND until a receive is posted, as rnr_retry 7 does), data still checked.
    let scratch = Scratch::new("receives");
    let csv = scratch.file("send.csv");
    let arguments =
        ["--loopback", "-s", "4096", "-n", "500", "-t", "64", "-r", "8", "--validate", "--csv", &csv];
    let (code, output) = run("gdr-send-bw", &arguments, "1");
    assert_eq!(code, 0, "{output}");
    let rows = rows(&csv);
    assert_eq!(rows.len(), 1, "{output}");
    assert_simulated_and_checked("gdr-send-bw -r 8", &rows);
}

#[test]
fn rdma_cm_is_refused_on_the_simulated_nic() {
    let (code, output) = run("gdr-write-bw", &["--loopback", "-d", "simulated0", "-R", "-n", "5"], "1");
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("the simulated NIC (simulated0) does not support rdma_cm (-R)"), "{output}");
}

#[test]
fn bad_simulated_nic_settings_are_a_configuration_error() {
    let (code, output) = run("gdr-write-bw", &["--loopback", "-n", "5"], "rate=fast");
    assert_eq!(code, 2, "{output}");
    assert!(output.contains("GDRPERF_SIMULATED_NIC=\"rate=fast\""), "{output}");
}

#[test]
fn placements_one_after_another_reconnect_and_check_each() {
    // --mem LIST: one round per placement on one control connection, the QPs and buffers made
    // anew for each (an RC QP connects once).
    let scratch = Scratch::new("rounds");
    for binary_name in ["gdr-write-bw", "gdr-read-lat"] {
        let csv = scratch.file(&format!("{binary_name}.csv"));
        let arguments = [
            "--loopback",
            "--mem",
            "host,host-staged",
            "-s",
            "4096",
            "-n",
            "40",
            "--validate",
            "--csv",
            &csv,
        ];
        let (code, output) = run(binary_name, &arguments, "1");
        assert_eq!(code, 0, "{binary_name}: {output}");
        let rows = rows(&csv);
        let memories: Vec<&str> =
            rows.iter().filter_map(|row| row.get("mem_local").map(String::as_str)).collect();
        assert_eq!(memories, ["host", "host-staged"], "{binary_name}: {output}");
        assert_simulated_and_checked(binary_name, &rows);
    }
}

#[test]
fn outs_is_taken_by_the_read_and_atomic_latency_tests_as_perftest_takes_it() {
    // perftest offers -o/--outs to its READ and atomic tests (usage: verb == READ || ATOMIC):
    // the QP's bound on outstanding READs and atomics, named in the run header.
    for (binary_name, size) in [("gdr-read-lat", "64"), ("gdr-atomic-lat", "8")] {
        for (spelling, shown) in [(&["-o", "4"][..], "4"), (&["--outs=2"][..], "2")] {
            let mut arguments = vec!["--loopback", "-d", "simulated0", "-s", size, "-n", "50", "--validate"];
            arguments.extend_from_slice(spelling);
            let (code, output) = run(binary_name, &arguments, "1");
            assert_eq!(code, 0, "{binary_name} {spelling:?}: {output}");
            let line = output.lines().find(|line| line.contains("Outstanding reads")).unwrap_or_default();
            assert!(line.trim_end().ends_with(shown), "{binary_name} {spelling:?}: {line:?} in {output}");
        }
        let (code, output) = run(binary_name, &["--loopback", "-d", "simulated0", "-o", "0"], "1");
        assert_eq!(code, 2, "{binary_name} -o 0: {output}");
        assert!(output.contains("-o/--outs"), "{output}");
    }
    // A test without READs or atomics has no -o, as perftest's.
    let (code, output) = run("gdr-write-lat", &["--loopback", "-d", "simulated0", "-o", "4"], "1");
    assert_eq!(code, 2, "{output}");
}
