//! Who measures against whom, and when: pair schedules over N units (nodes or tasks).
//!
//! A schedule is a list of rounds; within a round every unit is in at most one pair, so all of a
//! round's pairs run at once without sharing a node. A pair is directed: `server` receives (the
//! bench's server side), `client` drives and writes the result row.
//!
//! - `pairs`: 0-1, 2-3, ... in one round; the quickest acceptance of an allocation. With an odd
//!   count the last unit sits out (and the summary says so).
//! - `ring`: every unit serves its successor (0->1, 1->2, ..., N-1->0), so each unit is measured
//!   once as server and once as client, against two different peers: a failure on both of a
//!   unit's links points at the unit, not at its peer. Two rounds for an even N, three for odd.
//! - `all-pairs`: every unordered pair once (the circle method: N-1 rounds for even N, N for odd,
//!   one unit resting per round), roles alternating so each unit serves about half the time.
//!   N(N-1)/2 measurements: for a fabric sweep of a few dozen nodes, not of thousands.
//! - `random`: `rounds` seeded random perfect matchings (a shuffle, then 0-1, 2-3, ...): each unit
//!   meets about `rounds` peers in `rounds` rounds, whatever N is; the same seed gives the same
//!   rounds on every rank. A pair may repeat across rounds (rarely, for large N).
//!
//! The adaptive `locate` schedule decides each round from the last one's rows: see [`crate::locate`].

use serde::Serialize;

use crate::random::SplitMix64;

/// One directed pair of unit indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Pair {
    pub server: usize,
    pub client: usize,
}

/// The schedules `--schedule` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    Pairs,
    Ring,
    AllPairs,
    Random { rounds: usize, seed: u64 },
}

impl Schedule {
    /// The command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Pairs => "pairs",
            Schedule::Ring => "ring",
            Schedule::AllPairs => "all-pairs",
            Schedule::Random { .. } => "random",
        }
    }

    /// The rounds of this schedule over `units` units (none for fewer than two).
    pub fn rounds(self, units: usize) -> Vec<Vec<Pair>> {
        if units < 2 {
            return Vec::new();
        }
        match self {
            Schedule::Pairs => {
                vec![(0..units / 2).map(|index| Pair { server: 2 * index, client: 2 * index + 1 }).collect()]
            }
            Schedule::Ring => ring(units),
            Schedule::AllPairs => all_pairs(units),
            Schedule::Random { rounds, seed } => {
                let mut generator = SplitMix64::new(seed);
                (0..rounds).map(|_| random_matching(units, &mut generator)).collect()
            }
        }
    }
}

/// One random perfect matching (the last unit of a shuffled odd count rests).
pub fn random_matching(units: usize, generator: &mut SplitMix64) -> Vec<Pair> {
    let mut order: Vec<usize> = (0..units).collect();
    generator.shuffle(&mut order);
    order.chunks_exact(2).map(|two| Pair { server: two[0], client: two[1] }).collect()
}

/// Edge i -> i+1 (mod N), coloured so no unit is in two pairs of one round.
fn ring(units: usize) -> Vec<Vec<Pair>> {
    let edge = |server: usize| Pair { server, client: (server + 1) % units };
    if units == 2 {
        // The two directions of the one link.
        return vec![vec![edge(0)], vec![edge(1)]];
    }
    // Even servers then odd servers; for odd N the last edge (N-1 -> 0) touches unit 0, which
    // the first round already uses, and unit N-1, which the second uses: it gets a round alone.
    let last = units - 1;
    let odd_count = units % 2 == 1;
    let even: Vec<Pair> =
        (0..units).step_by(2).filter(|&server| !odd_count || server != last).map(edge).collect();
    let odd: Vec<Pair> = (1..units).step_by(2).map(edge).collect();
    let mut rounds = vec![even, odd];
    if odd_count {
        rounds.push(vec![edge(last)]);
    }
    rounds
}

