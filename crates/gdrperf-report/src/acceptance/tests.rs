//! Tests of the acceptance plan and verdicts (a file of its own to keep acceptance.rs short).

use super::*;
use crate::profile::Profile;

const PROFILE: &str = r#"
    name = "test"
    description = "two checks, three modes"
    port_rate = "200 Gb/sec (4X HDR)"
    [bandwidth]
    test = "write_bw"
    size = 65536
    qps = 4
    duration_s = 5
    source = "test"
    min_bw.host = { value = "180Gb/s", source = "host source" }
    min_bw.cuda = { value = "90%", source = "cuda source" }
    min_bw.cuda-staged = { value = "11000MiB/s", source = "staged source" }
    [latency]
    test = "read_lat"
    size = 2
    iterations = 1000
    statistic = "average"
    source = "test"
    max_lat.host = { value = "4.5us", source = "lat source" }
"#;

fn nic(device: &str) -> Nic {
    Nic { device: device.into(), port: 1, rate: Some("200 Gb/sec (4X HDR)".into()) }
}

fn gpu(index: u32) -> Gpu {
    Gpu { label: format!("GPU{index}"), bus_id: format!("0000:{:02x}:00.0", 0x1b + index) }
}

fn runs(steps: &[Step]) -> Vec<&PlannedRun> {
    steps.iter().filter_map(|step| if let Step::Run(run) = step { Some(run) } else { None }).collect()
}

#[test]
fn host_runs_once_per_nic_and_gpu_modes_once_per_gpu() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let node = Node {
        nics: vec![nic("mlx5_0"), nic("mlx5_1")],
        gpus: vec![(gpu(0), Some(nic("mlx5_0"))), (gpu(1), Some(nic("mlx5_1")))],
    };
    let steps = plan(&profile, &node, &[]);
    let stems: Vec<&str> = runs(&steps).iter().map(|run| run.stem.as_str()).collect();
    assert_eq!(
        stems,
        [
            "write_bw-cuda-GPU0",
            "write_bw-cuda-GPU1",
            "write_bw-cuda-staged-GPU0",
            "write_bw-cuda-staged-GPU1",
            "write_bw-host-mlx5_0",
            "write_bw-host-mlx5_1",
            "read_lat-host-mlx5_0",
            "read_lat-host-mlx5_1",
        ]
    );
    let cuda = runs(&steps)[1];
    assert_eq!(cuda.binary, "gdr-write-bw");
    assert_eq!(
        cuda.args.join(" "),
        "--loopback -d mlx5_1 -i 1 -s 65536 -D 5 -q 4 --report-gbits --mem cuda --gpu-bus-id 0000:1c:00.0"
    );
    let latency = runs(&steps)[6];
    assert_eq!(
        (latency.binary.as_str(), latency.args.join(" ").as_str()),
        ("gdr-read-lat", "--loopback -d mlx5_0 -i 1 -s 2 -n 1000 --mem host")
    );
}

#[test]
fn a_node_without_gpus_skips_the_gpu_modes() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let steps = plan(&profile, &Node { nics: vec![nic("rxe0")], gpus: vec![] }, &[]);
    let decided: Vec<(&str, Verdict, &str)> = steps
        .iter()
        .filter_map(|step| {
            if let Step::Decided(row, _) = step {
                Some((row.mem.as_str(), row.verdict, row.detail.as_str()))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("cuda", Verdict::Skip, "no NVIDIA GPU found by gdrperf doctor"),
            ("cuda-staged", Verdict::Skip, "no NVIDIA GPU found by gdrperf doctor")
        ]
    );
    assert_eq!(runs(&steps).len(), 2, "host bandwidth and latency on rxe0");
}

#[test]
fn missing_nics_are_errors_and_modes_filter() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let node = Node { nics: vec![], gpus: vec![(gpu(0), None)] };
    let steps = plan(&profile, &node, &["cuda".to_string(), "host".to_string()]);
    let verdicts: Vec<(String, Verdict)> = steps
        .iter()
        .map(|step| match step {
            Step::Decided(row, _) => (format!("{} {} {}", row.test, row.mem, row.gpu), row.verdict),
            Step::Run(run) => (run.stem.clone(), Verdict::Pass),
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("write_bw cuda GPU0".to_string(), Verdict::Error),
            ("write_bw host ".to_string(), Verdict::Error),
            ("read_lat host ".to_string(), Verdict::Error),
        ]
    );
}

