//! The latency benches' loopback checks that the Soft-RoCE VM families (13-staged-lat,
//! 23-latency, 25-atomic, 40-faults) made, over the simulated NIC: the same commands, exit
//! statuses, messages and result files, with no VM. What only a kernel device shows (two
//! processes, a peer killed, rxe's defaults) stays in the VM; docs/simulated-nic.md lists which
//! VM check became which test here.
//!
//! Decisions only: exit statuses, messages, rows, sample counts and the order the percentiles
//! must keep whatever the timing (t_min <= median <= p99 <= ... <= t_max), never a figure.

mod common;

use common::{column, loopback, number, rows, Row, Scratch, NIC};

/// Sizes of `-a`: 2 bytes to 8 MiB.
const SWEEP_SIZES: usize = 23;

/// The VM's check_lat_csv: `count` rows, each with `samples` samples (0: any positive count),
/// times positive and finite, percentiles in order, the average inside [t_min, t_max], the
/// standard deviation not negative, `validation` as wanted.
fn assert_latency_rows(what: &str, rows: &[Row], count: usize, samples: u64, validation: &str) {
    assert_eq!(rows.len(), count, "{what}: {rows:?}");
    for row in rows {
        for time in ["t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "p99_us", "p99_9_us", "p99_99_us"] {
            let value = number(row, time);
            assert!(value.is_finite() && value > 0.0, "{what}: {time} {value} in {row:?}");
        }
        assert!(number(row, "t_stdev_us") >= 0.0, "{what}: {row:?}");
        let order = ["t_min_us", "t_typical_us", "p99_us", "p99_9_us", "p99_99_us", "t_max_us"];
        for pair in order.windows(2) {
            assert!(
                number(row, pair[0]) <= number(row, pair[1]),
                "{what}: {} > {}: {row:?}",
                pair[0],
                pair[1]
            );
        }
        let average = number(row, "t_avg_us");
        assert!(average >= number(row, "t_min_us") && average <= number(row, "t_max_us"), "{what}: {row:?}");
        let counted = number(row, "iterations");
        if samples > 0 {
            assert_eq!(counted, samples as f64, "{what}: {row:?}");
        } else {
            assert!(counted > 0.0, "{what}: {row:?}");
        }
        for needed in ["arrival", "percentile_source"] {
            assert!(row.contains_key(needed), "{what}: no {needed}: {row:?}");
        }
        assert_eq!(row.get("device").map(String::as_str), Some("simulated0"), "{what}: {row:?}");
        assert_eq!(row.get("validation").map(String::as_str), Some(validation), "{what}: {row:?}");
    }
}

/// The VM's check_hgrm: an HdrHistogram percentile table of `count` samples whose values and
/// percentiles never decrease.
fn assert_percentile_table(path: &str, count: u64) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let header = |line: &str| line.split_whitespace().take(3).eq(["Value", "Percentile", "TotalCount"]);
    assert!(text.lines().any(header), "{path}: no table header: {text}");
    let mut previous = (0.0, 0.0);
    let mut table_rows = 0;
    for line in text.lines().filter(|line| line.trim_start().starts_with(|c: char| c.is_ascii_digit())) {
        let fields: Vec<f64> =
            line.split_whitespace().take(2).filter_map(|field| field.parse().ok()).collect();
        assert!(fields.len() == 2 && fields[0] >= previous.0 && fields[1] >= previous.1, "{path}: {line}");
        previous = (fields[0], fields[1]);
        table_rows += 1;
    }
    assert!(table_rows >= 2, "{path}: {text}");
    let total = text.lines().find(|line| line.contains("Total count")).and_then(|line| {
        line.rsplit(|c: char| !c.is_ascii_digit())
            .find(|part| !part.is_empty())
            .and_then(|part| part.parse().ok())
    });
    assert_eq!(total, Some(count), "{path}: {text}");
}

