//! Which nodes failed: the verdict a person acting on an acceptance run wants first.
//!
//! A failed pair only says that one of two nodes (or the link between them) is bad. Schedules
//! that measure each node against several peers tell more: a node is **suspect** when most of
//! its pairs failed (more failed than passed). With `ring`, one bad node fails both its links
//! while each neighbour still passes its other link, so only the bad node is suspect. With
//! `pairs`, each node has one pair and both ends of a failed pair are suspect; the summary says
//! that a ring run would tell them apart. When no node has a majority of failures (a ring of
//! two with one direction failing), every node of a failed pair is named.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::gather::Gathered;

/// Per node: pairs passed and failed, and the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTally {
    pub node: String,
    pub passed: usize,
    pub failed: usize,
}

/// The nodes to look at, and the text of the summary.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Nodes the evidence points at (empty when everything passed).
    pub suspects: Vec<String>,
    /// Every node that was in at least one failed pair.
    pub in_failed_pairs: Vec<String>,
    pub tallies: Vec<NodeTally>,
    pub text: String,
}

/// Judges a gathered run.
pub fn summarize(run: &Gathered) -> Summary {
    let mut tallies: BTreeMap<&str, NodeTally> = BTreeMap::new();
    for node in &run.plan.nodes {
        tallies.entry(node).or_insert_with(|| NodeTally { node: node.clone(), passed: 0, failed: 0 });
    }
    for outcome in &run.outcomes {
        let mut ends = vec![outcome.pair.server_node.as_str(), outcome.pair.client_node.as_str()];
        ends.dedup(); // two tasks of one node count once
        for node in ends {
            let tally = tallies.entry(node).or_insert_with(|| NodeTally {
                node: node.to_string(),
                passed: 0,
                failed: 0,
            });
            if outcome.passed {
                tally.passed += 1;
            } else {
                tally.failed += 1;
            }
        }
    }
    let in_failed_pairs: Vec<String> =
        tallies.values().filter(|t| t.failed > 0).map(|t| t.node.clone()).collect();
    let mut suspects: Vec<String> =
        tallies.values().filter(|t| t.failed > t.passed).map(|t| t.node.clone()).collect();
    if suspects.is_empty() {
        suspects = in_failed_pairs.clone();
    }

    let mut text = String::new();
    let plan = &run.plan;
    let failed = run.failed();
    let _ = writeln!(
        text,
        "gdrperf slurm: run {}, {} {}, schedule {} by {}, {} nodes, {} pairs: {} passed, {} failed",
        plan.run_id,
        plan.bench,
        gdrperf_command_line::redact_command_line(&plan.bench_args).join(" "),
        plan.plan.schedule,
        plan.plan.pair_by,
        plan.nodes.len(),
        run.outcomes.len(),
        run.outcomes.len() - failed,
        failed
    );
    for outcome in &run.outcomes {
        let pair = &outcome.pair;
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        let _ = write!(
            text,
            "{verdict}  round {}  {} (rank {}, server) <- {} (rank {}, client)  port {}  {} rows",
            pair.round,
            pair.server_node,
            pair.server_rank,
            pair.client_node,
            pair.client_rank,
            pair.port,
            outcome.rows
        );
        if !outcome.passed {
            let _ = write!(text, ": {}", outcome.reasons.join("; "));
        }
        text.push('\n');
    }
    if !plan.plan.left_out.is_empty() {
        let _ = writeln!(
            text,
            "NOT TESTED: {} (no partner in the {} schedule)",
            plan.plan.left_out.join(" "),
            plan.plan.schedule
        );
    }
    if failed == 0 {
        let _ = writeln!(text, "FAILING NODES: none");
    } else {
        let _ = writeln!(text, "FAILING NODES: {}", suspects.join(" "));
        for tally in tallies.values().filter(|t| t.failed > 0) {
            let _ = writeln!(
                text,
                "  {}: {} of {} pairs failed",
                tally.node,
                tally.failed,
                tally.failed + tally.passed
            );
        }
        if plan.plan.schedule == "pairs" {
            let _ = writeln!(
                text,
                "  (a pair cannot tell which of its two nodes failed: rerun these with --schedule ring)"
            );
        }
    }
    let tallies = tallies.into_values().collect();
    Summary { suspects, in_failed_pairs, tallies, text }
}
