//! What a comparison should say about its runs before anyone trusts its verdict: a run with
//! sizes missing (interrupted) or far below the other runs of its side (stalled). They are
//! said, not removed: the tests take each run's median over a group's sizes
//! ([`crate::sweep_decision`]), so a run stalled at a few sizes barely moves a sweep or band,
//! and one far-off run widens its size's spread instead of shifting its verdict.

use crate::significance::median;

/// A value this far below its side's median at that size, on the log scale, and beyond
/// [`STALL_SPREADS`] times the side's run-to-run spread, reads as a stall: 20% slower.
const STALL_LOG: f64 = 0.223;
const STALL_SPREADS: f64 = 5.0;

/// The notes for one side of one sweep: `runs[run][size]` oriented logs (higher is better).
pub fn describe(sweep: &str, side: &str, names: &[String], runs: &[Vec<Option<f64>>]) -> Vec<String> {
    let sizes = runs.iter().map(Vec::len).max().unwrap_or(0);
    let mut notes = Vec::new();
    let present_anywhere: Vec<bool> =
        (0..sizes).map(|at| runs.iter().any(|run| run.get(at).copied().flatten().is_some())).collect();
    for (run, name) in runs.iter().zip(names) {
        let missing =
            (0..sizes).filter(|&at| present_anywhere[at] && run.get(at).copied().flatten().is_none()).count();
        if missing > 0 && missing < sizes {
            notes.push(format!(
                "{name} ({side}) has no usable value at {missing} of {sizes} sizes of {sweep} (interrupted?): \
                 its other sizes are used"
            ));
        }
    }
    if runs.len() < 3 {
        return notes;
    }
    let centres: Vec<Option<f64>> = (0..sizes)
        .map(|at| median(&runs.iter().filter_map(|run| run.get(at).copied().flatten()).collect::<Vec<_>>()))
        .collect();
    let deviations: Vec<f64> = runs
        .iter()
        .flat_map(|run| run.iter().enumerate().filter_map(|(at, value)| Some((*value)? - centres[at]?)))
        .collect();
    let spread =
        1.4826 * median(&deviations.iter().map(|value| value.abs()).collect::<Vec<_>>()).unwrap_or(0.0);
    let limit = STALL_LOG.max(STALL_SPREADS * spread);
    for (run, name) in runs.iter().zip(names) {
        let drops: Vec<f64> = run
            .iter()
            .enumerate()
            .filter_map(|(at, value)| Some((*value)? - centres[at]?))
            .filter(|deviation| *deviation < -limit)
            .map(|deviation| 1.0 - deviation.exp())
            .collect();
        if let (Some(least), Some(most)) =
            (drops.iter().copied().reduce(f64::min), drops.iter().copied().reduce(f64::max))
        {
            notes.push(format!(
                "{name} ({side}) is {:.0}-{:.0}% worse than the other {side} runs at {} of {sizes} sizes of {sweep} \
                 (a stall?): kept, and each test takes a run's median over its sizes",
                least * 100.0,
                most * 100.0,
                drops.len()
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalled_and_interrupted_runs_are_named() {
        let names: Vec<String> = ["b1.csv", "b2.csv", "b3.csv"].iter().map(|name| name.to_string()).collect();
        let steady = |shift: f64| (0..10).map(|at| Some(at as f64 + shift)).collect::<Vec<_>>();
        let mut stalled = steady(0.0);
        stalled[4] = stalled[4].map(|value| value + 0.5f64.ln());
        let mut interrupted = steady(-0.01);
        interrupted.truncate(7);
        let notes = describe("write_bw host", "new", &names, &[steady(0.01), interrupted, stalled]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("b2.csv (new) has no usable value at 3 of 10 sizes"), "{notes:?}");
        assert!(
            notes[1].starts_with("b3.csv (new) is 49-49% worse than the other new runs at 1 of 10"),
            "{notes:?}"
        );
        assert!(describe("x", "new", &names, &[steady(0.0), steady(0.01), steady(-0.01)]).is_empty());
    }
}
