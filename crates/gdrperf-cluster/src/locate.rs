//! The `locate` schedule: a cheap first pass, then each suspect re-measured against nodes
//! already seen healthy, one round at a time, until two healthy peers agree about it.
//!
//! A low pair says only that one of its two ends, or the link between them, is slow. Pairing
//! each end again with units whose every pair was fine splits the cases: the faulty end stays
//! low with fresh healthy peers, the innocent end does not, and a bad link between the two
//! clears both ends (the judge then names the link). A fault that shows only in one direction
//! (a NIC slow when sending) needs peers in both roles, so each suspect is measured as sender
//! (client) and as receiver (server) by turns, and settles when, in each role, its last
//! [`Locator::agree`] healthy peers agree.
//!
//! How many must agree follows the noise of the first pass ([`agreeing_peers`]): the fleet judge
//! names a port only when its low peers are too many for the rows' transient dips to explain
//! (gdrperf-fleet's judge, Bonferroni over every port), so on a fabric where 2 % of pair runs dip
//! a slow port needs four or five low peers in a role, not two. Two agreeing peers named a bad
//! link's end, or a node with two dipped pair runs, in a third of simulated noisy jobs
//! (results/fleet/noise.md).
//!
//! The planner is pure: the caller (rank 0 of a job, or `gdrperf fleet simulate`) runs the
//! rounds, says per pair whether it was low (a pair with no rows counts as low: a dead node
//! settles as low with every peer), and asks for the next round. Rounds and pair runs are
//! counted here so the report can say what locating cost.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::random::SplitMix64;
use crate::schedule::{Pair, Schedule};

/// What the healthy peers said about one suspect, per role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// `true` for a low pair, in the order measured, with the suspect sending (client).
    pub sending: Vec<bool>,
    /// The same with the suspect receiving (server).
    pub receiving: Vec<bool>,
}

impl Verdicts {
    /// `agree` healthy peers agree in each role: the last `agree` verdicts of each role are equal.
    pub fn settled(&self, agree: usize) -> bool {
        let agree = agree.max(1);
        let agreed = |list: &[bool]| {
            list.len() >= agree && list[list.len() - agree..].iter().all(|&low| low == list[list.len() - 1])
        };
        agreed(&self.sending) && agreed(&self.receiving)
    }
}

/// The most healthy peers [`agreeing_peers`] asks for in a role.
pub const MOST_AGREEING: usize = 8;

/// The false-naming probability the agreeing peers are sized for, a tenth of the fleet judge's
/// default alpha (0.001): margin for a transient rate the first pass under-estimates.
const SIZED_FOR: f64 = 1e-4;

/// The share of the first pass's lane rows that dipped: `rows` holds per pair its low lane rows
/// and lane rows (a pair without rows: one of one). Pairs with a unit low in every first-pass
/// pair it had (two or more: a slow or dead node, port or GPU) are left out: their rows are
/// that unit's fault, not the fabric's noise, and in a small fleet they would be most of the
/// low rows. A unit low in one pair only (a port slow in one role, a bad link, a dip) stays in.
pub fn transient_share(rows: &[(Pair, u32, u32)]) -> f64 {
    let mut pairs_of: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for &(pair, low, _) in rows {
        for unit in [pair.server, pair.client] {
            let entry = pairs_of.entry(unit).or_default();
            entry.0 += 1;
            entry.1 += usize::from(low > 0);
        }
    }
    let faulty = |unit: usize| pairs_of.get(&unit).is_some_and(|&(pairs, low)| pairs >= 2 && low == pairs);
    let (mut low, mut all) = (0u64, 0u64);
    for &(pair, low_rows, lane_rows) in rows {
        if !faulty(pair.server) && !faulty(pair.client) {
            low += u64::from(low_rows);
            all += u64::from(lane_rows);
        }
    }
    low as f64 / all.max(1) as f64
}

