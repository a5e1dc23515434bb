//! One CSV and one JSON per job from the per-pair files, and a verdict for every pair.
//!
//! A pair passes when both sides' benches exited 0, the client wrote at least one row and no
//! row failed its data check. Everything else fails with a reason a person can act on: which
//! side, which exit status, the last line the bench printed, or that a task left no record at
//! all (it died, or its node did).
//!
//! The gathered rows are the benches' own rows (their `host` and `peer_host` columns name both
//! ends) with five columns added at the end: `round`, `server_rank`, `client_rank`,
//! `server_node`, `client_node` (Slurm's node names, which may differ from `hostname`).

use std::path::Path;

use serde::Serialize;

use crate::error::{read_error, write_error, ClusterError, Result};
use crate::layout::{read_json_if_present, write_json, OutputDir, PairRecord, RunPlan};
use crate::plan::{BenchPair, Role};

/// The columns appended to every gathered row.
pub const ADDED_COLUMNS: [&str; 5] = ["round", "server_rank", "client_rank", "server_node", "client_node"];

/// The verdict on one pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairOutcome {
    #[serde(flatten)]
    pub pair: BenchPair,
    pub passed: bool,
    pub reasons: Vec<String>,
    pub rows: usize,
    pub server_exit: Option<i32>,
    pub client_exit: Option<i32>,
}

/// A gathered run.
#[derive(Debug, Clone)]
pub struct Gathered {
    pub plan: RunPlan,
    pub outcomes: Vec<PairOutcome>,
}

impl Gathered {
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|outcome| !outcome.passed).count()
    }
}

/// Reads every pair's record and files under `dir`, writes `results.csv` and `results.json`.
pub fn gather(dir: &OutputDir) -> Result<Gathered> {
    let plan: RunPlan = read_json_if_present(&dir.plan())?
        .ok_or_else(|| ClusterError::NothingToGather { dir: dir.root.clone() })?;
    let mut header: Option<Vec<String>> = None;
    let mut csv_rows: Vec<Vec<String>> = Vec::new();
    let mut json_rows: Vec<serde_json::Value> = Vec::new();
    let mut outcomes = Vec::new();
    for pair in &plan.plan.pairs {
        let mut reasons = Vec::new();
        let server = side_verdict(dir, pair, Role::Server, &plan.run_id, &mut reasons)?;
        let client = side_verdict(dir, pair, Role::Client, &plan.run_id, &mut reasons)?;
        let added = [
            pair.round.to_string(),
            pair.server_rank.to_string(),
            pair.client_rank.to_string(),
            pair.server_node.clone(),
            pair.client_node.clone(),
        ];
        let rows = match read_csv(&dir.csv(pair))? {
            None => 0,
            Some((columns, records)) => {
                match &header {
                    None => header = Some(columns.clone()),
                    Some(expected) if *expected != columns => {
                        return Err(ClusterError::CsvColumns {
                            path: dir.csv(pair),
                            expected: expected.clone(),
                            found: columns,
                        })
                    }
                    Some(_) => {}
                }
                let validation = columns.iter().position(|column| column == "validation");
                let bytes = columns.iter().position(|column| column == "bytes");
                let failed_sizes: Vec<&str> = records
                    .iter()
                    .filter(|record| {
                        validation.is_some_and(|index| record.get(index).map(String::as_str) == Some("fail"))
                    })
                    .map(|record| {
                        bytes.and_then(|index| record.get(index)).map(String::as_str).unwrap_or("?")
                    })
                    .collect();
                if !failed_sizes.is_empty() {
                    reasons.push(format!("data check failed at {} bytes", failed_sizes.join(", ")));
                }
                let count = records.len();
                csv_rows.extend(records.into_iter().map(|mut record| {
                    record.extend(added.iter().cloned());
                    record
                }));
                count
            }
        };
        if rows == 0 && client == Some(0) {
            reasons.push("the client exited 0 but wrote no result rows".into());
        }
        json_rows.extend(read_json_results(&dir.json(pair))?.into_iter().map(|mut row| {
            if let Some(object) = row.as_object_mut() {
                for (name, value) in ADDED_COLUMNS.iter().zip(&added) {
                    let value = if name.ends_with("_node") {
                        serde_json::json!(value)
                    } else {
                        serde_json::json!(value.parse::<u64>().unwrap_or(0))
                    };
                    object.insert(name.to_string(), value);
                }
            }
            row
        }));
        outcomes.push(PairOutcome {
            pair: pair.clone(),
            passed: reasons.is_empty(),
            reasons,
            rows,
            server_exit: server,
            client_exit: client,
        });
    }
    write_csv(&dir.results_csv(), header.as_deref(), &csv_rows)?;
    if let Some(matrix) = header.as_deref().and_then(|header| matrix_rows(header, &csv_rows)) {
        write_matrix(&dir.root.join("matrix.csv"), &matrix)?;
    }
    let document = serde_json::json!({
        "run_id": plan.run_id,
        "bench": plan.bench,
        "bench_args": plan.bench_args,
        "schedule": plan.plan.schedule,
        "pair_by": plan.plan.pair_by,
        "nodes": plan.nodes,
        "left_out": plan.plan.left_out,
        "pairs": outcomes,
        "results": json_rows,
    });
    write_json(&dir.results_json(), &document)?;
    Ok(Gathered { plan, outcomes })
}

