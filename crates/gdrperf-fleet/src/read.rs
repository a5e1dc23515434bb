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
//! Every row read is accounted for ([`InputCount`]): kept, or dropped and why:
//! - `lane` = `all` (the sum of the lanes, not a port); an empty bandwidth (latency tests, a
//!   failed size): not bandwidth rows of a port, counted, not errors;
//! - a bandwidth that is not a number, not finite, zero or negative; one above the row's own
//!   `ceiling_gbps` by more than [`CEILING_MARGIN`]; one over [`IMPLAUSIBLE_FACTOR`] times its
//!   class's median (a unit slip, x1000);
//! - a row with fewer fields than the header (cut inside, a quoted field left open); a last line
//!   without its newline (a file cut while written: every writer ends its lines);
//! - a row identical to one read before (every field: the same row twice);
//! - a whole file identical to one read before (the same file given twice: evidence doubled).
//!
//! Refused (exit 2 at the command): a file without the columns, files whose column sets differ
//! (their rows would fall in different classes and every part be judged twice: judge them
//! apart), more than [`MAX_ROWS`] rows, a field longer than [`MAX_FIELD_BYTES`], a record longer
//! than [`MAX_RECORD_BYTES`] (stopped while it is read, not after it is held whole), a path that
//! is not a regular file (a FIFO is not waited on, `/dev/zero` not read forever), a `plan.json`
//! that is a link or over 16 MiB (`gdrperf_files::read`). Text from the
//! files (node, device, test and memory names, bus ids) is cleaned where it enters, by the
//! project's cleaning of peer text (`gdrperf_files::printable`), so nothing read reaches a
//! terminal raw.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

pub use crate::observation::InputCount;
use gdrperf_files::columns::{self as column, ColumnName};

use crate::observation::{ClassInfo, Observation, Stored};

/// The most rows read (all files of one judgement): 20 bytes each kept, 2 GB, and a duplicate
/// check of up to 16 bytes each more while reading. 4096 nodes x 8 lanes all-pairs is 67 M.
pub const MAX_ROWS: u64 = 100_000_000;
/// The most classes: the fit keeps two 4096-bin histograms a class (32 KiB), so 4096 classes
/// take 128 MiB; a job has a class per test, size, memory kinds, QPs and direction (`-a`: 23
/// sizes), far fewer.
pub const MAX_CLASSES: usize = 4096;
/// The longest field: a node, device or class name is a few dozen bytes; a field of kilobytes is
/// not a gathered file's.
pub const MAX_FIELD_BYTES: usize = 4096;
/// The longest record (one row, quoted line breaks included) read before the row is refused: a
/// gathered row is under 2 KiB, and even every one of its ~60 columns at [`MAX_FIELD_BYTES`] is
/// under 256 KiB. Without it a file of one endless line would be held whole before its fields
/// were checked.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;
/// A bandwidth above its row's own ceiling by more than this share (10 %) cannot have been
/// measured through that path: dropped. The ceiling is the path's modelled maximum
/// (gdrperf-ceiling), not a measurement: 10 % is room for its rounding, not a measured spread.
pub const CEILING_MARGIN: f64 = 0.10;
/// A bandwidth over this many times its class's median is a unit slip or a corrupt value, not a
/// fast port: dropped.
pub const IMPLAUSIBLE_FACTOR: f64 = 10.0;

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
    #[error(
        "{path} has the columns of neither {first} nor the same set: files with other column sets put the \
         same rows in different classes (every part judged twice); judge them apart. Only in one: {differ}"
    )]
    MixedColumns { path: PathBuf, first: PathBuf, differ: String },
    #[error("more than {limit} rows in all: beyond what the judge reads (judge the job's files in parts)")]
    TooManyRows { limit: u64 },
    #[error("more than {limit} classes (test, size, memory kinds, QPs, direction) in all: not a job's rows")]
    TooManyClasses { limit: usize },
    #[error("{path}: a field of more than {limit} bytes in row {row}: not a gathered results.csv")]
    FieldTooLong { path: PathBuf, limit: usize, row: u64 },
}

/// The columns the judge needs, and their index in one file.
const NEEDED: [ColumnName; 10] = [
    column::TEST,
    column::BYTES,
    column::BIDIRECTIONAL,
    column::MEM_LOCAL,
    column::MEM_REMOTE,
    column::DEVICE,
    column::PEER_DEVICE,
    column::BW_AVG_GBIT_S,
    column::SERVER_NODE,
    column::CLIENT_NODE,
];

