//! The retests of a live `locate` job (rank 0): once locating has settled, the pairs the fleet
//! judge lists to retest, run again pass by pass until it lists none or
//! [`MOST_RETEST_PASSES`] passes have run.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use crate::locate::{rounds_apart, MOST_RETEST_PASSES};
use crate::options::{PortPair, Retests};
use crate::schedule::Pair;

/// The retests so far.
#[derive(Default)]
pub(super) struct Retesting {
    pub(super) report: Retested,
    /// The rounds of the current pass not yet added.
    queue: VecDeque<Vec<Pair>>,
    /// Where each listed port pair stands in `report.pairs`, and its unit pair.
    listed: HashMap<PortPair, (usize, Option<(usize, usize)>)>,
    done: bool,
}

/// The retests of a `locate` job: what the judge listed, pass by pass, and what ran again.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Retested {
    /// Times the judge was asked (the last one, listing nothing or at the limit, included).
    pub passes: usize,
    pub rounds: usize,
    /// Unit pairs run again (node pairs, or task pairs with `--pair-by task`).
    pub pair_runs: usize,
    /// Every port pair the judge listed in some pass, in order, and what became of it.
    pub pairs: Vec<RetestedPair>,
    /// Why the retests stopped before the judge listed none, if they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One port pair the judge listed to retest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetestedPair {
    #[serde(flatten)]
    pub ports: PortPair,
    /// Times its unit pair ran again.
    pub runs: usize,
    /// Why it was not run, where it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl Retesting {
    /// The next round of retests: the current pass's next round, or, when it has none left, a
    /// new pass from `judge`'s RETEST list over the rows so far; `None` when the judge lists
    /// nothing that can run, or after [`MOST_RETEST_PASSES`] passes. `ran` holds each unit
    /// pair's first direction, `units_of` a listed port pair's unit pair or why it cannot run.
    pub(super) fn next_round(
        &mut self,
        judge: &Retests,
        out: &crate::layout::OutputDir,
        say: &mut dyn FnMut(&str),
        ran: &HashMap<(usize, usize), Pair>,
        units_of: impl Fn(&PortPair) -> Result<(usize, usize), String>,
    ) -> Option<Vec<Pair>> {
        if let Some(round) = self.queue.pop_front() {
            return Some(round);
        }
        if self.done {
            return None;
        }
        if self.report.passes >= MOST_RETEST_PASSES {
            self.done = true;
            self.report.stopped =
                Some(format!("{MOST_RETEST_PASSES} passes run, the pairs still listed are left to retest"));
            return None;
        }
        let listed = crate::gather::gather(out)
            .map_err(|error| format!("gathering the rows so far: {error}"))
            .and_then(|_| (judge.0)(&out.results_csv()));
        self.report.passes += 1;
        let listed = match listed {
            Ok(listed) => listed,
            Err(why) => {
                say(&format!("locate: no retests: {why}"));
                self.done = true;
                self.report.stopped = Some(why);
                return None;
            }
        };
        let mut unit_pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
        for ports in listed {
            let units = match self.listed.get(&ports).copied() {
                Some((_, units)) => units,
                None => {
                    let (units, not_run) = match units_of(&ports) {
                        Ok(units) => (Some(units), None),
                        Err(why) => (None, Some(why)),
                    };
                    self.listed.insert(ports.clone(), (self.report.pairs.len(), units));
                    self.report.pairs.push(RetestedPair { ports, runs: 0, not_run });
                    units
                }
            };
            unit_pairs.extend(units);
        }
        let pairs: Vec<Pair> = unit_pairs
            .iter()
            .map(|&(low, high)| ran.get(&(low, high)).copied().unwrap_or(Pair { server: high, client: low }))
            .collect();
        let rounds = rounds_apart(&pairs);
        for (index, units) in self.listed.values() {
            if units.is_some_and(|units| unit_pairs.contains(&units)) {
                self.report.pairs[*index].runs += 1;
            }
        }
        if pairs.is_empty() {
            self.done = true;
            return None;
        }
        say(&format!(
            "locate: retest pass {}: {} pair(s) the fleet judge lists to retest, in {} round(s)",
            self.report.passes,
            pairs.len(),
            rounds.len()
        ));
        self.queue.extend(rounds);
        self.queue.pop_front()
    }
}
