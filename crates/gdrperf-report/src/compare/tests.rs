//! Tests of the comparison: its judging over hand-made runs and what it prints.

use super::*;

fn file(name: &str, csv: &str) -> ResultFile {
    ResultFile::parse_csv(name, csv).unwrap()
}

/// Three runs of one file's rows, each value scaled by 1.00, 1.01 and 0.99 (a 1% spread).
fn three_runs(csv: &str, numeric_columns: &[usize]) -> Vec<ResultFile> {
    [1.0, 1.01, 0.99]
        .iter()
        .enumerate()
        .map(|(run, factor)| {
            let mut text = String::new();
            for (line_number, line) in csv.lines().enumerate() {
                let cells: Vec<String> = line
                    .split(',')
                    .enumerate()
                    .map(|(column, cell)| match cell.parse::<f64>() {
                        Ok(value) if line_number > 0 && numeric_columns.contains(&column) => {
                            (value * factor).to_string()
                        }
                        _ => cell.to_string(),
                    })
                    .collect();
                text.push_str(&cells.join(","));
                text.push('\n');
            }
            file(&format!("run{run}.csv"), &text)
        })
        .collect()
}

#[test]
fn bandwidth_drops_beyond_the_tolerance_are_regressions() {
    let base = three_runs("test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,1.0,host,host\nwrite_bw,4,2.0,host,host\nwrite_bw,8,4.0,host,host\n", &[2]);
    let new = three_runs("test,bytes,bw_avg_gbit_s,mem_local,mem_remote\nwrite_bw,2,0.96,host,host\nwrite_bw,4,1.8,host,host\nwrite_bw,8,4.4,host,host\n", &[2]);
    let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
    let verdicts: Vec<Change> = comparison.rows.iter().map(|row| row.verdict).collect();
    assert_eq!(verdicts, [Change::Pass, Change::Regression, Change::Improvement]);
    assert_eq!(comparison.regressions(), 1);
    let text = comparison.render();
    assert!(
        text.contains("-10.0%")
            && text.contains(
                "REGRESSION [-12.0%, -7.9%] (3 vs 3 runs, spread 1.0%; found by write_bw host 4 bytes alone"
            )
            && text.contains("verdict: regression: 1 of 3 rows regressed"),
        "{text}"
    );
}

/// The README's recipe, 3 runs a side, finds a halving (the exact Mann-Whitney test
/// that came before said "not significant, p=0.05" here: 3 against 3 cannot go lower).
#[test]
fn three_runs_a_side_find_a_halving() {
    let base = runs(&[10.0, 10.4, 9.7]);
    let halved = runs(&[5.1, 4.9, 5.0]);
    let comparison = compare_repeated(&base, &halved, None, 0.05).unwrap();
    assert_eq!(comparison.regressions(), 1, "{}", comparison.render());
}
#[test]
fn a_figure_that_is_not_a_number_is_an_error_not_unchanged() {
    let base = file("base.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1.0\n");
    let new = file("new.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,NaN\n");
    for (one, other) in [(&base, &new), (&new, &base)] {
        let error = compare_runs(one, other, None, 0.05).unwrap_err().to_string();
        assert!(error.contains("has no numeric \"bw_avg_gbit_s\" column"), "{error}");
    }
}

#[test]
fn latency_rises_are_regressions() {
    let base = three_runs("test,bytes,t_typical_us,p99_us\nread_lat,2,2.0,3.0\n", &[2, 3]);
    let new = three_runs("test,bytes,t_typical_us,p99_us\nread_lat,2,2.05,4.0\n", &[2, 3]);
    assert_eq!(
        compare_repeated(&base, &new, None, 0.05).unwrap().regressions(),
        0,
        "typical +2.5% is within 5%"
    );
    let p99 = compare_repeated(&base, &new, Some("p99_us"), 0.05).unwrap();
    assert_eq!(p99.rows[0].verdict, Change::Regression);
    assert!((p99.rows[0].change - 1.0 / 3.0).abs() < 1e-9);
}

#[test]
fn rows_only_in_one_run_are_listed_and_joins_respect_memory_and_gpu() {
    let base = file(
        "base.csv",
        "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,2,1,host,\nwrite_bw,2,1,cuda,GPU0\n",
    );
    let new = file(
        "new.csv",
        "test,bytes,bw_avg_gbit_s,mem_local,gpu_local\nwrite_bw,2,1,cuda,GPU0\nwrite_bw,2,1,cuda,GPU1\n",
    );
    let comparison = compare_runs(&base, &new, None, 0.05).unwrap();
    assert_eq!(comparison.rows.len(), 1);
    assert_eq!(comparison.only_in_base, ["write_bw host 2 bytes"]);
    assert_eq!(comparison.only_in_new, ["write_bw cuda GPU1 2 bytes"]);
    assert!(comparison.render().contains("only in new (1): write_bw cuda GPU1 2 bytes"));
}

