//! The validated settings of the bandwidth benches, and the runs their staged memory refuses.

use crate::bench::Operation;
use crate::error::{ConfigError, Result};
use crate::options::args::{BandwidthArgs, MemoryKind};
use crate::options::config::{BenchConfig, Role, StopRule};
use crate::options::perftest_defaults::{cq_moderation, CqModeration};

/// Bandwidth-specific, validated settings.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthConfig {
    /// The effective CQ moderation (perftest's rule), `cq_moderation.value`.
    pub cq_mod: u32,
    pub cq_moderation: CqModeration,
    pub bidirectional: bool,
    /// `--concurrent`: every placement at once, one lane each.
    pub concurrent: bool,
    /// What staged memory refuses in this run (the bench hands it to the sweep).
    pub staged: StagedRules,
}

impl BandwidthConfig {
    /// The bandwidth settings both peers must share.
    pub fn parameters(&self) -> serde_json::Value {
        serde_json::json!({ "cq_mod": self.cq_mod, "bidirectional": self.bidirectional, "concurrent": self.concurrent })
    }

    /// The run-header lines of the bandwidth settings.
    pub fn header(&self) -> Vec<(String, String)> {
        vec![
            ("CQ moderation".into(), self.cq_moderation.describe()),
            (
                "Direction".into(),
                if self.bidirectional { "bidirectional" } else { "client -> server" }.into(),
            ),
        ]
    }

    /// `-Q`, `-b` and `--concurrent` of a bench whose stream is `operation`, checked against the
    /// common settings; the staged rules derived once, and applied here to a loopback run.
    pub fn from_args(
        args: &BandwidthArgs,
        common: &BenchConfig,
        operation: Operation,
    ) -> Result<BandwidthConfig> {
        let iterations = match common.stop {
            StopRule::Iterations(iterations) => Some(iterations),
            StopRule::Duration(_) => None,
        };
        let cq_moderation = cq_moderation(args.cq_mod, &common.sizes, common.tx_depth, iterations)?;
        if args.concurrent && common.memory.kinds.len() > 1 {
            return Err(ConfigError::conflict(
                "--concurrent",
                "runs the GPUs (or devices) of one --mem kind at once: give one kind",
            )
            .into());
        }
        // A WRITE stream's staged receiver counts the messages it copies in.
        let staged = StagedRules {
            bidirectional: args.bidirectional,
            receiver_counts_messages: operation == Operation::Write
                && matches!(common.stop, StopRule::Duration(_)),
        };
        // Two processes refuse these once both memories are known, right after the hellos and
        // on both sides in the same words ([`refuse_staged`]): refused here, a server or client
        // would leave its peer waiting for it. A loopback run has no peer to tell, and both its
        // ends use each kind: refused here, before any device is opened.
        if common.role == Role::Loopback {
            for &kind in &common.memory.kinds {
                refuse_staged(staged, kind, kind)?;
            }
        }
        if common.acceptance.max_lat.is_some() {
            return Err(ConfigError::conflict(
                "--max-lat",
                "applies to latency results: a bandwidth test is held to --min-bw",
            )
            .into());
        }
        Ok(BandwidthConfig {
            cq_mod: cq_moderation.value,
            cq_moderation,
            bidirectional: args.bidirectional,
            concurrent: args.concurrent,
            staged,
        })
    }
}

/// Runs staged memory refuses, decided alike on both sides from the two memories, with the same
/// words, right after the hellos: a side that refused later (at its first size) would leave its
/// peer waiting, or print the banner first. A bench derives them from its configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct StagedRules {
    /// `-b`: staged memory has one bounce ring per QP, which both directions would share.
    pub bidirectional: bool,
    /// The server receives into its payload and counts the messages it copies in (gdr-write-bw):
    /// a timed run (`-D`) agrees on no count.
    pub receiver_counts_messages: bool,
}

/// The refusal of [`StagedRules`] for a server with `server` memory and a client with `client`:
/// the one copy of these checks, made for a loopback run by [`BandwidthConfig::from_args`] and
/// for two processes by the session once the hellos told each side the other's memory.
pub fn refuse_staged(rules: StagedRules, server: MemoryKind, client: MemoryKind) -> Result<(), ConfigError> {
    if rules.bidirectional && (server.is_staged() || client.is_staged()) {
        return Err(ConfigError::StagedBidirectional);
    }
    if rules.receiver_counts_messages && server.is_staged() {
        return Err(ConfigError::StagedReceiverDuration);
    }
    Ok(())
}
