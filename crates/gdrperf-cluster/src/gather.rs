//! One CSV and one JSON per job from the per-rank files, and a verdict for every pair (the
//! rules in [`crate::verdict`]).
//!
//! The gathered rows are the benches' own rows (their `host` and `peer_host` columns name both
//! ends) with five columns added at the end: `round`, `server_rank`, `client_rank`,
//! `server_node`, `client_node` (Slurm's node names, which may differ from `hostname`). Rows
//! come grouped by client rank, then by round: the gather reads one rank's records file at a
//! time, one line at a time, and streams the rows into `results.csv` and `results.json`, so the
//! order does not depend on which rank finished first, and ordering by round across ranks would
//! need every rank's file open at once (tens of thousands). What must come out in another order
//! (the pairs' verdicts in the job's pair order, the matrix by node) is put aside in a few
//! temporary files and read back a range at a time; what is kept to the end is a tally per
//! node. Memory does not grow with the pairs, which are computed again from `plan.json` (it
//! does not list them).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::Serialize;

use crate::error::{write_error, ClusterError, Result};
use gdrperf_files::columns::{self as column, ColumnName, GATHER_ADDED};

use crate::layout::{
    create_temporary, for_each_line, read_json_if_present, write_streamed, OutputDir, PairLine, RunPlan,
};
use crate::plan::{BenchPair, Plan, Role};
use crate::spill::{Spill, MOST_BUCKETS};
use crate::step::SlurmStep;
use crate::summary::{summarize, Summary, Verdicts};
use crate::verdict::{Ended, SideLine, Sides};

/// A gathered run: its plan and the verdicts, counted.
#[derive(Debug)]
pub struct Gathered {
    pub plan: RunPlan,
    pub verdicts: Verdicts,
}

impl Gathered {
    /// Pairs in the job.
    pub fn pairs(&self) -> usize {
        self.verdicts.pairs
    }

    pub fn failed(&self) -> usize {
        self.verdicts.failed
    }

    /// Which nodes failed, and the summary's text.
    pub fn summary(&self) -> Summary {
        summarize(&self.plan, &self.verdicts)
    }
}

/// Every pair of the job at one place in one list (round order, then port order within a
/// round), computed again from `plan.json`: a pair's place is where its round starts plus its
/// port less the base port, so neither the plan nor an index lists millions of pairs.
struct PairIndex {
    step: SlurmStep,
    plan: Plan,
    /// Where each round starts in the list; one more entry: the number of pairs.
    starts: Vec<usize>,
}

impl PairIndex {
    fn new(run: &RunPlan, dir: &OutputDir) -> Result<PairIndex> {
        let (step, plan) = run.pairs(dir)?;
        let mut starts = vec![0];
        for round in 0..plan.rounds() {
            starts.push(starts[round] + plan.round_width(round));
        }
        Ok(PairIndex { step, plan, starts })
    }

    fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// Where `pair` stands; `None` for a pair the plan does not hold as it is.
    fn position(&self, pair: &BenchPair) -> Option<usize> {
        // The place first: it refuses a round past the plan's (a record of another plan).
        let place = self.plan.place_of(&self.step, pair)?;
        Some(self.starts[pair.round] + place)
    }

    /// Every pair, in list order, one round at a time.
    fn pairs(&self) -> impl Iterator<Item = BenchPair> + '_ {
        (0..self.plan.rounds()).flat_map(|round| self.plan.round(&self.step, round))
    }
}

/// The added columns' values for `pair`.
fn added(pair: &BenchPair) -> [String; 5] {
    [
        pair.round.to_string(),
        pair.server_rank.to_string(),
        pair.client_rank.to_string(),
        pair.server_node.clone(),
        pair.client_node.clone(),
    ]
}

