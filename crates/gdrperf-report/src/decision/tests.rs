use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

use super::*;

/// 100 and 90 with the same spread of ±2% in the logs, worked by hand: each side's logs are
/// its level + {0, 0.02, -0.02}, so each side's squares sum to 0.0008, the pooled variance is
/// 0.0016 / 4 = 0.0004 (spread 0.02), the standard error sqrt(0.0004 × 2/3) = 0.016330, and
/// t = ln 0.9 / 0.016330 = -6.45199. With 4 degrees of freedom the t CDF has the closed form
/// 1/2 + t (t² + 6) / (2 (t² + 4)^1.5) = 0.0014853.
#[test]
fn a_tenth_lower_with_two_percent_spread_is_worked_by_hand() {
    let side = |level: f64| [level, level * 0.02f64.exp(), level * (-0.02f64).exp()];
    let result = compare_logs(&side(100.0), &side(90.0)).unwrap();
    assert!((result.ratio - 0.9).abs() < 1e-12, "{result:?}");
    assert!((result.spread - 0.02).abs() < 1e-12, "{result:?}");
    assert_eq!(result.degrees_of_freedom, 4.0);
    assert!((result.p_lower - 0.0014853).abs() < 1e-6, "{result:?}");
    assert!((result.p_higher - (1.0 - 0.0014853)).abs() < 1e-6, "{result:?}");
}

#[test]
fn weighted_holm_hands_a_rejected_share_on() {
    // Shares 0.5 / 0.25 / 0.25 of 0.04: thresholds 0.02, 0.01, 0.01. 0.015 passes the first;
    // then the second's share is 0.25 / 0.5 of 0.04 = 0.02, so 0.015 passes too; the third,
    // alone, may use all 0.04: 0.03 passes, 0.045 does not.
    assert_eq!(weighted_holm(&[0.015, 0.015, 0.03], &[0.5, 0.25, 0.25], 0.04), [true, true, true]);
    assert_eq!(weighted_holm(&[0.015, 0.015, 0.045], &[0.5, 0.25, 0.25], 0.04), [true, true, false]);
    assert_eq!(weighted_holm(&[0.03, 0.015, f64::NAN], &[0.5, 0.25, 0.25], 0.04), [false, false, false]);
    assert_eq!(weighted_holm(&[0.001, 0.039], &[0.5, 0.5], 0.04), [true, true]);
}

#[test]
fn the_interval_is_the_t_interval_of_the_ratio() {
    // Worked above: difference ln 0.9, standard error 0.016330, t(4) 97.5% quantile 2.776445.
    let side = |level: f64| [level, level * 0.02f64.exp(), level * (-0.02f64).exp()];
    let result = compare_logs(&side(100.0), &side(90.0)).unwrap();
    let half = 2.776445 * 0.0163299;
    assert!((result.interval.0 - (0.9f64.ln() - half).exp()).abs() < 1e-5, "{result:?}");
    assert!((result.interval.1 - (0.9f64.ln() + half).exp()).abs() < 1e-5, "{result:?}");
}

#[test]
fn too_few_runs_or_values_without_a_logarithm_are_not_compared() {
    assert_eq!(compare_logs(&[1.0], &[1.0, 2.0]), None);
    assert_eq!(compare_logs(&[1.0, 2.0], &[0.0, 2.0]), None);
    assert_eq!(compare_logs(&[1.0, f64::NAN], &[1.0, 2.0]), None);
    // Identical values: no spread, no evidence either way.
    let same = compare_logs(&[5.0, 5.0], &[5.0, 5.0]).unwrap();
    assert_eq!((same.p_lower, same.p_higher, same.ratio), (1.0, 1.0, 1.0));
    // No spread but a difference: certain.
    assert_eq!(compare_logs(&[5.0, 5.0], &[4.0, 4.0]).unwrap().p_lower, 0.0);
}

/// `runs` values of one figure whose logs are normal around `ln(level)` with standard deviation
/// `spread` (Box-Muller over a seeded generator: the same seed, the same runs).
fn runs(rng: &mut XorShiftRng, level: f64, spread: f64, count: usize) -> Vec<f64> {
    (0..count)
        .map(|_| {
            let (u, v): (f64, f64) = (rng.random(), rng.random());
            let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            level * (spread * normal).exp()
        })
        .collect()
}

/// The share of 2000 seeded trials whose new runs `gdrperf compare`'s rule calls a regression
/// (one-sided p < ALPHA and the ratio beyond a 5% tolerance), the new level `drop` below base.
pub(crate) fn flagged_share(drop: f64, spread: f64, per_side: usize) -> f64 {
    let trials = 2000;
    let mut rng = XorShiftRng::seed_from_u64(0x0067_6472_7065_7266);
    let flagged = (0..trials)
        .filter(|_| {
            let base = runs(&mut rng, 100.0, spread, per_side);
            let new = runs(&mut rng, 100.0 * (1.0 - drop), spread, per_side);
            let result = compare_logs(&base, &new).unwrap();
            result.p_lower < ALPHA && 1.0 - result.ratio > 0.05
        })
        .count();
    flagged as f64 / trials as f64
}

/// What a regression runner needs of the rule, as a decision rate over fixed seeds (deterministic): at 3% spread and 3 runs
/// a side, a 10% drop is flagged in at least 90% of trials and identical runs in at most 5%.
#[test]
fn the_rule_flags_a_tenth_at_three_percent_spread_with_three_runs_a_side() {
    let power = flagged_share(0.10, 0.03, 3);
    let false_alarms = flagged_share(0.0, 0.03, 3);
    assert!(power >= 0.90, "a 10% drop flagged in {:.1}% of trials", power * 100.0);
    assert!(false_alarms <= 0.05, "identical runs flagged in {:.1}% of trials", false_alarms * 100.0);
}
