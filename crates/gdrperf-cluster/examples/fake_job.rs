//! A finished job's folder without a cluster: `plan.json` and every rank's records file as a
//! `gdrperf slurm` job of NODES nodes (`gpu0001`, ...) x TASKS tasks (block layout, paired by
//! node: a lane per task) leaves them, each client with one bandwidth row of 1 MiB. Every side on
//! FAIL_NODE (when given) exits 1 with its row's data check failed. What rank 0 reads when it
//! gathers; no bench runs. For measuring the gather at scale (`scripts/slurm/gather-scale.sh`).
//!
//! ```text
//! cargo run --release -p gdrperf-cluster --example fake_job -- DIR NODES TASKS SCHEDULE [FAIL_NODE]
//! ```

use std::io::{BufWriter, Write};

use gdrperf_cluster::layout::{write_json, OutputDir, PairLine, PairRecord, RunPlan};
use gdrperf_cluster::plan::{BenchPair, PairBy, Plan, Role};
use gdrperf_cluster::schedule::Schedule;
use gdrperf_cluster::step::{Distribution, SlurmStep};

const COLUMNS: [&str; 13] = [
    "test",
    "bytes",
    "iterations",
    "bidirectional",
    "mem_local",
    "mem_remote",
    "device",
    "peer_device",
    "lane",
    "bw_avg_gbit_s",
    "validation",
    "host",
    "peer_host",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [dir, nodes, tasks, schedule, rest @ ..] = arguments.as_slice() else {
        return Err("usage: fake_job DIR NODES TASKS SCHEDULE [FAIL_NODE]".into());
    };
    let fail_node = rest.first().map(String::as_str).unwrap_or("");
    let (nodes, tasks): (usize, usize) = (nodes.parse()?, tasks.parse()?);
    let schedule = match schedule.as_str() {
        "pairs" => Schedule::Pairs,
        "ring" => Schedule::Ring,
        "all-pairs" => Schedule::AllPairs,
        other => return Err(format!("schedule {other}: pairs, ring or all-pairs").into()),
    };
    let names: Vec<String> = (1..=nodes).map(|node| format!("gpu{node:04}")).collect();
    let step = SlurmStep::from_layout(names, vec![tasks; nodes], Distribution::Block);
    let plan = Plan::new(&step, schedule, PairBy::Node, 18515)?;
    let args: Vec<String> = ["-a", "--validate"].map(String::from).to_vec();
    let run = RunPlan::new(&step, &plan, "gdr-write-bw".into(), args.clone());
    let out = OutputDir::new(dir);
    out.create()?;
    write_json(&out.plan(), &run)?;
    for rank in 0..step.tasks {
        let mut records = BufWriter::new(std::fs::File::create(out.records(rank))?);
        for pair in plan.assignments(&step, rank) {
            let line = side_line(&run.run_id, &args, pair, rank, fail_node);
            serde_json::to_writer(&mut records, &line)?;
            records.write_all(b"\n")?;
        }
        records.flush()?;
    }
    Ok(())
}

/// `rank`'s line for `pair`: a server's record, or a client's with its row.
fn side_line(run_id: &str, args: &[String], pair: BenchPair, rank: usize, fail_node: &str) -> PairLine {
    let (role, node, peer) = match pair.side_of(rank) {
        Some((Role::Server, _, peer)) => (Role::Server, &pair.server_node, peer.to_string()),
        _ => (Role::Client, &pair.client_node, pair.server_node.clone()),
    };
    let failed = node == fail_node;
    let mut command = vec!["gdr-write-bw".to_string()];
    command.extend(args.iter().cloned());
    command.extend(["--port".into(), pair.port.to_string()]);
    if role == Role::Client {
        command.push(peer.clone());
    }
    let lane = pair.local.to_string();
    let node = node.clone();
    let mut line = PairLine::new(PairRecord {
        run_id: run_id.to_string(),
        pair,
        role,
        exit_code: Some(if failed { 1 } else { 0 }),
        note: None,
        seconds: 2.5,
        command,
        last_line: None,
    });
    if role == Role::Client {
        let device = format!("mlx5_{lane}");
        let bw = if failed || peer == fail_node { "48.75" } else { "97.5" };
        let validation = if failed { "fail" } else { "pass" };
        let row: Vec<String> = [
            "write_bw", "1048576", "5000", "false", "cuda", "cuda", &device, &device, &lane, bw, validation,
            &node, &peer,
        ]
        .map(String::from)
        .to_vec();
        let object: serde_json::Map<String, serde_json::Value> = COLUMNS
            .iter()
            .zip(&row)
            .map(|(name, value)| (name.to_string(), serde_json::json!(value)))
            .collect();
        line.header = Some(COLUMNS.map(String::from).to_vec());
        line.rows = vec![row];
        line.results = vec![serde_json::Value::Object(object)];
    }
    line
}