/// Reads every rank's records under `dir`, writes `results.csv`, `matrix.csv` and `results.json`.
pub fn gather(dir: &OutputDir) -> Result<Gathered> {
    dir.check_not_older()?;
    let plan: RunPlan = read_json_if_present(&dir.plan())?
        .ok_or_else(|| ClusterError::NothingToGather { dir: dir.root.clone() })?;
    let index = PairIndex::new(&plan, dir)?;
    let mut sides = Sides::new(dir, index.len());
    let csv_path = dir.results_csv();
    let (temporary, file) = create_temporary(&csv_path)?;
    let mut csv = csv::Writer::from_writer(BufWriter::new(file));
    let csv_error = |error: csv::Error| write_error(&temporary, std::io::Error::other(error));
    let mut header: Option<Vec<String>> = None;
    let mut matrix = MatrixBuilder::default();
    let mut matrix_lines = MatrixSpill::new(dir, &plan.nodes);
    for rank in 0..plan.tasks {
        let records = dir.records(rank);
        for_each_line(&records, &mut |line: PairLine| {
            let Some(at) = index.position(&line.record.pair) else { return Ok(()) };
            let pair = &line.record.pair;
            let role = line.record.role;
            let mut side = SideLine {
                place: at,
                client: role == Role::Client,
                rows: None,
                reasons: line.problems.clone(),
                ended: Ended::default(),
            };
            if let (Role::Client, Some(columns)) = (role, &line.header) {
                match &header {
                    None => {
                        let mut all = columns.clone();
                        all.extend(GATHER_ADDED.iter().map(|name| name.to_string()));
                        csv.write_record(&all).map_err(csv_error)?;
                        matrix.columns(columns);
                        header = Some(columns.clone());
                    }
                    Some(expected) if expected != columns => {
                        return Err(ClusterError::CsvColumns {
                            path: records.clone(),
                            expected: expected.clone(),
                            found: columns.clone(),
                        })
                    }
                    Some(_) => {}
                }
                let find = |name: ColumnName| columns.iter().position(|column| column == name.name());
                let (validation, bytes) = (find(column::VALIDATION), find(column::BYTES));
                let failed_sizes: Vec<&str> = line
                    .rows
                    .iter()
                    .filter(|row| validation.is_some_and(|i| row.get(i).map(String::as_str) == Some("fail")))
                    .map(|row| bytes.and_then(|i| row.get(i)).map(String::as_str).unwrap_or("?"))
                    .collect();
                if !failed_sizes.is_empty() {
                    side.reasons.push(format!("data check failed at {} bytes", failed_sizes.join(", ")));
                }
                let added = added(pair);
                for row in &line.rows {
                    let mut full = row.clone();
                    full.extend(added.iter().cloned());
                    if let Some((key, best)) = matrix.candidate(&full) {
                        matrix_lines.put(key, best)?;
                    }
                    csv.write_record(&full).map_err(csv_error)?;
                }
                side.rows = Some(line.rows.len());
            }
            side.ended = Ended::of(line.record, &plan.run_id);
            sides.put(&side)
        })?;
    }
    let mut writer = csv.into_inner().map_err(|error| write_error(&temporary, error.into_error()))?;
    writer.flush().map_err(|source| write_error(&temporary, source))?;
    drop(writer);
    std::fs::rename(&temporary, &csv_path).map_err(|source| write_error(&csv_path, source))?;

    if matrix.has_bandwidth() {
        matrix_lines.write(&dir.root.join("matrix.csv"))?;
    }
    let mut verdicts = Verdicts::new(&plan, dir)?;
    write_results_json(dir, &plan, &index, sides, &mut verdicts)?;
    verdicts.finish()?;
    Ok(Gathered { plan, verdicts })
}

