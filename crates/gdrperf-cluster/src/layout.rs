//! The output folder of a run, shared by all tasks of the step (it must be on a file system
//! every node sees: the job's working directory usually is):
//!
//! ```text
//! DIR/plan.json                  the plan, without its pairs: the schedule and its parameters,
//!                                the step's layout, rounds, pair runs in all and per unit (rank 0
//!                                writes it; for `locate`, again after each round it decides)
//! DIR/locate.json                the rounds rank 0 decided after the first pass (`locate` only)
//! DIR/status/rankN.json          rank N's progress: rounds finished, a heartbeat, finished
//!                                (its peers and rank 0 wait on it)
//! DIR/status/rankN.records.jsonl one line per pair rank N took part in, appended as each ends:
//!                                its side's record and, for the client, the bench's rows
//! DIR/logs/rankN.log             rank N's benches' console output, appended, a header per pair
//! DIR/pairs/rankN.csv, .json     the result files of rank N's running client bench, moved into
//!                                its records when the bench ends
//! DIR/results.csv, results.json  the gathered job: every pair's rows, both node names in each
//! DIR/matrix.csv                 client node, server node, lane: bandwidth of the largest size,
//!                                and each end's device
//! DIR/summary.txt                pass/fail per pair and the failing nodes
//! DIR/fleet.txt, fleet.json      the fleet judgement of results.csv (gdrperf-fleet; the CLI
//!                                writes it, this crate does not judge)
//! ```
//!
//! A job writes a fixed number of files per rank, whatever the number of pairs: at thousands of
//! nodes all-pairs is millions of pair runs, and a shared file system slows down (and NFS grows
//! flaky) with millions of small files. Files another rank polls (progress, plan, decisions) are
//! written whole to a temporary name and renamed, so a reader never sees half of one; a rank's
//! records and log are appended by that rank alone and read only after it finished the pair.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{read_error, write_error, ClusterError, Result};
use crate::plan::{BenchPair, Plan, PlanSummary, Role};
use crate::step::{Distribution, SlurmStep};

/// The plan with what the run was: `plan.json`. O(nodes) however many pairs: every pair is
/// computed again from the layout and the schedule's parameters ([`RunPlan::pairs`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunPlan {
    /// `job.step`.
    pub run_id: String,
    /// The bench binary's name (`gdr-write-bw`).
    pub bench: String,
    /// The bench arguments as given (placeholders unexpanded), secrets redacted
    /// ([`gdrperf_command_line::redact_command_line`]): plan.json is gathered and shared.
    pub bench_args: Vec<String>,
    pub tasks: usize,
    pub nodes: Vec<String>,
    /// Tasks on each node and how srun spread them: which rank ran where.
    pub tasks_per_node: Vec<usize>,
    pub distribution: String,
    #[serde(flatten)]
    pub plan: PlanSummary,
}

impl RunPlan {
    /// The plan of a run of `step`.
    pub fn new(step: &SlurmStep, plan: &Plan, bench: String, bench_args: Vec<String>) -> RunPlan {
        RunPlan {
            run_id: step.run_id(),
            bench,
            bench_args,
            tasks: step.tasks,
            nodes: step.nodes.clone(),
            tasks_per_node: step.tasks_per_node.clone(),
            distribution: step.distribution.name().to_string(),
            plan: plan.summary(step),
        }
    }