/// The circle method: fix one slot, rotate the rest; a dummy slot for odd N marks the rest.
fn all_pairs(units: usize) -> Vec<Vec<Pair>> {
    let slots = units + units % 2; // even
    let rotating = slots - 1;
    let fixed = slots - 1;
    (0..rotating)
        .map(|round| {
            let mut pairs = Vec::new();
            // The fixed slot meets the rotating slot `round`; who serves alternates by round.
            let (a, b) = if round % 2 == 0 { (fixed, round) } else { (round, fixed) };
            pairs.push((a, b));
            for offset in 1..slots / 2 {
                let a = (round + offset) % rotating;
                let b = (round + rotating - offset) % rotating;
                // Alternate direction by offset so a unit does not always serve.
                pairs.push(if offset % 2 == 0 { (a, b) } else { (b, a) });
            }
            pairs
                .into_iter()
                .filter(|&(a, b)| a < units && b < units)
                .map(|(server, client)| Pair { server, client })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// No unit appears twice in a round.
    fn rounds_are_disjoint(rounds: &[Vec<Pair>]) -> bool {
        rounds.iter().all(|round| {
            let mut seen = HashSet::new();
            round.iter().all(|pair| {
                pair.server != pair.client && seen.insert(pair.server) && seen.insert(pair.client)
            })
        })
    }

    #[test]
    fn pairs_are_zero_one_two_three() {
        let rounds = Schedule::Pairs.rounds(5);
        assert_eq!(rounds, vec![vec![Pair { server: 0, client: 1 }, Pair { server: 2, client: 3 }]]);
        assert!(Schedule::Pairs.rounds(1).is_empty());
    }

    #[test]
    fn ring_of_two_measures_both_directions() {
        assert_eq!(
            Schedule::Ring.rounds(2),
            vec![vec![Pair { server: 0, client: 1 }], vec![Pair { server: 1, client: 0 }]]
        );
    }

    #[test]
    fn ring_of_five_takes_three_rounds() {
        let rounds = Schedule::Ring.rounds(5);
        assert_eq!(rounds.len(), 3);
        assert_eq!(rounds[2], vec![Pair { server: 4, client: 0 }]);
    }

    #[test]
    fn ring_has_every_successor_edge_once() {
        for units in 2..64 {
            let rounds = Schedule::Ring.rounds(units);
            assert!(rounds_are_disjoint(&rounds), "{units} units");
            let edges: Vec<Pair> = rounds.concat();
            let set: HashSet<Pair> = edges.iter().copied().collect();
            assert_eq!((edges.len(), set.len()), (units, units), "{units} units");
            assert!(edges.iter().all(|pair| pair.client == (pair.server + 1) % units), "{units} units");
            assert_eq!(rounds.len(), if units % 2 == 0 { 2 } else { 3 }, "{units} units");
        }
    }

    #[test]
    fn all_pairs_meets_every_pair_once_in_few_rounds() {
        for units in 2..48 {
            let rounds = Schedule::AllPairs.rounds(units);
            assert!(rounds_are_disjoint(&rounds), "{units} units");
            let unordered: Vec<(usize, usize)> = rounds
                .concat()
                .iter()
                .map(|pair| (pair.server.min(pair.client), pair.server.max(pair.client)))
                .collect();
            let set: HashSet<(usize, usize)> = unordered.iter().copied().collect();
            assert_eq!(unordered.len(), units * (units - 1) / 2, "{units} units");
            assert_eq!(set.len(), unordered.len(), "{units} units");
            assert_eq!(rounds.len(), if units % 2 == 0 { units - 1 } else { units }, "{units} units");
            // Roles are spread: nobody serves in every one of its pairs (beyond three units).
            if units > 3 {
                for unit in 0..units {
                    let served = rounds.concat().iter().filter(|pair| pair.server == unit).count();
                    assert!(
                        served > 0 && served < units - 1,
                        "unit {unit} of {units} served {served} of {}",
                        units - 1
                    );
                }
            }
        }
    }

    #[test]
    fn random_rounds_are_matchings_that_repeat_by_seed() {
        for units in [2, 7, 64] {
            let schedule = Schedule::Random { rounds: 5, seed: 11 };
            let rounds = schedule.rounds(units);
            assert_eq!(rounds.len(), 5);
            assert!(rounds_are_disjoint(&rounds), "{units} units");
            assert!(rounds.iter().all(|round| round.len() == units / 2), "{units} units");
            assert_eq!(rounds, schedule.rounds(units));
        }
        let other = Schedule::Random { rounds: 5, seed: 12 }.rounds(64);
        assert_ne!(other, Schedule::Random { rounds: 5, seed: 11 }.rounds(64));
    }

    #[test]
    fn pairs_cover_all_but_an_odd_last_unit() {
        for units in 2..200 {
            let rounds = Schedule::Pairs.rounds(units);
            assert!(rounds_are_disjoint(&rounds), "{units} units");
            let covered: HashSet<usize> =
                rounds.concat().iter().flat_map(|pair| [pair.server, pair.client]).collect();
            assert_eq!(covered.len(), units - units % 2, "{units} units");
        }
    }
}
