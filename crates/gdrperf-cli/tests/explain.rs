//! `gdrperf explain` on a stored result whose path facts come from fixture trees: a client on a
//! healthy DGX H100-like node writing to a server whose NIC trained at x8.

use std::path::Path;
use std::process::{Command, Output};

use gdrperf_ceiling::{EndFacts, EndQuery, MemoryPath};
use gdrperf_doctor_fixtures::{FixtureDir, Machine};

fn facts(machine: &Machine) -> EndFacts {
    let directory = FixtureDir::with(machine).unwrap();
    let query = EndQuery {
        nic: "mlx5_0",
        port: 1,
        gpu_bus_id: Some("0000:1b:00.0"),
        memory: MemoryPath::GpuDirect,
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        thread_numa_node: Some(0),
    };
    EndFacts::read(directory.path(), &query)
}

/// A result file as the client's bench writes it: one 64 KiB write_bw row at `gbps`, one
/// latency row (no bandwidth: skipped).
fn result_file(directory: &Path, gbps: f64) -> std::path::PathBuf {
    let document = serde_json::json!({
        "metadata": {
            "test": "write_bw",
            "role": "client",
            "path_facts": facts(&Machine::dgx_h100_like()),
            "peer": { "device": "mlx5_0", "path": facts(&Machine::dgx_h100_nic_at_x8(0)) },
        },
        "results": [
            { "test": "write_bw", "bytes": 65536, "bw_avg_gbit_s": gbps, "bidirectional": false,
              "mem_local": "cuda", "nic_errors": 0, "nic_counters": "" },
            { "test": "write_lat", "bytes": 2, "t_typical_us": 1.9 },
        ],
        "outcome": { "status": "completed" },
    });
    let path = directory.join("write_bw.json");
    std::fs::write(&path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    path
}

fn explain(file: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let output: Output =
        Command::new(env!("CARGO_BIN_EXE_gdrperf")).arg("explain").arg(file).args(extra).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap() + &String::from_utf8(output.stderr).unwrap();
    (output.status.code(), text)
}

#[test]
fn a_short_row_names_the_servers_x8_link_as_limit_and_first_cause() {
    let directory = FixtureDir::empty().unwrap();
    let file = result_file(directory.path(), 100.0);
    let (code, text) = explain(&file, &[]);
    assert_eq!(code, Some(1), "{text}");
    // 32 GT/s x 8 x 128/130 x 65536 / (65536 + 256 x 24) = 230.46 Gb/s; 100 is 43.4 % of it.
    assert!(
        text.starts_with(
            "65536 B cuda: 100.00 Gb/s, 43.4% of 230.46 Gb/s (server NIC PCIe 32 GT/s x8): SHORT: 56.6% below the ceiling, more than the shortfall level of 10%\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("    cause: server (peer): mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16; fix: reseat"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.ends_with(
            "2 B host write_lat: median 1.90 us; no path ceiling: a ceiling bounds bandwidth, not latency\n"
        ),
        "the latency row is shown, without a ceiling: {text}"
    );
}

#[test]
fn a_wider_level_passes_the_row_and_a_profile_threshold_fails_it_again() {
    let directory = FixtureDir::empty().unwrap();
    let file = result_file(directory.path(), 100.0);
    let (code, text) = explain(&file, &["--shortfall", "60"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("cause:"), "{text}");
    // ndr-400g wants 360 Gb/s of GPUDirect (cuda) writes: 100 fails it whatever the level.
    let (code, text) = explain(&file, &["--shortfall", "60", "--profile", "ndr-400g"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("SHORT: below the profile's min_bw 360 Gb/s (72.2% short of it)\n"), "{text}");
    assert!(text.contains("cause: server (peer)"), "{text}");
    // Both reasons, when both hold.
    let (_, text) = explain(&file, &["--profile", "ndr-400g"]);
    assert!(
        text.contains("SHORT: below the profile's min_bw 360 Gb/s (72.2% short of it); 56.6% below the ceiling, more than the shortfall level of 10%"),
        "{text}"
    );
}

#[test]
fn a_file_without_path_facts_is_refused() {
    let directory = FixtureDir::empty().unwrap();
    let path = directory.path().join("old.json");
    std::fs::write(&path, r#"{"metadata": {"test": "write_bw"}, "results": []}"#).unwrap();
    let (code, text) = explain(&path, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("holds no path facts"), "{text}");
}

/// A latency file: every row shown (no ceiling for latency), held against the profile's max_lat
/// for its test and memory mode on the profile's statistic; a row over it is SLOW and exits 1.
#[test]
fn a_latency_file_is_shown_and_held_against_the_profiles_max_lat() {
    let directory = FixtureDir::empty().unwrap();
    let document = serde_json::json!({
        "metadata": { "test": "read_lat", "role": "client", "path_facts": facts(&Machine::dgx_h100_like()) },
        "results": [
            { "test": "read_lat", "bytes": 2, "t_typical_us": 3.9, "t_avg_us": 4.1, "mem_local": "host" },
            { "test": "read_lat", "bytes": 2, "t_typical_us": 4.4, "t_avg_us": 4.7, "mem_local": "cuda" },
        ],
    });
    let path = directory.path().join("read_lat.json");
    std::fs::write(&path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let (code, text) = explain(&path, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.matches("no path ceiling: a ceiling bounds bandwidth, not latency").count(), 2, "{text}");
    // ndr-400g: read_lat average at most 4.5 us: 4.1 passes, 4.7 is over it.
    let (code, text) = explain(&path, &["--profile", "ndr-400g"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("2 B host read_lat: median 3.90 us, average 4.10 us; no path ceiling: a ceiling bounds bandwidth, not latency\n"), "{text}");
    assert!(text.contains("2 B cuda read_lat: median 4.40 us, average 4.70 us; no path ceiling: a ceiling bounds bandwidth, not latency: SLOW: average 4.70 us is over the profile's "), "{text}");
    // A file with no rows at all is refused, not an empty pass.
    let empty = directory.path().join("empty.json");
    let facts_only =
        serde_json::json!({ "metadata": { "path_facts": facts(&Machine::dgx_h100_like()) }, "results": [] });
    std::fs::write(&empty, facts_only.to_string()).unwrap();
    let (code, text) = explain(&empty, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("holds no result rows"), "{text}");
}
