//! What became of the pairs a job ran again before it ended (`gdrperf slurm --schedule locate`'s
//! live retests, `gdrperf_cluster::coordinate`), told from the judgement of every row, the
//! retests' included: a retest that **agreed** (its rows stayed low: the link is named now), one
//! that **did not** (its retest rows were not low: the first was a moment of congestion, counted
//! transient), one whose rows a named part **explains** (a slow port at one end), one still
//! **undecided** after the passes ran (listed to retest again), and one **not run** (an end that
//! stopped answering, or a port no task of the job runs).

use std::fmt::Write;

use gdrperf_cluster::coordinate::{Retested, RetestedPair};
use gdrperf_cluster::options::PortPair;
use serde::Serialize;

use crate::report::finding_line;
use crate::verdict::{Finding, PartKind, Verdict};

/// What a retest came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Its rows stayed low: named a link now.
    Agreed,
    /// A part named at one of its ends explains its rows.
    Explained,
    /// Not run again (see `not_run`).
    NotRun,
    /// Still listed to retest: too few agreeing rows yet.
    Undecided,
    /// Its retest rows were not low: the first low row was transient.
    DidNotAgree,
}

impl Outcome {
    pub fn words(self) -> &'static str {
        match self {
            Outcome::Agreed => "agreed, deficit confirmed: named",
            Outcome::Explained => "explained by a part named at an end",
            Outcome::NotRun => "not run again",
            Outcome::Undecided => "undecided, still listed to retest",
            Outcome::DidNotAgree => "did not agree: transient",
        }
    }
}

/// One retested pair and what it came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetestOutcome {
    #[serde(flatten)]
    pub pair: RetestedPair,
    pub outcome: Outcome,
    /// What names it (the link: its rows, how many low, how far below), or explains it (the
    /// part at an end, in the report's words), or the retest still listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
}

/// The ends of a port pair, either way round.
fn same_ends(finding: &Finding, ports: &PortPair) -> bool {
    let ends = |node: &str, device: Option<&String>, peer: &str, peer_device: Option<&String>| {
        (finding.node == node && finding.device.as_ref() == device)
            && (finding.peer_node.as_deref() == Some(peer) && finding.peer_device.as_ref() == peer_device)
    };
    ends(&ports.node, ports.device.as_ref(), &ports.peer_node, ports.peer_device.as_ref())
        || ends(&ports.peer_node, ports.peer_device.as_ref(), &ports.node, ports.device.as_ref())
}

/// Whether `finding` names a part at an end of `ports` whose deficit its rows carry.
fn explains(finding: &Finding, ports: &PortPair) -> bool {
    let at = |node: &str, device: Option<&String>| {
        finding.node == node && (finding.device.is_none() || finding.device.as_ref() == device)
    };
    let either = at(&ports.node, ports.device.as_ref()) || at(&ports.peer_node, ports.peer_device.as_ref());
    let member = |node: &str| finding.members.iter().any(|member| member == node);
    match finding.kind {
        PartKind::Node
        | PartKind::NicPort
        | PartKind::NicPortSending
        | PartKind::NicPortReceiving
        | PartKind::NicPortIntermittent
        | PartKind::Gpu
        | PartKind::NicPortOrGpu => either,
        PartKind::Rail => {
            (finding.device == ports.device || finding.device == ports.peer_device)
                && (member(&ports.node) || member(&ports.peer_node))
        }
        PartKind::Group => member(&ports.node) != member(&ports.peer_node),
        _ => false,
    }
}

/// What each pair of `retested` came to in `verdict` (the judgement of every row).
pub fn outcomes(verdict: &Verdict, retested: &Retested) -> Vec<RetestOutcome> {
    retested
        .pairs
        .iter()
        .map(|pair| {
            let ports = &pair.ports;
            let link = verdict
                .findings
                .iter()
                .find(|finding| finding.kind == PartKind::Link && same_ends(finding, ports));
            let explained = verdict.findings.iter().find(|finding| explains(finding, ports));
            let (outcome, finding) = if let Some(link) = link {
                let line = format!(
                    "the link named, {} of its {} rows low, {:.1} % below the class",
                    link.low_rows.unwrap_or(0),
                    link.pairs,
                    link.below_pct
                );
                (Outcome::Agreed, Some(line))
            } else if let Some(part) = explained {
                (Outcome::Explained, Some(finding_line(part)))
            } else if pair.not_run.is_some() {
                (Outcome::NotRun, None)
            } else if let Some(listed) = verdict.retest.iter().find(|finding| same_ends(finding, ports)) {
                (Outcome::Undecided, Some(finding_line(listed)))
            } else {
                (Outcome::DidNotAgree, None)
            };
            RetestOutcome { pair: pair.clone(), outcome, finding }
        })
        .collect()
}

/// Retested pairs shown in the text; the JSON lists all.
pub const SHOWN: usize = 40;

