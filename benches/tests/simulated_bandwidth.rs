//! The bandwidth benches' loopback checks that the Soft-RoCE VM families (10-write-bw,
//! 11-read-bw, 12-staged, 14-placements, 30-send) made, over the simulated NIC: the same
//! commands, exit statuses, messages and result files, with no VM. What only a kernel device
//! shows (rxe's port facts, two processes, its counters) stays in the VM; docs/simulated-nic.md
//! lists which VM check became which test here.
//!
//! Decisions only, never a figure of a run: an exit status, a message, the rows kept, a
//! column's value that the run's settings decide (iterations, memory kind, lane) or an identity
//! that holds for any timing (an average is its bytes over its elapsed time).

mod common;

use std::process::Stdio;

use common::{assert_simulated_and_checked, column, command, loopback, number, rows, run, Row, Scratch, NIC};

/// Sizes of `-a`: 2 bytes to 8 MiB.
const SWEEP_SIZES: usize = 23;

/// Every row has positive, finite figures (the peak may be empty where too few completions
/// define one) and `validation` as wanted: the VM's check_bw_csv.
fn assert_bandwidth_rows(what: &str, rows: &[Row], count: usize, validation: &str) {
    assert_eq!(rows.len(), count, "{what}: {rows:?}");
    for row in rows {
        for figure in ["bytes", "iterations", "bw_avg_mib_s", "bw_avg_gbit_s", "msg_rate_mpps"] {
            let value = number(row, figure);
            assert!(value.is_finite() && value > 0.0, "{what}: {figure} {value} in {row:?}");
        }
        for peak in ["bw_peak_mib_s", "bw_peak_gbit_s"] {
            let cell = row.get(peak).map_or("", String::as_str);
            assert!(cell.is_empty() || number(row, peak) > 0.0, "{what}: {peak} {cell:?}");
        }
        assert_eq!(row.get("device").map(String::as_str), Some("simulated0"), "{what}: {row:?}");
        assert_eq!(row.get("validation").map(String::as_str), Some(validation), "{what}: {row:?}");
    }
}

/// Every row has a peak and no note that it has none (perftest prints a peak for every size).
fn assert_peak_in_every_row(what: &str, rows: &[Row]) {
    for row in rows {
        assert!(number(row, "bw_peak_mib_s") > 0.0, "{what}: no peak: {row:?}");
        assert_eq!(row.get("peak_note").map(String::as_str), Some(""), "{what}: {row:?}");
    }
}

/// 10-write-bw's sweeps: the checked one with its CSV and JSON, and the README's (no check,
/// 50 messages a size, one signalled completion): 23 rows each, a peak in every row.
#[test]
fn write_bw_sweeps_keep_every_size_with_a_peak_in_csv_and_json() {
    let scratch = Scratch::new("write-bw-sweeps");
    let (csv, json) = (scratch.file("sweep.csv"), scratch.file("sweep.json"));
    let arguments = ["-a", "-n", "20", "-t", "16", "-Q", "4", "--validate", "--json", &json];
    let (output, checked) = loopback("gdr-write-bw", &arguments, &csv, 0);
    assert_bandwidth_rows("write_bw -a --validate", &checked, SWEEP_SIZES, "pass");
    assert_peak_in_every_row("write_bw -a --validate", &checked);
    assert!(output.contains("BW average[MiB/sec]"), "{output}");
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    assert!(json.contains("\"results\"") && json.contains("\"gdrperf_version\""), "{json}");
    let commit = json.split("\"git_commit\": \"").nth(1).and_then(|rest| rest.chars().next());
    assert!(commit.is_some_and(|first| first.is_ascii_hexdigit()), "the commit it was built from: {json}");
    assert_eq!(json.matches("\"bw_avg_mib_s\"").count(), SWEEP_SIZES, "{json}");

    let readme = scratch.file("readme.csv");
    let (output, rows) = loopback("gdr-write-bw", &["-a", "-n", "50"], &readme, 0);
    assert_bandwidth_rows("README's sweep", &rows, SWEEP_SIZES, "off");
    assert_peak_in_every_row("README's sweep", &rows);
    assert!(!output.contains("no peak"), "{output}");
}

