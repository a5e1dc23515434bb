//! The centre of a few runs' figures. `gdrperf compare`'s test of whether two sets of runs
//! differ beyond their noise is in [`crate::decision`] (a t-test on the logs); the exact
//! Mann-Whitney test that stood here could not decide with 3 runs a side and went with it
//! (scripts/compare-perftest.sh keeps its own, for its 11-run comparisons with perftest).

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
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
