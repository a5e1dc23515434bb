//! `gdrperf accept --dry-run` is the plan the real run makes: both nodes' commands with
//! `--peer`/`--serve`, the soak's intervals, each row's threshold and source, the deviation from
//! that source, and a wall-time estimate; and the source-shaped profiles (ngc, azure) as a user
//! runs them, on doctor fixture trees with stand-in benches.

use std::path::PathBuf;

use gdrperf_doctor_fixtures::{FixtureDir, Machine};

mod common;

use common::{gdrperf, text, Scratch};

fn dry_run(profile: &str, extra: &[&str], machine: &Machine) -> (Option<i32>, String) {
    let fixture = FixtureDir::with(machine).unwrap();
    let root = fixture.path().to_str().unwrap();
    let mut args = vec!["accept", "--profile", profile, "--dry-run", "--sysfs-root", root];
    args.extend_from_slice(extra);
    let output = gdrperf(&args, &[]);
    (output.status.code(), text(&output))
}

#[test]
fn with_peer_the_plan_shows_both_nodes_commands_on_the_same_port_with_threshold_source_and_time() {
    let (code, printed) =
        dry_run("ngc-ndr-400g", &["--peer", "nodeb", "--mem", "cuda"], &Machine::dgx_h100_like());
    assert_eq!(code, Some(0), "{printed}");
    // 8 GPUs x (3 bandwidth + 2 latency tests with a cuda figure: ngc has no 2-byte cuda send_lat).
    assert!(printed.contains("40 run(s), 0 row(s) decided without running"), "{printed}");
    assert!(printed.contains(
        "this node:  gdr-write-bw -d mlx5_0 -i 1 -s 65536 -D 30 -q 4 --report-gbits -b --mem cuda --gpu-bus-id 0000:1b:00.0 -p 18515 --timeout 60 nodeb"
    ), "{printed}");
    assert!(printed.contains(
        "nodeb (--serve):  gdr-write-bw -d mlx5_0 -i 1 -s 65536 -D 30 -q 4 --report-gbits -b --mem cuda --gpu-bus-id 0000:1b:00.0 -p 18515 --timeout 60 --accept-timeout 600"
    ), "{printed}");
    // The last run takes the last port on both sides: the real run numbers them the same way.
    assert!(printed.contains("--gpu-bus-id 0000:df:00.0 -p 18554 --timeout 60 nodeb"), "{printed}");
    assert!(
        printed.contains("--gpu-bus-id 0000:df:00.0 -p 18554 --timeout 60 --accept-timeout 600"),
        "{printed}"
    );
    assert!(printed.contains("1. write_bw cuda GPU0 on mlx5_0, 65536 B: threshold 720Gb/s"), "{printed}");
    assert!(printed.contains("40. read_lat cuda GPU7 on mlx5_7, 2 B: threshold 4.5us"), "{printed}");
    assert_eq!(
        printed.matches("threshold source: ngc_multinode_perf common.sh (commit 7d0808520fb1)").count(),
        40
    );
    // Across the link the plan has the source's shape: no deviation to report.
    assert!(!printed.contains("deviation:"), "{printed}");
    // 40 runs of -D 30, each with 5 s to start: 1400 s.
    assert!(printed.contains("estimated wall time: about 23 min 20 s"), "{printed}");
}

#[test]
fn in_loopback_a_two_node_profile_marks_every_row_with_the_deviation() {
    let (code, printed) = dry_run("ngc-hdr-200g", &["--mem", "host"], &Machine::dgx_h100_like());
    assert_eq!(code, Some(0), "{printed}");
    let runs = printed.matches("this node:  gdr-").count();
    assert_eq!(runs, 8 * 6, "8 NICs x 6 tests:\n{printed}");
    assert_eq!(
        printed.matches("deviation: loopback on one node where the source runs between two nodes").count(),
        runs,
        "{printed}"
    );
    assert!(printed.contains("threshold 360Gb/s"), "{printed}");
}

#[test]
fn serve_shows_this_nodes_servers_and_the_clients_commands() {
    let (code, printed) = dry_run("softroce-smoke", &["--serve"], &Machine::rxe_only());
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("this node (server):  gdr-write-bw -d rxe0 -i 1 -s 65536 -n 500 -q 1 --report-gbits --mem host -p 18515 --timeout 60 --accept-timeout 600"), "{printed}");
    assert!(printed.contains("client (--peer "), "{printed}");
    assert!(
        printed.contains("gdr-read-lat -d rxe0 -i 1 -s 2 -n 2000 --mem host -p 18516 --timeout 60 "),
        "{printed}"
    );
}

