//! `gdrperf accept` and `gdrperf compare` as a user runs them: the built binary on doctor
//! fixture trees, with stand-in bench binaries (shell scripts writing a result file) so that the
//! PASS, FAIL and ERROR paths and their exit codes are exercised without an RDMA device.

use std::path::{Path, PathBuf};
use std::process::Output;

use gdrperf_doctor_fixtures::{FixtureDir, Machine};

mod common;

use common::{gdrperf, text, Scratch};

/// Stand-ins for gdr-write-bw and gdr-read-lat: they write one row with the figure from the
/// environment (FAKE_BW Gb/s, FAKE_LAT us) to the --json path, or fail like a bench would; the
/// file FAKE_METADATA, when given, is the result's metadata.
fn fake_benches(scratch: &Scratch) -> PathBuf {
    let mut dir = PathBuf::new();
    for (name, row) in [
        ("gdr-write-bw", r#"{"test":"write_bw","bytes":$size,"bw_avg_gbit_s":$FAKE_BW,"mem_local":"$mem"}"#),
        (
            "gdr-read-lat",
            r#"{"test":"read_lat","bytes":$size,"t_avg_us":$FAKE_LAT,"t_typical_us":$FAKE_LAT,"mem_local":"$mem"}"#,
        ),
    ] {
        let script = format!(
            "#!/bin/sh\n[ -n \"$FAKE_FAIL\" ] && {{ echo \"{name}: error: $FAKE_FAIL\" >&2; exit 2; }}\n\
             while [ $# -gt 0 ]; do case $1 in --json) json=$2;; -s) size=$2;; --mem) mem=$2;; esac; shift; done\n\
             meta='{{}}'; [ -n \"$FAKE_METADATA\" ] && meta=$(cat \"$FAKE_METADATA\")\n\
             echo '{{\"metadata\":'\"$meta\"',\"results\":['\"{}\"']}}' > \"$json\"\n",
            row.replace('"', "\\\"")
        );
        dir = scratch.script(name, &script);
    }
    dir
}

const SMALL_PROFILE: &str = r#"
name = "small"
description = "test profile"
[bandwidth]
test = "write_bw"
size = 4096
iterations = 10
source = "test"
min_bw.host = { value = "10Gb/s", source = "test figure" }
min_bw.cuda = { value = "10Gb/s", source = "test figure" }
[latency]
test = "read_lat"
size = 2
iterations = 10
statistic = "average"
source = "test"
max_lat.host = { value = "5us", source = "test figure" }
"#;

fn accept(root: &Path, scratch: &Scratch, env: &[(&str, &str)]) -> (Output, String) {
    let profile = scratch.write("small.toml", SMALL_PROFILE);
    let bench_dir = fake_benches(scratch);
    let out = scratch.0.join("out");
    let output = gdrperf(
        &[
            "accept",
            "--profile",
            &profile,
            "--sysfs-root",
            root.to_str().unwrap(),
            "--bench-dir",
            bench_dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        env,
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap_or_default();
    (output, summary)
}

#[test]
fn dry_run_plans_every_gpu_with_its_nic() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let output = gdrperf(
        &["accept", "--profile", "ndr-400g", "--dry-run", "--sysfs-root", fixture.path().to_str().unwrap()],
        &[],
    );
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("this node:  gdr-write-bw --loopback -d mlx5_3 -i 1 -s 65536 -D 30 -q 4 --report-gbits --mem cuda --gpu-bus-id 0000:61:00.0"), "{printed}");
    assert!(printed.contains("this node:  gdr-read-lat --loopback -d mlx5_7 -i 1 -s 2 -n 10000 --mem cuda-staged --gpu-bus-id 0000:df:00.0"), "{printed}");
    assert_eq!(
        printed.matches("this node:  gdr-").count(),
        8 * 3 * 2,
        "8 GPUs x 3 modes x 2 tests:\n{printed}"
    );
}

#[test]
fn dry_run_exits_2_when_a_row_cannot_run() {
    let fixture = FixtureDir::with(&Machine::gpu_without_nic()).unwrap();
    let output = gdrperf(
        &["accept", "--profile", "hdr-200g", "--dry-run", "--sysfs-root", fixture.path().to_str().unwrap()],
        &[],
    );
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(
        printed.contains(
            "write_bw cuda GPU0, 65536 B: ERROR (180Gb/s), not run: no RDMA device to pair with this GPU"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("read_lat host, 2 B: ERROR (4.5us), not run: no RDMA device with an active port"),
        "{printed}"
    );
    // The command each row stands for, its missing device a placeholder.
    assert!(printed.contains("would run:  gdr-write-bw --loopback -d <RDMA device> -i 1 -s 65536 -D 30 -q 4 --report-gbits --mem cuda --gpu-bus-id "), "{printed}");
    assert!(
        printed
            .contains("would run:  gdr-read-lat --loopback -d <RDMA device> -i 1 -s 2 -n 10000 --mem host"),
        "{printed}"
    );
}

#[test]
fn a_node_without_gpu_passes_on_host_and_skips_the_gpu_rows() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let scratch = Scratch::new("accept-pass");
    let (output, summary) = accept(fixture.path(), &scratch, &[("FAKE_BW", "12.5"), ("FAKE_LAT", "3.1")]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    // The GPU row not run leaves the whole undecided: exit 0, nothing measured missed.
    assert!(printed.contains("overall: UNDECIDED (2 pass, 0 fail, 1 skip, 0 error)"), "{printed}");
    assert!(
        summary.contains("rxe0,") && summary.contains(",SKIP,no NVIDIA GPU found by gdrperf doctor,"),
        "{summary}"
    );
}

#[test]
fn an_acceptance_folder_records_the_node_it_ran_on() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let scratch = Scratch::new("accept-inventory");
    let (output, _) = accept(fixture.path(), &scratch, &[("FAKE_BW", "12.5"), ("FAKE_LAT", "3.1")]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let inventory: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.0.join("out/inventory.json")).unwrap())
            .unwrap();
    assert_eq!(inventory["node"]["kernel"], "6.1.0-18-amd64");
    assert_eq!(inventory["node"]["hostname"], "fixture-node");
    assert_eq!(inventory["node"]["nics"][0]["name"], "rxe0");
    // A fixture root is not this machine: the doctor does not ask CUDA, and the file says so.
    assert_eq!(inventory["cuda"]["version"], serde_json::Value::Null);
    assert!(inventory["cuda"]["absent"].as_str().is_some_and(|reason| !reason.is_empty()), "{inventory}");
    // The report beside it shows the inventory, and `gdrperf report --check` verifies the files.
    let report = std::fs::read_to_string(scratch.0.join("out/report.html")).unwrap();
    assert!(
        report.contains("<div class=\"verdict UNDECIDED\">") && report.contains("<td>6.1.0-18-amd64</td>")
    );
    let out = scratch.0.join("out");
    let check = gdrperf(&["report", out.to_str().unwrap(), "--check"], &[]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    std::fs::write(out.join("summary.csv"), "edited\n").unwrap();
    let check = gdrperf(&["report", out.to_str().unwrap(), "--check"], &[]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(text(&check).contains("summary.csv: changed since the report was written"), "{}", text(&check));
}

#[test]
fn a_size_below_its_threshold_fails_with_exit_1() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let scratch = Scratch::new("accept-fail");
    let (output, summary) = accept(fixture.path(), &scratch, &[("FAKE_BW", "4.1"), ("FAKE_LAT", "3.1")]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(printed.contains("4096 bytes: BW average 4.1 Gb/s < 10 Gb/s (-59.0%)"), "{printed}");
    assert!(summary.contains(",FAIL,4096 bytes: BW average 4.1 Gb/s < 10 Gb/s (-59.0%),"), "{summary}");
}

#[test]
fn a_failed_bandwidth_row_shows_its_ceiling_and_the_causes_from_the_results_path_facts() {
    use gdrperf_ceiling::{EndFacts, EndQuery, MemoryPath};
    let facts = |machine: &Machine| {
        let tree = FixtureDir::with(machine).unwrap();
        let query = EndQuery {
            nic: "mlx5_0",
            port: 1,
            gpu_bus_id: None,
            memory: MemoryPath::Host,
            active_mtu: Some(4096),
            max_mtu: Some(4096),
            thread_numa_node: Some(0),
        };
        EndFacts::read(tree.path(), &query)
    };
    let scratch = Scratch::new("accept-ceiling");
    let metadata = serde_json::json!({
        "role": "client",
        "path_facts": facts(&Machine::dgx_h100_like()),
        "peer": { "path": facts(&Machine::dgx_h100_nic_at_x8(0)) },
    });
    let metadata = scratch.write("metadata.json", &metadata.to_string());
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let env = [("FAKE_BW", "4.1"), ("FAKE_LAT", "3.1"), ("FAKE_METADATA", metadata.as_str())];
    let (output, summary) = accept(fixture.path(), &scratch, &env);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    // 4096-byte writes, 16 TLPs of 256 B: 32 GT/s x 8 x 128/130 x 4096 / (4096 + 16 x 24) = 230.46 Gb/s.
    assert!(
        printed.contains("ceiling write_bw host (rxe0): 1.8% of 230.46 Gb/s, server NIC PCIe 32 GT/s x8\n    cause: server (peer): mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8"),
        "{printed}"
    );
    assert!(
        summary
            .lines()
            .find(|line| !line.starts_with('#'))
            .unwrap()
            .ends_with(",ceiling_gbps,ceiling_limited_by,pct_of_ceiling,ceiling_causes,deviation"),
        "{summary}"
    );
}

#[test]
fn a_bench_that_cannot_run_is_an_error_with_its_message() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let scratch = Scratch::new("accept-error");
    let (output, _) = accept(fixture.path(), &scratch, &[("FAKE_FAIL", "RDMA device 'rxe0' not found")]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(
        printed.contains(
            "gdr-write-bw exited with exit status: 2: gdr-write-bw: error: RDMA device 'rxe0' not found"
        ),
        "{printed}"
    );
}

#[test]
fn a_bad_profile_or_mode_is_a_clear_error() {
    let output = gdrperf(&["accept", "--profile", "edr-100g", "--dry-run"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains(
            "no profile named \"edr-100g\": built-in profiles are ndr-400g, hdr-200g, ngc-ndr-400g, ngc-hdr-200g, azure-h100, azure-h200, softroce-smoke"
        ),
        "{}",
        text(&output)
    );
    let output = gdrperf(&["accept", "--profile", "ndr-400g", "--mem", "gpu", "--dry-run"], &[]);
    assert!(
        text(&output).contains("--mem gpu: not a memory mode (modes: host, cuda, cuda-staged)"),
        "{}",
        text(&output)
    );
}

#[test]
fn compare_exits_1_on_a_regression_of_repeated_runs_and_never_on_single_runs() {
    let scratch = Scratch::new("compare");
    // Three runs a side, 1% apart within a side; the new 4 KiB runs are 12.5% lower.
    let run = |name: &str, small: f64, large: f64| {
        scratch.write(
            name,
            &format!("test,bytes,bw_avg_gbit_s,mem_local\nwrite_bw,4096,{small},host\nwrite_bw,65536,{large},host\n"),
        )
    };
    let base = [run("a1.csv", 80.0, 95.0), run("a2.csv", 80.8, 95.9), run("a3.csv", 79.2, 94.1)];
    let new = [run("b1.csv", 70.0, 96.0), run("b2.csv", 70.7, 96.9), run("b3.csv", 69.3, 95.0)];
    let (base_list, new_list) = (base.join(","), new.join(","));
    let output = gdrperf(&["compare", "--base", &base_list, "--new", &new_list], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("-12.5%  REGRESSION")
            && text(&output).contains("verdict: regression: 1 of 2 rows regressed"),
        "{}",
        text(&output)
    );
    // The verdict in JSON and JUnit XML, for CI.
    let (json, junit) = (scratch.0.join("compare.json"), scratch.0.join("compare.xml"));
    let output = gdrperf(
        &[
            "compare",
            "--base",
            &base_list,
            "--new",
            &new_list,
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The exit-code contract's words, the row's finer word beside its verdict.
    assert_eq!(written["verdict"], "fail");
    assert_eq!(
        (&written["rows"][0]["verdict"], &written["rows"][0]["finding"]),
        (&"fail".into(), &"regression".into())
    );
    assert_eq!(
        (&written["rows"][1]["verdict"], &written["rows"][1]["finding"]),
        (&"pass".into(), &serde_json::Value::Null)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testcase classname=\"gdrperf.compare.write_bw host\" name=\"4096 bytes\"><failure type=\"regression\""), "{xml}");
    let output = gdrperf(&["compare", "--base", &base_list, "--new", &new_list, "--tolerance", "15%"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("verdict: pass"), "{}", text(&output));
    // A JSON run against a CSV run: single runs, so a change is named and never judged.
    let single = scratch.write(
        "new.json",
        r#"{"metadata": {"host": "node1"}, "results": [
        {"test": "write_bw", "bytes": 4096, "bw_avg_gbit_s": 70, "mem_local": "host"},
        {"test": "write_bw", "bytes": 65536, "bw_avg_gbit_s": 96, "mem_local": "host"}]}"#,
    );
    let output = gdrperf(&["compare", &base[0], &single], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("-12.5%  UNDECIDED: beyond the tolerance, single run: cannot tell from noise")
            && text(&output).contains("verdict: undecided")
            && !text(&output).contains("REGRESSION"),
        "{}",
        text(&output)
    );
    let output = gdrperf(&["compare", &base[0], "/nonexistent.csv"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("cannot read /nonexistent.csv"), "{}", text(&output));
}

#[test]
fn compare_of_two_acceptance_folders_names_what_changed_in_the_node_and_the_numbers() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let base = Scratch::new("compare-folders-base");
    let (output, _) = accept(fixture.path(), &base, &[("FAKE_BW", "12.5"), ("FAKE_LAT", "3.1")]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // The node is upgraded between the runs, and bandwidth drops by 20%.
    std::fs::write(fixture.path().join("proc/sys/kernel/osrelease"), "6.1.0-25-amd64\n").unwrap();
    let new = Scratch::new("compare-folders-new");
    let (output, _) = accept(fixture.path(), &new, &[("FAKE_BW", "10"), ("FAKE_LAT", "3.1")]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (base_out, new_out) = (base.0.join("out"), new.0.join("out"));
    let output = gdrperf(&["compare", base_out.to_str().unwrap(), new_out.to_str().unwrap()], &[]);
    let printed = text(&output);
    // One acceptance run a side is a single run: the change is named, never judged (exit 0).
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("inventory: kernel: 6.1.0-18-amd64 -> 6.1.0-25-amd64\n"), "{printed}");
    assert!(
        printed.contains("write_bw-host-rxe0.json")
            && printed
                .contains("-20.0%  UNDECIDED: beyond the tolerance, single run: cannot tell from noise")
            && printed.contains("folders: undecided"),
        "{printed}"
    );
    let output = gdrperf(&["compare", base_out.to_str().unwrap(), base_out.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("inventory: unchanged"), "{}", text(&output));
}

#[test]
fn compare_of_repeated_acceptance_folders_exits_1_on_a_regression() {
    let fixture = FixtureDir::with(&Machine::rxe_only()).unwrap();
    let run = |name: &str, bandwidth: &str| {
        let scratch = Scratch::new(name);
        let (output, _) = accept(fixture.path(), &scratch, &[("FAKE_BW", bandwidth), ("FAKE_LAT", "3.1")]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        let out = scratch.0.join("out").to_str().unwrap().to_string();
        (scratch, out)
    };
    let base = [run("folders-a1", "12.5"), run("folders-a2", "12.6"), run("folders-a3", "12.4")];
    let new = [run("folders-b1", "10.1"), run("folders-b2", "10.2"), run("folders-b3", "10.05")];
    let list =
        |runs: &[(Scratch, String)]| runs.iter().map(|(_, out)| out.as_str()).collect::<Vec<_>>().join(",");
    let output = gdrperf(&["compare", "--base", &list(&base), "--new", &list(&new)], &[]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(printed.contains("REGRESSION") && printed.contains("folders: regression"), "{printed}");
    let output = gdrperf(&["compare", "--base", &list(&base), "--new", &list(&base)], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("folders: pass"), "{}", text(&output));
}

#[test]
fn compare_by_mem_shows_the_speedup_of_each_mode() {
    let scratch = Scratch::new("compare-mem");
    let run = scratch.write(
        "run.csv",
        "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,65536,95,host,\nwrite_bw,65536,90,cuda,GPU0\nwrite_bw,65536,45,cuda-staged,GPU0\n",
    );
    let json = scratch.0.join("modes.json");
    let output = gdrperf(&["compare", &run, "--by", "mem", "--json", json.to_str().unwrap()], &[]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(printed.contains("cuda vs cuda-staged") && printed.contains("2.00x"), "{printed}");
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(written["baseline"], "cuda-staged");
}