/// Reads gathered files into one set of observations. For each file, a `plan.json` beside it
/// (the job's plan) adds its node list, so that nodes without a row are named.
pub fn read_gathered(paths: &[PathBuf]) -> Result<Stored, ReadError> {
    let mut stored = Stored::default();
    let mut ceilings = Vec::new();
    let mut files_seen: HashSet<u64> = HashSet::new();
    let mut rows_seen: HashSet<u64> = HashSet::new();
    let mut first_columns: Option<(PathBuf, Vec<String>)> = None;
    let mut fixed_schedule = false;
    for path in paths {
        stored.input.files += 1;
        if !files_seen.insert(file_hash(path)?) {
            stored.input.files_repeated.push(gdrperf_files::printable(&path.display().to_string()));
            continue;
        }
        let reading = Reading { first_columns: &mut first_columns, rows_seen: &mut rows_seen };
        read_one(path, &mut stored, &mut ceilings, reading)?;
        let plan = path.with_file_name("plan.json");
        if plan.exists() {
            let (nodes, schedule) = plan_nodes(&plan)?;
            for node in nodes {
                let node = clean(&node).into_owned();
                if !stored.catalog.expected_nodes.contains(&node) {
                    stored.catalog.expected_nodes.push(node);
                }
            }
            // Every node of a fixed schedule runs in every round (one idle a round at most);
            // locate re-pairs only suspects, so its healthy nodes stop after the first pass.
            fixed_schedule |= schedule.is_some_and(|schedule| schedule != "locate");
        }
    }
    fill_ceilings(ceilings, &mut stored);
    drop_implausible(&mut stored);
    stored.input.rows_kept = stored.rows.len() as u64;
    if fixed_schedule {
        let last = stored.last_round.iter().flatten().copied().max().unwrap_or(0);
        for (node, round) in stored.last_round.iter().enumerate() {
            if let Some(round) = round.filter(|&round| round + 1 < last) {
                stored.catalog.stopped.push((stored.catalog.nodes[node].clone(), round, last));
            }
        }
    }
    Ok(stored)
}

/// A hash of a file's bytes (std's SipHash with fixed keys: the same bytes, the same hash), to
/// tell the same file given twice.
fn file_hash(path: &Path) -> Result<u64, ReadError> {
    let csv_error =
        |source: std::io::Error| ReadError::Csv { path: path.to_path_buf(), source: source.into() };
    let mut file = gdrperf_files::read::open_named(path).map_err(csv_error)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(csv_error)?;
        if read == 0 {
            break;
        }
        buffer[..read].hash(&mut hasher);
    }
    Ok(hasher.finish())
}

/// What reading a file shares with the files before it.
struct Reading<'a> {
    first_columns: &'a mut Option<(PathBuf, Vec<String>)>,
    rows_seen: &'a mut HashSet<u64>,
}

/// Drops rows over [`IMPLAUSIBLE_FACTOR`] times their class's median.
fn drop_implausible(stored: &mut Stored) {
    let classes = stored.catalog.classes.len();
    let mut values: Vec<Vec<f32>> = vec![Vec::new(); classes];
    for row in &stored.rows {
        values[row.class as usize].push(row.log_gbps);
    }
    let limits: Vec<f32> = values
        .into_iter()
        .map(|mut list| {
            if list.is_empty() {
                return f32::INFINITY;
            }
            let middle = list.len() / 2;
            list.select_nth_unstable_by(middle, f32::total_cmp);
            list[middle] + IMPLAUSIBLE_FACTOR.ln() as f32
        })
        .collect();
    let before = stored.rows.len();
    stored.rows.retain(|row| row.log_gbps <= limits[row.class as usize]);
    stored.input.implausible += (before - stored.rows.len()) as u64;
}