/// The report's RETESTED LIVE section.
pub fn text(retested: &Retested, outcomes: &[RetestOutcome]) -> String {
    if outcomes.is_empty() {
        let why = match &retested.stopped {
            Some(why) => format!("not run: {why}"),
            None => "none (the judge listed no pair to retest once locating had settled)".into(),
        };
        return format!("RETESTED LIVE: {why}\n");
    }
    let count = |outcome: Outcome| outcomes.iter().filter(|each| each.outcome == outcome).count();
    let mut tally = format!(
        "{} agreed (named), {} did not (transient)",
        count(Outcome::Agreed),
        count(Outcome::DidNotAgree)
    );
    for outcome in [Outcome::Explained, Outcome::Undecided, Outcome::NotRun] {
        if count(outcome) > 0 {
            let _ = write!(tally, ", {} {}", count(outcome), outcome.words());
        }
    }
    let mut text = format!(
        "RETESTED LIVE: {} pair(s) listed to retest, run again before the job ended ({} pair run(s) in {} round(s), {} judgement(s)): {tally}\n",
        outcomes.len(),
        retested.pair_runs,
        retested.rounds,
        retested.passes
    );
    let mut sorted: Vec<&RetestOutcome> = outcomes.iter().collect();
    sorted.sort_by_key(|each| each.outcome);
    for each in sorted.iter().take(SHOWN) {
        let ports = &each.pair.ports;
        let end = |node: &str, device: Option<&String>| match device {
            Some(device) => format!("{node} {device}"),
            None => node.to_string(),
        };
        let _ = write!(
            text,
            "  {}: {} <-> {}, run again {} time(s)",
            each.outcome.words(),
            end(&ports.node, ports.device.as_ref()),
            end(&ports.peer_node, ports.peer_device.as_ref()),
            each.pair.runs
        );
        if let Some(why) = &each.pair.not_run {
            let _ = write!(text, " ({why})");
        }
        if let (Some(line), Outcome::Agreed | Outcome::Explained) = (&each.finding, each.outcome) {
            let _ = write!(text, ": {line}");
        }
        text.push('\n');
    }
    if sorted.len() > SHOWN {
        let _ = writeln!(text, "  ... and {} more (all in the JSON)", sorted.len() - SHOWN);
    }
    if let Some(why) = &retested.stopped {
        let _ = writeln!(text, "  stopped: {why}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(a: &str, b: &str) -> PortPair {
        PortPair {
            node: a.into(),
            device: Some("mlx5_0".into()),
            peer_node: b.into(),
            peer_device: Some("mlx5_0".into()),
        }
    }

    fn finding(kind: PartKind, node: &str, peer: Option<&str>) -> Finding {
        let mut finding = Finding::new(kind, node, "write_bw");
        finding.device = Some("mlx5_0".into());
        finding.peer_node = peer.map(str::to_string);
        finding.peer_device = peer.map(|_| "mlx5_0".to_string());
        finding
    }

    #[test]
    fn each_retest_is_told_by_the_judgement_of_every_row() {
        let retested = Retested {
            passes: 3,
            rounds: 2,
            pair_runs: 3,
            pairs: [
                ("n2", "n5", None),
                ("n1", "n7", None),
                ("n3", "n4", None),
                ("n6", "n8", None),
                ("n9", "n10", Some("an end stopped answering")),
            ]
            .into_iter()
            .map(|(a, b, not_run)| RetestedPair {
                ports: ports(a, b),
                runs: 1,
                not_run: not_run.map(str::to_string),
            })
            .collect(),
            stopped: None,
        };
        let verdict = Verdict {
            classes: Vec::new(),
            // The link named the other way round; a slow port at n3's end.
            findings: vec![finding(PartKind::Link, "n5", Some("n2")), finding(PartKind::NicPort, "n3", None)],
            watch: Vec::new(),
            retest: vec![finding(PartKind::Link, "n6", Some("n8"))],
            transient_rows: 1,
            sweeps: 0,
        };
        let got: Vec<Outcome> = outcomes(&verdict, &retested).iter().map(|each| each.outcome).collect();
        assert_eq!(
            got,
            [Outcome::Agreed, Outcome::DidNotAgree, Outcome::Explained, Outcome::Undecided, Outcome::NotRun]
        );
        let text = text(&retested, &outcomes(&verdict, &retested));
        assert!(text.starts_with("RETESTED LIVE: 5 pair(s) listed to retest, run again before the job ended (3 pair run(s) in 2 round(s), 3 judgement(s)): 1 agreed (named), 1 did not (transient), 1 explained"), "{text}");
        assert!(text.contains("\n  agreed, deficit confirmed: named: n2 mlx5_0 <-> n5 mlx5_0, run again 1 time(s): the link named, 0 of its 0 rows low, 0.0 % below the class\n"), "{text}");
        assert!(
            text.contains("\n  did not agree: transient: n1 mlx5_0 <-> n7 mlx5_0, run again 1 time(s)\n"),
            "{text}"
        );
        assert!(text.contains("(an end stopped answering)"), "{text}");
        let empty = Retested { passes: 1, ..Retested::default() };
        assert_eq!(
            super::text(&empty, &[]),
            "RETESTED LIVE: none (the judge listed no pair to retest once locating had settled)\n"
        );
    }
}
