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

#[test]
fn runs_needed_follows_the_normal_approximation() {
    // 10% at 3% spread: 2 × 2.9265² × 0.03² / ln(0.9)² + 1 = 2.39 -> at least 3.
    assert_eq!(runs_needed(0.9, 0.03), Some(3));
    // 5% at 10% spread: 2 × 8.5644 × 0.01 / 0.0026308 + 1 = 66.1 -> 67.
    assert_eq!(runs_needed(0.95, 0.10), Some(67));
    assert_eq!(runs_needed(1.0, 0.1), None);
    assert_eq!(runs_needed(0.9, 0.0), None);
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

/// The table in docs/methodology.md ("Judging a change"):
/// `GDRPERF_PRINT_POWER=1 cargo test -p gdrperf-report --lib power_table -- --nocapture`.
#[test]
fn power_table() {
    if std::env::var_os("GDRPERF_PRINT_POWER").is_none() {
        return;
    }
    println!("| runs a side | spread | identical runs flagged | 5% drop | 10% drop | 20% drop | 30% drop |");
    println!("|---|---|---|---|---|---|---|");
    for per_side in [3, 5] {
        for spread in [0.01, 0.03, 0.05, 0.10, 0.20] {
            let share = |drop| format!("{:.1}%", flagged_share(drop, spread, per_side) * 100.0);
            println!(
                "| {per_side} | {:.0}% | {} | {} | {} | {} | {} |",
                spread * 100.0,
                share(0.0),
                share(0.05),
                share(0.10),
                share(0.20),
                share(0.30)
            );
        }
    }
}
