//! Gathered results files (`results.csv`, written by rank 0 of `gdrperf slurm`) into observations.
//!
//! Columns are read by name (docs/columns.md): the bench's own `test`, `bytes`, `bidirectional`,
//! `qps`, `mem_local`, `mem_remote`, `device` and `peer_device`, `gpu_local_bus_id`, `lane`,
//! `bw_avg_gbit_s`, `ceiling_gbps`, `nic_node_guid` and `gpu_local_uuid` (the parts'
//! identities, for `--base`), and the gather's `server_node` and `client_node`. The client writes
//! the row: `device` and `mem_local` are the client's, `peer_device` and `mem_remote` the
//! server's. The rows do not name a NIC model, its rate or a GPU model, so a class is what the
//! rows do say: test, size, memory kinds, QPs and direction. The ceiling is not a key: a GPU
//! trained at x8 lowers its rows' ceiling, and keying on it would hide that GPU in a class of its
//! own. A fleet of mixed NIC models must be judged one model's files at a time.
//!
//! Rows are streamed (one record in memory at a time); only the compact observations are kept.
//! Rows skipped: `lane` = `all` (the sum of the lanes, not a port), rows without a positive
//! bandwidth (latency tests; a failed size).

use std::path::{Path, PathBuf};

use crate::observation::{ClassInfo, Observation, Stored};

/// Why a results file could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("{path}: no column `{column}`: is this a gathered results.csv (gdrperf slurm)?")]
    MissingColumn { path: PathBuf, column: &'static str },
    #[error("{path}: {source}")]
    Plan { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a plan.json: {source}")]
    PlanJson { path: PathBuf, source: serde_json::Error },
}

/// The columns the judge needs, and their index in one file.
const NEEDED: [&str; 10] = [
    "test",
    "bytes",
    "bidirectional",
    "mem_local",
    "mem_remote",
    "device",
    "peer_device",
    "bw_avg_gbit_s",
    "server_node",
    "client_node",
];

/// Reads gathered files into one set of observations. For each file, a `plan.json` beside it
/// (the job's plan) adds its node list, so that nodes without a row are named.
pub fn read_gathered(paths: &[PathBuf]) -> Result<Stored, ReadError> {
    let mut stored = Stored::default();
    let mut ceilings = Vec::new();
    for path in paths {
        read_one(path, &mut stored, &mut ceilings)?;
        let plan = path.with_file_name("plan.json");
        if plan.exists() {
            for node in plan_nodes(&plan)? {
                if !stored.catalog.expected_nodes.contains(&node) {
                    stored.catalog.expected_nodes.push(node);
                }
            }
        }
    }
    fill_ceilings(ceilings, &mut stored);
    Ok(stored)
}

fn plan_nodes(path: &Path) -> Result<Vec<String>, ReadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ReadError::Plan { path: path.to_path_buf(), source })?;
    let plan: serde_json::Value = serde_json::from_str(&text)
        .map_err(|source| ReadError::PlanJson { path: path.to_path_buf(), source })?;
    Ok(plan
        .get("nodes")
        .and_then(|nodes| nodes.as_array())
        .map(|nodes| nodes.iter().filter_map(|node| node.as_str().map(str::to_string)).collect())
        .unwrap_or_default())
}

fn reader(path: &Path) -> Result<csv::Reader<std::fs::File>, ReadError> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .flexible(true)
        .from_path(path)
        .map_err(|source| ReadError::Csv { path: path.to_path_buf(), source })
}

/// Column indices by name; the optional ones may be absent (older files).
struct Columns {
    needed: [usize; NEEDED.len()],
    qps: Option<usize>,
    lane: Option<usize>,
    bus_id: Option<usize>,
    ceiling: Option<usize>,
    nic_guid: Option<usize>,
    gpu_uuid: Option<usize>,
}

