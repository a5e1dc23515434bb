//! Rows that dip: a shared fabric's moment of congestion, a bad cable, or a port that fails now
//! and then, told apart by how often the same place dips.
//!
//! The model: a row's log bandwidth is its class level plus its ends' effects plus noise, and with
//! some probability `pi` (a class's **transient rate**) the row instead *dips*: it falls more than
//! `min_deficit` below what its ends explain, for a moment, whatever part it ran on. Heavy tails
//! of the noise itself (Student-t rather than normal) fall in the same bin: a row far out is a
//! dipped row. A dipped row is counted as **low**. `pi` is the share of low rows in the class,
//! left out the rows of the place being tested (so a bad link does not raise the rate it is
//! tested against), and never below [`TRANSIENT_FLOOR`].
//!
//! A place is named from how many of its rows are low, against Binomial(rows, pi)
//! ([`normal::binomial_upper_tail`], a conservative bound), Bonferroni over the places tested:
//! - a **link** (a pair of ports, rows not explained by a named end): its low rows must be two or
//!   more and most of its rows. It became a candidate by having a low row, so its p is that of
//!   its low count given at least one: P(X >= k) / P(X >= 1), and the family is the candidates of
//!   the class. One low row is never enough (that p is 1): a one-off deficit, or a pair whose low
//!   rows are most but too few to be sure, is listed to **retest**, with the number of agreeing
//!   rows more that would name it. A pair with a minority of low rows is transient.
//! - an **intermittent port**: low in at least [`INTERMITTENT_SHARE`] of its rows and surely more
//!   often than pi, over the ports measured in the class, yet not low in most rows of either role
//!   and with its other rows at the class ([`Dips::intermittent`]): with few rows a port low in
//!   40 % of its pair runs can have a low median in one role by chance, and was named "when
//!   sending"; this test comes first. Its direction is not named.
//!
//! Every low row not in a named link or an intermittent port is counted as transient.

use rustc_hash::{FxHashMap, FxHashSet};

use serde::Serialize;

use crate::fit::Fit;
use crate::normal;
use crate::observation::Source;

/// The transient rate is never taken below one row in a thousand: a job whose rows never dipped
/// (a small one, a hand-built file) would otherwise make two low rows of one pair certain. No
/// measured source: an assumption, stated; it sets how many agreeing rows name a link in a quiet
/// job (two, at alpha 0.001 with one candidate).
pub const TRANSIENT_FLOOR: f64 = 0.001;
/// An intermittent port is low in at least this share of its rows (10 %): below that, a port
/// that dips more often than its class is listed to watch, not named.
pub const INTERMITTENT_SHARE: f64 = 0.10;
/// A retest is suggested up to this many agreeing rows; a pair that needs more is listed with
/// "more than" this.
pub const MOST_RETESTS: u64 = 16;

/// What the rows' dips say, for the judge.
pub struct Dips {
    /// Per key of the fit: rows of the port more than the bar below what its peer explains (its
    /// own effect not taken off, its rail's is), in all and by role, and its rows by role.
    pub low: Vec<u32>,
    pub low_sending: Vec<u32>,
    pub low_receiving: Vec<u32>,
    pub rows_sending: Vec<u32>,
    pub rows_receiving: Vec<u32>,
    /// Sums of the low rows' deficits and of the other rows' (log units): a port that dips now
    /// and then has its other rows at the class, a slow port near the bar has them below it.
    pub low_sum: Vec<f64>,
    pub normal_sum: Vec<f64>,
    /// Per class: low ends and ends in all, over ports not named.
    pub class_low: Vec<u64>,
    pub class_ends: Vec<u64>,
}