#[test]
fn unjoinable_inputs_are_errors() {
    let base = file("base.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\n");
    let other = file("other.csv", "test,bytes,bw_avg_gbit_s\nread_bw,2,1\n");
    assert!(compare_runs(&base, &other, None, 0.05).unwrap_err().to_string().contains("no row in common"));
    let twice = file("twice.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\nwrite_bw,2,3\n");
    assert!(compare_runs(&twice, &base, None, 0.05)
        .unwrap_err()
        .to_string()
        .contains("twice.csv (twice) hold more than one row for write_bw host 2 bytes: rows are joined"));
    let error = compare_runs(&base, &base, Some("nope"), 0.05).unwrap_err().to_string();
    assert!(error.contains("no numeric \"nope\" column"), "{error}");
}

#[test]
fn lanes_of_a_concurrent_run_are_rows_of_their_own() {
    let lanes = "test,bytes,bw_avg_gbit_s,lane\nwrite_bw,2,1,0\nwrite_bw,2,1,1\nwrite_bw,2,2,all\n";
    let base = file("lanes.csv", lanes);
    let new = file("lanes2.csv", &lanes.replace(",2,all", ",1.5,all"));
    let report = compare_runs(&base, &new, None, 0.05).unwrap();
    assert_eq!(report.rows.len(), 3);
    let lanes: Vec<&str> = report.rows.iter().map(|row| row.lane.as_str()).collect();
    assert_eq!(lanes, ["0", "1", "all"]);
    assert!(
        report.render().lines().any(|line| line.contains("all") && line.contains("-25")),
        "{}",
        report.render()
    );
}

/// One run of one size per value, with that bandwidth.
fn runs(values: &[f64]) -> Vec<ResultFile> {
    values
        .iter()
        .map(|value| file("run.csv", &format!("test,bytes,bw_avg_gbit_s\nwrite_bw,2,{value}\n")))
        .collect()
}

#[test]
fn repeated_runs_regress_only_beyond_the_noise() {
    // Noise of +-10% on both sides, geometric means 5% apart: spread 7.6%, t = -1.06 with 8
    // degrees of freedom, one-sided p = 0.160.
    let base = runs(&[1.00, 0.90, 1.10, 0.95, 1.05]);
    let noisy = runs(&[0.948, 1.04, 0.86, 0.99, 0.91]);
    let comparison = compare_repeated(&base, &noisy, None, 0.05).unwrap();
    assert_eq!(comparison.regressions(), 0, "{}", comparison.render());
    let text = comparison.render();
    // Worse than the tolerance but within the noise: undecided, never a pass or a regression.
    assert_eq!(comparison.verdict, Decision::Undecided);
    assert_eq!(comparison.exit_code(), 0);
    assert!(
        text.contains("UNDECIDED [-15.0%, +6.2%]: within the noise, p=0.16")
            && text.contains("verdict: undecided"),
        "{text}"
    );
    // A real 20% drop: the new runs' geometric mean 0.7959 against 0.9976.
    let dropped = runs(&[0.80, 0.72, 0.78, 0.76, 0.84, 0.83, 0.85]);
    let comparison = compare_repeated(&base, &dropped, None, 0.05).unwrap();
    assert_eq!(comparison.regressions(), 1);
    assert!((comparison.rows[0].change + 0.2021).abs() < 1e-3, "{:?}", comparison.rows[0]);
    let text = comparison.render();
    assert!(text.contains("REGRESSION [-27.0%, -12.8%] (5 vs 7 runs"), "{text}");
    assert!(text.contains("verdict: regression: 1 of 1 rows regressed"), "{text}");
    assert_eq!(comparison.exit_code(), 1);
}

#[test]
fn single_runs_say_so_and_never_call_a_regression() {
    let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.97])[0], None, 0.05).unwrap();
    let text = comparison.render();
    assert!(
        text.contains(
            "verdict: pass: no change beyond 5% in 1 compared rows (single runs: no test of the noise)"
        ),
        "{text}"
    );
    let comparison = compare_runs(&runs(&[1.0])[0], &runs(&[0.5])[0], None, 0.05).unwrap();
    assert_eq!(comparison.rows[0].verdict, Change::Undecided);
    assert_eq!(comparison.regressions(), 0);
    assert_eq!((comparison.verdict, comparison.exit_code()), (Decision::Undecided, 0));
    let text = comparison.render();
    assert!(!text.contains("REGRESSION"), "{text}");
    assert!(
        text.contains("UNDECIDED: beyond the tolerance, single run: cannot tell from noise")
            && text.contains("single runs cannot tell a change from run-to-run noise")
            && text.contains("Run each side 3 times"),
        "{text}"
    );
}