/// `results.json`: its `pairs` the verdicts as they are decided (each counted into
/// `verdicts`), its `results` streamed from the records a second time. The document is what
/// serde_json makes of a map (keys in order, two-space indent), as it always was.
fn write_results_json(
    dir: &OutputDir,
    plan: &RunPlan,
    index: &PairIndex,
    sides: Sides,
    verdicts: &mut Verdicts,
) -> Result<()> {
    let path = dir.results_json();
    let (temporary, file) = create_temporary(&path)?;
    let document = ResultsDocument {
        dir,
        plan,
        index,
        sides: Cell::new(Some(sides)),
        verdicts: RefCell::new(verdicts),
        failure: Default::default(),
    };
    let mut writer = BufWriter::new(file);
    let written = serde_json::to_writer_pretty(&mut writer, &document);
    if let Some(error) = document.failure.take() {
        return Err(error);
    }
    written.map_err(|error| write_error(&temporary, std::io::Error::other(error)))?;
    writer
        .write_all(b"\n")
        .and_then(|()| writer.flush())
        .map_err(|source| write_error(&temporary, source))?;
    drop(writer);
    std::fs::rename(&temporary, &path).map_err(|source| write_error(&path, source))
}

/// The gathered `results.json`, keys in the order serde_json sorts a map's.
struct ResultsDocument<'a> {
    dir: &'a OutputDir,
    plan: &'a RunPlan,
    index: &'a PairIndex,
    /// What each pair's sides said, taken when the pairs are written.
    sides: Cell<Option<Sides>>,
    verdicts: RefCell<&'a mut Verdicts>,
    /// A records file that could not be read while streaming.
    failure: Cell<Option<ClusterError>>,
}

impl Serialize for ResultsDocument<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let plan = self.plan;
        let mut document = serializer.serialize_struct("results", 9)?;
        document.serialize_field("bench", &plan.bench)?;
        document.serialize_field("bench_args", &plan.bench_args)?;
        document.serialize_field("left_out", &plan.plan.left_out)?;
        document.serialize_field("nodes", &plan.nodes)?;
        document.serialize_field("pair_by", &plan.plan.pair_by)?;
        document.serialize_field("pairs", &StreamedPairs(self))?;
        document.serialize_field("results", &StreamedRows(self))?;
        document.serialize_field("run_id", &plan.run_id)?;
        document.serialize_field("schedule", &plan.plan.schedule)?;
        document.end()
    }
}

/// Every pair's verdict, decided as it is written.
struct StreamedPairs<'a, 'b>(&'b ResultsDocument<'a>);

impl Serialize for StreamedPairs<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let document = self.0;
        let mut sequence = serializer.serialize_seq(Some(document.index.len()))?;
        let Some(sides) = document.sides.take() else { return sequence.end() };
        let mut verdicts = document.verdicts.borrow_mut();
        let mut failed: Option<S::Error> = None;
        let decided =
            sides.decide(document.dir, &document.plan.run_id, &mut document.index.pairs(), &mut |outcome| {
                verdicts.add(&outcome)?;
                // Through a Value, as the pairs always were: its keys come out sorted.
                let value = serde_json::to_value(&outcome).unwrap_or_default();
                sequence.serialize_element(&value).map_err(|error| {
                    failed = Some(error);
                    ClusterError::StepShape("stopped".into())
                })
            });
        if let Some(error) = failed {
            return Err(error);
        }
        if let Err(error) = decided {
            document.failure.set(Some(error));
            return Err(serde::ser::Error::custom("the verdicts could not be decided"));
        }
        sequence.end()
    }
}

/// Every client's JSON result rows with the added columns, read as they are written.
struct StreamedRows<'a, 'b>(&'b ResultsDocument<'a>);

impl Serialize for StreamedRows<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let document = self.0;
        let mut sequence = serializer.serialize_seq(None)?;
        let mut failed: Option<S::Error> = None;
        for rank in 0..document.plan.tasks {
            let read = for_each_line(&document.dir.records(rank), &mut |line| {
                if line.record.role != Role::Client || document.index.position(&line.record.pair).is_none() {
                    return Ok(());
                }
                let added = added(&line.record.pair);
                for mut row in line.results {
                    if let Some(object) = row.as_object_mut() {
                        for (name, value) in GATHER_ADDED.iter().zip(&added) {
                            let value = if name.name().ends_with("_node") {
                                serde_json::json!(value)
                            } else {
                                serde_json::json!(value.parse::<u64>().unwrap_or(0))
                            };
                            object.insert(name.to_string(), value);
                        }
                    }
                    if let Err(error) = sequence.serialize_element(&row) {
                        failed = Some(error);
                        return Err(ClusterError::StepShape("stopped".into()));
                    }
                }
                Ok(())
            });
            if let Some(error) = failed {
                return Err(error);
            }
            if let Err(error) = read {
                document.failure.set(Some(error));
                return Err(serde::ser::Error::custom("a records file could not be read"));
            }
        }
        sequence.end()
    }
}

