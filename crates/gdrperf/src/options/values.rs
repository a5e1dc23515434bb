//! The plain values a run's settings are made of: its role, when a size stops, what a latency
//! sample spans, the console's unit, where latency files go. Data without checks (those are
//! `options::config`'s): the rows and the engines read these values and need none of the rules
//! that made them.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// Which end of the connection this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Waits for a client on the TCP port.
    Server,
    /// Connects to the server on `host`.
    Client { host: String },
    /// Both ends in one process, over one device.
    Loopback,
}

/// perftest's default `--out_json` file (`DEFAULT_JSON_FILE_NAME`), in the working directory.
pub const PERFTEST_JSON_DEFAULT_FILE: &str = "perftest_out.json";

/// perftest's `--output`: one figure per size on stdout and nothing else, for `VAR=$(...)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFigure {
    /// The average bandwidth, in the table's unit.
    #[value(name = "bandwidth")]
    Bandwidth,
    /// The message rate, Mpps.
    #[value(name = "message_rate")]
    MessageRate,
    /// The average latency, µs.
    #[value(name = "latency")]
    Latency,
}

/// When a size's measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopRule {
    /// After this many messages per QP.
    Iterations(u64),
    /// After this long; the message count is whatever completed.
    Duration(#[serde(serialize_with = "serialize_seconds")] Duration),
}

fn serialize_seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// What one latency sample spans (`--latency-span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LatencySpan {
    /// perftest's: from one post to the next, the whole iteration (wait, reap, repost and the
    /// recording included), `tposted[i + 1] − tposted[i]` in `print_report_lat`.
    #[default]
    Iteration,
    /// From the post to the arrival of the answer (or the READ's completion): the wire alone.
    Arrival,
}

impl LatencySpan {
    /// The name used in the CSV, the JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LatencySpan::Iteration => "iteration",
            LatencySpan::Arrival => "arrival",
        }
    }

    /// The run header's description.
    pub fn description(self) -> &'static str {
        match self {
            LatencySpan::Iteration => "iteration: post to next post (perftest's)",
            LatencySpan::Arrival => "arrival: post to arrival of the answer",
        }
    }
}

/// How bandwidth is shown on the console (files always carry both units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandwidthUnit {
    MebibytesPerSecond,
    GigabitsPerSecond,
}

/// Where the latency distribution goes, besides the result rows.
#[derive(Debug, Clone, Default)]
pub struct LatencyFilePaths {
    pub hdr_dir: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub hlog_interval: Duration,
    pub histogram_raw: Option<PathBuf>,
    /// `-H`: perftest's sorted listing on stdout.
    pub report_sorted: bool,
    /// `-U`: perftest's unsorted listing on stdout.
    pub report_unsorted: bool,
}

impl LatencyFilePaths {
    /// Whether any file is asked for.
    pub fn any(&self) -> bool {
        self.hdr_dir.is_some() || self.hlog.is_some() || self.keeps_every_sample()
    }

    /// Whether an output needs every sample kept in memory (the raw dump, `-H`, `-U`).
    pub fn keeps_every_sample(&self) -> bool {
        self.histogram_raw.is_some() || self.report_sorted || self.report_unsorted
    }
}