#[test]
fn relative_change_handles_zero() {
    assert_eq!(relative_change(0.0, 0.0), 0.0);
    assert_eq!(relative_change(0.0, 1.0), f64::INFINITY);
    assert_eq!(relative_change(2.0, 1.0), -0.5);
}

/// Runs whose files hold GPUDirect and staged rows: GPUDirect 8% slower at every size of a
/// 6-size sweep while staged copies hold is found on the cuda rows and on the speed-up
/// (2.0x -> 1.84x), in one decision.
#[test]
fn a_gpudirect_slowdown_is_judged_on_its_speedup_over_staged_copies_too() {
    let run = |name: &str, cuda: f64, wiggle: f64| {
        let mut text = String::from("test,bytes,bw_avg_gbit_s,mem_local,gpu_local\n");
        for at in 0..6u32 {
            let bytes = 4096u64 << at;
            let shake = 1.0 + wiggle * if at % 2 == 0 { 1.0 } else { -1.0 };
            text.push_str(&format!("write_bw,{bytes},{},cuda,GPU0\n", cuda * shake));
            text.push_str(&format!("write_bw,{bytes},{},cuda-staged,GPU0\n", 45.0 * shake));
        }
        file(name, &text)
    };
    let base = [run("a1.csv", 90.0, 0.0), run("a2.csv", 90.0, 0.01), run("a3.csv", 90.0, -0.01)];
    let new = [run("b1.csv", 82.8, 0.0), run("b2.csv", 82.8, 0.01), run("b3.csv", 82.8, -0.01)];
    let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
    assert_eq!(
        comparison.sweeps,
        ["write_bw cuda GPU0", "write_bw cuda vs cuda-staged GPU0", "write_bw cuda-staged GPU0"]
    );
    let verdict = |memory: &str| -> Vec<Change> {
        comparison.rows.iter().filter(|row| row.memory == memory).map(|row| row.verdict).collect()
    };
    assert_eq!(verdict("cuda"), [Change::Regression; 6], "{}", comparison.render());
    assert_eq!(verdict("cuda vs cuda-staged"), [Change::Regression; 6], "{}", comparison.render());
    assert_eq!(verdict("cuda-staged"), [Change::Pass; 6], "{}", comparison.render());
    assert_eq!(comparison.verdict, Decision::Regression);
    let speedup = comparison.rows.iter().find(|row| row.memory == "cuda vs cuda-staged").unwrap();
    assert!((speedup.base - 2.0).abs() < 1e-9 && (speedup.new - 1.84).abs() < 1e-9, "{speedup:?}");
}

/// A zero, a missing size and runs of another commit on one side: each said, no alarm.
#[test]
fn zeros_gaps_and_mixed_runs_are_said_and_raise_no_alarm() {
    let run = |name: &str, commit: &str, values: &[f64]| {
        let mut text = format!("# git_commit: {commit}\ntest,bytes,bw_avg_gbit_s\n");
        for (at, value) in values.iter().enumerate() {
            text.push_str(&format!("write_bw,{},{value}\n", 2u64 << at));
        }
        file(name, &text)
    };
    let steady = [10.0, 20.0, 40.0, 80.0, 90.0, 91.0];
    let scaled = |factor: f64| steady.iter().map(|value| value * factor).collect::<Vec<f64>>();
    let base = [
        run("a1.csv", "abc", &scaled(1.0)),
        run("a2.csv", "abc", &scaled(1.01)),
        run("a3.csv", "def", &scaled(0.99)),
    ];
    let mut zero = scaled(1.0);
    zero[2] = 0.0;
    let new = [
        run("b1.csv", "123", &zero),
        run("b2.csv", "123", &scaled(1.01)[..4]),
        run("b3.csv", "123", &scaled(0.99)),
    ];
    let comparison = compare_repeated(&base, &new, None, 0.05).unwrap();
    assert_eq!(comparison.verdict, Decision::Pass, "{}", comparison.render());
    let text = comparison.render();
    assert!(
        text.contains("warning: the base runs differ in git_commit (a1.csv abc; a2.csv abc; a3.csv def)"),
        "{text}"
    );
    assert!(
        text.contains(
            "b1.csv: write_bw host 8 bytes has bw_avg_gbit_s = 0: no logarithm, left out of the tests"
        ),
        "{text}"
    );
    assert!(text.contains("b2.csv (new) has no usable value at 2 of 6 sizes of write_bw host"), "{text}");
    assert_eq!(comparison.rows[2].new_runs, 2);
}
