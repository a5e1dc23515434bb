//! What can go wrong between Slurm's environment and the gathered results: one variant per
//! failing step, each message saying what to change.

use std::path::PathBuf;

use thiserror::Error;

/// Errors of the cluster library.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// A Slurm hostlist (`node[01-04,07]`) that does not parse.
    #[error("hostlist {text:?}: {reason} (Slurm's syntax: name[1-4,7], several brackets allowed, zero padding kept)")]
    Hostlist { text: String, reason: String },

    /// A variable srun always sets is missing: not inside a Slurm step.
    #[error("{name} is not set: run this under srun (inside sbatch or salloc), not directly")]
    MissingVariable { name: &'static str },

    /// A Slurm variable holds something we cannot read.
    #[error("{name}={value:?}: {reason}")]
    BadVariable { name: &'static str, value: String, reason: String },

    /// The step's shape does not fit the chosen pairing.
    #[error("{0}")]
    StepShape(String),

    /// Ports of the pairs would run past 65535.
    #[error("TCP ports {first}..={last} needed for {pairs} concurrent pairs do not fit below 65536: lower --base-port")]
    PortRange { first: u32, last: u32, pairs: usize },

    /// The bench arguments set something that `gdrperf slurm` sets per pair.
    #[error("bench argument {argument:?}: {reason}")]
    BenchArgument { argument: String, reason: String },

    /// A `{placeholder}` in the bench arguments that we do not know.
    #[error("unknown placeholder {{{name}}} in bench argument {argument:?} (known: {known})")]
    UnknownPlaceholder { name: String, argument: String, known: &'static str },

    /// The output folder already holds another step's results.
    #[error("{dir} holds results of run {found}, this is run {ours}: give a fresh --out folder")]
    ForeignRun { dir: PathBuf, found: String, ours: String },

    /// The peer of a round was not free for it in time (still busy, dead, or never started):
    /// its progress file showed no change for `seconds`.
    #[error(
        "rank {peer_rank} ({peer_node}) was not ready for round {round}: no sign of it for {seconds} s \
         (is --out on a file system every node shares? raise --round-timeout for long benches)"
    )]
    PeerWait { peer_rank: usize, peer_node: String, round: usize, seconds: u64 },

    /// The bench binary could not be started.
    #[error("cannot start {program}: {source} (is it on PATH or next to gdrperf?)")]
    Spawn { program: String, source: std::io::Error },

    /// A file of the output folder could not be read.
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },

    /// A file of the output folder could not be written.
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },

    /// The per-pair CSV files of one bench disagree on their columns.
    #[error("{path} has columns {found:?}, other pairs have {expected:?}: were they made by different gdrperf versions?")]
    CsvColumns { path: PathBuf, expected: Vec<String>, found: Vec<String> },

    /// The folder was written by an older gdrperf whose files this one does not read.
    #[error(
        "{dir} was written by an older gdrperf: found {found}, expected {expected}; gather it with the \
         gdrperf that ran the job"
    )]
    OlderLayout { dir: PathBuf, found: String, expected: String },

    /// Nothing to gather: the folder has no plan.
    #[error("{dir} holds no plan.json: not a `gdrperf slurm` output folder, or its rank 0 never started")]
    NothingToGather { dir: PathBuf },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, ClusterError>;

/// A read error with its path.
pub(crate) fn read_error(path: &std::path::Path, reason: impl std::fmt::Display) -> ClusterError {
    ClusterError::Read { path: path.to_path_buf(), reason: reason.to_string() }
}

/// A write error with its path.
pub(crate) fn write_error(path: &std::path::Path, source: std::io::Error) -> ClusterError {
    ClusterError::Write { path: path.to_path_buf(), source }
}