/// The columns of `matrix.csv`. The two devices say which NIC port each lane was at each end,
/// so that a plot can mark a named port (`gdrperf fleet judge` names ports by device) on its lane.
pub const MATRIX_COLUMNS: [&str; 7] =
    ["client_node", "server_node", "lane", "bytes", "bw_avg_gbit_s", "client_device", "server_device"];

/// One line per client node, server node and lane: the bandwidth of the largest size measured
/// (the plateau a fabric sweep compares), for a node-by-node heatmap, with the RDMA devices of
/// that size's row (`device`, `peer_device`; empty where the bench has no such column). `None`
/// when the rows carry no `bw_avg_gbit_s` (latency benches). `header` is the bench's columns;
/// each row has the [`ADDED_COLUMNS`] after them. Lines are sorted by the three keys.
pub fn matrix_rows(header: &[String], rows: &[Vec<String>]) -> Option<Vec<[String; 7]>> {
    let find = |name: &str| header.iter().position(|column| column == name);
    let bw = find("bw_avg_gbit_s")?;
    let bytes = find("bytes")?;
    let lane = find("lane");
    let (device, peer_device) = (find("device"), find("peer_device"));
    let server_node = header.len() + 3;
    let client_node = header.len() + 4;
    type Best = (u64, String, String, String);
    let mut best: std::collections::BTreeMap<(String, String, String), Best> = Default::default();
    for row in rows {
        let field = |index: usize| row.get(index).map(String::as_str).unwrap_or("");
        let lane = lane.map(field).unwrap_or("");
        if lane == "all" || field(bw).is_empty() {
            continue;
        }
        let size: u64 = field(bytes).parse().unwrap_or(0);
        let this = || {
            let text = |index: Option<usize>| index.map(field).unwrap_or("").to_string();
            (size, field(bw).to_string(), text(device), text(peer_device))
        };
        let key = (field(client_node).to_string(), field(server_node).to_string(), lane.to_string());
        let entry = best.entry(key).or_insert_with(this);
        if size > entry.0 {
            *entry = this();
        }
    }
    Some(
        best.into_iter()
            .map(|((client, server, lane), (size, bw, client_device, server_device))| {
                [client, server, lane, size.to_string(), bw, client_device, server_device]
            })
            .collect(),
    )
}

fn write_matrix(path: &Path, rows: &[[String; 7]]) -> Result<()> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let csv_error = |error: csv::Error| write_error(path, std::io::Error::other(error));
    writer.write_record(MATRIX_COLUMNS).map_err(csv_error)?;
    for row in rows {
        writer.write_record(row).map_err(csv_error)?;
    }
    let bytes =
        writer.into_inner().map_err(|error| write_error(path, std::io::Error::other(error.to_string())))?;
    crate::layout::write_text(path, &String::from_utf8_lossy(&bytes))
}

/// Adds this side's failure reasons; returns its exit status.
fn side_verdict(
    dir: &OutputDir,
    pair: &BenchPair,
    role: Role,
    run_id: &str,
    reasons: &mut Vec<String>,
) -> Result<Option<i32>> {
    let (rank, node) = match role {
        Role::Server => (pair.server_rank, &pair.server_node),
        Role::Client => (pair.client_rank, &pair.client_node),
    };
    let who = format!("{} (rank {rank} on {node})", role.name());
    let Some(record) = read_json_if_present::<PairRecord>(&dir.record(pair, role))? else {
        reasons.push(format!("no record from the {who}: the task died, was killed, or has not finished"));
        return Ok(None);
    };
    if record.run_id != run_id {
        reasons.push(format!("the {who}'s record belongs to run {}, not {run_id}", record.run_id));
        return Ok(None);
    }
    let log = dir.log(pair, role);
    let log_name = log.strip_prefix(&dir.root).unwrap_or(&log).display().to_string();
    match record.exit_code {
        Some(0) => {}
        Some(1) => reasons
            .push(format!("{who} exit 1: a size failed its data check or a threshold (see {log_name})")),
        Some(code) => reasons.push(format!(
            "{who} exit {code}: {}",
            last_line(&log).unwrap_or_else(|| format!("see {log_name}"))
        )),
        None => reasons.push(format!("{who}: {}", record.note.as_deref().unwrap_or("no exit status"))),
    }
    Ok(record.exit_code)
}