/// 10-write-bw's duration mode: -D 3 -f 1 measures between margins of 1 s, so the row's
/// elapsed time is the 1 s window (read from the clock at the margins), nothing left out.
#[test]
fn write_bw_duration_averages_over_the_window_between_its_margins() {
    let scratch = Scratch::new("write-bw-duration");
    let csv = scratch.file("duration.csv");
    let (output, rows) = loopback("gdr-write-bw", &["-s", "4096", "-D", "3", "-f", "1"], &csv, 0);
    assert_bandwidth_rows("write_bw -D 3 -f 1", &rows, 1, "off");
    assert!(output.contains("measured between margins of 1 s (-f)"), "{output}");
    let elapsed = number(&rows[0], "elapsed_s");
    assert!((0.999..1.001).contains(&elapsed), "elapsed_s {elapsed}: {rows:?}");
    assert_eq!(rows[0]["peak_events_not_stored"], "0", "{rows:?}");
}

/// 10-write-bw's decisions on flags: CQ moderation as perftest lowers it, thresholds and
/// perftest's floors (exit 1 below them), --output's one number. Each case is its own process,
/// run side by side.
#[test]
fn write_bw_thresholds_floors_and_moderation_decide_as_on_a_device() {
    // (arguments, exit status, what the output says; "" for nothing particular)
    let cases: [(&[&str], i32, &str); 9] = [
        (
            &["-s", "4096", "-n", "32", "-t", "8", "-Q", "16"],
            0,
            "8 (16 lowered to -t/--tx-depth 8, as perftest)",
        ),
        (
            &["-s", "65536", "-n", "20"],
            0,
            "1 (every request signalled above 8192 B, as perftest; -Q N to moderate)",
        ),
        (&["-s", "4096", "-n", "50", "--min-bw", "100000Gb/s"], 1, "FAIL: 4096 bytes: BW average"),
        (&["-s", "1M", "-n", "20", "-t", "16", "--min-bw", "1MiB/s"], 0, ""),
        (&["-s", "4096", "-n", "50", "-w", "1000000"], 1, "FAIL: 4096 bytes: BW average"),
        (&["-s", "4096", "-n", "50", "-y", "1000"], 1, "FAIL: 4096 bytes: MsgRate"),
        (&["-s", "4096", "-n", "50", "-w", "0.001", "-y", "0.000001"], 0, ""),
        (&["-s", "4096", "-n", "50", "--output", "latency"], 2, "a bandwidth test prints"),
        (&["-s", "4096", "-n", "5", "--max-lat", "5us"], 2, "--max-lat applies to latency results"),
    ];
    std::thread::scope(|scope| {
        for (arguments, expected, says) in cases {
            scope.spawn(move || {
                let mut all = vec!["--loopback", "-d", "simulated0"];
                all.extend_from_slice(arguments);
                let (code, output) = run("gdr-write-bw", &all, NIC);
                assert_eq!(code, expected, "{all:?}: {output}");
                assert!(output.contains(says), "{all:?} does not say {says:?}: {output}");
            });
        }
    });
    // perftest's --output: one number per size on stdout and nothing else (VAR=$(...) scripts).
    let arguments = ["--loopback", "-d", "simulated0", "-s", "4096", "-n", "50", "--output", "bandwidth"];
    let output = command("gdr-write-bw", &arguments, NIC).stderr(Stdio::null()).output().expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let (whole, fraction) = lines[0].split_once('.').expect("a decimal number");
    assert!(whole.parse::<u64>().is_ok() && fraction.len() == 6, "{stdout}");
    assert!(lines[0].parse::<f64>().is_ok_and(|figure| figure > 0.0), "{stdout}");
}

