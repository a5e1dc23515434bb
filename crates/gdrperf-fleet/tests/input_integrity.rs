//! Every row read is accounted for: hand-written files whose every row's fate is worked out in
//! the comments; files refused; memory that grows with the (class, port) pairs present.

use std::path::{Path, PathBuf};

use gdrperf_fleet::fit::fit;
use gdrperf_fleet::judge::{judge, JudgeConfig};
use gdrperf_fleet::read::{read_gathered, InputCount, ReadError};

const HEADER: &str =
    "test,bytes,bidirectional,qps,mem_local,mem_remote,device,peer_device,bw_avg_gbit_s,lane,ceiling_gbps,server_node,client_node";

/// A folder of its own under the system's temporary one, removed by the test.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gdrperf-fleet-input-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A row of node `client` writing to `server` on mlx5_0 at `gbps` (text: any value).
fn row(client: usize, server: usize, gbps: &str) -> String {
    format!("write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,{gbps},0,110,n{server},n{client}\n")
}

/// All ordered pairs of 5 nodes at 100 Gb/s, each row's value distinct (100.00i).
fn healthy() -> String {
    let mut text = format!("{HEADER}\n");
    let mut count = 0;
    for a in 0..5 {
        for b in 0..5 {
            if a != b {
                count += 1;
                text += &row(a, b, &format!("100.{count:02}"));
            }
        }
    }
    text
}

