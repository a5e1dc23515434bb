//! Is a difference between repeated runs more than noise? The Mann-Whitney U (Wilcoxon rank
//! sum) test, one-sided, as scripts/compare-perftest.sh uses it: it assumes no distribution of
//! the runs' figures (bandwidth under load is skewed: a stalled run is far below, never far
//! above) and works on the few runs one can afford.
//!
//! Small samples (both sides together up to [`EXACT_LIMIT`] runs) get the exact p-value, by
//! counting every way of splitting the pooled ranks (ties take mid-ranks); larger ones the
//! normal approximation with a tie correction and a continuity correction.

/// Runs of both sides together up to which the p-value is exact (C(20, 10) = 184,756 splits).
pub const EXACT_LIMIT: usize = 20;

/// The one-sided p-value that `lower` tends to be smaller than `higher`: the probability,
/// if both came from one distribution, of a rank sum of `lower` as small as observed or
/// smaller. `None` when a side is empty.
pub fn p_value_lower(lower: &[f64], higher: &[f64]) -> Option<f64> {
    if lower.is_empty() || higher.is_empty() {
        return None;
    }
    let pooled: Vec<f64> = lower.iter().chain(higher).copied().collect();
    let ranks = mid_ranks(&pooled);
    let observed: f64 = ranks[..lower.len()].iter().sum();
    if pooled.len() <= EXACT_LIMIT {
        let (mut at_most, mut total) = (0u64, 0u64);
        splits(&ranks, lower.len(), 0, 0.0, &mut |sum| {
            total += 1;
            if sum <= observed + 1e-9 {
                at_most += 1;
            }
        });
        return Some(at_most as f64 / total as f64);
    }
    let (n1, n2) = (lower.len() as f64, higher.len() as f64);
    let n = n1 + n2;
    let mean = n1 * (n + 1.0) / 2.0;
    let ties: f64 = tie_groups(&pooled).iter().map(|&t| t * t * t - t).sum();
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 {
        return Some(1.0);
    }
    let z = (observed - mean + 0.5) / variance.sqrt();
    Some(standard_normal_cdf(z))
}

/// Every `k`-subset of `ranks` from `start` on, its sum passed to `visit`.
fn splits(ranks: &[f64], k: usize, start: usize, sum: f64, visit: &mut impl FnMut(f64)) {
    if k == 0 {
        visit(sum);
        return;
    }
    for index in start..=ranks.len() - k {
        splits(ranks, k - 1, index + 1, sum + ranks[index], visit);
    }
}

/// Ranks from 1, ties sharing the mean of their ranks.
fn mid_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end) as f64 / 2.0 + 1.0;
        for &index in &order[start..=end] {
            ranks[index] = rank;
        }
        start = end + 1;
    }
    ranks
}

/// The sizes of the groups of equal values.
fn tie_groups(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.chunk_by(|a, b| a == b).map(|group| group.len() as f64).collect()
}

/// Φ(z), by the complementary error function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn standard_normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let poly =
        t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

/// The median (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_values_count_the_splits_by_hand() {
        // 3 vs 3, fully separated: 1 split of C(6,3) = 20 has the smallest rank sum.
        assert_eq!(p_value_lower(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), Some(1.0 / 20.0));
        // The other way round: every split has a rank sum at most 15.
        assert_eq!(p_value_lower(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]), Some(1.0));
        // 5 vs 5 separated: 1 / C(10,5) = 1/252.
        let p = p_value_lower(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((p - 1.0 / 252.0).abs() < 1e-12, "{p}");
        // Identical samples: all ties, nothing is smaller.
        assert_eq!(p_value_lower(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        // Interleaved 1,2 | 3,4 ranks {1,3} vs {2,4}: sums <= 4 are {1,2},{1,3}: 2 of 6.
        assert_eq!(p_value_lower(&[1.0, 3.0], &[2.0, 4.0]), Some(2.0 / 6.0));
        assert_eq!(p_value_lower(&[], &[1.0]), None);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let low: Vec<f64> = (0..15).map(f64::from).collect();
        let high: Vec<f64> = (100..115).map(f64::from).collect();
        assert!(p_value_lower(&low, &high).unwrap() < 1e-5);
        let same: Vec<f64> = (0..15).map(f64::from).collect();
        let p = p_value_lower(&same, &same).unwrap();
        assert!(p > 0.4 && p < 0.6, "{p}");
        assert!((standard_normal_cdf(1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