/// 11-read-bw's loopback runs: the sweep's rows named read_bw and its header, a timed run, both
/// sides staged with a deep queue (every message checked in its slot), a staged timed reader,
/// and -b refused on staged memory.
#[test]
fn read_bw_sweep_timed_and_staged_runs_check_and_name_their_rows() {
    let scratch = Scratch::new("read-bw");
    let csv = scratch.file("sweep.csv");
    let (output, rows) =
        loopback("gdr-read-bw", &["-a", "-n", "20", "-t", "16", "-Q", "4", "--validate"], &csv, 0);
    assert_bandwidth_rows("read_bw -a", &rows, SWEEP_SIZES, "pass");
    assert!(column(&rows, "test").iter().all(|test| *test == "read_bw"), "{rows:?}");
    assert!(output.contains("RDMA_Read BW Test"), "{output}");
    assert!(output.contains("server -> client (the client reads)"), "{output}");

    let csv = scratch.file("duration.csv");
    let (_, rows) = loopback("gdr-read-bw", &["-s", "4096", "-D", "2"], &csv, 0);
    assert_bandwidth_rows("read_bw -D 2", &rows, 1, "off");

    let csv = scratch.file("staged.csv");
    let staged = ["--mem", "host-staged", "-s", "65536", "-n", "400", "-t", "64", "--validate"];
    let (_, rows) = loopback("gdr-read-bw", &staged, &csv, 0);
    assert_bandwidth_rows("read_bw host-staged -t 64", &rows, 1, "pass");
    assert_eq!(column(&rows, "mem_remote"), ["host-staged"]);

    let csv = scratch.file("staged-duration.csv");
    loopback("gdr-read-bw", &["--mem", "host-staged", "-s", "65536", "-D", "2"], &csv, 0);
    let (output, _) = loopback("gdr-read-bw", &["--mem", "host-staged", "-b", "-n", "5"], &csv, 2);
    assert!(output.contains("drop -b/--bidirectional"), "{output}");
}

/// 12-staged's loopback runs: the staged sweep's rows (both sides host-staged, the warm-up not
/// counted), -b and -D refused, the bounce ring (every message intact in its own slot, and the
/// old shared bounce buffer caught by the same check), and gdr-send-bw's ring.
#[test]
fn staged_write_bw_keeps_every_message_in_its_own_slot() {
    let scratch = Scratch::new("staged");
    let csv = scratch.file("sweep.csv");
    let (_, rows) = loopback(
        "gdr-write-bw",
        &["--mem", "host-staged", "-a", "-n", "20", "-t", "16", "--validate"],
        &csv,
        0,
    );
    assert_bandwidth_rows("write_bw host-staged -a", &rows, SWEEP_SIZES, "pass");
    for name in ["mem_local", "mem_remote"] {
        assert!(column(&rows, name).iter().all(|memory| *memory == "host-staged"), "{rows:?}");
    }
    assert!(column(&rows, "iterations").iter().all(|count| *count == "20"), "{rows:?}");

    let (output, _) = loopback("gdr-write-bw", &["--mem", "host-staged", "-b", "-n", "5"], &csv, 2);
    assert!(output.contains("drop -b/--bidirectional"), "{output}");
    let (output, _) = loopback("gdr-write-bw", &["--mem", "host-staged", "-D", "1"], &csv, 2);
    assert!(output.contains("use -n/--iters, not -D"), "{output}");

    let ring = ["--mem", "host-staged", "-s", "65536", "-n", "400", "-t", "64", "--validate"];
    let csv = scratch.file("ring.csv");
    let (_, rows) = loopback("gdr-write-bw", &ring, &csv, 0);
    assert_bandwidth_rows("write_bw ring", &rows, 1, "pass");
    // The shared bounce buffer gdrperf had before the ring (every message into the same bytes,
    // no credits) fails the same check: a message is copied in holding another's.
    let mut arguments = vec!["--loopback", "-d", "simulated0"];
    arguments.extend_from_slice(&ring);
    let (code, output) = common::finish(
        "shared bounce",
        command("gdr-write-bw", &arguments, NIC).env("GDRPERF_TEST_SHARED_BOUNCE", "1"),
    );
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("carries the stamp of message"), "{output}");

    let csv = scratch.file("send-ring.csv");
    let send_ring =
        ["--mem", "host-staged", "-s", "65536", "-n", "400", "-t", "64", "-r", "64", "--validate"];
    let (_, rows) = loopback("gdr-send-bw", &send_ring, &csv, 0);
    assert_bandwidth_rows("send_bw ring", &rows, 1, "pass");
}