#[test]
fn every_row_read_is_kept_or_dropped_with_its_reason() {
    let dir = folder("reasons");
    // 20 healthy rows, then: the first again (a duplicate), NaN, inf, -5, 0, "abc", 1e30 (over
    // the 110 ceiling by more than 10 %), 100000 (ceiling column empty: over 10 x the median), a
    // `lane all` row, a latency row (empty bandwidth), a row cut short (4 fields), and a last
    // line without its newline: 32 rows read, 20 kept.
    let mut text = healthy();
    text += &row(0, 1, "100.01");
    for value in ["NaN", "inf", "-5", "0", "abc", "1e30"] {
        text += &row(1, 2, value);
    }
    text += "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,100000,0,,n3,n4\n";
    text += "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,400,all,110,n3,n4\n";
    text += "write_lat,2,false,1,host,host,mlx5_0,mlx5_0,,0,110,n3,n4\n";
    text += "write_bw,1048576,false,1\n";
    text += row(2, 3, "99.5").trim_end();
    let path = write(&dir, "results.csv", &text);
    let stored = read_gathered(&[path]).unwrap();
    let expected = InputCount {
        files: 1,
        files_repeated: Vec::new(),
        rows_read: 32,
        rows_kept: 20,
        lane_all: 1,
        no_bandwidth: 1,
        not_a_number: 1,
        not_finite: 2,
        not_positive: 2,
        above_ceiling: 1,
        implausible: 1,
        short_rows: 1,
        truncated_last_lines: 1,
        duplicates: 1,
    };
    assert_eq!(stored.input, expected);
    assert_eq!(stored.rows.len(), 20);
    assert_eq!(stored.input.dropped(), 10);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_same_file_twice_is_read_once_and_files_of_other_columns_are_refused() {
    let dir = folder("twice");
    let first = write(&dir, "a.csv", &healthy());
    let copy = write(&dir, "b.csv", &healthy());
    let stored = read_gathered(&[first.clone(), copy]).unwrap();
    assert_eq!((stored.input.files, stored.input.files_repeated.len(), stored.rows.len()), (2, 1, 20));
    // The same rows without the qps column: refused, with the column named.
    let without_qps = healthy().replace(",qps", "").replace("false,1,host", "false,host");
    let other = write(&dir, "c.csv", &without_qps);
    match read_gathered(&[first, other]) {
        Err(error @ ReadError::MixedColumns { .. }) => assert!(error.to_string().contains("qps"), "{error}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn text_from_a_file_reaches_the_verdict_cleaned() {
    let dir = folder("clean");
    // Node 3 is named with an escape sequence and a bell, and is slow (70 %).
    let mut text = format!("{HEADER}\n");
    let name = |node: usize| if node == 3 { "n3\u{1b}[31m\u{7}X".to_string() } else { format!("n{node}") };
    for a in 0..6 {
        for b in 0..6 {
            if a != b {
                let gbps = if a == 3 || b == 3 { 70.0 } else { 100.0 } + (a * 6 + b) as f64 * 0.01;
                text += &format!(
                    "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,{gbps},0,110,{},{}\n",
                    name(b),
                    name(a)
                );
            }
        }
    }
    let stored = read_gathered(&[write(&dir, "results.csv", &text)]).unwrap();
    let verdict = judge(&stored, &JudgeConfig::default());
    assert_eq!(verdict.findings.len(), 1, "{:?}", verdict.findings.first());
    let shown = gdrperf_fleet::report::text(&verdict);
    assert!(!shown.chars().any(|character| character.is_control() && character != '\n'), "{shown:?}");
    assert!(verdict.findings[0].node.starts_with("n3\\u{1b}"), "{}", verdict.findings[0].node);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn memory_grows_with_the_class_port_pairs_present_not_classes_times_ports() {
    // The crafted shape that asked for 37 GB: every row a class of its own (bytes = i) between
    // two nodes of its own. 4000 rows: 4000 classes x 8000 ports = 32 M (class, port) slots,
    // 2 KiB each in the histograms of the old fit (65 GB); present: 8000 pairs.
    let dir = folder("crafted");
    let mut text = format!("{HEADER}\n");
    for index in 0..4000 {
        text += &format!("write_bw,{index},false,1,host,host,mlx5_0,mlx5_0,100,0,110,s{index},c{index}\n");
    }
    let stored = read_gathered(&[write(&dir, "results.csv", &text)]).unwrap();
    assert_eq!((stored.catalog.classes.len(), stored.catalog.ports.len()), (4000, 8000));
    assert_eq!(fit(&stored).keys.len(), 8000);
    let verdict = judge(&stored, &JudgeConfig::default());
    assert_eq!((verdict.classes.len(), verdict.findings.len()), (4000, 0));
    // More classes than the judge keeps: refused.
    for index in 4000..4100 {
        text += &format!("write_bw,{index},false,1,host,host,mlx5_0,mlx5_0,100,0,110,s{index},c{index}\n");
    }
    let refused = read_gathered(&[write(&dir, "more.csv", &text)]);
    assert!(matches!(refused, Err(ReadError::TooManyClasses { limit: 4096 })), "{:?}", refused.err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_node_whose_rows_stop_mid_job_is_named_from_a_fixed_schedule_only() {
    // 6 nodes, all ordered pairs, the round being the larger node index (n5's: the smaller);
    // n5's rows stop at round 2 (its pairs with n3 and n4 missing, as if it died), the job's go
    // on to round 4 (pairs with n4). With plan.json saying all-pairs: named. Saying locate (healthy nodes stop after the
    // first pass there): not.
    let dir = folder("stop");
    let mut text = format!("round,{HEADER}\n");
    for a in 0..6usize {
        for b in 0..6usize {
            if a == b || ((a == 5 || b == 5) && a.min(b) >= 3) {
                continue;
            }
            let round = if a == 5 || b == 5 { a.min(b) } else { a.max(b) };
            text += &format!("{round},{}", row(a, b, &format!("{}.5", 100 + a * 6 + b)));
        }
    }
    let results = write(&dir, "results.csv", &text);
    let nodes: Vec<String> = (0..6).map(|node| format!("n{node}")).collect();
    let plan = |schedule: &str| serde_json::json!({ "schedule": schedule, "nodes": nodes }).to_string();
    write(&dir, "plan.json", &plan("all-pairs"));
    let verdict = judge(&read_gathered(std::slice::from_ref(&results)).unwrap(), &JudgeConfig::default());
    let stopped: Vec<&str> = verdict
        .findings
        .iter()
        .filter(|finding| finding.kind == gdrperf_fleet::judge::PartKind::NodeRowsStop)
        .map(|finding| finding.node.as_str())
        .collect();
    assert_eq!(stopped, ["n5"]);
    write(&dir, "plan.json", &plan("locate"));
    let verdict = judge(&read_gathered(&[results]).unwrap(), &JudgeConfig::default());
    assert!(verdict
        .findings
        .iter()
        .all(|finding| finding.kind != gdrperf_fleet::judge::PartKind::NodeRowsStop));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fifo_a_planted_plan_link_and_an_endless_line_are_refused_while_read() {
    let dir = folder("bounded");
    // A FIFO nobody writes to: refused at once, not waited on (the hash read would block).
    let fifo = dir.join("results.csv");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let error = read_gathered(std::slice::from_ref(&fifo)).expect_err("a FIFO is not a results file");
    assert!(error.to_string().contains("not a regular file"), "{error}");
    std::fs::remove_file(&fifo).unwrap();

    // A plan.json beside the results that is a link (the job's folder may be shared): not read.
    let results = write(&dir, "results.csv", &healthy());
    let elsewhere = write(&dir, "elsewhere.json", r#"{"nodes": ["n0"]}"#);
    std::os::unix::fs::symlink(&elsewhere, dir.join("plan.json")).unwrap();
    let error = read_gathered(std::slice::from_ref(&results)).expect_err("a linked plan.json is refused");
    assert!(
        matches!(error, ReadError::Plan { .. }) && error.to_string().contains("symbolic link"),
        "{error}"
    );
    std::fs::remove_file(dir.join("plan.json")).unwrap();

    // One endless record (a quoted field with line breaks, 4 MiB): refused by its size while it is
    // read, not held whole and then found too long by field.
    let mut text = healthy();
    text += "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,100,0,110,n1,\"";
    text += &"x\n".repeat(2 << 20);
    text += "\"\n";
    let endless = write(&dir, "results.csv", &text);
    let error = read_gathered(&[endless]).expect_err("an endless record is refused");
    assert!(error.to_string().contains("a record of more than 1048576 bytes"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}