#[test]
fn results_are_judged_against_their_threshold() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let node = Node { nics: vec![nic("mlx5_0")], gpus: vec![(gpu(0), Some(nic("mlx5_0")))] };
    let steps = plan(&profile, &node, &[]);
    let all = runs(&steps);
    let cuda = all.iter().find(|run| run.stem == "write_bw-cuda-GPU0").unwrap();
    let result =
        ResultFile::parse_csv("cuda.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,65536,150.0\n").unwrap();
    let row = cuda.judge(&result, "write_bw-cuda-GPU0.json");
    assert_eq!(row.verdict, Verdict::Fail);
    assert_eq!(row.threshold, "180 Gb/s (90% of the 200 Gb/s port)");
    assert_eq!(row.detail, "65536 bytes: BW average 150 Gb/s < 180 Gb/s (-16.7%; 90% of the 200 Gb/s port)");

    let staged = all.iter().find(|run| run.mode == "cuda-staged").unwrap();
    let row = staged.judge(&result, "x.json");
    assert_eq!((row.verdict, row.unit.as_str()), (Verdict::Pass, "MiB/s"));
    assert!((row.value.unwrap() - 17881.39).abs() < 0.01, "{:?}", row.value);

    let latency = all.iter().find(|run| run.kind == CheckKind::Latency).unwrap();
    let measured =
        ResultFile::parse_csv("lat.csv", "test,bytes,t_typical_us,t_avg_us\nread_lat,2,1.9,2.1\n").unwrap();
    let row = latency.judge(&measured, "lat.json");
    assert_eq!((row.verdict, row.metric.as_str(), row.value), (Verdict::Pass, "t_avg_us", Some(2.1)));

    let wrong_size = ResultFile::parse_csv("lat.csv", "test,bytes,t_avg_us\nread_lat,4,2.1\n").unwrap();
    let row = latency.judge(&wrong_size, "lat.json");
    assert_eq!((row.verdict, row.detail.as_str()), (Verdict::Error, "lat.csv has no row for 2 bytes"));

    let text = render(&[row, cuda.judge(&result, "c.json")]);
    assert!(text.contains("overall: ERROR (0 pass, 1 fail, 0 skip, 1 error)"), "{text}");
}

#[test]
fn a_percent_threshold_without_a_port_rate_is_an_error() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let unknown = Nic { rate: None, ..nic("mlx5_0") };
    let steps =
        plan(&profile, &Node { nics: vec![], gpus: vec![(gpu(0), Some(unknown))] }, &["cuda".to_string()]);
    let result =
        ResultFile::parse_csv("cuda.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,65536,190.0\n").unwrap();
    let row = runs(&steps)[0].judge(&result, "c.json");
    assert_eq!(row.verdict, Verdict::Error);
    assert!(row.detail.contains("did not report one"), "{}", row.detail);
}

#[test]
fn ports_at_another_rate_are_warned_about() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let slow = Nic { rate: Some("100 Gb/sec (4X EDR)".into()), ..nic("mlx5_1") };
    let node = Node { nics: vec![nic("mlx5_0"), slow.clone()], gpus: vec![(gpu(0), Some(slow))] };
    assert_eq!(
        port_rate_warnings(&profile, &node),
        ["WARN mlx5_1 port 1 runs at 100 Gb/sec (4X EDR), profile test expects 200 Gb/sec (4X HDR)"]
    );
}