/// 14-placements' loopback runs: placements in turn (one CSV, the JSON's sections), fresh QPs
/// per round with their receives posted again, staged and plain memory in one run of every
/// two-sided test.
#[test]
fn placements_in_turn_each_get_fresh_queue_pairs_and_checked_rows() {
    let scratch = Scratch::new("rounds");
    let (csv, json) = (scratch.file("rounds.csv"), scratch.file("rounds.json"));
    let arguments = ["--mem", "host,host-staged", "-s", "64K", "-n", "40", "--validate", "--json", &json];
    let (output, rows) = loopback("gdr-write-bw", &arguments, &csv, 0);
    assert_bandwidth_rows("rounds", &rows, 2, "pass");
    assert_eq!(column(&rows, "mem_local"), ["host", "host-staged"]);
    assert_eq!(column(&rows, "mem_remote"), ["host", "host-staged"]);
    assert!(
        output.contains("Placements            : 2 in turn: local [host@simulated0, host-staged@simulated0]"),
        "{output}"
    );
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    assert!(json.contains("\"sections\"") && json.contains("\"placements\""), "{json}");
    assert!(json.contains("\"status\": \"complete\""), "{json}");

    std::thread::scope(|scope| {
        for binary in ["gdr-send-bw", "gdr-write-lat", "gdr-send-lat", "gdr-read-lat"] {
            let scratch = &scratch;
            scope.spawn(move || {
                // Receives posted once per connection must be posted again on the next round's QPs.
                let csv = scratch.file(&format!("{binary}-devices.csv"));
                let devices =
                    ["-d", "simulated0,simulated0", "-s", "4096", "-n", "40", "--validate", "--csv", &csv];
                let (code, output) = run(binary, &[&["--loopback"][..], &devices[..]].concat(), NIC);
                assert_eq!(code, 0, "{binary}: {output}");
                let rows = common::rows(&csv);
                assert_eq!(rows.len(), 2, "{binary}: {output}");
                assert_simulated_and_checked(binary, &rows);
                // Staged and plain memory in one run.
                let csv = scratch.file(&format!("{binary}-mixed.csv"));
                let mixed = ["--mem", "host-staged,host", "-s", "4096", "-n", "200", "--validate"];
                let (_, rows) = loopback(binary, &mixed, &csv, 0);
                assert_eq!(column(&rows, "mem_local"), ["host-staged", "host"], "{binary}");
                assert_simulated_and_checked(binary, &rows);
            });
        }
    });
}