/// How many healthy peers in a row must agree about a suspect in each role, from `low_share`,
/// the share of the first pass's lane rows that dipped ([`transient_share`]), and `ports`, the ports of the fleet
/// (units x lanes). The judge names a port slow in one role from its low peers in that role
/// only when 3 x ports x share^peers is below its alpha; this asks for the smallest count, two
/// or more, at which that holds with `SIZED_FOR` from locate's peers alone (the first pass's
/// peer may be a dead node, with no rows), at most [`MOST_AGREEING`]. The share is taken as at
/// least one in a thousand (the judge's floor).
pub fn agreeing_peers(low_share: f64, ports: usize) -> usize {
    let share = if low_share.is_finite() { low_share.clamp(0.001, 0.5) } else { 0.5 };
    let tests = 3.0 * ports.max(1) as f64;
    (2..=MOST_AGREEING).find(|&agree| tests * share.powi(agree as i32) < SIZED_FOR).unwrap_or(MOST_AGREEING)
}

/// The state of a `locate` run over `units` units.
#[derive(Debug, Clone)]
pub struct Locator {
    units: usize,
    /// Units with at least one pair so far, and those with a low pair.
    measured: BTreeSet<usize>,
    suspects: BTreeMap<usize, Verdicts>,
    met: HashSet<(usize, usize)>,
    /// Units that stopped answering: paired with no one again (each such pair would only cost
    /// its peer a timeout).
    retired: BTreeSet<usize>,
    generator: SplitMix64,
    /// Healthy peers in a row that must agree in each role for a suspect to settle (2 unless
    /// [`Locator::size_for_noise`] says more).
    pub agree: usize,
    /// A suspect is given up on (left unsettled) after this many locate pairs.
    pub max_pairs_per_suspect: usize,
    pub rounds: usize,
    pub pair_runs: usize,
}

impl Locator {
    pub fn new(units: usize, seed: u64) -> Locator {
        Locator {
            units,
            measured: BTreeSet::new(),
            suspects: BTreeMap::new(),
            met: HashSet::new(),
            retired: BTreeSet::new(),
            generator: SplitMix64::new(seed ^ 0x10CA7E),
            agree: 2,
            max_pairs_per_suspect: 8,
            rounds: 0,
            pair_runs: 0,
        }
    }

    /// Sizes the agreeing peers for the first pass's noise (`rows`: per pair its low lane rows
    /// and lane rows, [`transient_share`], [`agreeing_peers`]) and gives each suspect room for
    /// them in both roles, and four verdicts more for a dip among them.
    pub fn size_for_noise(&mut self, rows: &[(Pair, u32, u32)], ports: usize) {
        self.agree = agreeing_peers(transient_share(rows), ports);
        self.max_pairs_per_suspect = 2 * self.agree + 4;
    }

    /// Records a finished round: every pair and whether it was low. In the first pass (the
    /// cheap rounds before locating) both ends of a low pair become suspects; later, a pair of a
    /// suspect and a healthy unit counts for the suspect in the role it took.
    pub fn record_round(&mut self, pairs: &[(Pair, bool)], first_pass: bool) {
        self.rounds += 1;
        self.pair_runs += pairs.len();
        for &(pair, low) in pairs {
            self.met.insert(ordered(pair));
            self.measured.insert(pair.server);
            self.measured.insert(pair.client);
            let server_suspect = self.suspects.contains_key(&pair.server);
            let client_suspect = self.suspects.contains_key(&pair.client);
            match (server_suspect, client_suspect) {
                (true, false) if !first_pass => {
                    self.suspects.entry(pair.server).or_default().receiving.push(low)
                }
                (false, true) if !first_pass => {
                    self.suspects.entry(pair.client).or_default().sending.push(low)
                }
                _ if low => {
                    self.suspects.entry(pair.server).or_default();
                    self.suspects.entry(pair.client).or_default();
                }
                _ => {}
            }
        }
    }

    /// The suspects and what their healthy peers said.
    pub fn suspects(&self) -> &BTreeMap<usize, Verdicts> {
        &self.suspects
    }

    /// Units measured with no low pair: the peers a suspect is re-measured against.
    pub fn healthy(&self) -> Vec<usize> {
        self.measured
            .iter()
            .copied()
            .filter(|unit| !self.suspects.contains_key(unit) && !self.retired.contains(unit))
            .collect()
    }

    /// Pairs `unit` with no one from now on (it stopped answering; a job's rank 0 says so).
    pub fn retire(&mut self, unit: usize) {
        self.retired.insert(unit);
    }

