//! Is the difference between two sets of repeated runs more than their noise? The decision rule
//! of `gdrperf compare`, chosen so that the recipe people follow (3 runs a side) can decide.
//!
//! Run-to-run noise of a benchmark is multiplicative (a loaded host slows a run by a fraction,
//! not by a fixed amount), so the runs are compared on the log scale: the change is the ratio of
//! the two sides' geometric means, and its noise the pooled standard deviation of the logs (the
//! run-to-run spread, as a fraction). A one-sided Student t-test on the logs, pooled over both
//! sides (n + m - 2 degrees of freedom: 4 with 3 runs a side), says how likely a ratio this far
//! from 1 is if both sides came from one distribution. It is Welch's test of hyperfine's
//! `welch_ttest.py` with the variances pooled: the same machine's noise is the same fraction on
//! both sides, and pooling keeps the 4 degrees of freedom that 3 runs a side have (Welch's can
//! fall to 2).
//!
//! The exact Mann-Whitney test this replaces cannot decide with 3 runs a side: its smallest
//! one-sided p is 1 / C(6, 3) = 0.05, never below it. This is the test of one group of sizes;
//! [`crate::sweep_decision`] runs it over sweeps, bands and sizes under one budget, and
//! results/compare/power.md measures what the whole decision finds.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The one-sided significance level of a regression between repeated runs.
pub const ALPHA: f64 = 0.05;

/// Two sets of runs of one figure, compared on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogComparison {
    /// Geometric mean of the new runs over that of the base runs (0.9: 10% lower).
    pub ratio: f64,
    /// The run-to-run spread: the pooled standard deviation of the logs (0.03: about 3%).
    pub spread: f64,
    /// Degrees of freedom of the pooled t statistic (n + m - 2).
    pub degrees_of_freedom: f64,
    /// One-sided p-value that the new runs are lower than the base runs.
    pub p_lower: f64,
    /// One-sided p-value that the new runs are higher.
    pub p_higher: f64,
    /// The two-sided 95% confidence interval of `ratio`.
    pub interval: (f64, f64),
}

/// Compares `base` and `new` runs (values above zero). `None` when either side has fewer than
/// two runs (no spread to measure) or a value is not above zero (no logarithm).
pub fn compare_logs(base: &[f64], new: &[f64]) -> Option<LogComparison> {
    if base.iter().chain(new).any(|value| !(*value > 0.0 && value.is_finite())) {
        return None;
    }
    let logs = |values: &[f64]| values.iter().map(|value| value.ln()).collect::<Vec<f64>>();
    log_t_test(&logs(base), &logs(new))
}

/// The pooled two-sample t-test of [`compare_logs`] on values already on the log scale (or any
/// per-run summary of them): the unit is the run, so whatever the runs' noise has in common
/// across the sizes of one run is inside the spread it measures. `None` with fewer than two
/// values a side.
pub fn log_t_test(base: &[f64], new: &[f64]) -> Option<LogComparison> {
    if base.len() < 2 || new.len() < 2 || base.iter().chain(new).any(|value| !value.is_finite()) {
        return None;
    }
    let (n, m) = (base.len() as f64, new.len() as f64);
    let (base_mean, new_mean) = (mean(base), mean(new));
    let squares =
        |values: &[f64], center: f64| values.iter().map(|value| (value - center).powi(2)).sum::<f64>();
    let degrees_of_freedom = n + m - 2.0;
    let pooled_variance = (squares(base, base_mean) + squares(new, new_mean)) / degrees_of_freedom;
    let spread = pooled_variance.sqrt();
    let difference = new_mean - base_mean;
    let ratio = difference.exp();
    let standard_error = (pooled_variance * (1.0 / n + 1.0 / m)).sqrt();
    let distribution = StudentsT::new(0.0, 1.0, degrees_of_freedom).ok()?;
    let (p_lower, p_higher) = if standard_error == 0.0 {
        // No spread at all: a difference is certain, none is no evidence either way.
        match difference.partial_cmp(&0.0) {
            Some(std::cmp::Ordering::Less) => (0.0, 1.0),
            Some(std::cmp::Ordering::Greater) => (1.0, 0.0),
            _ => (1.0, 1.0),
        }
    } else {
        let t = difference / standard_error;
        (distribution.cdf(t), 1.0 - distribution.cdf(t))
    };
    let half_width = t_quantile_975(&distribution, degrees_of_freedom) * standard_error;
    let interval = ((difference - half_width).exp(), (difference + half_width).exp());
    Some(LogComparison { ratio, spread, degrees_of_freedom, p_lower, p_higher, interval })
}

/// The 97.5% quantile of the t distribution, remembered per degrees of freedom: the inverse
/// CDF is a numerical search, and one comparison asks for it once per test and row.
fn t_quantile_975(distribution: &StudentsT, degrees_of_freedom: f64) -> f64 {
    thread_local! {
        static KNOWN: std::cell::RefCell<Vec<(f64, f64)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    KNOWN.with(|known| {
        if let Some((_, quantile)) = known.borrow().iter().find(|(df, _)| *df == degrees_of_freedom) {
            return *quantile;
        }
        let quantile = distribution.inverse_cdf(0.975);
        known.borrow_mut().push((degrees_of_freedom, quantile));
        quantile
    })
}

/// Weighted Holm: which of the hypotheses with these one-sided `p_values` are rejected so that
/// the chance of rejecting any true one stays at most `alpha` whatever their dependence.
/// Hypothesis `i` starts with the share `weights[i]` of `alpha`; each rejection hands its share
/// on to those still standing (Holm's step-down, with weights). Weights need not sum to one
/// (they are normalised); a `NaN` p-value is never rejected.
pub fn weighted_holm(p_values: &[f64], weights: &[f64], alpha: f64) -> Vec<bool> {
    let mut rejected = vec![false; p_values.len()];
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return rejected;
    }
    loop {
        let standing: f64 = weights.iter().zip(&rejected).filter(|(_, done)| !**done).map(|(w, _)| w).sum();
        let next = (0..p_values.len())
            .filter(|&index| !rejected[index] && weights[index] > 0.0 && p_values[index].is_finite())
            .filter(|&index| p_values[index] <= alpha * weights[index] / standing)
            .min_by(|&a, &b| (p_values[a] / weights[a]).total_cmp(&(p_values[b] / weights[b])));
        match next {
            Some(index) => rejected[index] = true,
            None => return rejected,
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests;