/// 14-placements' lanes in loopback: a row per lane and the aggregate, the aggregate being all
/// lanes' bytes over the common wall interval (the longest lane's), three lanes of gdr-send-bw.
#[test]
fn lanes_write_a_row_each_and_an_aggregate_over_the_common_interval() {
    let scratch = Scratch::new("lanes");
    let csv = scratch.file("lanes.csv");
    let arguments = ["--concurrent", "-d", "simulated0,simulated0", "-s", "64K", "-n", "60", "--validate"];
    let mut all = vec!["--loopback"];
    all.extend_from_slice(&arguments);
    all.extend(["--csv", &csv]);
    let (code, output) = run("gdr-write-bw", &all, NIC);
    assert_eq!(code, 0, "{output}");
    let rows = rows(&csv);
    assert_eq!(column(&rows, "lane"), ["0", "1", "all"], "{output}");
    assert_eq!(column(&rows, "iterations"), ["60", "60", "120"], "{output}");
    assert!(output.contains("Lanes                 : 2 at once"), "{output}");
    let wall = number(&rows[0], "elapsed_s").max(number(&rows[1], "elapsed_s"));
    let bytes: f64 = rows[..2].iter().map(|row| number(row, "iterations") * number(row, "bytes")).sum();
    let aggregate = number(&rows[2], "bw_avg_mib_s");
    let want = bytes / wall / 1_048_576.0;
    assert!(((want - aggregate) / want).abs() < 1e-4, "aggregate {aggregate}, want {want}: {rows:?}");
    assert!(aggregate <= number(&rows[0], "bw_avg_mib_s") + number(&rows[1], "bw_avg_mib_s") + 1e-6);

    let csv = scratch.file("three.csv");
    let three =
        ["--concurrent", "-d", "simulated0,simulated0,simulated0", "-s", "64K", "-n", "30", "--validate"];
    let (code, output) =
        run("gdr-send-bw", &[&["--loopback"][..], &three[..], &["--csv", &csv][..]].concat(), NIC);
    assert_eq!(code, 0, "{output}");
    let rows = common::rows(&csv);
    assert_eq!(column(&rows, "lane"), ["0", "1", "2", "all"], "{output}");
    assert_eq!(column(&rows, "validation"), ["pass", "pass", "pass", "pass"], "{output}");
}

/// 14-placements' Ctrl-C in a concurrent sweep: exit 130, every lane stops, the finished sizes
/// kept with their lanes and aggregates, the JSON says interrupted. A lane that finished the size
/// the signal landed in keeps its row too (measured results are never dropped: roles.rs writes
/// such a size's rows without an aggregate), so the file may end with fewer rows than lanes.
#[test]
fn ctrl_c_in_a_concurrent_sweep_keeps_each_finished_size_with_its_lanes() {
    let scratch = Scratch::new("lanes-interrupt");
    let (csv, json) = (scratch.file("lanes.csv"), scratch.file("lanes.json"));
    let arguments = [
        "--loopback",
        "--concurrent",
        "-d",
        "simulated0,simulated0",
        "-a",
        "-n",
        "20000",
        "--csv",
        &csv,
        "--json",
        &json,
    ];
    let two_sizes_done = || column(&rows(&csv), "lane").iter().filter(|lane| **lane == "all").count() >= 2;
    let (code, stderr) =
        common::signal_when("gdr-write-bw", &arguments, "rate=1", libc::SIGINT, two_sizes_done);
    assert_eq!(code, Some(130), "{stderr}");
    let rows = rows(&csv);
    let lanes = column(&rows, "lane");
    let aggregates = lanes.iter().filter(|lane| **lane == "all").count();
    let (finished, partial) = lanes.split_at(3 * aggregates);
    assert!(aggregates >= 2 && finished.chunks(3).all(|size| size == ["0", "1", "all"]), "{lanes:?}");
    assert!(partial.len() < 2 && partial.iter().all(|lane| *lane != "all"), "{lanes:?}");
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    assert!(json.contains("\"status\": \"interrupted\"") && json.contains("stopped by SIGINT"), "{json}");
}