impl Dips {
    /// Whether the port at `key` dips now and then rather than always: low in
    /// [`INTERMITTENT_SHARE`] of its rows or more, in no role in more than three quarters of
    /// them (a port slow in one role is low in all that role's rows), and its other rows above
    /// `watch_floor` on average (a slow port near the bar has its other rows just above the bar).
    pub fn intermittent(&self, key: usize, rows: u32, watch_floor: f64) -> bool {
        let low = self.low[key];
        let normal = rows.saturating_sub(low);
        let mostly = |low: u32, rows: u32| rows >= 3 && 4 * low > 3 * rows;
        low >= 3
            && f64::from(low) >= INTERMITTENT_SHARE * f64::from(rows)
            && !mostly(self.low_sending[key], self.rows_sending[key])
            && !mostly(self.low_receiving[key], self.rows_receiving[key])
            && normal > 0
            && self.normal_sum[key] / f64::from(normal) > watch_floor
    }
}

/// A port's low rows: one pass, each end's row with its peer's effect taken off (a slow peer does
/// not make a healthy port dip) and its own rail's (`shift`, by key).
pub fn count_dips(source: &dyn Source, fit: &Fit, floor: f64, named: &[bool], shift: &[f64]) -> Dips {
    let keys = fit.effects.len();
    let classes = fit.level.len();
    let mut dips = Dips {
        low: vec![0; keys],
        low_sending: vec![0; keys],
        low_receiving: vec![0; keys],
        rows_sending: vec![0; keys],
        rows_receiving: vec![0; keys],
        low_sum: vec![0.0; keys],
        normal_sum: vec![0.0; keys],
        class_low: vec![0; classes],
        class_ends: vec![0; classes],
    };
    source.visit_slices(&mut |rows| {
        // Borrowed into locals for the slice's loop: what a count's store cannot be taken to change.
        let fit = fit.view();
        let Dips {
            low: low_rows,
            low_sending,
            low_receiving,
            rows_sending,
            rows_receiving,
            low_sum,
            normal_sum,
            class_low,
            class_ends,
        } = &mut dips;
        let (low_rows, low_sending, low_receiving) =
            (&mut low_rows[..], &mut low_sending[..], &mut low_receiving[..]);
        let (rows_sending, rows_receiving, low_sum, normal_sum) =
            (&mut rows_sending[..], &mut rows_receiving[..], &mut low_sum[..], &mut normal_sum[..]);
        let (class_low, class_ends) = (&mut class_low[..], &mut class_ends[..]);
        for row in rows {
            let residual = fit.residual(row);
            for (port, sending) in [(row.sender, true), (row.receiver, false)] {
                let Some(key) = fit.keys.get(row.class, port) else { continue };
                let effect = &fit.effects[key];
                let own = if row.directed { effect.in_role(sending) } else { effect.combined };
                let deficit = residual + own - shift[key];
                let low = deficit < floor;
                if low {
                    low_rows[key] += 1;
                    low_sum[key] += deficit;
                } else {
                    normal_sum[key] += deficit;
                }
                if row.directed {
                    let (rows, lows) = match sending {
                        true => (&mut *rows_sending, &mut *low_sending),
                        false => (&mut *rows_receiving, &mut *low_receiving),
                    };
                    rows[key] += 1;
                    lows[key] += u32::from(low);
                }
                if !named[key] {
                    class_ends[row.class as usize] += 1;
                    class_low[row.class as usize] += u64::from(low);
                }
            }
        }
    });
    dips
}

/// The transient rate of a class with `rows` rows (`low` of them low) left out.
pub fn rate(class_low: u64, class_rows: u64, low: u64, rows: u64) -> f64 {
    let others = class_rows.saturating_sub(rows);
    let share = if others == 0 { 0.0 } else { class_low.saturating_sub(low) as f64 / others as f64 };
    share.max(TRANSIENT_FLOOR)
}

/// P(at least `low` of `rows` low | at least one), under the rate `pi`.
pub fn given_one(low: u64, rows: u64, pi: f64) -> f64 {
    if low <= 1 {
        return 1.0;
    }
    let any = 1.0 - (1.0 - pi).powf(rows as f64);
    (normal::binomial_upper_tail(low, rows, pi) / any.max(f64::MIN_POSITIVE)).min(1.0)
}

