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

    /// The rounds of this schedule over `units` units (none for fewer than two), listed whole:
    /// for a simulation or a test. A job asks its [`Timetable`] one round or one unit at a time.
    pub fn rounds(self, units: usize) -> Vec<Vec<Pair>> {
        let timetable = Timetable::new(self, units);
        (0..timetable.rounds()).map(|round| timetable.round(round)).collect()
    }
}

/// One random perfect matching (the last unit of a shuffled odd count rests).
pub fn random_matching(units: usize, generator: &mut SplitMix64) -> Vec<Pair> {
    let mut order: Vec<usize> = (0..units).collect();
    generator.shuffle(&mut order);
    order.chunks_exact(2).map(|two| Pair { server: two[0], client: two[1] }).collect()
}

/// Who meets whom in which round, asked one round or one unit at a time.
///
/// A job of thousands of nodes must not list its pairs: all-pairs over 4096 nodes is 8.4 M unit
/// pairs, 67 M bench pairs with 8 tasks a node, and every rank would hold them all to find its
/// own few thousand. `pairs`, `ring` and `all-pairs` are formulas: a unit's partner in a round,
/// and the pair at a place in a round, in constant time, with nothing stored. `random` and
/// `locate` keep their rounds listed (a few rounds of at most N/2 pairs each: O(N) for a fixed
/// round count).
#[derive(Debug, Clone)]
pub struct Timetable {
    units: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Pairs,
    Ring,
    AllPairs,
    Listed(Vec<Vec<Pair>>),
}

impl Timetable {
    /// The rounds of `schedule` over `units` units.
    pub fn new(schedule: Schedule, units: usize) -> Timetable {
        let kind = match schedule {
            Schedule::Pairs => Kind::Pairs,
            Schedule::Ring => Kind::Ring,
            Schedule::AllPairs => Kind::AllPairs,
            Schedule::Random { rounds, seed } => {
                let mut generator = SplitMix64::new(seed);
                Kind::Listed(if units < 2 {
                    Vec::new()
                } else {
                    (0..rounds).map(|_| random_matching(units, &mut generator)).collect()
                })
            }
        };
        Timetable { units, kind }
    }

    /// Rounds given as lists (the first pass of `locate`, then its decided rounds).
    pub fn listed(units: usize, rounds: Vec<Vec<Pair>>) -> Timetable {
        Timetable { units, kind: Kind::Listed(rounds) }
    }

    /// Appends a round to a listed timetable (`locate`'s next round); a formula has all its
    /// rounds and refuses one more.
    pub fn push_round(&mut self, round: Vec<Pair>) -> bool {
        match &mut self.kind {
            Kind::Listed(rounds) => {
                rounds.push(round);
                true
            }
            _ => false,
        }
    }

    pub fn units(&self) -> usize {
        self.units
    }

    /// How many rounds.
    pub fn rounds(&self) -> usize {
        let units = self.units;
        if units < 2 {
            return match &self.kind {
                Kind::Listed(rounds) => rounds.len(),
                _ => 0,
            };
        }
        match &self.kind {
            Kind::Pairs => 1,
            Kind::Ring => 2 + units % 2,
            Kind::AllPairs => units + units % 2 - 1,
            Kind::Listed(rounds) => rounds.len(),
        }
    }

    /// How many pairs round `round` has.
    pub fn round_len(&self, round: usize) -> usize {
        if round >= self.rounds() {
            return 0;
        }
        match &self.kind {
            Kind::Ring if round == 2 => 1,
            Kind::Pairs | Kind::Ring | Kind::AllPairs => self.units / 2,
            Kind::Listed(rounds) => rounds[round].len(),
        }
    }