/// 30-send's loopback runs: the checked sweep with the receiver's figures (its count equal to the
/// sender's), inline sends checked, a timed run whose receiver finds the end without a count
/// (each side's average its count over the window), Ctrl-C on a bidirectional stream.
#[test]
fn send_bw_receiver_counts_what_the_sender_sent_checked_inline_and_timed() {
    let scratch = Scratch::new("send-bw");
    let (csv, json) = (scratch.file("sweep.csv"), scratch.file("sweep.json"));
    // Unchecked: gdr-send-bw checks every message as it lands, at a few MiB/s in a debug build
    // (too slow for the sweep's 8 MiB); its checked sizes are simulated_nic.rs's and those below.
    let sweep = ["-a", "-n", "20", "-t", "16", "-Q", "4", "-r", "32", "--json", &json];
    let (output, rows) = loopback("gdr-send-bw", &sweep, &csv, 0);
    assert_bandwidth_rows("send_bw -a", &rows, SWEEP_SIZES, "off");
    // The receiver times from its first poll that found messages: it counts every message the
    // sender sent, or, where all of a small size landed before it looked (a matter of
    // scheduling here, not of the settings), none, its rate then left empty.
    for row in &rows {
        let rate = row["rx_bw_avg_mib_s"].as_str();
        match row["rx_iterations"].as_str() {
            "0" => assert!(rate.is_empty() || number(row, "rx_bw_avg_mib_s") == 0.0, "{row:?}"),
            counted => {
                assert_eq!(counted, row["iterations"], "{row:?}");
                assert!(number(row, "rx_bw_avg_mib_s") > 0.0, "{row:?}");
            }
        }
    }
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    assert_eq!(json.matches("\"rx_bw_avg_mib_s\"").count(), SWEEP_SIZES, "{json}");
    assert!(output.contains("RX BW average[MiB/sec]"), "{output}");

    let csv = scratch.file("inline.csv");
    let (_, rows) = loopback("gdr-send-bw", &["-s", "64", "-n", "200", "-I", "64", "--validate"], &csv, 0);
    assert_bandwidth_rows("send_bw -I 64", &rows, 1, "pass");

    // -D 1: perftest's margin is 1 / 4 = 0 whole seconds, so the window is the whole second.
    let csv = scratch.file("duration.csv");
    let (_, rows) = loopback("gdr-send-bw", &["-s", "4096", "-D", "1"], &csv, 0);
    assert_bandwidth_rows("send_bw -D 1", &rows, 1, "off");
    let row = &rows[0];
    let (received, sent) = (number(row, "rx_iterations"), number(row, "iterations"));
    assert!(received * 4.0 >= sent * 3.0 && sent * 4.0 >= received * 3.0, "{row:?}");
    for (average, count) in [("rx_bw_avg_mib_s", received), ("bw_avg_mib_s", sent)] {
        let over_window = number(row, average) * 1_048_576.0 / number(row, "bytes");
        assert!(over_window > count * 0.99 && over_window < count * 1.01, "{average}: {row:?}");
    }

    let arguments = ["--loopback", "-s", "4096", "-b", "-D", "120"];
    assert_eq!(common::interrupt_once_measuring("gdr-send-bw", &arguments, NIC), Some(130));
}

/// 25-atomic's gdr-atomic-bw loopback runs: a stream of each atomic with the counter check
/// (perftest's bandwidth table, 8-byte atomic_bw rows, the atomic named), a timed run whose count
/// is known only at the end, and staged memory; all checked.
#[test]
fn atomic_bw_streams_check_their_counters_in_every_mode() {
    let scratch = Scratch::new("atomic-bw");
    let cases: [(&[&str], Option<&str>); 4] = [
        (&["-A", "FETCH_AND_ADD", "-n", "2000"], Some("FETCH_AND_ADD")),
        (&["-A", "CMP_AND_SWAP", "-n", "2000"], Some("CMP_AND_SWAP")),
        (&["-D", "1"], None),
        (&["--mem", "host-staged", "-A", "CMP_AND_SWAP", "-n", "500"], Some("CMP_AND_SWAP")),
    ];
    for (index, (arguments, atomic)) in cases.into_iter().enumerate() {
        let csv = scratch.file(&format!("atomic-bw-{index}.csv"));
        let what = format!("gdr-atomic-bw {arguments:?}");
        let (output, rows) = loopback("gdr-atomic-bw", &[arguments, &["--validate"][..]].concat(), &csv, 0);
        assert_bandwidth_rows(&what, &rows, 1, "pass");
        assert_eq!((rows[0]["test"].as_str(), rows[0]["bytes"].as_str()), ("atomic_bw", "8"), "{what}");
        assert!(output.contains("MsgRate[Mpps]"), "{what}: {output}");
        if let Some(atomic) = atomic {
            assert!(output.contains(atomic), "{what}: {output}");
        }
    }
}