/// How many rows more, all low, would name a link now at `low` of `rows` (None: more than
/// [`MOST_RETESTS`]).
pub fn retests_needed(low: u64, rows: u64, pi: f64, tests: f64, alpha: f64) -> Option<u64> {
    (1..=MOST_RETESTS).find(|more| {
        let (low, rows) = (low + more, rows + more);
        2 * low > rows && tests * given_one(low, rows, pi) < alpha
    })
}

/// A pair of ports whose rows dipped, as judged.
#[derive(Debug, Clone)]
pub struct PairEvidence {
    pub class: u32,
    pub ends: (u32, u32),
    /// The median of the pair's rows' residuals (log units).
    pub median: f64,
    pub rows: u64,
    pub low: u64,
    pub p_adjusted: f64,
    pub named: bool,
    /// Rows more, all low, that would name it (retests only).
    pub retests: Option<u64>,
}

/// Pairs with a low row whose ends are not explained (`explained`, indexed by key), and the pairs
/// of `extra` (a port its peers did not prove, with each peer it was low with: their rows against
/// the level, less any explained end's effect and an unexplained end's rail, `shift` by key):
/// every row of them gathered (two passes, the second only over candidates' ports), each judged
/// as a link.
/// Returns the pairs with most rows low (named, or to retest) and the low rows of the others.
pub fn judge_pairs(
    source: &dyn Source,
    fit: &Fit,
    (floor, alpha): (f64, f64),
    explained: &[bool],
    extra: &[(u32, u32, u32)],
    shift: &[f64],
) -> (Vec<PairEvidence>, u64) {
    let ordered = |a: u32, b: u32| (a.min(b), a.max(b));
    let key_of = |class: u32, port: u32| fit.keys.get(class, port).unwrap_or(0);
    // Keyed by ports, looked up for nearly every row of a noisy job in the second pass: Fx's
    // hash, not SipHash (no untrusted keys to guard against; the keys are sorted before use, so
    // the hash's order never reaches a verdict).
    let mut candidates: FxHashMap<(u32, u32, u32), Vec<f32>> =
        extra.iter().map(|&pair| (pair, Vec::new())).collect();
    let mut in_candidate = vec![false; fit.effects.len()];
    for &(class, a, b) in extra {
        in_candidate[key_of(class, a)] = true;
        in_candidate[key_of(class, b)] = true;
    }
    let classes = fit.level.len();
    let mut class_low = vec![0u64; classes];
    let mut class_rows = vec![0u64; classes];
    source.visit_slices(&mut |rows| {
        let view = fit.view();
        let key_of = |class: u32, port: u32| view.keys.get(class, port).unwrap_or(0);
        let (class_rows, class_low, in_candidate) =
            (&mut class_rows[..], &mut class_low[..], &mut in_candidate[..]);
        for row in rows {
            let (sender, receiver) = (key_of(row.class, row.sender), key_of(row.class, row.receiver));
            if explained[sender] || explained[receiver] {
                continue;
            }
            class_rows[row.class as usize] += 1;
            if view.residual(row) < floor {
                class_low[row.class as usize] += 1;
                let (a, b) = ordered(row.sender, row.receiver);
                candidates.entry((row.class, a, b)).or_default();
                in_candidate[sender] = true;
                in_candidate[receiver] = true;
            }
        }
    });
    if candidates.is_empty() {
        return (Vec::new(), 0);
    }
    // Single-peer pairs (`extra`) are judged on their rows against the level: their ends' effects
    // took their deficit in.
    let single: FxHashSet<(u32, u32, u32)> = extra.iter().copied().collect();
    source.visit_slices(&mut |rows| {
        let fit = fit.view();
        let key_of = |class: u32, port: u32| fit.keys.get(class, port).unwrap_or(0);
        let in_candidate = &in_candidate[..];
        for row in rows {
            let (sender, receiver) = (key_of(row.class, row.sender), key_of(row.class, row.receiver));
            if in_candidate[sender] && in_candidate[receiver] {
                let (a, b) = ordered(row.sender, row.receiver);
                let key = (row.class, a, b);
                if let Some(residuals) = candidates.get_mut(&key) {
                    // A single-peer pair's rows against the level, less the effect of an end named
                    // from other peers (a slow port met by a port seen only with it: the slow
                    // port's deficit is not the pair's).
                    let value = match !single.is_empty() && single.contains(&key) {
                        true => {
                            let known = |key: usize, sending: bool| {
                                let effect = &fit.effects[key];
                                match (explained[key], row.directed) {
                                    (false, _) => shift[key],
                                    (true, true) => effect.in_role(sending),
                                    (true, false) => effect.combined,
                                }
                            };
                            f64::from(row.log_gbps)
                                - fit.level[row.class as usize]
                                - known(sender, true)
                                - known(receiver, false)
                        }
                        false => fit.residual(row),
                    };
                    residuals.push(value as f32);
                }
            }
        }
    });
    let mut per_class = vec![0u64; classes];
    for key in candidates.keys() {
        per_class[key.0 as usize] += 1;
    }
    let mut keys: Vec<_> = candidates.keys().copied().collect();
    keys.sort_unstable();
    let mut pairs = Vec::new();
    let mut transient = 0u64;
    for key in keys {
        let mut residuals = candidates.remove(&key).unwrap_or_default();
        residuals.sort_by(f32::total_cmp);
        let rows = residuals.len() as u64;
        let low = residuals.iter().filter(|&&value| f64::from(value) < floor).count() as u64;
        if rows == 0 {
            continue;
        }
        let median = match residuals.len() {
            n if n % 2 == 1 => f64::from(residuals[n / 2]),
            n => 0.5 * f64::from(residuals[n / 2 - 1] + residuals[n / 2]),
        };
        let class = key.0 as usize;
        let pi = rate(class_low[class], class_rows[class], low, rows);
        let tests = per_class[class].max(1) as f64;
        let p_adjusted = (tests * given_one(low, rows, pi)).min(1.0);
        let majority = 2 * low > rows && median < floor;
        let named = majority && low >= 2 && p_adjusted < alpha;
        if !named {
            transient += low;
        }
        if majority {
            let retests = (!named).then(|| retests_needed(low, rows, pi, tests, alpha)).flatten();
            pairs.push(PairEvidence {
                class: key.0,
                ends: (key.1, key.2),
                median,
                rows,
                low,
                p_adjusted,
                named,
                retests,
            });
        }
    }
    (pairs, transient)
}