    /// The pair at place `index` of round `round` (`index` below [`Timetable::round_len`]).
    pub fn pair_at(&self, round: usize, index: usize) -> Pair {
        let units = self.units;
        match &self.kind {
            Kind::Pairs => Pair { server: 2 * index, client: 2 * index + 1 },
            // Round 0: the even servers (for an odd count not the last unit, whose edge to 0
            // would meet round 0's first pair); round 1: the odd servers; round 2: that edge.
            Kind::Ring => ring_edge(units, if round == 2 { units - 1 } else { 2 * index + round }),
            // For an odd count the fixed slot is the dummy: place 0 (its pair) is dropped.
            Kind::AllPairs => circle_pair(units, round, index + units % 2),
            Kind::Listed(rounds) => rounds[round][index],
        }
    }

    /// The pair `unit` is in during round `round`, with its place in the round; `None` when it
    /// rests.
    pub fn pair_of(&self, round: usize, unit: usize) -> Option<(usize, Pair)> {
        if round >= self.rounds() || unit >= self.units {
            return None;
        }
        let units = self.units;
        let index = match &self.kind {
            Kind::Pairs => (unit / 2 < units / 2).then_some(unit / 2),
            Kind::Ring => ring_place(units, round, unit)
                .or_else(|| ring_place(units, round, (unit + units - 1) % units)),
            Kind::AllPairs => circle_place(units, round, unit)?.checked_sub(units % 2),
            Kind::Listed(rounds) => {
                rounds[round].iter().position(|pair| pair.server == unit || pair.client == unit)
            }
        }?;
        Some((index, self.pair_at(round, index)))
    }

    /// Every pair of round `round`, in place order.
    pub fn round(&self, round: usize) -> Vec<Pair> {
        (0..self.round_len(round)).map(|index| self.pair_at(round, index)).collect()
    }

    /// Per unit, how many pairs it is in and how many distinct peers it meets: a formula for
    /// `pairs`, `ring` and `all-pairs`; counted over the listed rounds otherwise.
    pub fn tallies(&self) -> Vec<(usize, usize)> {
        let units = self.units;
        match &self.kind {
            _ if units < 2 && !matches!(self.kind, Kind::Listed(_)) => vec![(0, 0); units],
            Kind::Pairs => {
                (0..units).map(|unit| if unit < units - units % 2 { (1, 1) } else { (0, 0) }).collect()
            }
            Kind::Ring => vec![(2, if units == 2 { 1 } else { 2 }); units],
            Kind::AllPairs => vec![(units - 1, units - 1); units],
            Kind::Listed(rounds) => {
                let mut peers: Vec<Vec<usize>> = vec![Vec::new(); units];
                let mut runs = vec![0; units];
                for pair in rounds.iter().flatten() {
                    for (unit, peer) in [(pair.server, pair.client), (pair.client, pair.server)] {
                        runs[unit] += 1;
                        if !peers[unit].contains(&peer) {
                            peers[unit].push(peer);
                        }
                    }
                }
                runs.into_iter().zip(peers).map(|(runs, peers)| (runs, peers.len())).collect()
            }
        }
    }
}

/// Ring edge `server -> server + 1 (mod N)`.
fn ring_edge(units: usize, server: usize) -> Pair {
    Pair { server, client: (server + 1) % units }
}

/// The place of the edge that `server` serves in ring round `round`, if it is in that round.
fn ring_place(units: usize, round: usize, server: usize) -> Option<usize> {
    let last = units - 1;
    let odd_count = units % 2 == 1;
    match round {
        0 if server.is_multiple_of(2) && !(odd_count && server == last) => Some(server / 2),
        1 if server % 2 == 1 => Some(server / 2),
        2 if odd_count && server == last => Some(0),
        _ => None,
    }
}

/// The circle method over `slots` (N rounded up to even): slot `slots - 1` is fixed and meets
/// slot `round`; the others sit at `round +- offset`. Place `offset` of round `round`; who
/// serves alternates with the round (fixed pair) and the offset (the rest), so a unit does not
/// always serve.
fn circle_pair(units: usize, round: usize, offset: usize) -> Pair {
    let slots = units + units % 2;
    let rotating = slots - 1;
    let fixed = slots - 1;
    let (server, client) = if offset == 0 {
        if round.is_multiple_of(2) {
            (fixed, round)
        } else {
            (round, fixed)
        }
    } else {
        let a = (round + offset) % rotating;
        let b = (round + rotating - offset) % rotating;
        if offset.is_multiple_of(2) {
            (a, b)
        } else {
            (b, a)
        }
    };
    Pair { server, client }
}

