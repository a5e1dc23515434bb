//! The validated settings of the bandwidth benches, and the runs their staged memory refuses.

use crate::error::ConfigError;
use crate::options::args::MemoryKind;
use crate::options::perftest_defaults::CqModeration;

/// Bandwidth-specific, validated settings: made by `from_args` (`options::bandwidth_checks`),
/// which checks them against the common settings; plain data here, so that what only reads them
/// (the harness's `Setup`) stands below the checks.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthConfig {
    /// The effective CQ moderation (perftest's rule), `cq_moderation.value`.
    pub cq_mod: u32,
    pub cq_moderation: CqModeration,
    pub bidirectional: bool,
    /// `--report-both`: under `-b`, each direction's own table after the summed one (this side's
    /// console and files only: the peer reports its own, or not, as perftest's sides do).
    pub report_both: bool,
    /// `-l/--post_list`: work requests per post call, chained (1: what the queue has room for).
    pub post_list: u32,
    /// `--run-infinitely` (the common setting, here for the harness's `Setup`).
    pub run_infinitely: bool,
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
        let post_list = (self.post_list > 1).then(|| ("Post List".to_string(), self.post_list.to_string()));
        let mut lines = vec![
            ("CQ moderation".into(), self.cq_moderation.describe()),
            (
                "Direction".into(),
                if self.bidirectional { "bidirectional" } else { "client -> server" }.into(),
            ),
        ];
        lines.extend(post_list);
        lines
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
    /// `-l N` above 1: a staged side posts each message as its copy finishes, not in lists.
    pub post_list: bool,
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
    if rules.post_list && (server.is_staged() || client.is_staged()) {
        return Err(ConfigError::StagedPostList);
    }
    Ok(())
}