#[test]
fn soak_shows_each_lanes_intervals_on_the_ports_that_follow_the_rows() {
    let (code, printed) = dry_run("softroce-smoke", &["--soak", "r1", "--peer", "vm0"], &Machine::rxe_only());
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("soak: 3 interval(s) of 10 s per lane, 2 lane(s)"), "{printed}");
    // Rows take ports 18515 and 18516; the write lane's intervals 18517-18519, the read lane's 18520-.
    assert!(printed.contains("this node:  gdr-write-bw -d rxe0 -i 1 -s 65536 -q 1 --report-gbits --mem host -D 10 -p 18517 --timeout 60 vm0"), "{printed}");
    assert!(
        printed.contains(
            "this node:  gdr-read-lat -d rxe0 -i 1 -s 2 --mem host -D 10 -p 18520 --timeout 60 vm0"
        ),
        "{printed}"
    );
    assert!(printed.contains("intervals 001-002: the same command on the next ports in turn"), "{printed}");
}

#[test]
fn a_profile_that_loads_every_nic_at_once_plans_every_nic_pair_at_once_across_two_nodes() {
    let (code, printed) = dry_run("azure-h100", &["--peer", "nodeb"], &Machine::dgx_h100_like());
    assert_eq!(code, Some(0), "{printed}");
    assert_eq!(printed.matches("started together with the others of its test").count(), 8, "{printed}");
    assert!(printed.contains("-d mlx5_7 -i 1 -s 8388608 -q 1 --report-gbits --mem cuda --gpu-bus-id 0000:df:00.0 -p 18522 --timeout 60 nodeb"), "{printed}");
    assert!(printed.contains("-p 18522 --timeout 60 --accept-timeout 600"), "{printed}");
    // Across the link the rows depart from the one-node health check, and say so.
    assert!(printed.contains("between two nodes (--peer), every NIC pair at once"), "{printed}");
    let (code, printed) = dry_run("azure-h200", &[], &Machine::dgx_h100_like());
    assert_eq!(code, Some(0), "{printed}");
    assert_eq!(printed.matches("started together with the others of its test").count(), 8, "{printed}");
    assert!(printed.contains("8. write_bw cuda GPU7 on mlx5_7, 8388608 B: threshold 360Gb/s"), "{printed}");
    assert!(printed.contains("this node:  gdr-write-bw --loopback -d mlx5_7 -i 1 -s 8388608 -q 1 --report-gbits --mem cuda --gpu-bus-id 0000:df:00.0"), "{printed}");
    assert!(!printed.contains("between two nodes (--peer)"), "{printed}");
}

/// A stand-in gdr-write-bw for runs that must overlap: each records that it started, then waits
/// (up to 30 s, polling) until FAKE_TOGETHER runs have started before writing its row (a server,
/// given no --json, writes none); a run left alone gives up and fails. Run one at a time, the
/// first would fail; together, all pass. Each run's arguments are in `started/PID`.
fn benches_that_wait_for_each_other(scratch: &Scratch) -> PathBuf {
    let started = scratch.0.join("started");
    std::fs::create_dir_all(&started).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         echo \"$*\" > {started}/$$\n\
         while [ $# -gt 0 ]; do case $1 in --json) json=$2;; -s) size=$2;; --mem) mem=$2;; esac; shift; done\n\
         tries=0\n\
         while [ $(ls {started} | wc -l) -lt $FAKE_TOGETHER ]; do\n\
           tries=$((tries + 1)); [ $tries -gt 300 ] && {{ echo 'gdr-write-bw: error: alone' >&2; exit 2; }}\n\
           sleep 0.1\n\
         done\n\
         [ -z \"$json\" ] && exit 0  # a server writes no result\n\
         echo '{{\"metadata\":{{}},\"results\":[{{\"test\":\"write_bw\",\"bytes\":'$size',\"bw_avg_gbit_s\":'$FAKE_BW',\"mem_local\":\"'$mem'\"}}]}}' > \"$json\"\n",
        started = started.display()
    );
    scratch.script("gdr-write-bw", &script)
}

