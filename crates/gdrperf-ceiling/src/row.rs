//! One result row judged: which end is the data source, what the row moved, and the
//! [`Judgement`]. The benches call it as each size completes; `gdrperf explain` calls it again on
//! a stored result, so both judge alike.

use crate::ceiling::{ceiling, End, Transfer};
use crate::facts::EndFacts;
use crate::{judge, Judgement, RowEvidence};

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

/// Judges a row: a READ's data leaves the responder (the server), every other test's the
/// requester (the client); WRITE and READ carry a RETH, SEND does not.
pub fn judge_row(
    ends: RowEnds,
    figures: RowFigures,
    shortfall_percent: f64,
    threshold_failed: bool,
) -> Judgement {
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
    let row_ceiling = match (peer, local_is_source) {
        (Some(peer), true) => ceiling(local, peer, transfer),
        (Some(peer), false) => ceiling(peer, local, transfer),
        (None, _) => ceiling(local, local, transfer),
    };
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