    /// The step as rank 0 saw it, and its plan computed again (for `locate`, with the rounds
    /// `locate.json` in `dir` holds).
    pub fn pairs(&self, dir: &OutputDir) -> Result<(SlurmStep, Plan)> {
        let broken = |reason: String| read_error(&dir.plan(), reason);
        let distribution = Distribution::from_name(&self.distribution)
            .ok_or_else(|| broken(format!("unknown distribution {:?}", self.distribution)))?;
        if self.tasks_per_node.len() != self.nodes.len()
            || self.tasks_per_node.iter().sum::<usize>() != self.tasks
        {
            return Err(broken(format!(
                "tasks per node {:?} do not lay out {} tasks on {} nodes",
                self.tasks_per_node,
                self.tasks,
                self.nodes.len()
            )));
        }
        let step = SlurmStep::from_layout(self.nodes.clone(), self.tasks_per_node.clone(), distribution);
        let decided = match read_json_if_present::<Decisions>(&dir.decisions())? {
            Some(decisions) if decisions.run_id == self.run_id => decisions.rounds,
            _ => Vec::new(),
        };
        let plan = Plan::from_summary(&step, &self.plan, &decided)?;
        Ok((step, plan))
    }
}

/// `locate.json`: the rounds rank 0 decided after the first pass of `locate`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Decisions {
    pub run_id: String,
    pub rounds: Vec<Vec<BenchPair>>,
    pub finished: bool,
}

/// One side's account of one pair: `status/LABEL.ROLE.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairRecord {
    pub run_id: String,
    pub pair: BenchPair,
    pub role: Role,
    /// The bench's exit status; `None` when it was killed or never started.
    pub exit_code: Option<i32>,
    /// Why there is no exit status, or what we did to the bench (killed after a timeout).
    pub note: Option<String>,
    pub seconds: f64,
    /// The command line that ran (placeholders expanded, secrets redacted).
    pub command: Vec<String>,
    /// The last non-empty line the bench printed, where the benches put their error.
    #[serde(default)]
    pub last_line: Option<String>,
}

/// One line of `status/rankN.records.jsonl`: a side's record of one pair and, for the client,
/// what its bench wrote (its CSV's header and rows, its JSON's result rows), so that the
/// gathered files can be made again from the per-rank files alone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairLine {
    #[serde(flatten)]
    pub record: PairRecord,
    /// The CSV's columns; `None` when the bench wrote no CSV (a server, or a client that failed).
    #[serde(default)]
    pub header: Option<Vec<String>>,
    #[serde(default)]
    pub rows: Vec<Vec<String>>,
    /// The `results` array of the bench's JSON.
    #[serde(default)]
    pub results: Vec<serde_json::Value>,
    /// The bench's files could not be read: why.
    #[serde(default)]
    pub problems: Vec<String>,
}

impl PairLine {
    /// A record with no bench files taken yet.
    pub fn new(record: PairRecord) -> PairLine {
        PairLine { record, header: None, rows: Vec::new(), results: Vec::new(), problems: Vec::new() }
    }

    /// The record of a pair that could not run, and why.
    pub fn not_run(run_id: &str, pair: &BenchPair, role: Role, why: String) -> PairLine {
        PairLine::new(PairRecord {
            run_id: run_id.to_string(),
            pair: pair.clone(),
            role,
            exit_code: None,
            note: Some(format!("not run: {why}")),
            seconds: 0.0,
            command: Vec::new(),
            last_line: None,
        })
    }

    /// Moves the client bench's CSV and JSON (when it wrote them) into this line and removes
    /// them: the next pair's bench writes to the same names. A file that cannot be read is
    /// noted in `problems` for the gathered verdict.
    pub fn take_bench_files(&mut self, csv: &Path, json: &Path) {
        match read_csv(csv) {
            Ok(Some((header, rows))) => {
                self.header = Some(header);
                self.rows = rows;
            }
            Ok(None) => {}
            Err(error) => self.problems.push(error.to_string()),
        }
        match read_json_if_present::<serde_json::Value>(json) {
            Ok(Some(mut document)) => {
                if let Some(serde_json::Value::Array(rows)) =
                    document.get_mut("results").map(serde_json::Value::take)
                {
                    self.results = rows;
                }
            }
            Ok(None) => {}
            Err(error) => self.problems.push(error.to_string()),
        }
        for path in [csv, json] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A CSV file read whole: its header and its records.
type CsvTable = (Vec<String>, Vec<Vec<String>>);

/// Header and records of a bench's CSV; `None` when the file is absent or empty.
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

/// `status/rankN.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Progress {
    pub run_id: String,
    pub rank: usize,
    pub node: String,
    pub rounds_done: usize,
    /// Counts up about once a second while this rank waits for a peer of its own: a rank waiting
    /// for this one then knows it is alive (not dead, only held up by another) and keeps waiting.
    #[serde(default)]
    pub heartbeat: u64,
    /// The rank ran all its rounds and wrote its last record (rank 0 waits for this before
    /// gathering).
    #[serde(default)]
    pub finished: bool,
}

/// Paths inside the output folder.
#[derive(Debug, Clone)]
pub struct OutputDir {
    pub root: PathBuf,
}

impl OutputDir {
    pub fn new(root: impl Into<PathBuf>) -> OutputDir {
        OutputDir { root: root.into() }
    }

