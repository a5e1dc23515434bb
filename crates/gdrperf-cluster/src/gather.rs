//! One CSV and one JSON per job from the per-rank files, and a verdict for every pair.
//!
//! A pair passes when both sides' benches exited 0, the client wrote at least one row and no
//! row failed its data check. Everything else fails with a reason a person can act on: which
//! side, which exit status, the last line the bench printed, or that a task left no record at
//! all (it died, or its node did).
//!
//! The gathered rows are the benches' own rows (their `host` and `peer_host` columns name both
//! ends) with five columns added at the end: `round`, `server_rank`, `client_rank`,
//! `server_node`, `client_node` (Slurm's node names, which may differ from `hostname`). Rows
//! come grouped by client rank, then by round: the gather reads one rank's records file at a
//! time, one line at a time, and streams the rows into `results.csv` and `results.json`, so the
//! order does not depend on which rank finished first, and ordering by round across ranks would
//! need every rank's file open at once (tens of thousands). What it holds in memory is a few
//! numbers per pair and the matrix, not the rows; the pairs themselves are computed again from
//! `plan.json`, which does not list them.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::Serialize;

use crate::error::{write_error, ClusterError, Result};
use crate::layout::{
    create_temporary, for_each_line, read_json_if_present, OutputDir, PairLine, PairRecord, RunPlan,
};
use crate::plan::{BenchPair, Plan, Role};
use crate::step::SlurmStep;

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

/// What the gather keeps of one side's line (a few words per pair, not its rows or command):
/// how it ended, and for the client what its rows said.
#[derive(Default)]
struct Side {
    /// `None`: no record from this side.
    ended: Option<Ended>,
    rows: usize,
    reasons: Vec<String>,
}

struct Ended {
    /// The run the record says it belongs to, kept only when it is not this one.
    foreign_run: Option<String>,
    exit_code: Option<i32>,
    note: Option<String>,
    last_line: Option<String>,
}

