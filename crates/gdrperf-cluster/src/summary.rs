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
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use crate::error::{write_error, Result};
use crate::layout::{create_temporary, OutputDir, RunPlan};
use crate::verdict::PairOutcome;

/// Per node: pairs passed and failed, and the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTally {
    pub node: String,
    pub passed: usize,
    pub failed: usize,
}

/// Every pair's verdict as it was decided: counted per node, and its line of the summary
/// written out at once to a temporary file (a job of millions of pairs has millions of lines).
#[derive(Debug)]
pub struct Verdicts {
    pub pairs: usize,
    pub failed: usize,
    tallies: BTreeMap<String, NodeTally>,
    lines: Arc<PairLines>,
    writer: Option<BufWriter<std::fs::File>>,
}

/// The summary's per-pair lines, in a temporary file removed when the last holder drops it.
#[derive(Debug)]
struct PairLines {
    path: std::path::PathBuf,
}

impl Drop for PairLines {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Verdicts {
    /// No verdicts yet; every node of `plan` counted, with no pairs.
    pub(crate) fn new(plan: &RunPlan, dir: &OutputDir) -> Result<Verdicts> {
        let mut tallies = BTreeMap::new();
        for node in &plan.nodes {
            tallies.entry(node.clone()).or_insert_with(|| NodeTally {
                node: node.clone(),
                passed: 0,
                failed: 0,
            });
        }
        let (path, file) = create_temporary(&dir.summary())?;
        let lines = Arc::new(PairLines { path });
        Ok(Verdicts { pairs: 0, failed: 0, tallies, lines, writer: Some(BufWriter::new(file)) })
    }

    pub(crate) fn add(&mut self, outcome: &PairOutcome) -> Result<()> {
        self.pairs += 1;
        self.failed += usize::from(!outcome.passed);
        let pair = &outcome.pair;
        let mut ends = vec![pair.server_node.as_str(), pair.client_node.as_str()];
        ends.dedup(); // two tasks of one node count once
        for node in ends {
            let tally = self.tallies.entry(node.to_string()).or_insert_with(|| NodeTally {
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
        let Some(writer) = &mut self.writer else { return Ok(()) };
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        // Node names and reasons come from the ranks' records in the shared folder: made
        // printable here, where they enter the summary (no ESC, no fake lines; issue 44).
        let clean = gdrperf_files::text::printable_cow;
        let written = write!(
            writer,
            "{verdict}  round {}  {} (rank {}, server) <- {} (rank {}, client)  port {}  {} rows",
            pair.round,
            clean(&pair.server_node),
            pair.server_rank,
            clean(&pair.client_node),
            pair.client_rank,
            pair.port,
            outcome.rows
        )
        .and_then(|()| match outcome.passed {
            true => Ok(()),
            false => write!(writer, ": {}", clean(&outcome.reasons.join("; "))),
        })
        .and_then(|()| writer.write_all(b"\n"));
        written.map_err(|source| write_error(&self.lines.path, source))
    }

    /// Every verdict is in: the lines are written out.
    pub(crate) fn finish(&mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else { return Ok(()) };
        writer.into_inner().map(drop).map_err(|error| write_error(&self.lines.path, error.into_error()))
    }
}

/// The nodes to look at, and the text of the summary.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Nodes the evidence points at (empty when everything passed).
    pub suspects: Vec<String>,
    /// Every node that was in at least one failed pair.
    pub in_failed_pairs: Vec<String>,
    pub tallies: Vec<NodeTally>,
    /// The text before the per-pair lines (the counts) and after them (the failing nodes).
    head: String,
    tail: String,
    lines: Arc<PairLines>,
}

impl Summary {
    /// The summary's text: its head, every pair's line, its tail.
    pub fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        // The head and tail name the plan's run, bench arguments and nodes, read back from
        // plan.json in the shared folder: printable, line by line (the pair lines are already).
        out.write_all(gdrperf_files::text::printable_lines(&self.head).as_bytes())?;
        std::io::copy(&mut std::fs::File::open(&self.lines.path)?, out)?;
        out.write_all(gdrperf_files::text::printable_lines(&self.tail).as_bytes())?;
        out.flush()
    }
}

/// Judges a gathered run from its verdicts.
pub fn summarize(plan: &RunPlan, verdicts: &Verdicts) -> Summary {
    let tallies = &verdicts.tallies;
    let in_failed_pairs: Vec<String> =
        tallies.values().filter(|t| t.failed > 0).map(|t| t.node.clone()).collect();
    let mut suspects: Vec<String> =
        tallies.values().filter(|t| t.failed > t.passed).map(|t| t.node.clone()).collect();
    if suspects.is_empty() {
        suspects = in_failed_pairs.clone();
    }

    let mut head = String::new();
    let failed = verdicts.failed;
    let _ = writeln!(
        head,
        "gdrperf slurm: run {}, {} {}, schedule {} by {}, {} nodes, {} pairs: {} passed, {} failed",
        plan.run_id,
        plan.bench,
        gdrperf_command_line::redact_command_line(&plan.bench_args).join(" "),
        plan.plan.schedule,
        plan.plan.pair_by,
        plan.nodes.len(),
        verdicts.pairs,
        verdicts.pairs - failed,
        failed
    );
    let mut text = String::new();
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
    let tallies = tallies.values().cloned().collect();
    Summary { suspects, in_failed_pairs, tallies, head, tail: text, lines: Arc::clone(&verdicts.lines) }
}