    /// Creates the sub-folders (every task does; creating an existing folder is fine).
    pub fn create(&self) -> Result<()> {
        for sub in ["pairs", "logs", "status"] {
            let path = self.root.join(sub);
            std::fs::create_dir_all(&path).map_err(|source| write_error(&path, source))?;
        }
        Ok(())
    }

    pub fn plan(&self) -> PathBuf {
        self.root.join("plan.json")
    }
    /// The rounds rank 0 decided after the first pass of `locate`.
    pub fn decisions(&self) -> PathBuf {
        self.root.join("locate.json")
    }
    /// Rank `rank`'s progress.
    pub fn progress(&self, rank: usize) -> PathBuf {
        self.root.join("status").join(format!("rank{rank}.json"))
    }
    /// Rank `rank`'s records, one line per pair.
    pub fn records(&self, rank: usize) -> PathBuf {
        self.root.join("status").join(format!("rank{rank}.records.jsonl"))
    }
    /// Rank `rank`'s benches' console output.
    pub fn log(&self, rank: usize) -> PathBuf {
        self.root.join("logs").join(format!("rank{rank}.log"))
    }
    /// Where rank `rank`'s running client bench writes its CSV.
    pub fn bench_csv(&self, rank: usize) -> PathBuf {
        self.root.join("pairs").join(format!("rank{rank}.csv"))
    }
    /// Where rank `rank`'s running client bench writes its JSON.
    pub fn bench_json(&self, rank: usize) -> PathBuf {
        self.root.join("pairs").join(format!("rank{rank}.json"))
    }
    pub fn results_csv(&self) -> PathBuf {
        self.root.join("results.csv")
    }
    pub fn results_json(&self) -> PathBuf {
        self.root.join("results.json")
    }
    pub fn summary(&self) -> PathBuf {
        self.root.join("summary.txt")
    }

    /// Refuses a folder that already holds another run's files, so that stale records of an
    /// earlier job are never gathered as this one's.
    pub fn check_not_foreign(&self, run_id: &str) -> Result<()> {
        let foreign = |found: String| ClusterError::ForeignRun {
            dir: self.root.clone(),
            found,
            ours: run_id.to_string(),
        };
        if let Some(plan) = read_json_if_present::<RunId>(&self.plan())? {
            if plan.run_id != run_id {
                return Err(foreign(plan.run_id));
            }
        }
        let status = self.root.join("status");
        let Ok(entries) = std::fs::read_dir(&status) else { return Ok(()) };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            if name.starts_with("rank") && name.ends_with(".json") {
                if let Some(progress) = read_json_if_present::<Progress>(&path)? {
                    if progress.run_id != run_id {
                        return Err(foreign(progress.run_id));
                    }
                }
            }
        }
        Ok(())
    }