#[test]
fn summaries_are_written_as_csv_and_json() {
    let folder = std::env::temp_dir().join(format!("gdrperf-report-summary-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let profile = Profile::parse("test", PROFILE).unwrap();
    let steps = plan(&profile, &Node { nics: vec![nic("rxe0")], gpus: vec![] }, &["cuda".to_string()]);
    let rows: Vec<AcceptanceRow> = steps
        .into_iter()
        .filter_map(|step| if let Step::Decided(row, _) = step { Some(row) } else { None })
        .collect();
    let metadata =
        serde_json::json!({"profile": "test", "command": "gdrperf accept", "git_commit": "1a2b3c4d"});
    write_summary(&folder, metadata, &rows).unwrap();
    let text = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    let csv = text.strip_prefix("# command: gdrperf accept\n# git_commit: 1a2b3c4d\n").expect(&text);
    assert!(
        csv.starts_with(
            "nic,port_rate,gpu,gpu_bus_id,test,mem,bytes,metric,value,unit,threshold,verdict,detail,"
        ),
        "{csv}"
    );
    assert!(csv.contains(",SKIP,no NVIDIA GPU found by gdrperf doctor,"), "{csv}");
    // Issue 44: a cell a spreadsheet would run as a formula is written as text.
    let mut hostile = rows[0].clone();
    hostile.detail = "=HYPERLINK(\"http://evil.example\",\"click\")".into();
    write_summary(&folder, serde_json::json!({"command": "gdrperf accept"}), &[hostile]).unwrap();
    let text = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    assert!(text.contains(",\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\","), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("summary.json")).unwrap()).unwrap();
    // JSON spells the exit-code contract's words: a skipped row is "undecided", its reason in
    // `detail`; the CSV above keeps its published SKIP.
    assert_eq!(json["overall"], "undecided");
    assert_eq!(json["results"][0]["verdict"], "undecided");
    assert!(
        json["results"][0]["detail"].as_str().unwrap().contains("HYPERLINK"),
        "the detail is its own field"
    );
    let reread = ResultFile::read(&folder.join("summary.json")).unwrap();
    assert_eq!(reread.rows.len(), 1, "the summary is itself a readable result file");
    std::fs::remove_dir_all(&folder).unwrap();
}

/// Issue 44: the summaries were opened with truncate-and-follow; a link planted at either name
/// made `gdrperf accept` overwrite the file it points to.
#[test]
fn a_link_planted_at_a_summary_is_refused_and_its_target_untouched() {
    let folder = std::env::temp_dir().join(format!("gdrperf-report-planted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let victim = folder.join("victim.txt");
    std::fs::write(&victim, "mine\n").unwrap();
    for name in ["summary.csv", "summary.json"] {
        std::os::unix::fs::symlink(&victim, folder.join(name)).unwrap();
        let metadata = serde_json::json!({"command": "gdrperf accept"});
        let error = write_summary(&folder, metadata, &[]).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{name}: {error}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "{name}: the link was followed");
        std::fs::remove_file(folder.join(name)).unwrap();
    }
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn a_size_that_passes_on_bandwidth_but_moved_nic_error_counters_fails() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    assert_eq!(profile.max_nic_errors, 0, "profiles default to no NIC error at all");
    let node = Node { nics: vec![nic("mlx5_0")], gpus: vec![] };
    let steps = plan(&profile, &node, &["host".to_string()]);
    let host = runs(&steps).into_iter().find(|run| run.kind == CheckKind::Bandwidth).unwrap();
    let header = "test,bytes,bw_avg_gbit_s,nic_errors,nic_counters\n";
    let lossy = ResultFile::parse_csv(
        "host.csv",
        &format!("{header}write_bw,65536,190.0,5,rcvd_seq_err=4;completer_retry_err=1;sent_pkts=900\n"),
    )
    .unwrap();
    let row = host.judge(&lossy, "host.json");
    assert_eq!(row.verdict, Verdict::Fail);
    assert!(
        row.detail.starts_with("65536 bytes: NIC error counters moved 5 times, more than the 0 allowed"),
        "{}",
        row.detail
    );
    assert!(row.detail.ends_with(": rcvd_seq_err=4;completer_retry_err=1;sent_pkts=900"), "{}", row.detail);
    let clean = ResultFile::parse_csv("host.csv", &format!("{header}write_bw,65536,190.0,0,sent_pkts=900\n"))
        .unwrap();
    assert_eq!(host.judge(&clean, "host.json").verdict, Verdict::Pass);
    let tolerant = Profile::parse("test", &format!("max_nic_errors = 5\n{PROFILE}")).unwrap();
    let steps = plan(&tolerant, &node, &["host".to_string()]);
    let host = runs(&steps).into_iter().find(|run| run.kind == CheckKind::Bandwidth).unwrap();
    assert_eq!(host.judge(&lossy, "host.json").verdict, Verdict::Pass);
}

#[test]
fn a_nic_error_count_that_is_not_a_count_is_an_error_not_zero() {
    let profile = Profile::parse("test", PROFILE).unwrap();
    let node = Node { nics: vec![nic("mlx5_0")], gpus: vec![] };
    let steps = plan(&profile, &node, &["host".to_string()]);
    let host = runs(&steps).into_iter().find(|run| run.kind == CheckKind::Bandwidth).unwrap();
    // A -1 is refused earlier, with the whole file (results.rs).
    for bad in ["NaN", "2.5"] {
        let text = format!("test,bytes,bw_avg_gbit_s,nic_errors\nwrite_bw,65536,190.0,{bad}\n");
        let row = host.judge(&ResultFile::parse_csv("host.csv", &text).unwrap(), "host.json");
        assert_eq!(row.verdict, Verdict::Error, "{bad}: {}", row.detail);
        assert!(row.detail.contains("not a count"), "{}", row.detail);
    }
}

#[test]
fn receiver_not_ready_naks_fail_a_size_even_where_other_errors_are_tolerated() {
    let tolerant = Profile::parse("test", &format!("max_nic_errors = 50\n{PROFILE}")).unwrap();
    let node = Node { nics: vec![nic("mlx5_0")], gpus: vec![] };
    let steps = plan(&tolerant, &node, &["host".to_string()]);
    let host = runs(&steps).into_iter().find(|run| run.kind == CheckKind::Bandwidth).unwrap();
    let header = "test,bytes,bw_avg_gbit_s,nic_rnr_naks,nic_errors,nic_counters\n";
    let waited = ResultFile::parse_csv(
        "host.csv",
        &format!("{header}send_bw,65536,190.0,12,12,rcvd_rnr_err=6;send_rnr_err=6\n"),
    )
    .unwrap();
    let row = host.judge(&waited, "host.json");
    assert_eq!(row.verdict, Verdict::Fail);
    assert!(
        row.detail.contains("12 receiver-not-ready (RNR) NAKs: the figure includes RNR waits"),
        "{}",
        row.detail
    );
    let clean =
        ResultFile::parse_csv("host.csv", &format!("{header}send_bw,65536,190.0,0,3,rcvd_seq_err=3\n"))
            .unwrap();
    assert_eq!(host.judge(&clean, "host.json").verdict, Verdict::Pass);
}