/// 21-receives' loopback placements (host and host-staged on both sides): every bench that
/// consumes the peer's receives (gdr-send-bw's SENDs, gdr-write-bw's WRITE WITH IMMEDIATE into a
/// staged receiver) sends only on a credit, so no SEND ever finds its receive missing. The VM
/// counts rxe's RNR counters around each run; here `rnr_retry=0` makes any receiver-not-ready an
/// error completion, so the run's exit status is the decision (the verbs crate's
/// simulated_rnr_retry test shows that setting fails a SEND without a receive). The mixed
/// placements (host server, host-staged client and back) need two processes: they stay in the VM.
#[test]
fn credits_keep_every_send_on_a_posted_receive_in_every_loopback_placement() {
    const NO_RNR: &str = "rate=100,rnr_retry=0";
    let scratch = Scratch::new("credits");
    let mut cases: Vec<(String, &str, Vec<&str>)> = Vec::new();
    for memory in ["host", "host-staged"] {
        for binary in ["gdr-write-bw", "gdr-send-bw"] {
            for size in ["2", "4K", "64K", "1M"] {
                cases.push((
                    format!("{binary} {memory} {size}"),
                    binary,
                    vec!["--mem", memory, "-s", size, "-n", "200"],
                ));
            }
            for size in ["64K", "1M"] {
                let arguments = vec!["--mem", memory, "-s", size, "-n", "100", "-q", "4"];
                cases.push((format!("{binary} {memory} {size} -q 4"), binary, arguments));
            }
            // A staged receiver refuses -D (it counts the messages it copies): not a credit case.
            if !(binary == "gdr-write-bw" && memory == "host-staged") {
                for size in ["4K", "1M"] {
                    cases.push((
                        format!("{binary} {memory} {size} -D 1"),
                        binary,
                        vec!["--mem", memory, "-s", size, "-D", "1"],
                    ));
                }
            }
        }
    }
    // -b: both directions share each QP's receives (host memory: staged refuses -b).
    for size in ["2", "64K"] {
        cases.push((
            format!("gdr-send-bw -b {size}"),
            "gdr-send-bw",
            vec!["-b", "-s", size, "-n", "300", "-r", "32"],
        ));
    }
    cases.push((
        "gdr-send-bw -b -D 1 -q 2".into(),
        "gdr-send-bw",
        vec!["-b", "-s", "4K", "-D", "1", "-q", "2"],
    ));
    // Fewer receives than the sender keeps in flight.
    cases.push(("gdr-send-bw -r 8".into(), "gdr-send-bw", vec!["-s", "4K", "-n", "500", "-r", "8"]));
    // Four runs at a time: each process has its own NIC thread, and a 2-core host runs the rest.
    let next_case = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let (scratch, cases, next_case) = (&scratch, &cases, &next_case);
            scope.spawn(move || {
                while let Some((what, binary, arguments)) =
                    cases.get(next_case.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let csv = scratch.file(&format!("credits-{}.csv", what.replace(' ', "_")));
                    let mut all = vec!["--loopback", "-d", "simulated0"];
                    all.extend_from_slice(arguments);
                    all.extend(["--csv", &csv]);
                    let (code, output) = run(binary, &all, NO_RNR);
                    assert_eq!(code, 0, "{what}: {output}");
                    let rows = rows(&csv);
                    assert!(!rows.is_empty(), "{what}: {output}");
                    assert!(rows.iter().all(|row| row["device"] == "simulated0"), "{what}: {rows:?}");
                    if arguments.contains(&"-r") && arguments.contains(&"8") {
                        assert!(output.contains("-r 8 is below -t 128"), "{what}: said at start: {output}");
                    }
                }
            });
        }
    });
}