/// The node list and the schedule of a plan.json.
fn plan_nodes(path: &Path) -> Result<(Vec<String>, Option<String>), ReadError> {
    // Found beside the results, not named by the user: never through a link, at most 16 MiB.
    let text = gdrperf_files::read::read_text_bounded(path, gdrperf_files::read::MAX_SMALL_FILE_BYTES)
        .map_err(|source| ReadError::Plan { path: path.to_path_buf(), source })?;
    let plan: serde_json::Value = serde_json::from_str(&text)
        .map_err(|source| ReadError::PlanJson { path: path.to_path_buf(), source })?;
    let nodes = plan
        .get("nodes")
        .and_then(|nodes| nodes.as_array())
        .map(|nodes| nodes.iter().filter_map(|node| node.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let schedule = plan.get("schedule").and_then(|schedule| schedule.as_str()).map(str::to_string);
    Ok((nodes, schedule))
}

/// A reader of the file that fails once more than [`MAX_RECORD_BYTES`] (plus the CSV reader's
/// read-ahead) are read without [`RecordBound::record_ended`] being called: a record's size is
/// bounded while it is read.
struct RecordBound {
    file: std::fs::File,
    since_record: std::rc::Rc<std::cell::Cell<u64>>,
}

impl RecordBound {
    /// The CSV reader's own buffer (csv's default, 8 KiB) may read past the record just ended.
    const READ_AHEAD: u64 = 64 << 10;
}

impl Read for RecordBound {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.since_record.get() > MAX_RECORD_BYTES + Self::READ_AHEAD {
            return Err(std::io::Error::other(format!(
                "a record of more than {MAX_RECORD_BYTES} bytes: not a gathered results.csv"
            )));
        }
        let read = self.file.read(buffer)?;
        self.since_record.set(self.since_record.get() + read as u64);
        Ok(read)
    }
}

/// The file's CSV reader and the count its records reset (see [`RecordBound`]). Only a regular
/// file is read (`open_named`: the user's own link is followed, a FIFO or device refused).
type BoundReader = (csv::Reader<RecordBound>, std::rc::Rc<std::cell::Cell<u64>>);

fn reader(path: &Path) -> Result<BoundReader, ReadError> {
    let file = gdrperf_files::read::open_named(path)
        .map_err(|source| ReadError::Csv { path: path.to_path_buf(), source: source.into() })?;
    let since_record = std::rc::Rc::new(std::cell::Cell::new(0));
    let bound = RecordBound { file, since_record: since_record.clone() };
    Ok((csv::ReaderBuilder::new().comment(Some(b'#')).flexible(true).from_reader(bound), since_record))
}

/// Column indices by name; the optional ones may be absent (older files).
struct Columns {
    needed: [usize; NEEDED.len()],
    qps: Option<usize>,
    lane: Option<usize>,
    round: Option<usize>,
    bus_id: Option<usize>,
    ceiling: Option<usize>,
    nic_guid: Option<usize>,
    gpu_uuid: Option<usize>,
}

fn columns(path: &Path, header: &csv::StringRecord) -> Result<Columns, ReadError> {
    let find = |name: ColumnName| header.iter().position(|column| column == name.name());
    let mut needed = [0; NEEDED.len()];
    for (slot, name) in needed.iter_mut().zip(NEEDED) {
        *slot =
            find(name).ok_or(ReadError::MissingColumn { path: path.to_path_buf(), column: name.name() })?;
    }
    Ok(Columns {
        needed,
        qps: find(column::QPS),
        lane: find(column::LANE),
        round: find(column::ROUND),
        bus_id: find(column::GPU_LOCAL_BUS_ID),
        ceiling: find(column::CEILING_GBPS),
        nic_guid: find(column::NIC_NODE_GUID),
        gpu_uuid: find(column::GPU_LOCAL_UUID),
    })
}

fn read_one(
    path: &Path,
    stored: &mut Stored,
    ceilings: &mut Vec<Vec<f32>>,
    reading: Reading<'_>,
) -> Result<(), ReadError> {
    let (mut reader, since_record) = reader(path)?;
    let header =
        reader.headers().map_err(|source| ReadError::Csv { path: path.to_path_buf(), source })?.clone();
    since_record.set(0);
    let columns = columns(path, &header)?;
    let mut names: Vec<String> = header.iter().map(str::to_string).collect();
    names.sort();
    match reading.first_columns {
        None => *reading.first_columns = Some((path.to_path_buf(), names)),
        Some((first, first_names)) if *first_names != names => {
            let differ: Vec<String> = names
                .iter()
                .filter(|name| !first_names.contains(name))
                .chain(first_names.iter().filter(|name| !names.contains(name)))
                .map(|name| gdrperf_files::printable(name))
                .collect();
            return Err(ReadError::MixedColumns {
                path: path.to_path_buf(),
                first: first.clone(),
                differ: differ.join(", "),
            });
        }
        Some(_) => {}
    }
    // Whether the file ends with its newline: if not, its last line was cut.
    let cut_at_end = ends_without_newline(path)?;
    let mut record = csv::StringRecord::new();
    let mut pending: Option<csv::StringRecord> = None;
    let mut row_number = 0u64;
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|source| ReadError::Csv { path: path.to_path_buf(), source })?;
        since_record.set(0);
        // Each record is judged once the next is read, so the last one is known as the last.
        let Some(current) = pending.take() else {
            if !more {
                break;
            }
            pending = Some(record.clone());
            continue;
        };
        if more {
            pending = Some(record.clone());
        }
        row_number += 1;
        stored.input.rows_read += 1;
        if stored.input.rows_read > MAX_ROWS {
            return Err(ReadError::TooManyRows { limit: MAX_ROWS });
        }
        if current.iter().any(|field| field.len() > MAX_FIELD_BYTES) {
            return Err(ReadError::FieldTooLong {
                path: path.to_path_buf(),
                limit: MAX_FIELD_BYTES,
                row: row_number,
            });
        }
        if !more && cut_at_end {
            stored.input.truncated_last_lines += 1;
            break;
        }
        take_row(&current, &header, &columns, stored, ceilings, reading.rows_seen);
        if stored.catalog.classes.len() > MAX_CLASSES {
            return Err(ReadError::TooManyClasses { limit: MAX_CLASSES });
        }
        if !more {
            break;
        }
    }
    Ok(())
}