/// A retest's line in the JSON: where, and how many agreeing rows would settle it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetestAdvice {
    /// Rows more of the pair, all low, that would name it a link (None: more than
    /// [`MOST_RETESTS`]).
    pub agreeing_rows_needed: Option<u64>,
    pub low_rows: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_low_row_is_never_evidence_and_two_agreeing_ones_are_in_a_quiet_job() {
        // Given at least one low row, one low row of one says nothing, whatever the rate.
        assert_eq!(given_one(1, 1, 0.02), 1.0);
        assert_eq!(given_one(1, 1, TRANSIENT_FLOOR), 1.0);
        // Two of two at the floor: P = pi^2 / (1 - (1 - pi)^2) = pi / (2 - pi), about 5e-4.
        let p = given_one(2, 2, TRANSIENT_FLOOR);
        assert!((p - 0.001 / 1.999).abs() < 1e-9, "{p}");
        assert_eq!(retests_needed(1, 1, TRANSIENT_FLOOR, 1.0, 0.001), Some(1));
        // At 2 % of rows dipping and 80 000 candidates, four agreeing rows more are too few
        // (5 of 5: 0.02^5 / (1 - 0.98^5) x 80 000 = 2.7e-3), five enough (4.5e-5).
        assert_eq!(retests_needed(1, 1, 0.02, 80_000.0, 0.001), Some(5));
        // A rate left out the pair's own rows: 10 low of 1000, the pair's 2 of 2 left out.
        assert!((rate(10, 1000, 2, 2) - 8.0 / 998.0).abs() < 1e-12);
        assert_eq!(rate(2, 1000, 2, 2), TRANSIENT_FLOOR);
    }
}