/// One line per client node, server node and lane: the bandwidth of the largest size measured
/// (the plateau a fabric sweep compares), for a node-by-node heatmap, with the RDMA devices of
/// that size's row (`device`, `peer_device`; empty where the bench has no such column). `None`
/// when the rows carry no `bw_avg_gbit_s` (latency benches). `header` is the bench's columns;
/// each row has the [`GATHER_ADDED`] columns after them. Lines are sorted by the three keys.
pub fn matrix_rows(header: &[String], rows: &[Vec<String>]) -> Option<Vec<[String; 7]>> {
    let mut matrix = MatrixBuilder::default();
    matrix.columns(header);
    if !matrix.has_bandwidth() {
        return None;
    }
    let mut best = BTreeMap::new();
    for row in rows {
        if let Some((key, candidate)) = matrix.candidate(row) {
            keep_largest(&mut best, key, candidate);
        }
    }
    Some(best.into_iter().map(matrix_line).collect())
}

/// Where the matrix's columns are in a gathered row; each row then offers its size's line.
#[derive(Default)]
struct MatrixBuilder {
    /// Positions of bw_avg_gbit_s, bytes, lane, device, peer_device, server_node, client_node.
    columns: Option<[Option<usize>; 7]>,
}

/// Client node, server node, lane.
type MatrixKey = (String, String, String);
/// Bytes, bandwidth, client device, server device of the largest size so far.
type MatrixBest = (u64, String, String, String);

impl MatrixBuilder {
    /// The bench's columns (the rows then carry the added columns after them).
    fn columns(&mut self, header: &[String]) {
        let find = |name: ColumnName| header.iter().position(|column| column == name.name());
        self.columns = Some([
            find(column::BW_AVG_GBIT_S),
            find(column::BYTES),
            find(column::LANE),
            find(column::DEVICE),
            find(column::PEER_DEVICE),
            Some(header.len() + 3),
            Some(header.len() + 4),
        ]);
    }

    /// Whether there is a matrix to write: the rows carry a bandwidth and a size.
    fn has_bandwidth(&self) -> bool {
        matches!(self.columns, Some([Some(_), Some(_), ..]))
    }

    /// The line `row` offers, if it is one lane's bandwidth.
    fn candidate(&self, row: &[String]) -> Option<(MatrixKey, MatrixBest)> {
        let Some([Some(bw), Some(bytes), lane, device, peer_device, Some(server_node), Some(client_node)]) =
            self.columns
        else {
            return None;
        };
        let field = |index: usize| row.get(index).map(String::as_str).unwrap_or("");
        let lane = lane.map(field).unwrap_or("");
        if lane == "all" || field(bw).is_empty() {
            return None;
        }
        let size: u64 = field(bytes).parse().unwrap_or(0);
        let text = |index: Option<usize>| index.map(field).unwrap_or("").to_string();
        let key = (field(client_node).to_string(), field(server_node).to_string(), lane.to_string());
        Some((key, (size, field(bw).to_string(), text(device), text(peer_device))))
    }
}

/// Keeps the first line of the largest size per key.
fn keep_largest(best: &mut BTreeMap<MatrixKey, MatrixBest>, key: MatrixKey, candidate: MatrixBest) {
    let entry = best.entry(key).or_insert_with(|| candidate.clone());
    if candidate.0 > entry.0 {
        *entry = candidate;
    }
}