fn columns(path: &Path, header: &csv::StringRecord) -> Result<Columns, ReadError> {
    let find = |name: &str| header.iter().position(|column| column == name);
    let mut needed = [0; NEEDED.len()];
    for (slot, name) in needed.iter_mut().zip(NEEDED) {
        *slot = find(name).ok_or(ReadError::MissingColumn { path: path.to_path_buf(), column: name })?;
    }
    Ok(Columns {
        needed,
        qps: find("qps"),
        lane: find("lane"),
        bus_id: find("gpu_local_bus_id"),
        ceiling: find("ceiling_gbps"),
        nic_guid: find("nic_node_guid"),
        gpu_uuid: find("gpu_local_uuid"),
    })
}

fn read_one(path: &Path, stored: &mut Stored, ceilings: &mut Vec<Vec<f32>>) -> Result<(), ReadError> {
    let mut reader = reader(path)?;
    let header =
        reader.headers().map_err(|source| ReadError::Csv { path: path.to_path_buf(), source })?.clone();
    let columns = columns(path, &header)?;
    let mut record = csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|source| ReadError::Csv { path: path.to_path_buf(), source })?
    {
        let field = |index: usize| record.get(index).unwrap_or("").trim();
        let [test, bytes, bidirectional, mem_local, mem_remote, device, peer_device, bw, server_node, client_node] =
            columns.needed.map(field);
        if columns.lane.is_some_and(|index| field(index) == "all") {
            continue;
        }
        let Some(gbps) = bw.parse::<f64>().ok().filter(|value| *value > 0.0 && value.is_finite()) else {
            continue;
        };
        let qps = columns.qps.map(field).unwrap_or("");
        let both_ways = bidirectional == "true";
        let key = format!("{test}|{bytes}|{mem_local}|{mem_remote}|{qps}|{both_ways}");
        let class = stored.catalog.class(&key, || ClassInfo {
            label: format!(
                "{test} {bytes} B {mem_local}->{mem_remote}{}{}",
                if qps.is_empty() { String::new() } else { format!(" {qps} QP") },
                if both_ways { " bidirectional" } else { "" }
            ),
            gpu_memory: mem_local.starts_with("cuda") || mem_remote.starts_with("cuda"),
            host_memory: mem_local.starts_with("host") && mem_remote.starts_with("host"),
            ceiling_gbps: None,
        });
        let client = stored.catalog.port(client_node, device);
        let server = stored.catalog.port(server_node, peer_device);
        // The row is the client's: its identities are the client port's (the first row that
        // carries one says it).
        let port = &mut stored.catalog.ports[client as usize];
        for (index, slot) in [
            (columns.bus_id, &mut port.gpu_bus_id),
            (columns.nic_guid, &mut port.nic_guid),
            (columns.gpu_uuid, &mut port.gpu_uuid),
        ] {
            if let Some(value) = index.map(field).filter(|value| !value.is_empty()) {
                slot.get_or_insert_with(|| value.to_string());
            }
        }
        // write_bw and send_bw: the client posts, the payload flows client -> server; read_bw
        // pulls server -> client.
        let (sender, receiver, directed) = match test {
            "write_bw" | "send_bw" => (client, server, !both_ways),
            "read_bw" => (server, client, !both_ways),
            _ => (client, server, false),
        };
        if ceilings.len() <= class as usize {
            ceilings.resize(class as usize + 1, Vec::new());
        }
        if let Some(ceiling) = columns.ceiling.and_then(|index| field(index).parse::<f32>().ok()) {
            if ceiling > 0.0 && ceiling.is_finite() {
                ceilings[class as usize].push(ceiling);
            }
        }
        stored.rows.push(Observation { class, sender, receiver, directed, log_gbps: gbps.ln() as f32 });
    }
    Ok(())
}

/// Each class's median `ceiling_gbps`.
fn fill_ceilings(ceilings: Vec<Vec<f32>>, stored: &mut Stored) {
    for (class, mut values) in ceilings.into_iter().enumerate() {
        if !values.is_empty() {
            values.sort_by(f32::total_cmp);
            stored.catalog.classes[class].ceiling_gbps = Some(f64::from(values[values.len() / 2]));
        }
    }
}
