//! `gdrperf slurm gather` and `summary` on a folder an older gdrperf wrote: said so, with what
//! was found and what was expected, never gathered as a job whose every pair left no record.

use std::fs;
use std::process::{Command, Output};

use gdrperf_doctor_fixtures::FixtureDir;

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_folder_an_older_gdrperf_wrote_is_named_as_such_not_gathered_empty() {
    // The layout of an older gdrperf: a plan listing every pair, a status and a result file per
    // pair and side. Gathering it as today's layout would find no records and fail every pair.
    let dir = FixtureDir::empty().unwrap();
    let out = dir.path().join("old");
    fs::create_dir_all(out.join("status")).unwrap();
    fs::create_dir_all(out.join("pairs")).unwrap();
    let pair = r#"{"round": 0, "server_rank": 0, "server_node": "n1", "client_rank": 1, "client_node": "n2", "local": 0, "port": 18515}"#;
    let plan = format!(
        r#"{{"run_id": "7.0", "bench": "gdr-write-bw", "bench_args": [], "tasks": 2, "nodes": ["n1", "n2"],
            "schedule": "pairs", "pair_by": "node", "rounds": 1, "pairs": [{pair}], "left_out": []}}"#
    );
    fs::write(out.join("plan.json"), &plan).unwrap();
    for side in ["server", "client"] {
        fs::write(out.join(format!("status/r0_n1_n2_0-1.{side}.json")), "{}").unwrap();
    }
    fs::write(out.join("pairs/r0_n1_n2_0-1.csv"), "test,bytes\nwrite_bw,65536\n").unwrap();
    let gather = |action: &str| {
        let output =
            Command::new(env!("CARGO_BIN_EXE_gdrperf")).args(["slurm", action]).arg(&out).output().unwrap();
        (output.status.code(), text(&output))
    };
    for action in ["gather", "summary"] {
        let (code, message) = gather(action);
        assert_eq!(code, Some(2), "{message}");
        assert!(
            message.contains(
                "was written by an older gdrperf: found 2 per-pair status files \
                 (status/r0_n1_n2_0-1.client.json, ...), expected status/rankN.records.jsonl, one per rank"
            ),
            "{action}: {message}"
        );
    }
    assert!(!out.join("results.csv").exists());
    // Per-rank records beside a plan that still lists its pairs: the plan is named.
    for side in ["server", "client"] {
        fs::remove_file(out.join(format!("status/r0_n1_n2_0-1.{side}.json"))).unwrap();
    }
    fs::write(out.join("status/rank0.records.jsonl"), "").unwrap();
    let (code, message) = gather("gather");
    assert_eq!(code, Some(2), "{message}");
    assert!(
        message.contains("found a plan.json that lists every pair, expected a plan.json with tasks_per_node"),
        "{message}"
    );
}
