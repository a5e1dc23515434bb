//! A simulated fleet written as the files a gathered job leaves: `results.csv`, `matrix.csv` and
//! a `plan.json` with the node list, so that `gdrperf fleet judge` and `scripts/plot matrix` can
//! be shown and tested on a fleet whose faults are known, without a cluster.
//!
//! `results.csv` has the columns the judge reads (crate::read) and the gather adds
//! (`gdrperf_files::columns::GATHER_ADDED`), not a bench's full row: the simulator has no
//! latencies, CPUs or counters to fill the rest with. `round` is empty (the simulated job's rounds
//! are not kept per pair) and a rank is the node's index. `matrix.csv` comes from the rows by the
//! gather's own [`matrix_rows`], so it is what a real job of those rows would write.

use std::collections::HashMap;
use std::path::Path;

use gdrperf_cluster::gather::matrix_rows;
use gdrperf_files::columns::{self as column, ColumnName, GATHER_ADDED};

use crate::observation::Source;

/// The bench columns written, in the order of a bench's row (a subset of docs/columns.md).
const BENCH_COLUMNS: [ColumnName; 11] = [
    column::TEST,
    column::BYTES,
    column::BIDIRECTIONAL,
    column::QPS,
    column::MEM_LOCAL,
    column::MEM_REMOTE,
    column::DEVICE,
    column::PEER_DEVICE,
    column::BW_AVG_GBIT_S,
    column::LANE,
    column::GPU_LOCAL_BUS_ID,
];

/// Writes `dir/results.csv`, `dir/matrix.csv` and `dir/plan.json` for the rows of `source`, read
/// as the simulator makes them: write_bw of 1 MiB, GPU memory at both ends, the client sending
/// (so a row's sender is its client), lane k of a node being its k-th port.
pub fn write_job(source: &dyn Source, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let catalog = source.catalog();
    let mut lanes_seen: HashMap<u32, usize> = HashMap::new();
    let lane_of: Vec<usize> = catalog
        .ports
        .iter()
        .map(|port| {
            let count = lanes_seen.entry(port.node).or_default();
            *count += 1;
            *count - 1
        })
        .collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    source.visit(&mut |row| {
        let (client, server) = (&catalog.ports[row.sender as usize], &catalog.ports[row.receiver as usize]);
        let gbps = f64::from(row.log_gbps).exp();
        rows.push(vec![
            "write_bw".into(),
            "1048576".into(),
            "false".into(),
            "1".into(),
            "cuda".into(),
            "cuda".into(),
            client.device.clone(),
            server.device.clone(),
            format!("{gbps:.3}"),
            lane_of[row.sender as usize].to_string(),
            client.gpu_bus_id.clone().unwrap_or_default(),
            String::new(),
            server.node.to_string(),
            client.node.to_string(),
            catalog.nodes[server.node as usize].clone(),
            catalog.nodes[client.node as usize].clone(),
        ]);
    });
    let header: Vec<String> = BENCH_COLUMNS.iter().map(|name| name.to_string()).collect();
    let mut columns = header.clone();
    columns.extend(GATHER_ADDED.iter().map(|name| name.to_string()));
    write_csv(&dir.join("results.csv"), &columns, &rows)?;
    let matrix: Vec<Vec<String>> =
        matrix_rows(&header, &rows).unwrap_or_default().into_iter().map(Vec::from).collect();
    let matrix_columns: Vec<String> = column::MATRIX.iter().map(|name| name.to_string()).collect();
    write_csv(&dir.join("matrix.csv"), &matrix_columns, &matrix)?;
    let plan = serde_json::json!({
        "note": "written by gdrperf fleet simulate --write: only the node list of a job's plan.json",
        "nodes": catalog.expected_nodes,
    });
    std::fs::write(dir.join("plan.json"), serde_json::to_string_pretty(&plan)? + "\n")
}

fn write_csv(path: &Path, columns: &[String], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut writer = csv::Writer::from_path(path)?;
    writer.write_record(columns)?;
    for row in rows {
        writer.write_record(row)?;
    }
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::read_gathered;
    use crate::simulate::{self, Fault, Plan, SimConfig};
    use gdrperf_cluster::schedule::Schedule;

    #[test]
    fn the_written_job_reads_back_as_the_same_rows() {
        let config = SimConfig::new(6, 2, Plan::Fixed(Schedule::AllPairs), 0.03, vec![Fault::DeadNode], 7);
        let fleet = simulate::run(&config);
        let dir = std::env::temp_dir().join(format!("gdrperf-simulate-files-{}", std::process::id()));
        write_job(&fleet, &dir).unwrap();
        let read = read_gathered(&[dir.join("results.csv")]).unwrap();
        let mut simulated = Vec::new();
        fleet.visit(&mut |row| simulated.push(*row));
        assert_eq!(read.rows.len(), simulated.len());
        // Same ends and the same bandwidth to the 3 decimals written.
        for (read_row, row) in read.rows.iter().zip(&simulated) {
            assert_eq!(read.catalog.node_of(read_row.sender), fleet.catalog().node_of(row.sender));
            assert_eq!(read.catalog.node_of(read_row.receiver), fleet.catalog().node_of(row.receiver));
            assert!((read_row.log_gbps - row.log_gbps).abs() < 1e-4);
        }
        // The dead node is in the plan but has no row.
        assert_eq!(read.catalog.expected_nodes.len(), 6);
        assert_eq!(read.catalog.nodes.len(), 5);
        let matrix = std::fs::read_to_string(dir.join("matrix.csv")).unwrap();
        // All pairs of 5 live nodes, one direction each, 2 lanes: 20 lines and the header.
        assert_eq!(matrix.lines().count(), 21);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