/// Whether the file's last byte is not a newline (an empty file: no).
fn ends_without_newline(path: &Path) -> Result<bool, ReadError> {
    use std::io::{Seek, SeekFrom};
    let csv_error =
        |source: std::io::Error| ReadError::Csv { path: path.to_path_buf(), source: source.into() };
    let mut file = gdrperf_files::read::open_named(path).map_err(csv_error)?;
    let length = file.metadata().map_err(csv_error)?.len();
    if length == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(length - 1)).map_err(csv_error)?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last).map_err(csv_error)?;
    Ok(last[0] != b'\n')
}

/// One record into an observation, or counted as dropped.
fn take_row(
    record: &csv::StringRecord,
    header: &csv::StringRecord,
    columns: &Columns,
    stored: &mut Stored,
    ceilings: &mut Vec<Vec<f32>>,
    rows_seen: &mut HashSet<u64>,
) {
    let input = &mut stored.input;
    if record.len() < header.len() {
        input.short_rows += 1;
        return;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for field in record.iter() {
        field.hash(&mut hasher);
    }
    if !rows_seen.insert(hasher.finish()) {
        input.duplicates += 1;
        return;
    }
    {
        let field = |index: usize| record.get(index).unwrap_or("").trim();
        let bw = field(columns.needed[7]);
        if columns.lane.is_some_and(|index| field(index) == "all") {
            input.lane_all += 1;
            return;
        }
        if bw.is_empty() {
            input.no_bandwidth += 1;
            return;
        }
        let Ok(gbps) = bw.parse::<f64>() else {
            input.not_a_number += 1;
            return;
        };
        if !gbps.is_finite() {
            input.not_finite += 1;
            return;
        }
        if gbps <= 0.0 {
            input.not_positive += 1;
            return;
        }
        let ceiling = columns.ceiling.and_then(|index| field(index).parse::<f64>().ok());
        if ceiling.is_some_and(|ceiling| {
            ceiling > 0.0 && ceiling.is_finite() && gbps > ceiling * (1.0 + CEILING_MARGIN)
        }) {
            input.above_ceiling += 1;
            return;
        }
    }
    let field = |index: usize| clean(record.get(index).unwrap_or("").trim());
    let needed = columns.needed.map(field);
    let [test, bytes, bidirectional, mem_local, mem_remote, device, peer_device, bw, server_node, client_node] =
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(|index| &*needed[index]);
    let gbps: f64 = bw.parse().unwrap_or(f64::NAN);
    {
        let qps = columns.qps.map(field).unwrap_or_default();
        let qps = &*qps;
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
                slot.get_or_insert_with(|| value.into_owned());
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
        if let Some(round) = columns.round.and_then(|index| field(index).parse::<u64>().ok()) {
            for port in [client, server] {
                let node = stored.catalog.ports[port as usize].node as usize;
                if stored.last_round.len() <= node {
                    stored.last_round.resize(node + 1, None);
                }
                let last = &mut stored.last_round[node];
                *last = Some(last.map_or(round, |before: u64| before.max(round)));
            }
        }
    }
}

/// Text from a file as it may be shown: the project's one cleaning of text from outside
/// (control, bidi and format characters made visible), borrowed unchanged when clean.
fn clean(text: &str) -> Cow<'_, str> {
    gdrperf_files::text::printable_cow(text)
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
