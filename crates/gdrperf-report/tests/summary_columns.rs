//! `summary.csv`'s real header against the column reference (gdrperf::output::columns), which
//! lists every column of every file gdrperf writes and renders docs/columns.md.

use gdrperf::output::columns::{header_problems, Table};
use gdrperf_report::acceptance::AcceptanceRow;
use gdrperf_report::Verdict;

#[test]
fn every_summary_column_has_a_reference_entry_and_keeps_its_published_place() {
    let row = AcceptanceRow {
        nic: "rxe0".into(),
        port_rate: String::new(),
        gpu: String::new(),
        gpu_bus_id: String::new(),
        test: "write_bw".into(),
        mem: "host".into(),
        bytes: 65536,
        metric: "bw_avg_gbit_s".into(),
        value: Some(1.0),
        unit: "Gb/s".into(),
        threshold: "0.5".into(),
        verdict: Verdict::Pass,
        detail: String::new(),
        threshold_source: String::new(),
        result_file: String::new(),
        ceiling_gbps: None,
        ceiling_limited_by: String::new(),
        pct_of_ceiling: None,
        ceiling_causes: String::new(),
        deviation: String::new(),
    };
    let folder = std::env::temp_dir().join(format!("gdrperf-summary-columns-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    gdrperf_report::acceptance::write_summary(&folder, serde_json::json!({}), &[row]).unwrap();
    let text = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    let json = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
    // The CSV column keeps its published upper-case word; the JSON beside it spells the
    // exit-code contract's.
    assert!(json.contains("\"verdict\": \"pass\""), "{json}");
    let header: Vec<String> = text.lines().next().unwrap().split(',').map(str::to_string).collect();
    let problems = header_problems(Table::AcceptSummary, &header);
    assert!(problems.is_empty(), "the column reference and summary.csv disagree:\n{}", problems.join("\n"));
    assert!(text.lines().nth(1).unwrap().contains(",PASS,"), "{text}");
}
