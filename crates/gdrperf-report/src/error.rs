//! What can go wrong reading thresholds, profiles and result files: one variant per failing
//! step, each saying what the user can do about it.

use std::path::PathBuf;

use thiserror::Error;

/// Errors of the report library.
#[derive(Debug, Error)]
pub enum ReportError {
    /// A threshold or tolerance that does not parse or resolve, or a row without the figure a
    /// threshold needs.
    #[error(transparent)]
    Threshold(#[from] gdrperf_threshold::ThresholdError),

    /// A result file could not be opened or read.
    #[error("cannot read {path}: {error}")]
    ReadFile { path: PathBuf, error: std::io::Error },

    /// A summary file could not be written.
    #[error("cannot write {path}: {error}")]
    WriteFile { path: PathBuf, error: String },

    /// A JSON result file that is not `{"metadata": ..., "results": [...]}` (or a bare array of rows).
    #[error("{path} is not a gdrperf JSON result file: {reason}")]
    JsonFile { path: PathBuf, reason: String },

    /// A CSV result file that the csv reader rejected.
    #[error("{path} is not a readable CSV result file: {reason}")]
    CsvFile { path: PathBuf, reason: String },

    /// A row lacks a column that the comparison or threshold needs.
    #[error("{source_name}: {row} has no numeric {column:?} column{hint}")]
    MissingColumn { source_name: String, row: String, column: String, hint: String },

    /// Two rows of the inputs share a key, so a join would have to guess which one is meant.
    #[error(
        "{sources} hold more than one row for {key}: rows are joined on (test, memory modes, GPU, size), \
         which must be unique within a run; give each run its own file"
    )]
    DuplicateRow { sources: String, key: String },

    /// Nothing to compare.
    #[error("{0}")]
    NothingToCompare(String),

    /// A profile file could not be read.
    #[error("cannot read profile {path}: {error}")]
    ReadProfile { path: PathBuf, error: std::io::Error },

    /// A profile that is not valid TOML for the profile schema.
    #[error("profile {name}: {reason}")]
    Profile { name: String, reason: String },

    /// `--profile NAME` that is neither a built-in profile nor an existing file.
    #[error("no profile named {name:?}: built-in profiles are {builtin}; or give the path of a .toml file")]
    UnknownProfile { name: String, builtin: String },
}

/// Shorthand for results of this crate.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;