/// 23-latency's loopback sweeps of every latency bench: the CSV (ordered percentiles, 20
/// samples a size), the JSON, a percentile table per size and 23 V2 histograms, the header;
/// perftest's inline default on a device it does not know; how each waits for the message.
#[test]
fn latency_sweeps_write_ordered_percentiles_tables_and_histograms() {
    let scratch = Scratch::new("latency-sweeps");
    std::thread::scope(|scope| {
        for test in ["read", "write", "send"] {
            let scratch = &scratch;
            scope.spawn(move || {
                let binary = format!("gdr-{test}-lat");
                let (csv, json) =
                    (scratch.file(&format!("{test}.csv")), scratch.file(&format!("{test}.json")));
                let histograms = scratch.file(&format!("{test}-hdr"));
                let arguments = ["-a", "-n", "20", "--validate", "--json", &json, "--hdr-dir", &histograms];
                let (output, rows) = loopback(&binary, &arguments, &csv, 0);
                assert_latency_rows(&binary, &rows, SWEEP_SIZES, 20, "pass");
                let json = std::fs::read_to_string(&json).expect("the JSON file");
                assert!(json.contains("\"gdrperf_version\""), "{json}");
                assert_eq!(json.matches("\"t_typical_us\"").count(), SWEEP_SIZES, "{json}");
                assert_eq!(json.matches("\"p99_99_us\"").count(), SWEEP_SIZES, "{json}");
                for size in [2, 4096, 8_388_608] {
                    assert_percentile_table(&format!("{histograms}/{test}_lat-{size}B.hgrm"), 20);
                }
                let histograms = std::fs::read_dir(&histograms).expect("the --hdr-dir folder");
                let v2 = histograms.filter(|entry| {
                    entry.as_ref().is_ok_and(|entry| entry.path().extension() == Some("hdr".as_ref()))
                });
                assert_eq!(v2.count(), SWEEP_SIZES);
                assert!(output.contains("t_typical[usec]"), "{output}");
                if test != "read" {
                    assert!(
                        output.contains(": 0 (perftest's default on a device it does not know"),
                        "{output}"
                    );
                    assert!(column(&rows, "inline_size").iter().all(|size| *size == "0"), "{rows:?}");
                }
                if test == "write" {
                    assert!(
                        column(&rows, "arrival").iter().all(|arrival| *arrival == "poll_last_byte"),
                        "{rows:?}"
                    );
                }
            });
        }
    });
}

/// 23-latency's other loopback runs: the WRITE_WITH_IMM path GPU memory takes, the raw samples
/// and perftest's listings (-U all samples in order, -H sorted less the two largest), the
/// interval log, a timed run's intervals, thresholds on the median, Ctrl-C.
#[test]
fn latency_files_listings_thresholds_and_ctrl_c() {
    let scratch = Scratch::new("latency-runs");
    let csv = scratch.file("imm.csv");
    let (_, rows) =
        loopback("gdr-write-lat", &["--write-with-imm", "-s", "4096", "-n", "50", "--validate"], &csv, 0);
    assert_latency_rows("write_lat --write-with-imm", &rows, 1, 50, "pass");
    assert_eq!(column(&rows, "arrival"), ["write_imm_completion"]);

    for test in ["read", "write", "send"] {
        let binary = format!("gdr-{test}-lat");
        let (csv, raw, log) = (
            scratch.file(&format!("{test}.csv")),
            scratch.file(&format!("{test}.raw")),
            scratch.file(&format!("{test}.hlog")),
        );
        let arguments =
            ["-s", "1024", "-n", "200", "--validate", "--raw-samples", &raw, "-H", "-U", "--hlog", &log];
        let (output, rows) = loopback(&binary, &arguments, &csv, 0);
        assert_latency_rows(&binary, &rows, 1, 200, "pass");
        let raw = std::fs::read_to_string(&raw).expect("the raw samples");
        assert_eq!(raw.lines().next(), Some("latency_ns"), "{binary}");
        assert_eq!(raw.lines().count(), 201, "{binary}");
        let listed = output
            .lines()
            .filter(|line| {
                line.split_once(", ")
                    .is_some_and(|(index, time)| index.parse::<u64>().is_ok() && time.parse::<f64>().is_ok())
            })
            .count();
        assert_eq!(output.lines().filter(|line| *line == "#, usec").count(), 2, "{binary}: {output}");
        assert_eq!(listed, 398, "{binary}: {output}");
        let log = std::fs::read_to_string(&log).expect("the interval log");
        assert!(log.lines().any(|line| line.starts_with("#[StartTime")), "{log}");
        assert!(log.lines().any(|line| line.starts_with("Tag=1024B,")), "{log}");
    }

    let (csv, log) = (scratch.file("duration.csv"), scratch.file("duration.hlog"));
    let arguments = ["-s", "8", "-D", "2", "--hlog", &log, "--hlog-interval", "0.5"];
    let (_, rows) = loopback("gdr-write-lat", &arguments, &csv, 0);
    assert_latency_rows("write_lat -D 2", &rows, 1, 0, "off");
    let intervals = std::fs::read_to_string(&log)
        .expect("the log")
        .lines()
        .filter(|line| line.starts_with("Tag=8B,"))
        .count();
    assert!((3..=5).contains(&intervals), "{intervals} intervals of 0.5 s in a 2 s run");

    let (output, _) = loopback("gdr-read-lat", &["-n", "20", "--max-lat", "1ns"], &csv, 1);
    assert!(output.contains("missed the acceptance thresholds"), "{output}");
    loopback("gdr-write-lat", &["-n", "20", "--max-lat", "1000ms", "--lat-pct", "99.9"], &csv, 0);

    let arguments = ["--loopback", "-s", "8", "-D", "120"];
    assert_eq!(common::interrupt_once_measuring("gdr-write-lat", &arguments, NIC), Some(130));
}

