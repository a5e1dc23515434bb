//! What can go wrong with a threshold: text that does not parse, a share of a port rate nobody
//! knows, a row without the figure a threshold needs. Each message says what to write instead.

use thiserror::Error;

/// Errors of the threshold crate.
#[derive(Debug, Error)]
pub enum ThresholdError {
    /// `--min-bw` text that is not a number with a unit.
    #[error("bandwidth threshold {text:?}: {reason} (write it like 90Gb/s, 11000MiB/s or 80%)")]
    BandwidthThreshold { text: String, reason: String },

    /// `--max-lat` text that is not a number with an optional time unit.
    #[error("latency threshold {text:?}: {reason} (write it like 5us, 800ns or 0.01ms; a bare number is microseconds)")]
    LatencyThreshold { text: String, reason: String },

    /// `--lat-pct` names no latency statistic that result rows carry.
    #[error("latency statistic {text:?} is not one of: {accepted}")]
    LatencyStatistic { text: String, accepted: &'static str },

    /// `--tolerance` that is not a non-negative percentage.
    #[error("tolerance {text:?}: {reason} (write it like 5% or 0.5%)")]
    Tolerance { text: String, reason: String },

    /// A percentage of the port rate was asked for, but the port's rate is not known.
    #[error(
        "the threshold {threshold} is a share of the port rate, but the device did not report one{detail}; \
         give an absolute value instead (Gb/s or MiB/s)"
    )]
    UnknownPortRate { threshold: String, detail: String },

    /// A row lacks the figure a threshold is held against (`--max-lat` on a bandwidth row).
    #[error("{source_name}: {row} has no numeric {column:?} column{hint}")]
    MissingFigure {
        source_name: String,
        row: String,
        column: &'static str,
        hint: &'static str,
        /// The threshold's flag (`--min-bw`, `--max-lat`).
        flag: &'static str,
    },
}

impl ThresholdError {
    /// The command-line flag whose value is at fault, for callers that name it.
    pub fn flag(&self) -> &'static str {
        match self {
            ThresholdError::BandwidthThreshold { .. } | ThresholdError::UnknownPortRate { .. } => "--min-bw",
            ThresholdError::LatencyThreshold { .. } => "--max-lat",
            ThresholdError::LatencyStatistic { .. } => "--lat-pct",
            ThresholdError::Tolerance { .. } => "--tolerance",
            ThresholdError::MissingFigure { flag, .. } => flag,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = ThresholdError> = std::result::Result<T, E>;
