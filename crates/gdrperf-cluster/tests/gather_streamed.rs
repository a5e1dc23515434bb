//! The gather and the summary of a finished job's folder, written here as ranks would have
//! written it: the verdicts come out per pair in the job's order, the failing node is named from
//! the per-node tallies, and no temporary file of the gather outlives it.

use std::io::Write;

use gdrperf_cluster::gather::gather;
use gdrperf_cluster::layout::{write_json, OutputDir, PairLine, PairRecord, RunPlan};
use gdrperf_cluster::plan::{PairBy, Plan, Role};
use gdrperf_cluster::schedule::Schedule;
use gdrperf_cluster::step::{Distribution, SlurmStep};

/// An all-pairs job of five nodes, one task each, whose every bench on `bad` exits 1.
fn write_job(dir: &OutputDir, bad: &str) {
    write_job_with(dir, bad, "-a", None);
}

/// [`write_job`] with the bench's argument and the failing sides' note as given.
fn write_job_with(dir: &OutputDir, bad: &str, argument: &str, note: Option<&str>) {
    let nodes: Vec<String> = (1..=5).map(|node| format!("n{node}")).collect();
    let step = SlurmStep::from_layout(nodes, vec![1; 5], Distribution::Block);
    let plan = Plan::new(&step, Schedule::AllPairs, PairBy::Node, 18515).unwrap();
    let run = RunPlan::new(&step, &plan, "gdr-write-bw".into(), vec![argument.into()]);
    dir.create().unwrap();
    write_json(&dir.plan(), &run).unwrap();
    for rank in 0..step.tasks {
        let mut records = std::fs::File::create(dir.records(rank)).unwrap();
        for pair in plan.assignments(&step, rank) {
            let (role, _, _) = pair.side_of(rank).unwrap();
            let node = step.node_of(rank).to_string();
            let mut line = PairLine::new(PairRecord {
                run_id: run.run_id.clone(),
                pair: pair.clone(),
                role,
                // A failing side with a note was killed (no exit status): its note is the reason.
                exit_code: match (node == bad, note) {
                    (false, _) => Some(0),
                    (true, None) => Some(1),
                    (true, Some(_)) => None,
                },
                note: note.filter(|_| node == bad).map(str::to_string),
                seconds: 1.0,
                command: vec!["gdr-write-bw".into()],
                last_line: None,
            });
            if role == Role::Client {
                line.header = Some(vec!["test".into(), "bytes".into()]);
                line.rows = vec![vec!["write_bw".into(), "65536".into()]];
            }
            writeln!(records, "{}", serde_json::to_string(&line).unwrap()).unwrap();
        }
    }
}

/// The gather's temporary files: all of them go in the job's folder itself.
fn partial_files(root: &std::path::Path) -> Vec<String> {
    let names = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned());
    names.filter(|name| name.ends_with(".partial")).collect()
}

#[test]
fn the_failing_node_is_named_from_the_tallies_and_each_pair_keeps_its_line() {
    let root = std::env::temp_dir().join(format!("gdrperf-gather-streamed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = OutputDir::new(&root);
    write_job(&dir, "n3");
    let run = gather(&dir).unwrap();
    assert_eq!((run.pairs(), run.failed()), (10, 4));
    let summary = run.summary();
    assert_eq!(summary.suspects, ["n3"]);
    assert_eq!(summary.in_failed_pairs, ["n1", "n2", "n3", "n4", "n5"]);
    let n3 = summary.tallies.iter().find(|tally| tally.node == "n3").unwrap();
    assert_eq!((n3.passed, n3.failed), (0, 4));

    let mut text = Vec::new();
    summary.write_to(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(", 5 nodes, 10 pairs: 6 passed, 4 failed"), "{text}");
    // The pairs' lines in the order of results.json's pairs, each with its verdict.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.results_json()).unwrap()).unwrap();
    let pairs = json["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 10);
    for (pair, line) in pairs.iter().zip(&lines[1..11]) {
        let verdict = if pair["passed"].as_bool().unwrap() { "PASS" } else { "FAIL" };
        let ends = format!("{} (rank", pair["server_node"].as_str().unwrap());
        assert!(line.starts_with(verdict) && line.contains(&ends), "{line} for {pair}");
        assert_eq!(line.contains("n3 (rank"), !pair["passed"].as_bool().unwrap(), "{line}");
    }
    assert_eq!(
        lines[11..],
        [
            "FAILING NODES: n3",
            "  n1: 1 of 4 pairs failed",
            "  n2: 1 of 4 pairs failed",
            "  n3: 4 of 4 pairs failed",
            "  n4: 1 of 4 pairs failed",
            "  n5: 1 of 4 pairs failed",
        ]
    );
    // Only the summary's lines wait in a temporary file, until the gathered run is dropped.
    assert_eq!(partial_files(&root).len(), 1, "{:?}", partial_files(&root));
    drop(run);
    drop(summary);
    assert_eq!(partial_files(&root), Vec::<String>::new());
    std::fs::remove_dir_all(&root).unwrap();
}

/// Issue 44 item 9: the records and plan in the shared folder are anyone's text; the summary
/// (stdout and summary.txt) shows it escaped, each pair on one line.
#[test]
fn text_from_the_records_reaches_the_summary_escaped() {
    let root = std::env::temp_dir().join(format!("gdrperf-gather-escaped-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = OutputDir::new(&root);
    write_job_with(&dir, "n3", "-a\x1b]0;owned\x07", Some("died\nPASS  round 9  fake line\x1b[2J\u{202e}"));
    let run = gather(&dir).unwrap();
    let mut text = Vec::new();
    run.summary().write_to(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    for bad in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!text.contains(bad), "{bad:?} reached the summary: {text}");
    }
    assert!(!text.lines().any(|line| line.starts_with("PASS  round 9")), "a faked line: {text}");
    assert!(text.contains("died\\nPASS  round 9  fake line\\u{1b}[2J\\u{202e}"), "{text}");
    assert!(text.contains("-a\\u{1b}]0;owned\\u{7}"), "{text}");
    std::fs::remove_dir_all(&root).unwrap();
}
