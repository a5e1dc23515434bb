//! The `--out_json` file read as the field's scripts read perftest's (`.results.BW_average`,
//! `.results.t_avg`, `.test_info.test`), after each size of a sweep.

use super::*;
use crate::options::config::BandwidthUnit;
use crate::options::values::OutputFigure;
use crate::output::latency_row::{LatencyFigures, LatencyRow, LatencySettings};
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::{BandwidthRow, RowContext};

fn run_start() -> RunStart {
    RunStart {
        header: Vec::new(),
        metadata: serde_json::json!({
            "perftest_test_info": {
                "verb": "RDMA_Write",
                "test_info": { "Device": "rxe0", "Number_of_qps": 1, "PCIe_relax_order": "ON" },
            },
        }),
    }
}

fn bandwidth(bytes: u64, mib_per_second: f64, bidirectional: bool) -> BandwidthRow {
    let direction = BandwidthFigures {
        message_size_bytes: bytes,
        messages: 1000,
        elapsed_nanos: 1_000_000_000,
        peak_bytes_per_second: Some(mib_per_second * 2.0 * 1_048_576.0),
        average_bytes_per_second: mib_per_second * 1_048_576.0,
        messages_per_second: 1000.0,
        copy_seconds: 0.0,
        peak_span: Some((10, 1000)),
        events_not_stored: 0,
    };
    let directions = if bidirectional { vec![direction; 2] } else { vec![direction] };
    let settings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional };
    BandwidthRow::new(&RowContext::default(), settings, &directions, "off")
}

fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("gdrperf-out-json-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory.join("perftest_out.json")
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_sweep_reads_as_perftests_file_and_keeps_every_size() {
    let path = scratch("sweep");
    let style = ConsoleStyle { unit: BandwidthUnit::MebibytesPerSecond, timed: false, figure: None };
    let mut file = PerftestJsonFile::create(&path, style).unwrap();
    assert_eq!(read(&path)["results"], serde_json::json!({}), "valid JSON before the first size");
    Exporter::<BandwidthRow>::start(&mut file, &run_start()).unwrap();
    for (bytes, rate) in [(4096, 100.004), (65536, 1234.567)] {
        Exporter::write_row(&mut file, &bandwidth(bytes, rate, false)).unwrap();
        let document = read(&path);
        // jq .results.BW_average: the last size, perftest's two decimals.
        assert_eq!(document["results"]["MsgSize"], bytes);
        assert_eq!(document["results"]["BW_average"].as_f64(), Some((rate * 100.0_f64).round() / 100.0));
    }
    let document = read(&path);
    assert_eq!(document["test_info"]["test"], "RDMA_Write_BW_Test");
    assert_eq!(document["test_info"]["PCIe_relax_order"], "ON");
    let sizes: Vec<u64> = document["all_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|size| size["MsgSize"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [4096, 65536]);
    for key in ["MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"] {
        assert!(document["results"].get(key).is_some(), "{key} missing: {document}");
    }
    assert_eq!(document["results"]["MsgRate"], 0.001);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn under_output_the_file_holds_perftests_one_figure() {
    let path = scratch("output");
    let style = ConsoleStyle {
        unit: BandwidthUnit::MebibytesPerSecond,
        timed: false,
        figure: Some(OutputFigure::MessageRate),
    };
    let mut file = PerftestJsonFile::create(&path, style).unwrap();
    Exporter::<BandwidthRow>::start(&mut file, &run_start()).unwrap();
    let row = bandwidth(65536, 1000.0, false);
    Exporter::write_row(&mut file, &row).unwrap();
    assert_eq!(read(&path)["results"], serde_json::json!({ "msgRate_avg": 0.001 }));
    assert_eq!(row.perftest_figure(OutputFigure::Bandwidth, style), Some(1000.0));
    assert_eq!(row.perftest_figure(OutputFigure::Latency, style), None, "refused before the run");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_bidirectional_run_sums_both_directions_and_names_itself() {
    let path = scratch("bidir");
    let style = ConsoleStyle { unit: BandwidthUnit::GigabitsPerSecond, timed: false, figure: None };
    let mut file = PerftestJsonFile::create(&path, style).unwrap();
    Exporter::<BandwidthRow>::start(&mut file, &run_start()).unwrap();
    Exporter::write_row(&mut file, &bandwidth(65536, 1000.0, true)).unwrap();
    let document = read(&path);
    assert_eq!(document["test_info"]["test"], "RDMA_Write_Bidirectional_BW_Test");
    // Two directions of 1000 MiB/s: 16.777216 Gb/s, two decimals; this side's 1000 iterations.
    assert_eq!(document["results"]["BW_average"], 16.78);
    assert_eq!(document["results"]["n_iterations"], 1000);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_latency_run_has_perftests_latency_keys_and_a_timed_one_its_rate() {
    let figures = LatencyFigures {
        bytes: 2,
        samples: 1000,
        t_min_nanos: 1001,
        t_max_nanos: 2000,
        t_typical_nanos: 1500,
        t_avg_nanos: 1504.9,
        t_stdev_nanos: 288.7,
        p99_nanos: 1990,
        p99_9_nanos: 1999,
        p99_99_nanos: 2000,
        elapsed_nanos: 2_000_000,
        saturated: 0,
        exact_percentiles: true,
        copy_seconds: 0.0,
        span: None,
        refused_samples: 0,
        inline_size: 0,
    };
    let settings = LatencySettings { arrival: "poll_last_byte", inline_size: 0 };
    let row = LatencyRow::new(&RowContext::default(), settings, &figures, "off");
    for (timed, keys, test) in [
        (
            false,
            &[
                "MsgSize",
                "n_iterations",
                "t_min",
                "t_max",
                "t_typical",
                "t_avg",
                "t_stdev",
                "percentile_99",
                "percentile_99.9",
            ][..],
            "RDMA_Write_Latency_Test",
        ),
        (true, &["MsgSize", "n_iterations", "t_avg", "tps_average"][..], "RDMA_Write_Latency_Test"),
    ] {
        let path = scratch(if timed { "timed" } else { "latency" });
        let style = ConsoleStyle { unit: BandwidthUnit::MebibytesPerSecond, timed, figure: None };
        let mut file = PerftestJsonFile::create(&path, style).unwrap();
        Exporter::<LatencyRow>::start(&mut file, &run_start()).unwrap();
        Exporter::write_row(&mut file, &row).unwrap();
        let document = read(&path);
        let mut found: Vec<&str> =
            document["results"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = keys.to_vec();
        found.sort_unstable();
        expected.sort_unstable();
        assert_eq!(found, expected);
        assert_eq!(document["results"]["t_avg"], 1.5, "jq .results.t_avg: microseconds, two decimals");
        assert_eq!(document["test_info"]["test"], test);
        if timed {
            assert_eq!(document["results"]["tps_average"], 500000.0, "1000 iterations in 2 ms");
        }
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