    /// The next round: each unsettled suspect with a healthy unit it has not met, in the role it
    /// has fewer verdicts in; `None` when every suspect has settled (or no healthy peer is left).
    pub fn next_round(&mut self) -> Option<Vec<Pair>> {
        let mut healthy = self.healthy();
        self.generator.shuffle(&mut healthy);
        let mut used = vec![false; self.units];
        let mut round = Vec::new();
        let mut cursor = 0;
        for (&suspect, verdicts) in &self.suspects {
            if verdicts.settled(self.agree)
                || self.retired.contains(&suspect)
                || verdicts.sending.len() + verdicts.receiving.len() >= self.max_pairs_per_suspect
            {
                continue;
            }
            let tries = healthy.len();
            let partner = (0..tries).map(|step| healthy[(cursor + step) % tries]).find(|&peer| {
                !used[peer] && !self.met.contains(&ordered(Pair { server: peer, client: suspect }))
            });
            let Some(peer) = partner else { continue };
            cursor = (healthy.iter().position(|&unit| unit == peer).unwrap_or(0) + 1) % tries.max(1);
            used[peer] = true;
            // The role with fewer verdicts; sending first.
            round.push(if verdicts.sending.len() <= verdicts.receiving.len() {
                Pair { server: peer, client: suspect }
            } else {
                Pair { server: suspect, client: peer }
            });
        }
        (!round.is_empty()).then_some(round)
    }
}

/// The cheap first pass: a ring over a seeded shuffle of the units, so that every unit sends
/// once and receives once (a fault in one direction shows) with random peers, in two rounds
/// (three for an odd count).
pub fn first_pass(units: usize, seed: u64) -> Vec<Vec<Pair>> {
    let mut order: Vec<usize> = (0..units).collect();
    SplitMix64::new(seed).shuffle(&mut order);
    Schedule::Ring
        .rounds(units)
        .into_iter()
        .map(|round| {
            round
                .into_iter()
                .map(|pair| Pair { server: order[pair.server], client: order[pair.client] })
                .collect()
        })
        .collect()
}

/// The most passes of retests a job runs after locating (and `gdrperf fleet simulate` after its
/// schedule): each pass runs once every pair the fleet judge lists to retest, then the judge
/// looks again. A dip clears in one pass (its pair's rows are no longer mostly low); a bad link
/// needs as many agreeing rows as the class's transient rate asks (two to six in the simulated
/// jobs), one a pass; a pair still listed after this many passes is left undecided.
pub const MOST_RETEST_PASSES: usize = 16;

/// `pairs` split into rounds in which no unit is in two pairs (greedily, in the order given:
/// each pair into the first round with both its units free), so that every round can run at
/// once. A pair of a unit with itself is left out.
pub fn rounds_apart(pairs: &[Pair]) -> Vec<Vec<Pair>> {
    let mut rounds: Vec<(BTreeSet<usize>, Vec<Pair>)> = Vec::new();
    for &pair in pairs.iter().filter(|pair| pair.server != pair.client) {
        let free =
            rounds.iter().position(|(busy, _)| !busy.contains(&pair.server) && !busy.contains(&pair.client));
        let at = free.unwrap_or_else(|| {
            rounds.push((BTreeSet::new(), Vec::new()));
            rounds.len() - 1
        });
        rounds[at].0.insert(pair.server);
        rounds[at].0.insert(pair.client);
        rounds[at].1.push(pair);
    }
    rounds.into_iter().map(|(_, round)| round).collect()
}

