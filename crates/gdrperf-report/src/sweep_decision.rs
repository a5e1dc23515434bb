//! One decision for a whole comparison. A sweep has 23 sizes, a comparison may hold several
//! sweeps (memory modes, lanes, GPUs, the GPUDirect-over-staged ratio); testing each size on
//! its own at 5% fails CI for nothing one night in three. Here every sweep is tested as a
//! whole, in bands of [`BAND`] neighbouring sizes, and size by size, and the tests share one
//! budget of [`FALSE_ALARM_BUDGET`] (3.5%) by the weighted Holm procedure
//! ([`crate::decision::weighted_holm`]): the chance that any of them calls identical sweeps a
//! regression stays within it, whatever the dependence between the tests.
//!
//! Each test takes the run as its unit: a run's figure for a group of sizes is the median,
//! over the group's sizes, of the run's log value less that size's centre (the median of all
//! runs at that size), and the two sides' runs are compared by the pooled t-test on those
//! figures ([`crate::decision::log_t_test`]). A run that is 5% slower at every size is one
//! slow run, not 23 pieces of evidence; a run stalled at a few sizes barely moves its median.
//!
//! A group counts as a regression when its test rejects *and* its change is worse than the
//! tolerance; `crate::compare` then marks a size a regression when its own change is worse
//! than the tolerance too, and the comparison's verdict follows the marked sizes.

use serde::Serialize;

use crate::decision::{log_t_test, weighted_holm};
use crate::significance::median;

/// The chance, at most, that identical sweeps end in a regression verdict, over every test
/// of one comparison. Below the 5% it is meant to keep: the t-tests are exact for normal logs,
/// and the margin is for the heavy tails real runs have (measured in results/compare/power.md).
pub const FALSE_ALARM_BUDGET: f64 = 0.035;

/// Sizes in a band: a regression confined to a few neighbouring sizes (a protocol switch, an
/// MTU boundary) is stronger evidence over the band than at any one size.
pub const BAND: usize = 4;

/// Sweeps shorter than this are tested whole and size by size only (a band would be the sweep).
const FEWEST_SIZES_FOR_BANDS: usize = BAND + 2;

/// The share of a sweep's budget for the whole-sweep test, the bands together, and the sizes
/// together: a drop across the sweep is what most regressions look like.
const SHARES: [f64; 3] = [0.5, 0.25, 0.25];

/// One sweep's runs as oriented logs: higher is better (the log of a bandwidth, minus the log
/// of a latency), `None` where a run lacks the size or its value has no logarithm.
#[derive(Debug, Clone)]
pub struct SweepLogs {
    /// `[run][size]`.
    pub base: Vec<Vec<Option<f64>>>,
    pub new: Vec<Vec<Option<f64>>>,
    /// The oriented log change below which a change is worse than the tolerance (ln 0.95).
    pub worse_than: f64,
}

/// Which kind of group a test is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Sweep,
    Band,
    Size,
}

/// One test of the decision.
#[derive(Debug, Clone, Serialize)]
pub struct GroupTest {
    /// Index of the sweep in the list given to [`decide`].
    pub sweep: usize,
    pub level: Level,
    /// The group's sizes, as indices into the sweep (inclusive); a sweep of one size is tested
    /// once, as the sweep.
    pub first: usize,
    pub last: usize,
    /// exp(mean new run figure - mean base run figure): below 1 is worse.
    pub ratio: f64,
    /// Two-sided 95% interval of the ratio.
    pub interval: (f64, f64),
    /// One-sided p-value that the new runs are worse; `None` where fewer than two runs a side
    /// have the group.
    pub p_worse: Option<f64>,
    /// The share of the whole comparison's 5% this test started with.
    pub alpha: f64,
    /// Rejected by the weighted Holm procedure.
    pub significant: bool,
    /// Significant and worse than the tolerance: the comparison has regressed.
    pub regression: bool,
}