#[test]
fn every_nic_at_once_starts_the_runs_together_and_warns_near_the_threshold() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let scratch = Scratch::new("accept-together");
    let bench_dir = benches_that_wait_for_each_other(&scratch);
    let out = scratch.0.join("out");
    let output = gdrperf(
        &[
            "accept",
            "--profile",
            "azure-h100",
            "--sysfs-root",
            fixture.path().to_str().unwrap(),
            "--bench-dir",
            bench_dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        // 390 Gb/s passes 380, but is less than 5 % above it.
        &[("FAKE_TOGETHER", "8"), ("FAKE_BW", "390")],
    );
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("[1-8/8] gdr-write-bw --mem cuda (GPU0 on mlx5_0, "), "{printed}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.matches(",PASS,").count(), 8, "{summary}");
    assert_eq!(
        summary.matches("WARN: 390 Gb/s passes, but less than 5% above the threshold 380 Gb/s").count(),
        8,
        "{summary}"
    );
    assert!(summary.lines().next().is_some_and(|line| line.starts_with("# command")), "{summary}");
    assert!(summary.contains(",deviation\n") || summary.contains(",deviation\r\n"), "{summary}");
    assert_eq!(summary.matches("gdrperf pairs each GPU with the NIC gdrperf doctor recommends").count(), 8);
}

/// `gdrperf accept --serve` and `--peer` with a profile on every NIC at once: each side starts
/// its 8 runs together (the stand-ins fail when left alone), on the plan's 8 ports, the client's
/// rows saying they ran between two nodes where the health check runs on one.
#[test]
fn every_nic_at_once_runs_every_nic_pair_together_across_two_nodes() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let root = fixture.path().to_str().unwrap();
    for side in ["--serve", "--peer"] {
        let scratch = Scratch::new(&format!("accept-together{side}"));
        let bench_dir = benches_that_wait_for_each_other(&scratch);
        let out = scratch.0.join("out");
        let mut args = vec!["accept", "--profile", "azure-h100", "--sysfs-root", root, "--bench-dir"];
        args.extend([bench_dir.to_str().unwrap(), "--out", out.to_str().unwrap(), side]);
        if side == "--peer" {
            args.push("nodeb");
        }
        let output = gdrperf(
            &args,
            &[("FAKE_TOGETHER", "8"), ("FAKE_BW", "400"), ("GDRPERF_TOKEN", "5f0c2d9e8a7b41c3")],
        );
        let printed = text(&output);
        assert_eq!(output.status.code(), Some(0), "{side}: {printed}");
        let mut runs: Vec<String> = std::fs::read_dir(scratch.0.join("started"))
            .unwrap()
            .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
            .collect();
        runs.sort_by_key(|run| run.split(" -p ").nth(1).map(str::to_string));
        assert_eq!(runs.len(), 8, "{side}: {runs:?}");
        for (index, run) in runs.iter().enumerate() {
            assert!(!run.contains("--loopback"), "{side}: {run}");
            assert!(run.contains(&format!("-d mlx5_{index} ")), "{side}: NIC pair {index}: {run}");
            assert!(run.contains(&format!(" -p {} --timeout 60", 18515 + index)), "{side}: {run}");
            let peer = if side == "--peer" {
                " --timeout 60 nodeb --json "
            } else {
                " --timeout 60 --accept-timeout 600\n"
            };
            assert!(run.contains(peer), "{side}: {run:?}");
        }
        if side == "--serve" {
            assert_eq!(printed.matches("(with the others of its test, at once)").count(), 8, "{printed}");
            assert!(printed.contains("served 8 runs, 0 ended with an error"), "{printed}");
        } else {
            assert!(printed.contains("[1-8/8] gdr-write-bw --mem cuda (GPU0 on mlx5_0, "), "{printed}");
            let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
            assert_eq!(summary.matches(",PASS,").count(), 8, "{summary}");
            assert_eq!(
                summary.matches("between two nodes (--peer), every NIC pair at once").count(),
                8,
                "{summary}"
            );
        }
    }
}

#[test]
fn a_row_of_a_two_node_profile_run_in_loopback_says_so_in_the_summary_and_the_report() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let scratch = Scratch::new("accept-deviation");
    let profile = scratch.write(
        "two-nodes.toml",
        r#"
name = "two-nodes"
description = "test profile whose source runs between two nodes"
two_nodes = true
[bandwidth]
test = "write_bw"
size = 4096
iterations = 10
source = "test"
min_bw.host = { value = "10Gb/s", source = "test figure" }
"#,
    );
    let bench_dir = benches_that_wait_for_each_other(&scratch);
    let out = scratch.0.join("out");
    let output = gdrperf(
        &[
            "accept",
            "--profile",
            &profile,
            "--sysfs-root",
            fixture.path().to_str().unwrap(),
            "--bench-dir",
            bench_dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[("FAKE_TOGETHER", "1"), ("FAKE_BW", "12")],
    );
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.contains("loopback on one node where the source runs between two nodes"), "{summary}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("loopback on one node where the source runs between two nodes"),
        "report lacks it"
    );
}