/// The last non-empty line of a log, which is where the benches put their error.
pub fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().map(str::trim).find(|line| !line.is_empty()).map(str::to_string)
}

/// A CSV file read whole: its header and its records.
type CsvTable = (Vec<String>, Vec<Vec<String>>);

/// Header and records of a per-pair CSV; `None` when the file is absent.
fn read_csv(path: &Path) -> Result<Option<CsvTable>> {
    // The benches open their CSVs with `# key: value` lines (command, git commit, ...).
    let mut reader = match csv::ReaderBuilder::new().comment(Some(b'#')).from_path(path) {
        Ok(reader) => reader,
        Err(error) => match error.kind() {
            csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => return Err(read_error(path, error)),
        },
    };
    let header: Vec<String> =
        reader.headers().map_err(|error| read_error(path, error))?.iter().map(str::to_string).collect();
    if header.is_empty() {
        return Ok(None);
    }
    let mut records = Vec::new();
    for record in reader.records() {
        records.push(record.map_err(|error| read_error(path, error))?.iter().map(str::to_string).collect());
    }
    Ok(Some((header, records)))
}

/// The `results` array of a per-pair JSON file (empty when absent).
fn read_json_results(path: &Path) -> Result<Vec<serde_json::Value>> {
    let document: Option<serde_json::Value> = read_json_if_present(path)?;
    Ok(document
        .and_then(|mut document| document.get_mut("results").map(serde_json::Value::take))
        .and_then(|results| match results {
            serde_json::Value::Array(rows) => Some(rows),
            _ => None,
        })
        .unwrap_or_default())
}

fn write_csv(path: &Path, header: Option<&[String]>, rows: &[Vec<String>]) -> Result<()> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let csv_error = |error: csv::Error| write_error(path, std::io::Error::other(error));
    if let Some(header) = header {
        let mut columns = header.to_vec();
        columns.extend(ADDED_COLUMNS.iter().map(|name| name.to_string()));
        writer.write_record(&columns).map_err(csv_error)?;
        for row in rows {
            writer.write_record(row).map_err(csv_error)?;
        }
    }
    let bytes =
        writer.into_inner().map_err(|error| write_error(path, std::io::Error::other(error.to_string())))?;
    crate::layout::write_text(path, &String::from_utf8_lossy(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_keeps_the_largest_size_per_node_pair_and_lane() {
        let header: Vec<String> =
            ["test", "bytes", "bw_avg_gbit_s", "lane", "device", "peer_device"].map(String::from).to_vec();
        let row = |bytes: &str, bw: &str, lane: &str, server: &str, client: &str| -> Vec<String> {
            let device = if lane == "1" { "mlx5_1" } else { "mlx5_0" };
            let peer = if lane == "1" { "mlx5_3" } else { "mlx5_2" };
            ["write_bw", bytes, bw, lane, device, peer, "0", "0", "1", server, client]
                .map(String::from)
                .to_vec()
        };
        let rows = vec![
            row("65536", "90.0", "0", "b", "a"),
            row("1048576", "97.5", "0", "b", "a"),
            row("1048576", "50.0", "1", "b", "a"),
            row("1048576", "147.5", "all", "b", "a"),
            row("1048576", "96.0", "0", "a", "b"),
        ];
        let matrix = matrix_rows(&header, &rows).unwrap();
        let expected = [
            ["a", "b", "0", "1048576", "97.5", "mlx5_0", "mlx5_2"],
            ["a", "b", "1", "1048576", "50.0", "mlx5_1", "mlx5_3"],
            ["b", "a", "0", "1048576", "96.0", "mlx5_0", "mlx5_2"],
        ];
        assert_eq!(matrix, expected.map(|line| line.map(String::from)));
        let latency: Vec<String> = ["test", "bytes", "t_typical_us"].map(String::from).to_vec();
        assert!(matrix_rows(&latency, &rows).is_none());
    }
}