/// 13-staged-lat's loopback runs: every latency bench with both sides staged at four sizes
/// (copies counted inside the samples), WRITE_WITH_IMM under staged memory, a staged timed
/// ping-pong; gdr-send-bw staged at two sizes (the receiver's count equal), timed, -b refused.
#[test]
fn staged_latency_and_send_bw_count_their_copies_and_check_their_data() {
    let scratch = Scratch::new("staged-latency");
    std::thread::scope(|scope| {
        for test in ["read", "write", "send"] {
            let scratch = &scratch;
            scope.spawn(move || {
                let binary = format!("gdr-{test}-lat");
                for size in ["2", "4096", "65536", "1M"] {
                    let csv = scratch.file(&format!("{test}-{size}.csv"));
                    let arguments = ["--mem", "host-staged", "-s", size, "-n", "20", "--validate"];
                    let (output, rows) = loopback(&binary, &arguments, &csv, 0);
                    assert_staged_rows(&format!("{binary} -s {size}"), &rows, 20);
                    if test == "write" && size == "2" {
                        assert!(output.contains("Staging"), "{output}");
                        assert_eq!(column(&rows, "arrival"), ["write_imm_completion"]);
                    }
                }
            });
        }
    });
    let csv = scratch.file("send-lat-duration.csv");
    loopback("gdr-send-lat", &["--mem", "host-staged", "-s", "64", "-D", "1"], &csv, 0);

    for (size, count) in [("4096", 200), ("1M", 20)] {
        let csv = scratch.file(&format!("send-bw-{size}.csv"));
        let count_text = count.to_string();
        let arguments =
            ["--mem", "host-staged", "-s", size, "-n", &count_text, "-t", "16", "-r", "32", "--validate"];
        let (_, rows) = loopback("gdr-send-bw", &arguments, &csv, 0);
        assert_staged_rows(&format!("gdr-send-bw -s {size}"), &rows, count);
        assert_eq!(column(&rows, "rx_iterations"), [count_text.as_str()]);
    }
    let csv = scratch.file("send-bw-duration.csv");
    let (_, rows) = loopback("gdr-send-bw", &["--mem", "host-staged", "-s", "4096", "-D", "1"], &csv, 0);
    assert_eq!(column(&rows, "validation"), ["off"]);
    let (output, _) = loopback("gdr-send-bw", &["--mem", "host-staged", "-b", "-n", "5"], &csv, 2);
    assert!(output.contains("drop -b/--bidirectional"), "{output}");
}