    /// Refuses a folder an older gdrperf wrote (a record file per pair and side, or a plan that
    /// lists its pairs): this one would find no records in it and call every pair unrun.
    pub fn check_not_older(&self) -> Result<()> {
        let older = |found: String, expected: &str| ClusterError::OlderLayout {
            dir: self.root.clone(),
            found,
            expected: expected.to_string(),
        };
        let (mut per_pair, mut per_rank) = (Vec::new(), false);
        if let Ok(entries) = std::fs::read_dir(self.root.join("status")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                per_rank |= name.ends_with(".records.jsonl");
                if [".server.json", ".client.json", ".progress", ".done"]
                    .iter()
                    .any(|end| name.ends_with(end))
                {
                    per_pair.push(name);
                }
            }
        }
        if !per_rank && !per_pair.is_empty() {
            per_pair.sort();
            return Err(older(
                format!("{} per-pair status files (status/{}, ...)", per_pair.len(), per_pair[0]),
                "status/rankN.records.jsonl, one per rank",
            ));
        }
        let listed = read_json_if_present::<serde_json::Value>(&self.plan())?
            .is_some_and(|plan| plan.get("pairs").is_some() && plan.get("tasks_per_node").is_none());
        if listed {
            return Err(older("a plan.json that lists every pair".into(), "a plan.json with tasks_per_node"));
        }
        Ok(())
    }
}

/// The one field of `plan.json` a run checks before it writes its own.
#[derive(Deserialize)]
struct RunId {
    run_id: String,
}

/// Writes `value` as JSON to `path` through a temporary file and a rename.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| write_error(path, std::io::Error::other(error)))?;
    write_text(path, &(text + "\n"))
}

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    write_streamed(path, &mut |writer| writer.write_all(text.as_bytes()))
}

/// Writes what `write` writes to `path` through a buffered temporary file and a rename: files
/// too large to build in memory first (the summary of millions of pairs).
pub fn write_streamed(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    // gdrperf-files' one path for outputs: a new temporary file, then a rename that refuses a
    // link planted at `path` (issue 44).
    let new = gdrperf_files::NewFile::create(path).map_err(|source| write_error(path, source))?;
    let temporary = new.temporary().to_path_buf();
    let mut writer = std::io::BufWriter::new(new);
    write(&mut writer).and_then(|()| writer.flush()).map_err(|source| write_error(&temporary, source))?;
    let new = writer.into_inner().map_err(|error| write_error(&temporary, error.into_error()))?;
    new.commit().map(drop).map_err(|source| write_error(path, source))
}

/// A new temporary file beside `path`, to be written and renamed onto it (what [`write_text`]
/// does; the gather streams its large files through one).
pub fn create_temporary(path: &Path) -> Result<(PathBuf, std::fs::File)> {
    // `X.<pid>-<n>.partial` (n counts this process's writes), created with O_CREAT|O_EXCL (std's `create_new`): the output folder
    // may be group-writable, and a link planted at a fixed name would be followed and the file
    // it points to overwritten; now such a name stops the write with an error.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}-{write}.partial", std::process::id()));
    let temporary = PathBuf::from(temporary);
    // Readable too: the gather reads back what it put aside in such files.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&temporary)
        .map_err(|source| write_error(&temporary, source))?;
    Ok((temporary, file))
}

/// A file this rank alone appends to: created afresh (an earlier attempt's file, or a link
/// planted at its name in a group-writable folder, is removed, not followed) and kept open for
/// the whole task, so that nothing swapped in at the name later is written through.
pub fn create_append_only(path: &Path) -> Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(write_error(path, source)),
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(path)
        .map_err(|source| write_error(path, source))
}

/// Appends `value` as one JSON line to `file` (at `path`, for the error) in one write.
pub fn append_json_line<T: Serialize>(file: &mut std::fs::File, path: &Path, value: &T) -> Result<()> {
    let mut line =
        serde_json::to_string(value).map_err(|error| write_error(path, std::io::Error::other(error)))?;
    line.push('\n');
    std::io::Write::write_all(file, line.as_bytes()).map_err(|source| write_error(path, source))
}

