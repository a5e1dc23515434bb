//! False alarms and power of `gdrperf compare`'s one decision per comparison, measured through
//! the real code: synthetic 23-size sweeps written in the bench's CSV format (with its `#`
//! header lines), read back by `ResultFile::parse_csv` and judged by `compare_repeated`, many
//! seeded trials a cell. A trial counts when the comparison's verdict is "regression" (exit 1).
//!
//! The noise is what real runs have: log-normal run-to-run spread, either independent across
//! the sizes of a run or mostly shared by them (a run slower everywhere), with heavy tails (one
//! value in a hundred 20-50% slower), and in the "stalls" cells one run in twenty stalled (a
//! block of 3-8 neighbouring sizes 30-70% slower) or interrupted (its last 3-10 sizes missing).
//!
//! `goals_hold_on_fixed_seeds` asserts the goals of issue 40 on fixed seeds (a decision, never
//! a p-value) with the trials an unoptimised `cargo test` affords; the table in
//! results/compare/power.md, which also holds every identical cell to 5%, is
//! `cargo test --release -p gdrperf-report --test compare_power -- --ignored --nocapture power_table`.

use gdrperf_report::{compare_repeated, Decision, ResultFile};
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

/// perftest's `-a` sweep: 2 bytes to 8 MiB, 23 sizes.
const SIZES: usize = 23;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Noise {
    /// Each size of a run draws its own noise.
    Independent,
    /// 80% of the variance shared by every size of a run, 20% per size.
    Correlated,
    /// Independent, and one run in twenty stalled or interrupted.
    Stalls,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Drop {
    None,
    /// Every size of the new runs lower by this fraction.
    Sweep(f64),
    /// Four neighbouring sizes (placed at random) lower by this fraction.
    Band(f64),
}

fn normal(rng: &mut XorShiftRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random(), rng.random());
    (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// One run's CSV: a bandwidth sweep whose shape follows results/softroce/demo-sweep.csv
/// (rising with the size, flat past 64 KiB), with the run's noise and the drop applied.
fn run_csv(
    rng: &mut XorShiftRng,
    name: &str,
    spread: f64,
    noise: Noise,
    drop: Drop,
    band_at: usize,
) -> String {
    let shared = normal(rng);
    let stalled = noise == Noise::Stalls && rng.random::<f64>() < 0.05;
    let (stall_from, stall_len, stall_factor) =
        (rng.random_range(0..SIZES), rng.random_range(3..=8), rng.random_range(0.3..0.7));
    let interrupted = stalled && rng.random::<bool>();
    let cut = if interrupted { SIZES - rng.random_range(3..=10) } else { SIZES };
    let mut text = format!(
        "# test: write_bw\n# command: gdr-write-bw --loopback -a -n 100 --csv {name}\n# git_commit: 0123456\n\
         # host: simulated\ntest,bytes,iterations,bw_avg_gbit_s,mem_local,mem_remote\n"
    );
    for at in 0..cut {
        let bytes = 2u64 << at;
        let level = 90.0 * bytes as f64 / (bytes as f64 + 16384.0);
        let log_noise = match noise {
            Noise::Independent | Noise::Stalls => spread * normal(rng),
            Noise::Correlated => spread * (0.8f64.sqrt() * shared + 0.2f64.sqrt() * normal(rng)),
        };
        let mut value = level * log_noise.exp();
        if rng.random::<f64>() < 0.01 {
            value *= rng.random_range(0.5..0.8);
        }
        if stalled && !interrupted && (stall_from..stall_from + stall_len).contains(&at) {
            value *= stall_factor;
        }
        value *= match drop {
            Drop::None => 1.0,
            Drop::Sweep(fraction) => 1.0 - fraction,
            Drop::Band(fraction) if (band_at..band_at + 4).contains(&at) => 1.0 - fraction,
            Drop::Band(_) => 1.0,
        };
        text.push_str(&format!("write_bw,{bytes},100,{value},host,host\n"));
    }
    text
}

/// Verdicts of `trials` seeded comparisons of `runs` runs a side: (regression, undecided).
fn cell(spread: f64, noise: Noise, drop: Drop, runs: usize, trials: usize) -> (usize, usize) {
    let seed = (spread * 1000.0) as u64 * 7919 + runs as u64 * 104729 + noise as u64 * 31 + drop_code(drop);
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let (mut regressions, mut undecided) = (0, 0);
    for _ in 0..trials {
        let band_at = rng.random_range(0..=SIZES - 4);
        let side = |rng: &mut XorShiftRng, label: &str, drop: Drop| -> Vec<ResultFile> {
            (0..runs)
                .map(|run| {
                    let name = format!("{label}{run}.csv");
                    ResultFile::parse_csv(&name, &run_csv(rng, &name, spread, noise, drop, band_at)).unwrap()
                })
                .collect()
        };
        let base = side(&mut rng, "a", Drop::None);
        let new = side(&mut rng, "b", drop);
        let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
        match comparison.verdict {
            Decision::Regression => regressions += 1,
            Decision::Undecided => undecided += 1,
            Decision::Pass => {}
        }
        assert_eq!(comparison.exit_code() == 1, comparison.regressions() > 0, "rows and verdict agree");
    }
    (regressions, undecided)
}

fn drop_code(drop: Drop) -> u64 {
    match drop {
        Drop::None => 1,
        Drop::Sweep(fraction) => 2 + (fraction * 100.0) as u64,
        Drop::Band(fraction) => 500 + (fraction * 100.0) as u64,
    }
}

fn share(count: usize, trials: usize) -> f64 {
    count as f64 / trials as f64
}

/// Trials a cell in the table (results/compare/power.md).
const TRIALS: usize = 1000;

/// Trials a cell in `cargo test`, where the code runs unoptimised.
const QUICK_TRIALS: usize = 200;

/// The goals of issue 40 as `cargo test` can afford them, on fixed seeds: a 10% whole-sweep
/// drop found in at least 95% of comparisons at 3% spread with 3 runs a side and 80% at 10%
/// with 5; a 10% drop at 4 neighbouring sizes in 80% at 3% with 5 (independent noise);
/// identical sweeps (3 runs a side, every noise and spread) flagged in at most 5% of the 1800
/// comparisons together and 10% in any one cell of 200. `power_table` holds every identical
/// cell to 5% at 1000 trials.
#[test]
fn goals_hold_on_fixed_seeds() {
    let trials = QUICK_TRIALS;
    let mut false_alarms = 0;
    for noise in [Noise::Independent, Noise::Correlated, Noise::Stalls] {
        for spread in [0.03, 0.10, 0.25] {
            let (flagged, _) = cell(spread, noise, Drop::None, 3, trials);
            assert!(
                share(flagged, trials) <= 0.10,
                "{noise:?} {spread}: identical sweeps flagged {flagged} times in {trials}"
            );
            false_alarms += flagged;
        }
    }
    assert!(
        share(false_alarms, 9 * trials) <= 0.05,
        "identical sweeps flagged {false_alarms} times in {}",
        9 * trials
    );
    let found = |spread, noise, drop, runs| share(cell(spread, noise, drop, runs, trials).0, trials);
    assert!(found(0.03, Noise::Independent, Drop::Sweep(0.10), 3) >= 0.95);
    assert!(found(0.10, Noise::Independent, Drop::Sweep(0.10), 5) >= 0.80);
    assert!(found(0.03, Noise::Independent, Drop::Band(0.10), 5) >= 0.80);
}

/// results/compare/power.md: every cell, 1000 trials.
#[test]
#[ignore = "the power table: run with --release -- --ignored --nocapture power_table"]
fn power_table() {
    let trials = TRIALS;
    println!("| noise | runs a side | spread | identical: regression | identical: undecided | 10% sweep drop | 25% sweep drop | 10% drop at 4 sizes |");
    println!("|---|---|---|---|---|---|---|---|");
    for noise in [Noise::Independent, Noise::Correlated, Noise::Stalls] {
        for runs in [3, 5, 11] {
            for spread in [0.03, 0.10, 0.25] {
                let percent = |count: usize| format!("{:.1}%", share(count, trials) * 100.0);
                let (false_alarms, undecided) = cell(spread, noise, Drop::None, runs, trials);
                assert!(
                    share(false_alarms, trials) <= 0.05,
                    "{noise:?} {runs} {spread}: {false_alarms} false alarms"
                );
                let found = |drop| percent(cell(spread, noise, drop, runs, trials).0);
                println!(
                    "| {noise:?} | {runs} | {:.0}% | {} | {} | {} | {} | {} |",
                    spread * 100.0,
                    percent(false_alarms),
                    percent(undecided),
                    found(Drop::Sweep(0.10)),
                    found(Drop::Sweep(0.25)),
                    found(Drop::Band(0.10)),
                );
            }
        }
    }
}
