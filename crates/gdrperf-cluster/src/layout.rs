//! The output folder of a run, shared by all tasks of the step (it must be on a file system
//! every node sees: the job's working directory usually is):
//!
//! ```text
//! DIR/plan.json                  every pair of the run (rank 0 writes it)
//! DIR/pairs/LABEL.csv, .json     the client's result files, one pair each
//! DIR/logs/LABEL.server.log      each side's console output
//! DIR/status/LABEL.server.json   each side's record: exit status, time, files
//! DIR/status/rankN.progress      rounds rank N has finished (its peers wait on it)
//! DIR/status/rankN.done          rank N is finished (rank 0 waits on all before gathering)
//! DIR/results.csv, results.json  the gathered job: every pair's rows, both node names in each
//! DIR/matrix.csv                 client node, server node, lane: bandwidth of the largest size,
//!                                and each end's device
//! DIR/summary.txt                pass/fail per pair and the failing nodes
//! DIR/fleet.txt, fleet.json      the fleet judgement of results.csv (gdrperf-fleet; the CLI
//!                                writes it, this crate does not judge)
//! ```
//!
//! Files are written whole to a temporary name and renamed, so a task polling a shared file
//! system never reads half a record.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{read_error, write_error, ClusterError, Result};
use crate::plan::{BenchPair, Plan, Role};

/// The plan with what the run was: `plan.json`.
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
    #[serde(flatten)]
    pub plan: Plan,
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
}

/// `status/rankN.progress` and `.done`.
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
    pub fn csv(&self, pair: &BenchPair) -> PathBuf {
        self.root.join("pairs").join(format!("{}.csv", pair.label()))
    }
    pub fn json(&self, pair: &BenchPair) -> PathBuf {
        self.root.join("pairs").join(format!("{}.json", pair.label()))
    }
    pub fn log(&self, pair: &BenchPair, role: Role) -> PathBuf {
        self.root.join("logs").join(format!("{}.{}.log", pair.label(), role.name()))
    }
    pub fn record(&self, pair: &BenchPair, role: Role) -> PathBuf {
        self.root.join("status").join(format!("{}.{}.json", pair.label(), role.name()))
    }
    pub fn progress(&self, rank: usize) -> PathBuf {
        self.root.join("status").join(format!("rank{rank}.progress"))
    }
    pub fn done(&self, rank: usize) -> PathBuf {
        self.root.join("status").join(format!("rank{rank}.done"))
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
        if let Some(plan) = read_json_if_present::<RunPlan>(&self.plan())? {
            if plan.run_id != run_id {
                return Err(foreign(plan.run_id));
            }
        }
        let status = self.root.join("status");
        let Ok(entries) = std::fs::read_dir(&status) else { return Ok(()) };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|extension| extension == "progress") {
                if let Some(progress) = read_json_if_present::<Progress>(&path)? {
                    if progress.run_id != run_id {
                        return Err(foreign(progress.run_id));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Writes `value` as JSON to `path` through a temporary file and a rename.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| write_error(path, std::io::Error::other(error)))?;
    write_text(path, &(text + "\n"))
}

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    // `X.<pid>-<n>.partial` (n counts this process's writes), created with O_CREAT|O_EXCL (std's `create_new`): the output folder
    // may be group-writable, and a link planted at a fixed name would be followed and the file
    // it points to overwritten; now such a name stops the write with an error.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}-{write}.partial", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .map_err(|source| write_error(&temporary, source))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|source| write_error(&temporary, source))?;
    std::fs::rename(&temporary, path).map_err(|source| write_error(path, source))
}

/// Reads a JSON file; `Ok(None)` when it does not exist (yet).
pub fn read_json_if_present<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
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
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