/// Tests every sweep whole, in bands and size by size, under one false-alarm `budget`
/// ([`FALSE_ALARM_BUDGET`] for a comparison on its own).
pub fn decide(sweeps: &[SweepLogs], budget: f64) -> Vec<GroupTest> {
    let mut tests = Vec::new();
    let mut weights = Vec::new();
    let sweep_weight = 1.0 / sweeps.len().max(1) as f64;
    for (index, sweep) in sweeps.iter().enumerate() {
        let sizes = sweep.base.iter().chain(&sweep.new).map(Vec::len).max().unwrap_or(0);
        if sizes == 0 {
            continue;
        }
        let centres = centres(sweep, sizes);
        let mut groups: Vec<(Level, usize, usize, f64)> = Vec::new();
        if sizes == 1 {
            groups.push((Level::Sweep, 0, 0, 1.0));
        } else {
            let bands = if sizes >= FEWEST_SIZES_FOR_BANDS { sizes - BAND + 1 } else { 0 };
            let [whole, band, size] = if bands == 0 { [0.5, 0.0, 0.5] } else { SHARES };
            groups.push((Level::Sweep, 0, sizes - 1, whole));
            groups
                .extend((0..bands).map(|first| (Level::Band, first, first + BAND - 1, band / bands as f64)));
            groups.extend((0..sizes).map(|at| (Level::Size, at, at, size / sizes as f64)));
        }
        for (level, first, last, share) in groups {
            let figures = |runs: &[Vec<Option<f64>>]| -> Vec<f64> {
                runs.iter().filter_map(|run| run_figure(run, &centres, first, last)).collect()
            };
            let (base_figures, new_figures) = (figures(&sweep.base), figures(&sweep.new));
            let result = log_t_test(&base_figures, &new_figures);
            // Single runs: the change without a test (the difference of the sides' figures).
            let estimate = match (mean(&base_figures), mean(&new_figures)) {
                (Some(base), Some(new)) => (new - base).exp(),
                _ => f64::NAN,
            };
            weights.push(sweep_weight * share);
            tests.push(GroupTest {
                sweep: index,
                level,
                first,
                last,
                ratio: result.map_or(estimate, |result| result.ratio),
                interval: result.map_or((f64::NAN, f64::NAN), |result| result.interval),
                p_worse: result.map(|result| result.p_lower),
                alpha: budget * sweep_weight * share,
                significant: false,
                regression: false,
            });
        }
    }
    let p_values: Vec<f64> = tests.iter().map(|test| test.p_worse.unwrap_or(f64::NAN)).collect();
    for (test, rejected) in tests.iter_mut().zip(weighted_holm(&p_values, &weights, budget)) {
        test.significant = rejected;
        test.regression = rejected && test.ratio.ln() < sweeps[test.sweep].worse_than;
    }
    tests
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Each size's centre: the median of every run's log at that size, both sides together (the
/// same for every run, so it cancels from a complete group's change).
fn centres(sweep: &SweepLogs, sizes: usize) -> Vec<f64> {
    (0..sizes)
        .map(|at| {
            let values: Vec<f64> = sweep
                .base
                .iter()
                .chain(&sweep.new)
                .filter_map(|run| run.get(at).copied().flatten())
                .collect();
            median(&values).unwrap_or(0.0)
        })
        .collect()
}

/// A run's figure for sizes `first..=last`: the median of its centred logs; `None` when the run
/// has none of them.
fn run_figure(run: &[Option<f64>], centres: &[f64], first: usize, last: usize) -> Option<f64> {
    let values: Vec<f64> = (first..=last)
        .filter_map(|at| run.get(at).copied().flatten().map(|value| value - centres[at]))
        .collect();
    median(&values)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep of `sizes` sizes, each run `level + run_noise[run] + size_noise[size]`.
    fn sweep(base: &[f64], new: &[f64], sizes: usize, new_drop: impl Fn(usize) -> f64) -> SweepLogs {
        let wiggle = |at: usize| ((at * 7919) % 13) as f64 * 0.001;
        let runs = |levels: &[f64], drop: &dyn Fn(usize) -> f64| -> Vec<Vec<Option<f64>>> {
            levels
                .iter()
                .enumerate()
                .map(|(run, level)| {
                    (0..sizes)
                        .map(|at| Some(at as f64 + level + drop(at) + wiggle(at + 31 * run) - 0.006))
                        .collect()
                })
                .collect()
        };
        SweepLogs { base: runs(base, &|_| 0.0), new: runs(new, &new_drop), worse_than: 0.95f64.ln() }
    }

    #[test]
    fn a_drop_across_the_sweep_is_found_by_the_sweep_test() {
        let tests =
            decide(&[sweep(&[0.0, 0.02, -0.02], &[0.0, 0.02, -0.02], 23, |_| -0.1)], FALSE_ALARM_BUDGET);
        let sweep_test = tests.iter().find(|test| test.level == Level::Sweep).unwrap();
        assert!(sweep_test.regression, "{sweep_test:?}");
        assert!((sweep_test.ratio - (-0.1f64).exp()).abs() < 0.01, "{sweep_test:?}");
    }

    #[test]
    fn a_drop_in_four_neighbouring_sizes_is_found_by_a_band() {
        let tests = decide(
            &[sweep(&[0.0, 0.01, -0.01, 0.005, -0.005], &[0.0, 0.01, -0.01, 0.005, -0.005], 23, |at| {
                if (10..14).contains(&at) {
                    -0.1
                } else {
                    0.0
                }
            })],
            FALSE_ALARM_BUDGET,
        );
        let found: Vec<(Level, usize)> =
            tests.iter().filter(|test| test.regression).map(|test| (test.level, test.first)).collect();
        assert!(found.contains(&(Level::Band, 10)), "{found:?}");
        assert!(!found.iter().any(|(level, _)| *level == Level::Sweep), "{found:?}");
    }

    #[test]
    fn a_run_slower_at_every_size_is_one_run_not_twenty_three() {
        // Base runs 0, +5%, -5%; new runs the same but one 7% slower everywhere: noise a
        // per-size test would count 23 times.
        let tests =
            decide(&[sweep(&[0.0, 0.05, -0.05], &[0.0, 0.05, -0.12], 23, |_| 0.0)], FALSE_ALARM_BUDGET);
        assert!(!tests.iter().any(|test| test.regression), "{tests:?}");
    }

    #[test]
    fn a_stalled_run_moves_no_decision() {
        let mut stalled = sweep(&[0.0, 0.01, -0.01], &[0.0, 0.01, -0.01], 23, |_| 0.0);
        for at in 5..12 {
            stalled.new[2][at] = stalled.new[2][at].map(|value| value + 0.5f64.ln());
        }
        stalled.new[1].truncate(17);
        let tests = decide(&[stalled], FALSE_ALARM_BUDGET);
        assert!(!tests.iter().any(|test| test.regression), "{tests:?}");
    }

    #[test]
    fn the_budget_is_shared_across_sweeps_and_levels() {
        let one = sweep(&[0.0, 0.01], &[0.0, 0.01], 23, |_| 0.0);
        let tests = decide(&[one.clone(), one], FALSE_ALARM_BUDGET);
        let total: f64 = tests.iter().map(|test| test.alpha).sum();
        assert!((total - FALSE_ALARM_BUDGET).abs() < 1e-12, "{total}");
        let sweep_test = &tests[0];
        assert_eq!((sweep_test.level, sweep_test.alpha), (Level::Sweep, FALSE_ALARM_BUDGET * 0.25));
    }
}
