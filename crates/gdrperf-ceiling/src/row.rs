//! One result row judged: which end is the data source, what the row moved, and the
//! [`Judgement`]. The benches call it as each size completes; `gdrperf explain` calls it again on
//! a stored result, so both judge alike.

use serde::{Deserialize, Serialize};

use crate::causes::{causes, Cause, RowEvidence};
use crate::ceiling::{ceiling, Ceiling, End, Transfer};
use crate::facts::EndFacts;
use crate::lanes::{links_of, SharedLink};

/// Both ends as the side that wrote the row saw them.
#[derive(Debug, Clone, Copy)]
pub struct RowEnds<'a> {
    /// Whether the side writing the row is the client (else the server).
    pub local_is_client: bool,
    pub local: &'a EndFacts,
    /// Absent when the peer sent no facts (an older gdrperf).
    pub peer: Option<&'a EndFacts>,
}

/// What a row says about itself.
#[derive(Debug, Clone, Copy)]
pub struct RowFigures<'a> {
    /// The test's name in the row: `write_bw`, `read_bw`, `send_bw`.
    pub test: &'a str,
    pub message_bytes: u64,
    pub bidirectional: bool,
    /// `bw_avg_gbit_s`.
    pub measured_gbps: f64,
    /// The local NIC's counters that moved during the size ("name=delta;...", the row's
    /// `nic_counters`), if any error counter did; the causes quote the error counters only.
    pub nic_errors_moved: Option<&'a str>,
}

impl RowEnds<'_> {
    pub fn local_role(&self) -> &'static str {
        if self.local_is_client {
            "client"
        } else {
            "server"
        }
    }

    pub fn peer_role(&self) -> &'static str {
        if self.local_is_client {
            "server"
        } else {
            "client"
        }
    }
}

/// The staged copy rate that bounds an end: a source copies out, a sink copies in, an end of a
/// bidirectional row does both (the slower bounds it).
fn copy_gbps(facts: &EndFacts, is_source: bool, bidirectional: bool) -> Option<f64> {
    let rates = facts.staged_copy?;
    Some(match (bidirectional, is_source) {
        (true, _) => rates.out_gbps.min(rates.in_gbps),
        (false, true) => rates.out_gbps,
        (false, false) => rates.in_gbps,
    })
}

/// A row's ends as the ceiling sees them: which is the data source, each end's copy rate, and
/// what moved. A READ's data leaves the responder (the server), every other test's the requester
/// (the client); WRITE and READ carry a RETH, SEND does not.
fn row_ends<'a>(ends: RowEnds<'a>, figures: RowFigures) -> (End<'a>, Option<End<'a>>, Transfer, bool) {
    let client_is_source = !figures.test.starts_with("read");
    let local_is_source = client_is_source == ends.local_is_client;
    let local = End {
        role: ends.local_role(),
        facts: ends.local,
        copy_gbps: copy_gbps(ends.local, local_is_source, figures.bidirectional),
    };
    let peer = ends.peer.map(|facts| End {
        role: ends.peer_role(),
        facts,
        copy_gbps: copy_gbps(facts, !local_is_source, figures.bidirectional),
    });
    let transfer = Transfer {
        message_bytes: figures.message_bytes,
        with_reth: !figures.test.starts_with("send"),
        bidirectional: figures.bidirectional,
    };
    (local, peer, transfer, local_is_source)
}

/// The ceiling of a row, from whichever end is its data source.
fn row_ceiling(local: End, peer: Option<End>, transfer: Transfer, local_is_source: bool) -> Ceiling {
    match (peer, local_is_source) {
        (Some(peer), true) => ceiling(local, peer, transfer),
        (Some(peer), false) => ceiling(peer, local, transfer),
        (None, _) => ceiling(local, local, transfer),
    }
}

/// The PCIe links a row's data crosses, named by end and address: what a `--concurrent`
/// aggregate counts once where lanes share one ([`crate::lanes`]).
pub fn row_links(ends: RowEnds, figures: RowFigures) -> Vec<SharedLink> {
    let (local, peer, transfer, local_is_source) = row_ends(ends, figures);
    let row_ceiling = row_ceiling(local, peer, transfer, local_is_source);
    links_of(&row_ceiling, ends.local_role(), ends.local, ends.peer)
}

/// Judges a row: a READ's data leaves the responder (the server), every other test's the
/// requester (the client).
pub fn judge_row(
    ends: RowEnds,
    figures: RowFigures,
    shortfall_percent: f64,
    threshold_failed: bool,
) -> Judgement {
    let (local, peer, transfer, local_is_source) = row_ends(ends, figures);
    let row_ceiling = row_ceiling(local, peer, transfer, local_is_source);
    let evidence = RowEvidence {
        nic_errors_moved: figures
            .nic_errors_moved
            .map(crate::causes::moved_error_counters)
            .filter(|moved| !moved.is_empty())
            .map(|moved| vec![(ends.local_role().to_string(), moved)])
            .unwrap_or_default(),
    };
    let mut judgement = judge(
        &row_ceiling,
        figures.measured_gbps,
        shortfall_percent,
        threshold_failed,
        local,
        peer,
        &evidence,
    );
    if ends.peer.is_none() {
        judgement.ceiling_limited_by.push_str(" (this side only: no facts from the peer)");
    }
    judgement
}

/// How far below its ceiling a row may fall before its causes are listed, in percent. 10 %
/// echoes NVIDIA's acceptance criterion (90 % of the port rate, ngc_multinode_perf), applied
/// here to a ceiling that already excludes headers; a profile may set its own.
pub const DEFAULT_SHORTFALL_PERCENT: f64 = 10.0;

/// A row's ceiling columns and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub ceiling_gbps: Option<f64>,
    pub ceiling_limited_by: String,
    pub pct_of_ceiling: Option<f64>,
    /// Whether the row is short: below its ceiling by more than the level, or failing a threshold.
    pub short: bool,
    /// Empty unless `short`; most likely first.
    pub causes: Vec<Cause>,
}

impl Judgement {
    /// The `ceiling_causes` column: each cause's line, joined by " | ".
    pub fn causes_column(&self) -> String {
        self.causes.iter().map(Cause::line).collect::<Vec<_>>().join(" | ")
    }
}

/// Judges one row: its ceiling from both ends, its percentage, and when it is short (below the
/// ceiling by more than `shortfall_percent`, or `threshold_failed`), the causes.
pub fn judge(
    ceiling: &Ceiling,
    measured_gbps: f64,
    shortfall_percent: f64,
    threshold_failed: bool,
    local: End,
    peer: Option<End>,
    row: &RowEvidence,
) -> Judgement {
    let pct_of_ceiling = ceiling.percent_of(measured_gbps);
    let short = threshold_failed || pct_of_ceiling.is_some_and(|pct| pct < 100.0 - shortfall_percent);
    Judgement {
        ceiling_gbps: ceiling.gbps(),
        ceiling_limited_by: ceiling.limited_by().to_string(),
        pct_of_ceiling,
        short,
        causes: if short { causes(ceiling, local, peer, row) } else { Vec::new() },
    }
}