/// The longest line of a rank's records file read: a pair's line (its nodes, bench arguments and
/// a failure's reason, each cut where it is made) is a few KiB; a longer one is not a rank's.
pub const MAX_RECORD_LINE_BYTES: u64 = 1 << 20;

/// Calls `each` with every line of a rank's records file, one at a time (bounded memory however
/// many pairs the rank ran, each line at most [`MAX_RECORD_LINE_BYTES`]); an absent file has
/// none. A last line without its newline (the rank died while writing it) is skipped. The file
/// is read only if it is a regular file, never through a link (the job's folder is shared).
pub fn for_each_line(path: &Path, each: &mut dyn FnMut(PairLine) -> Result<()>) -> Result<()> {
    use std::io::{BufRead, Read};
    let file = match gdrperf_files::read::open_regular(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(read_error(path, error)),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_RECORD_LINE_BYTES + 1)
            .read_line(&mut line)
            .map_err(|error| read_error(path, error))?;
        if read as u64 > MAX_RECORD_LINE_BYTES {
            let error = std::io::Error::other(format!(
                "a line of more than {MAX_RECORD_LINE_BYTES} bytes: not a rank's records"
            ));
            return Err(read_error(path, error));
        }
        if read == 0 || !line.ends_with('\n') {
            return Ok(());
        }
        let record: PairLine = serde_json::from_str(&line).map_err(|error| read_error(path, error))?;
        each(record)?;
    }
}

/// Reads a JSON file; `Ok(None)` when it does not exist (yet). The folder is shared: a link, a
/// FIFO or a file over [`gdrperf_files::MAX_RESULT_FILE_BYTES`] at the name is an error, never
/// followed, waited on or read whole (issue 44).
pub fn read_json_if_present<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match gdrperf_files::read_text_bounded(path, gdrperf_files::MAX_RESULT_FILE_BYTES) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|error| read_error(path, error)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(read_error(path, error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_at_the_next_temporary_name_is_not_followed() {
        let folder = std::env::temp_dir().join(format!("gdrperf-layout-planted-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let victim = folder.join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        let path = folder.join("plan.json");
        // Every name this process could pick next: the link is planted at each.
        // (the other tests of this binary write a few dozen files at most before this one).
        for write in 0..4096 {
            let link = folder.join(format!("plan.json.{}-{write}.partial", std::process::id()));
            std::os::unix::fs::symlink(&victim, link).unwrap();
        }
        assert!(write_text(&path, "new\n").is_err(), "the planted link was not refused");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "the link was followed");
        // A link at the final name (fleet.txt, summary.json in the shared folder) is refused too.
        let final_name = folder.join("fleet.json");
        std::os::unix::fs::symlink(&victim, &final_name).unwrap();
        let error = write_text(&final_name, "new\n").unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "the link was followed");
        std::fs::remove_dir_all(&folder).unwrap();
    }
    #[test]
    fn a_records_file_is_read_through_no_link_and_no_line_past_its_bound() {
        let folder = std::env::temp_dir().join(format!("gdrperf-layout-records-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let mut lines = 0;
        let mut count = |_: PairLine| {
            lines += 1;
            Ok(())
        };
        // A line of 2 MiB is refused by its length while it is read.
        let records = folder.join("rank-0.jsonl");
        std::fs::write(&records, format!("{}\n", "x".repeat(2 << 20))).unwrap();
        let error = for_each_line(&records, &mut count).unwrap_err();
        assert!(error.to_string().contains("a line of more than 1048576 bytes"), "{error}");
        // A link at a rank's records name is not followed.
        std::fs::remove_file(&records).unwrap();
        let elsewhere = folder.join("elsewhere.jsonl");
        std::fs::write(&elsewhere, "").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &records).unwrap();
        let error = for_each_line(&records, &mut count).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        // An absent file has no lines.
        for_each_line(&folder.join("absent.jsonl"), &mut count).unwrap();
        assert_eq!(lines, 0);
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