fn ordered(pair: Pair) -> (usize, usize) {
    (pair.server.min(pair.client), pair.server.max(pair.client))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs locate over 8 units where unit 3 is slow when sending only; returns the settled verdicts.
    #[test]
    fn the_first_pass_has_every_unit_send_and_receive_once() {
        for units in [2, 9, 64] {
            let pairs: Vec<Pair> = first_pass(units, 3).concat();
            for unit in 0..units {
                assert_eq!(pairs.iter().filter(|pair| pair.client == unit).count(), 1, "{units} units");
                assert_eq!(pairs.iter().filter(|pair| pair.server == unit).count(), 1, "{units} units");
            }
        }
    }

    #[test]
    fn more_peers_must_agree_on_a_noisier_first_pass() {
        // A quiet first pass (the floor of 1e-3): 3 x 2048 x 1e-3^2 = 6.1e-3, ^3 = 6.1e-6 < 1e-4:
        // three.
        assert_eq!(agreeing_peers(0.0, 2048), 3);
        // 2.5 % of lane rows low, 2048 ports: 6144 x 0.025^5 = 6.0e-5 < 1e-4, 0.025^4 not: five.
        assert_eq!(agreeing_peers(0.025, 2048), 5);
        // 32768 ports at the same share: 98304 x 0.025^6 = 2.3e-5: six.
        assert_eq!(agreeing_peers(0.025, 32768), 6);
        // Nothing is sized beyond the most.
        assert_eq!(agreeing_peers(0.5, 32768), MOST_AGREEING);
        assert_eq!(agreeing_peers(f64::NAN, 8), MOST_AGREEING);
        // A ring of eight: unit 2 low in both its pairs (those left out), a dipped pair of 3
        // lanes (one low), a missing pair (one of one): 2 low of 5 x 3 + 1 = 16 rows.
        let pair = |server: usize, client: usize| Pair { server, client };
        let rows = [
            (pair(0, 1), 0, 3),
            (pair(1, 2), 3, 3),
            (pair(2, 3), 2, 3),
            (pair(3, 4), 0, 3),
            (pair(4, 5), 1, 3),
            (pair(5, 6), 0, 3),
            (pair(6, 7), 1, 1),
            (pair(7, 0), 0, 3),
        ];
        assert!((transient_share(&rows) - 2.0 / 16.0).abs() < 1e-12, "{}", transient_share(&rows));
        let verdicts =
            Verdicts { sending: vec![false, true, true, true], receiving: vec![false, false, false] };
        assert!(verdicts.settled(3));
        assert!(!verdicts.settled(4));
    }

    #[test]
    fn retest_pairs_are_split_into_rounds_without_a_unit_twice() {
        let pair = |server: usize, client: usize| Pair { server, client };
        // 1 is in three pairs: three rounds; 4-5 fits the first; a unit with itself is dropped.
        let rounds = rounds_apart(&[pair(0, 1), pair(1, 2), pair(3, 1), pair(4, 5), pair(6, 6)]);
        assert_eq!(rounds, vec![vec![pair(0, 1), pair(4, 5)], vec![pair(1, 2)], vec![pair(3, 1)]]);
        for round in &rounds {
            let mut units: Vec<usize> = round.iter().flat_map(|p| [p.server, p.client]).collect();
            let all = units.len();
            units.sort_unstable();
            units.dedup();
            assert_eq!(units.len(), all);
        }
        assert!(rounds_apart(&[]).is_empty());
    }

    #[test]
    fn a_sender_only_fault_settles_low_sending_and_fine_receiving() {
        let low = |pair: Pair| pair.client == 3;
        let mut locator = Locator::new(8, 1);
        // First pass: a ring (server i, client i+1): only the pair where 3 is the client (sends) is low.
        let first: Vec<(Pair, bool)> =
            (0..8).map(|server| Pair { server, client: (server + 1) % 8 }).map(|p| (p, low(p))).collect();
        locator.record_round(&first, true);
        assert_eq!(locator.suspects().keys().copied().collect::<Vec<_>>(), [2, 3]);
        while let Some(round) = locator.next_round() {
            let results: Vec<(Pair, bool)> = round.iter().map(|&p| (p, low(p))).collect();
            locator.record_round(&results, false);
            assert!(locator.rounds < 20, "locate did not settle");
        }
        let suspects = locator.suspects();
        assert!(suspects.values().all(|verdicts| verdicts.settled(2)));
        assert_eq!(suspects[&3].sending.last(), Some(&true));
        assert_eq!(suspects[&3].receiving.last(), Some(&false));
        // The innocent end of the low pair is cleared in both roles.
        assert!(!suspects[&2].sending.iter().chain(&suspects[&2].receiving).any(|&low| low));
    }
}