fn matrix_line(
    ((client, server, lane), (size, bw, client_device, server_device)): (MatrixKey, MatrixBest),
) -> [String; 7] {
    [client, server, lane, size.to_string(), bw, client_device, server_device]
}

/// The matrix's candidate lines put aside by client node (a range of nodes, in name order, per
/// bucket), so that `matrix.csv` is written sorted one range of client nodes at a time.
struct MatrixSpill {
    spill: Spill,
    /// The job's nodes in name order; a node's place here picks its bucket.
    sorted: Vec<String>,
    buckets: usize,
}

impl MatrixSpill {
    fn new(dir: &OutputDir, nodes: &[String]) -> MatrixSpill {
        let mut sorted = nodes.to_vec();
        sorted.sort();
        let buckets = sorted.len().clamp(1, MOST_BUCKETS);
        MatrixSpill { spill: Spill::new(dir.root.join("matrix"), buckets), sorted, buckets }
    }

    fn put(&mut self, key: MatrixKey, candidate: MatrixBest) -> Result<()> {
        // A name the job does not list still falls where its name sorts.
        let place = self.sorted.partition_point(|node| *node < key.0);
        let bucket = place * self.buckets / (self.sorted.len() + 1);
        self.spill.put(bucket, &(key, candidate))
    }

    fn write(mut self, path: &Path) -> Result<()> {
        let mut taken = Ok(());
        let written = write_streamed(path, &mut |out| {
            let mut writer = csv::Writer::from_writer(out);
            writer.write_record(column::MATRIX.map(ColumnName::name))?;
            for bucket in 0..self.buckets {
                let mut best = BTreeMap::new();
                taken = self.spill.take(bucket, &mut |(key, candidate): (MatrixKey, MatrixBest)| {
                    keep_largest(&mut best, key, candidate);
                    Ok(())
                });
                if taken.is_err() {
                    return Err(std::io::Error::other("stopped"));
                }
                for line in best.into_iter().map(matrix_line) {
                    writer.write_record(line)?;
                }
            }
            writer.flush()
        });
        written.or_else(|error| taken.and(Err(error)))
    }
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

    #[test]
    fn the_matrix_put_aside_by_node_comes_out_as_the_matrix_built_in_memory() {
        let root = std::env::temp_dir().join(format!("gdrperf-matrix-buckets-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let dir = OutputDir::new(&root);
        // More nodes than buckets, named so that name order is not their order (n10 < n2).
        let nodes: Vec<String> = (1..=300).map(|node| format!("n{node}")).collect();
        let header: Vec<String> = ["bytes", "bw_avg_gbit_s", "lane"].map(String::from).to_vec();
        let mut rows = Vec::new();
        for step in 0..3000usize {
            let (client, server) = (&nodes[step * 7 % 300], &nodes[step * 13 % 299]);
            let bytes = if step % 3 == 0 { "65536" } else { "1048576" };
            let bw = format!("{}.5", step % 97);
            let row = [bytes, &bw, &(step % 2).to_string(), "0", "0", "0", server, client];
            rows.push(row.map(String::from).to_vec());
        }
        let mut matrix = MatrixBuilder::default();
        matrix.columns(&header);
        let mut spill = MatrixSpill::new(&dir, &nodes);
        for row in &rows {
            let (key, candidate) = matrix.candidate(row).unwrap();
            spill.put(key, candidate).unwrap();
        }
        let path = root.join("matrix.csv");
        spill.write(&path).unwrap();
        let mut expected = csv::Writer::from_writer(Vec::new());
        expected.write_record(column::MATRIX.map(ColumnName::name)).unwrap();
        for line in matrix_rows(&header, &rows).unwrap() {
            expected.write_record(line).unwrap();
        }
        let expected = String::from_utf8(expected.into_inner().unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
        assert!(expected.lines().count() > 2000, "too few lines to span the buckets");
        let left: Vec<_> =
            std::fs::read_dir(&root).unwrap().flatten().map(|entry| entry.file_name()).collect();
        assert_eq!(left, ["matrix.csv"], "temporary files left");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