impl Ended {
    fn of(record: PairRecord, run_id: &str) -> Ended {
        Ended {
            foreign_run: (record.run_id != run_id).then_some(record.run_id),
            exit_code: record.exit_code,
            note: record.note,
            last_line: record.last_line,
        }
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
    let mut sides: Vec<[Side; 2]> = (0..index.len()).map(|_| Default::default()).collect();
    let csv_path = dir.results_csv();
    let (temporary, file) = create_temporary(&csv_path)?;
    let mut csv = csv::Writer::from_writer(BufWriter::new(file));
    let csv_error = |error: csv::Error| write_error(&temporary, std::io::Error::other(error));
    let mut header: Option<Vec<String>> = None;
    let mut matrix = MatrixBuilder::default();
    for rank in 0..plan.tasks {
        let records = dir.records(rank);
        for_each_line(&records, &mut |line: PairLine| {
            let Some(at) = index.position(&line.record.pair) else { return Ok(()) };
            let pair = &line.record.pair;
            let role = line.record.role;
            let side = &mut sides[at][role as usize];
            side.reasons.extend(line.problems.iter().cloned());
            if let (Role::Client, Some(columns)) = (role, &line.header) {
                match &header {
                    None => {
                        let mut all = columns.clone();
                        all.extend(ADDED_COLUMNS.iter().map(|name| name.to_string()));
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
                let find = |name: &str| columns.iter().position(|column| column == name);
                let (validation, bytes) = (find("validation"), find("bytes"));
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
                    matrix.add(&full);
                    csv.write_record(&full).map_err(csv_error)?;
                }
                side.rows = line.rows.len();
            }
            side.ended = Some(Ended::of(line.record, &plan.run_id));
            Ok(())
        })?;
    }
    let mut writer = csv.into_inner().map_err(|error| write_error(&temporary, error.into_error()))?;
    writer.flush().map_err(|source| write_error(&temporary, source))?;
    drop(writer);
    std::fs::rename(&temporary, &csv_path).map_err(|source| write_error(&csv_path, source))?;

    let outcomes: Vec<PairOutcome> = index
        .pairs()
        .zip(&sides)
        .map(|(pair, [server, client])| {
            let mut reasons = Vec::new();
            let server_exit = side_verdict(dir, &pair, Role::Server, server, &plan.run_id, &mut reasons);
            let client_exit = side_verdict(dir, &pair, Role::Client, client, &plan.run_id, &mut reasons);
            reasons.extend(server.reasons.iter().chain(&client.reasons).cloned());
            if client.rows == 0 && client_exit == Some(0) {
                reasons.push("the client exited 0 but wrote no result rows".into());
            }
            PairOutcome {
                pair,
                passed: reasons.is_empty(),
                reasons,
                rows: client.rows,
                server_exit,
                client_exit,
            }
        })
        .collect();
    if let Some(matrix) = matrix.finish() {
        write_matrix(&dir.root.join("matrix.csv"), &matrix)?;
    }
    write_results_json(dir, &plan, &index, &outcomes)?;
    Ok(Gathered { plan, outcomes })
}

/// `results.json`, its `results` streamed from the records a second time. The document is
/// what serde_json makes of a map (keys in order, two-space indent), as it always was.
fn write_results_json(
    dir: &OutputDir,
    plan: &RunPlan,
    index: &PairIndex,
    outcomes: &[PairOutcome],
) -> Result<()> {
    let path = dir.results_json();
    let (temporary, file) = create_temporary(&path)?;
    let pairs: Vec<serde_json::Value> =
        outcomes.iter().map(|outcome| serde_json::to_value(outcome).unwrap_or_default()).collect();
    let document = ResultsDocument { dir, plan, index, pairs: &pairs, failure: Default::default() };
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
    pairs: &'a [serde_json::Value],
    /// A records file that could not be read while streaming.
    failure: std::cell::Cell<Option<ClusterError>>,
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
        document.serialize_field("pairs", self.pairs)?;
        document.serialize_field("results", &StreamedRows(self))?;
        document.serialize_field("run_id", &plan.run_id)?;
        document.serialize_field("schedule", &plan.plan.schedule)?;
        document.end()
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
                        for (name, value) in ADDED_COLUMNS.iter().zip(&added) {
                            let value = if name.ends_with("_node") {
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
    let mut matrix = MatrixBuilder::default();
    matrix.columns(header);
    for row in rows {
        matrix.add(row);
    }
    matrix.finish()
}

/// The matrix built one gathered row at a time: the best row so far per client node, server
/// node and lane.
#[derive(Default)]
struct MatrixBuilder {
    /// Positions of bw_avg_gbit_s, bytes, lane, device, peer_device, server_node, client_node.
    columns: Option<[Option<usize>; 7]>,
    best: std::collections::BTreeMap<MatrixKey, MatrixBest>,
}

/// Client node, server node, lane.
type MatrixKey = (String, String, String);
/// Bytes, bandwidth, client device, server device of the largest size so far.
type MatrixBest = (u64, String, String, String);

impl MatrixBuilder {
    /// The bench's columns (the rows then carry the added columns after them).
    fn columns(&mut self, header: &[String]) {
        let find = |name: &str| header.iter().position(|column| column == name);
        self.columns = Some([
            find("bw_avg_gbit_s"),
            find("bytes"),
            find("lane"),
            find("device"),
            find("peer_device"),
            Some(header.len() + 3),
            Some(header.len() + 4),
        ]);
    }

    fn add(&mut self, row: &[String]) {
        let Some([Some(bw), Some(bytes), lane, device, peer_device, Some(server_node), Some(client_node)]) =
            self.columns
        else {
            return;
        };
        let field = |index: usize| row.get(index).map(String::as_str).unwrap_or("");
        let lane = lane.map(field).unwrap_or("");
        if lane == "all" || field(bw).is_empty() {
            return;
        }
        let size: u64 = field(bytes).parse().unwrap_or(0);
        let this = || {
            let text = |index: Option<usize>| index.map(field).unwrap_or("").to_string();
            (size, field(bw).to_string(), text(device), text(peer_device))
        };
        let key = (field(client_node).to_string(), field(server_node).to_string(), lane.to_string());
        let entry = self.best.entry(key).or_insert_with(this);
        if size > entry.0 {
            *entry = this();
        }
    }

    /// `None` when the rows carry no bandwidth (or there were none).
    fn finish(self) -> Option<Vec<[String; 7]>> {
        let [Some(_), Some(_), ..] = self.columns? else { return None };
        Some(
            self.best
                .into_iter()
                .map(|((client, server, lane), (size, bw, client_device, server_device))| {
                    [client, server, lane, size.to_string(), bw, client_device, server_device]
                })
                .collect(),
        )
    }
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
    side: &Side,
    run_id: &str,
    reasons: &mut Vec<String>,
) -> Option<i32> {
    let rank = match role {
        Role::Server => pair.server_rank,
        Role::Client => pair.client_rank,
    };
    let node = match role {
        Role::Server => &pair.server_node,
        Role::Client => &pair.client_node,
    };
    let who = format!("{} (rank {rank} on {node})", role.name());
    let Some(record) = &side.ended else {
        reasons.push(format!("no record from the {who}: the task died, was killed, or has not finished"));
        return None;
    };
    if let Some(foreign) = &record.foreign_run {
        reasons.push(format!("the {who}'s record belongs to run {foreign}, not {run_id}"));
        return None;
    }
    let log = dir.log(rank);
    let log_name = log.strip_prefix(&dir.root).unwrap_or(&log).display().to_string();
    match record.exit_code {
        Some(0) => {}
        Some(1) => reasons
            .push(format!("{who} exit 1: a size failed its data check or a threshold (see {log_name})")),
        Some(code) => reasons.push(format!(
            "{who} exit {code}: {}",
            record.last_line.clone().unwrap_or_else(|| format!("see {log_name}"))
        )),
        None => reasons.push(format!("{who}: {}", record.note.as_deref().unwrap_or("no exit status"))),
    }
    record.exit_code
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