/// The offset (place before dropping the dummy's pair) of `unit` in circle round `round`.
fn circle_place(units: usize, round: usize, unit: usize) -> Option<usize> {
    let slots = units + units % 2;
    let rotating = slots - 1;
    if unit == slots - 1 || unit == round {
        // The fixed slot's pair; for an odd count the fixed slot is the dummy: `unit` rests.
        return units.is_multiple_of(2).then_some(0);
    }
    let distance = (unit + rotating - round) % rotating;
    Some(distance.min(rotating - distance))
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

    /// The listing every round whole, as the schedules were first written: the formulas of
    /// [`Timetable`] must give the same rounds, pair for pair and in the same places.
    /// Edge i -> i+1 (mod N), coloured so no unit is in two pairs of one round.
    fn listed_ring(units: usize) -> Vec<Vec<Pair>> {
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
    fn listed_all_pairs(units: usize) -> Vec<Vec<Pair>> {
        let slots = units + units % 2; // even
        let rotating = slots - 1;
        let fixed = slots - 1;
        (0..rotating)
            .map(|round| {
                let mut pairs = Vec::new();
                // The fixed slot meets the rotating slot `round`; who serves alternates by round.
                let (a, b) = if round.is_multiple_of(2) { (fixed, round) } else { (round, fixed) };
                pairs.push((a, b));
                for offset in 1..slots / 2 {
                    let a = (round + offset) % rotating;
                    let b = (round + rotating - offset) % rotating;
                    // Alternate direction by offset so a unit does not always serve.
                    pairs.push(if offset.is_multiple_of(2) { (a, b) } else { (b, a) });
                }
                pairs
                    .into_iter()
                    .filter(|&(a, b)| a < units && b < units)
                    .map(|(server, client)| Pair { server, client })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_formulas_give_the_listed_rounds_and_find_every_unit_in_them() {
        for units in 2..70 {
            for (schedule, listed) in
                [(Schedule::Ring, listed_ring(units)), (Schedule::AllPairs, listed_all_pairs(units))]
            {
                assert_eq!(schedule.rounds(units), listed, "{} over {units}", schedule.name());
            }
            for schedule in
                [Schedule::Pairs, Schedule::Ring, Schedule::AllPairs, Schedule::Random { rounds: 3, seed: 5 }]
            {
                let timetable = Timetable::new(schedule, units);
                let rounds = schedule.rounds(units);
                let mut tallies = vec![(0, HashSet::new()); units];
                for (round, pairs) in rounds.iter().enumerate() {
                    for unit in 0..units {
                        let found = pairs.iter().position(|pair| pair.server == unit || pair.client == unit);
                        assert_eq!(
                            timetable.pair_of(round, unit),
                            found.map(|index| (index, pairs[index])),
                            "{} over {units}, round {round}, unit {unit}",
                            schedule.name()
                        );
                    }
                    for pair in pairs {
                        for (unit, peer) in [(pair.server, pair.client), (pair.client, pair.server)] {
                            tallies[unit].0 += 1;
                            tallies[unit].1.insert(peer);
                        }
                    }
                }
                let counted: Vec<(usize, usize)> =
                    tallies.into_iter().map(|(runs, peers)| (runs, peers.len())).collect();
                assert_eq!(timetable.tallies(), counted, "{} over {units}", schedule.name());
            }
        }
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
            assert_eq!(rounds.len(), if units.is_multiple_of(2) { 2 } else { 3 }, "{units} units");
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
            assert_eq!(
                rounds.len(),
                if units.is_multiple_of(2) { units - 1 } else { units },
                "{units} units"
            );
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