/// The VM's check_staged_csv for both sides staged: host-staged on both sides, `count` samples
/// or messages, validation pass, a copy time above zero.
fn assert_staged_rows(what: &str, rows: &[Row], count: u64) {
    assert_eq!(rows.len(), 1, "{what}: {rows:?}");
    for row in rows {
        assert_eq!(
            (row["mem_local"].as_str(), row["mem_remote"].as_str()),
            ("host-staged", "host-staged"),
            "{what}"
        );
        assert_eq!(number(row, "iterations"), count as f64, "{what}: {row:?}");
        assert_eq!(row["validation"], "pass", "{what}: {row:?}");
        assert!(number(row, "copy_time_s") > 0.0, "{what}: {row:?}");
    }
}

/// 25-atomic's loopback runs: each atomic with its counter check (the server's counter advanced
/// by exactly one per atomic), a timed run, staged memory.
#[test]
fn atomics_advance_the_counter_once_each_in_every_mode() {
    let scratch = Scratch::new("atomic");
    for (arguments, samples) in [
        (&["-A", "FETCH_AND_ADD", "-n", "200"][..], 200),
        (&["-A", "CMP_AND_SWAP", "-n", "200"][..], 200),
        (&["-D", "1"][..], 0),
        (&["--mem", "host-staged", "-A", "CMP_AND_SWAP", "-n", "100"][..], 100),
    ] {
        let csv = scratch.file("atomic.csv");
        let (output, rows) = loopback("gdr-atomic-lat", &[arguments, &["--validate"][..]].concat(), &csv, 0);
        let what = format!("gdr-atomic-lat {arguments:?}");
        assert_latency_rows(&what, &rows, 1, samples, "pass");
        assert_eq!((rows[0]["test"].as_str(), rows[0]["bytes"].as_str()), ("atomic_lat", "8"), "{what}");
        assert_eq!(rows[0]["arrival"], "completion", "{what}");
        if let Some(atomic) =
            arguments.iter().find(|argument| argument.ends_with("_SWAP") || argument.ends_with("_ADD"))
        {
            assert!(output.contains(atomic), "{what}: {output}");
        }
    }
}

/// 40-faults' Ctrl-C and SIGTERM in loopback: 130 and 143, the CSV keeps exactly the finished
/// sizes (every line whole), for the one-sided and the two-sided engines.
#[test]
fn signals_in_loopback_keep_the_finished_sizes_of_every_engine() {
    let scratch = Scratch::new("signals");
    std::thread::scope(|scope| {
        for (binary, signal, status) in [
            ("gdr-write-bw", libc::SIGTERM, 143),
            ("gdr-send-bw", libc::SIGINT, 130),
            ("gdr-read-lat", libc::SIGINT, 130),
            ("gdr-send-lat", libc::SIGINT, 130),
        ] {
            let scratch = &scratch;
            scope.spawn(move || {
                let csv = scratch.file(&format!("{binary}.csv"));
                // At 1 Gb/s the last sizes alone take a minute (8 MiB each way, 200 or 20000
                // times), so the signal, sent once three sizes are kept, lands inside the sweep.
                let count = if binary.ends_with("-lat") { "200" } else { "20000" };
                let arguments = ["--loopback", "-a", "-n", count, "--csv", &csv];
                let three_sizes_kept = || rows(&csv).len() >= 3;
                let (code, stderr) =
                    common::signal_when(binary, &arguments, "rate=1", signal, three_sizes_kept);
                assert_eq!(code, Some(status), "{binary}: {stderr}");
                let kept = rows(&csv).len();
                assert!((3..SWEEP_SIZES).contains(&kept), "{binary}: {kept} rows: {stderr}");
                let finished = format!(", {kept} of {SWEEP_SIZES} sizes finished");
                assert!(stderr.contains(&finished), "{binary}: {finished:?} not in {stderr}");
            });
        }
    });
}
