//! perftest's flags that shape what a run posts and prints, over the simulated NIC
//! (`-d simulated0`, loopback): `--report-both`'s direction tables under `-b` and `-l/--post_list`'s
//! lists on every bandwidth bench (issue 42). Each case asserts what a perftest parser or the NIC sees (lines of
//! stdout, fields per row, the length of every post call, exit codes), never a figure.

mod common;

use common::{command, rows, Scratch, NIC};

/// perftest's `RESULT_LINE`.
const RULE: &str = "---------------------------------------------------------------------------------------";

/// Runs `binary` in loopback over simulated0 with `arguments` and the NIC's `settings`: exit
/// code, stdout, stderr (kept apart, as a parser of stdout sees them).
fn run_apart(binary: &str, arguments: &[&str], settings: &str) -> (i32, String, String) {
    let mut all = vec!["--loopback", "-d", "simulated0"];
    all.extend_from_slice(arguments);
    let output = command(binary, &all, settings).output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{binary} {all:?} panicked: {stderr}");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
}

/// The numeric fields of a table row.
fn fields(line: &str) -> Vec<f64> {
    line.split_whitespace().map(|field| field.parse().expect("a number")).collect()
}

/// `--report-both` under `-b`: after the summed row and its rule, perftest's "Local results" and
/// "Remote results" tables (write_bw.c: RESULT_LINE, "\n Local results: \n", RESULT_LINE, the
/// header, the row), five fields a row, the local count the summed row's `#iterations`, the two
/// averages adding up to the sum; one closing rule. Without `-b` (as perftest) and without the
/// flag, nothing more is printed.
#[test]
fn report_both_prints_each_directions_table_after_the_summed_one() {
    for binary in ["gdr-write-bw", "gdr-read-bw", "gdr-send-bw"] {
        let arguments = ["-b", "--report-both", "-s", "4096", "-n", "200", "-t", "16", "-Q", "4"];
        let (code, stdout, stderr) = run_apart(binary, &arguments, NIC);
        assert_eq!(code, 0, "{binary}: {stdout}{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let header = lines.iter().position(|line| line.trim_start().starts_with("#bytes")).expect("a header");
        let tail = &lines[header..];
        assert_eq!(tail.len(), 15, "{binary}: {stdout}");
        assert_eq!(tail[2..5], [RULE, "", " Local results: "], "{binary}: {stdout}");
        assert_eq!(tail[5..7], [RULE, tail[0]], "{binary}: {stdout}");
        assert_eq!(tail[8..11], [RULE, "", " Remote results: "], "{binary}: {stdout}");
        assert_eq!(tail[11..13], [RULE, tail[0]], "{binary}: {stdout}");
        assert_eq!(tail[14], RULE, "{binary}: {stdout}");
        let (sum, local, remote) = (fields(tail[1]), fields(tail[7]), fields(tail[13]));
        for row in [&sum, &local, &remote] {
            assert_eq!((row.len(), row[0]), (5, 4096.0), "{binary}: {stdout}");
        }
        assert_eq!(local[1], sum[1], "{binary}: the summed row's #iterations is this side's: {stdout}");
        assert!(remote[1] > 0.0, "{binary}: {stdout}");
        // Each row is rounded to two decimals.
        assert!((local[3] + remote[3] - sum[3]).abs() <= 0.02 + 1e-9, "{binary}: {stdout}");
    }
    for arguments in
        [&["--report-both", "-s", "4096", "-n", "200"][..], &["-b", "-s", "4096", "-n", "200"][..]]
    {
        let (code, stdout, stderr) = run_apart("gdr-write-bw", arguments, NIC);
        assert_eq!(code, 0, "{arguments:?}: {stdout}{stderr}");
        assert!(!stdout.contains("results:"), "{arguments:?}: {stdout}");
        assert_eq!(stdout.lines().filter(|line| *line == RULE).count(), 3, "{arguments:?}: {stdout}");
    }
}

/// `--report-both` under `-b` in the files: the CSV and gdrperf's `--json` follow each summed row
/// with its two directions as rows of their own (`lane` `local`, `remote`: the published columns
/// unchanged), each with a count and figures that parse; perftest's `--out_json` ends, as
/// perftest's file does, with the remote direction in `results`, and lists both directions in
/// `local_results` and `remote_results`. Without the flag, one row and no such keys.
#[test]
fn report_both_puts_each_direction_into_the_files() {
    let scratch = Scratch::new("report-both-files");
    for binary in ["gdr-write-bw", "gdr-send-bw"] {
        for report_both in [true, false] {
            let name = |extension: &str| scratch.file(&format!("{binary}-{report_both}.{extension}"));
            let (csv, json, perftest_json) = (name("csv"), name("json"), name("out.json"));
            let mut arguments = vec!["-b", "-s", "4096", "-n", "200", "-t", "16", "-Q", "4", "--csv", &csv];
            arguments.extend(["--json", &json, "--out_json", "--out_json_file", &perftest_json]);
            if report_both {
                arguments.push("--report-both");
            }
            let (code, stdout, stderr) = run_apart(binary, &arguments, NIC);
            let what = format!("{binary} --report-both {report_both}");
            assert_eq!(code, 0, "{what}: {stdout}{stderr}");
            let lanes = if report_both { &["", "local", "remote"][..] } else { &[""][..] };
            let rows = rows(&csv);
            assert_eq!(rows.iter().map(|row| row["lane"].as_str()).collect::<Vec<_>>(), lanes, "{what}");
            for row in &rows {
                assert_eq!(row["bytes"], "4096", "{what}");
                assert!(row["iterations"].parse::<u64>().is_ok_and(|count| count > 0), "{what}: {row:?}");
                assert!(row["bw_avg_mib_s"].parse::<f64>().is_ok_and(f64::is_finite), "{what}: {row:?}");
            }
            let read = |path: &str| -> serde_json::Value {
                serde_json::from_str(&std::fs::read_to_string(path).expect("the file")).expect("JSON")
            };
            let ours = read(&json);
            let entries = ours["results"].as_array().expect("results");
            let json_lanes: Vec<&str> =
                entries.iter().map(|entry| entry["lane"].as_str().unwrap_or("?")).collect();
            assert_eq!(json_lanes, lanes, "{what}: {ours}");
            assert!(entries.iter().all(|entry| entry["bw_avg_gbit_s"].is_f64()), "{what}: {ours}");
            let perftest = read(&perftest_json);
            if report_both {
                for key in ["local_results", "remote_results"] {
                    let sides = perftest[key].as_array().expect(key);
                    assert_eq!(sides.len(), 1, "{what}: {perftest}");
                    assert!(
                        sides[0]["BW_average"].is_f64() && sides[0]["n_iterations"].is_u64(),
                        "{what}: {perftest}"
                    );
                }
                assert_eq!(
                    perftest["results"], perftest["remote_results"][0],
                    "{what}: perftest's last write"
                );
            } else {
                assert!(perftest.get("local_results").is_none(), "{what}: {perftest}");
                assert_eq!(perftest["results"], perftest["all_results"][0], "{what}: {perftest}");
            }
        }
    }
}

/// A sweep's direction tables hold a row per size, in order, after the summed table.
#[test]
fn report_both_after_a_sweep_lists_every_size_in_each_table() {
    let scratch = Scratch::new("report-both-sweep");
    let (csv, perftest_json) = (scratch.file("sweep.csv"), scratch.file("sweep.json"));
    let arguments = ["-b", "--report-both", "-a", "-n", "20", "-t", "16", "-Q", "4", "--csv", &csv];
    let arguments = [&arguments[..], &["--out_json", "--out_json_file", &perftest_json]].concat();
    let (code, stdout, stderr) = run_apart("gdr-write-bw", &arguments, NIC);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let sizes = |table: &str| -> Vec<u64> {
        let start = stdout.find(table).unwrap_or_else(|| panic!("{table} in {stdout}"));
        stdout[start..]
            .lines()
            .skip(3)
            .take_while(|line| *line != RULE)
            .map(|line| line.split_whitespace().next().and_then(|size| size.parse().ok()).expect("a size"))
            .collect()
    };
    let expected: Vec<u64> = (1..24).map(|exponent| 1 << exponent).collect();
    assert_eq!(sizes(" Local results: "), expected, "{stdout}");
    assert_eq!(sizes(" Remote results: "), expected, "{stdout}");
    // The files: each size's sum, then its directions; perftest's --out_json keeps the last
    // size's sum in `results` (its sweep prints no directions) and lists them apart.
    let lanes: Vec<String> = rows(&csv).iter().map(|row| row["lane"].clone()).collect();
    assert_eq!(lanes, ["", "local", "remote"].repeat(expected.len()), "{stdout}");
    let perftest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&perftest_json).expect("--out_json")).expect("JSON");
    assert_eq!(perftest["results"], perftest["all_results"][expected.len() - 1], "{perftest}");
    assert_eq!(perftest["remote_results"].as_array().map(Vec::len), Some(expected.len()), "{perftest}");
}

/// `-l 4`: every post call carries a list of exactly 4 requests (the simulated NIC's
/// `post_list=4` refuses any other length, so a bench that posted its room at once fails), the
/// CQ moderation becomes 4, the header says "Post List", the data check passes. perftest's
/// refusals exit 2 with their reason.
#[test]
fn post_list_posts_lists_of_its_length_and_refuses_what_perftest_refuses() {
    let scratch = Scratch::new("post-list");
    for binary in ["gdr-write-bw", "gdr-read-bw"] {
        let (csv, json) = (scratch.file(&format!("{binary}.csv")), scratch.file(&format!("{binary}.json")));
        let arguments = [
            "-l",
            "4",
            "-s",
            "4096",
            "-n",
            "100",
            "-t",
            "16",
            "--validate",
            "--csv",
            &csv,
            "--out_json",
            "--out_json_file",
            &json,
        ];
        let (code, stdout, stderr) = run_apart(binary, &arguments, "rate=100,post_list=4");
        assert_eq!(code, 0, "{binary}: {stdout}{stderr}");
        let post_list = |line: &&str| line.trim_start().starts_with("Post List ") && line.ends_with(": 4");
        assert!(stdout.lines().any(|line| post_list(&line)), "{binary}: {stdout}");
        let rows = rows(&csv);
        assert_eq!(rows.len(), 1, "{binary}: {stdout}{stderr}");
        assert_eq!((rows[0]["cq_mod"].as_str(), rows[0]["validation"].as_str()), ("4", "pass"), "{binary}");
        assert_eq!(rows[0]["iterations"], "100", "{binary}");
        // perftest's --out_json: its test name gains "Post_List_", its test_info a Post_List key.
        let perftest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("--out_json")).expect("JSON");
        let verb = if binary == "gdr-write-bw" { "RDMA_Write" } else { "RDMA_Read" };
        assert_eq!(perftest["test_info"]["test"], format!("{verb}_Post_List_BW_Test"), "{perftest}");
        assert_eq!(perftest["test_info"]["Post_List"], 4, "{perftest}");
    }
    // Without -l the bench posts what the queue has room for: more than 4 at once.
    let (code, _, stderr) =
        run_apart("gdr-write-bw", &["-s", "4096", "-n", "100", "-t", "16"], "rate=100,post_list=4");
    assert_eq!(code, 2, "{stderr}");
    for (arguments, message) in [
        (&["-l", "4", "-n", "10"][..], "-n/--iters 10 must be a multiple of the post list's size"),
        (&["-l", "4", "-Q", "3"][..], "must be a multiple of -Q/--cq-mod 3"),
        (&["-l", "32", "-t", "16"][..], "above -t/--tx-depth 16"),
        (&["-l", "4", "--mem", "host-staged"][..], "staged memory posts each message as its copy finishes"),
    ] {
        let (code, _, stderr) = run_apart("gdr-write-bw", arguments, NIC);
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(stderr.contains(message), "{arguments:?}: {stderr}");
    }
}

/// `-l 4` on gdr-send-bw: the client posts its SENDs in lists of exactly 4 (the `post_list=4`
/// hook refuses any other data-carrying call; the receiver's zero-byte credits are not lists)
/// while the server keeps its receives credited, on host and host-staged memory, one way and
/// with `-b` (both sides send lists and receive), counted and timed (`-D`); every message
/// arrives and passes its check. Without `-l` the same hook fails the run, and perftest's
/// refusals, with the SEND stream's own (a list the receiver's credits never cover), exit 2.
#[test]
fn send_bw_posts_lists_against_the_receivers_credits() {
    let scratch = Scratch::new("send-post-list");
    let cases: [&[&str]; 4] = [
        &["--mem", "host", "-n", "100", "--validate"],
        &["--mem", "host-staged", "-n", "100", "--validate"],
        &["--mem", "host", "-n", "100", "-b", "--validate"],
        &["--mem", "host-staged", "-D", "1"],
    ];
    for (case, extra) in cases.iter().enumerate() {
        let csv = scratch.file(&format!("send-{case}.csv"));
        let mut arguments = vec!["-l", "4", "-s", "4096", "-t", "16", "--csv", &csv];
        arguments.extend_from_slice(extra);
        let (code, stdout, stderr) = run_apart("gdr-send-bw", &arguments, "rate=100,post_list=4");
        assert_eq!(code, 0, "{extra:?}: {stdout}{stderr}");
        let post_list = |line: &&str| line.trim_start().starts_with("Post List ") && line.ends_with(": 4");
        assert!(stdout.lines().any(|line| post_list(&line)), "{extra:?}: {stdout}");
        let rows = rows(&csv);
        assert_eq!(rows.len(), 1, "{extra:?}: {stdout}{stderr}");
        assert_eq!(rows[0]["cq_mod"], "4", "{extra:?}");
        if extra.contains(&"--validate") {
            // A `-b` row counts both directions' messages (as its console line says).
            let messages = if extra.contains(&"-b") { "200" } else { "100" };
            let row = (rows[0]["iterations"].as_str(), rows[0]["validation"].as_str());
            assert_eq!(row, (messages, "pass"), "{extra:?}");
        }
    }
    let (code, _, stderr) =
        run_apart("gdr-send-bw", &["-s", "4096", "-n", "100", "-t", "16"], "rate=100,post_list=4");
    assert_eq!(code, 2, "without -l the SENDs are not posted in lists of 4: {stderr}");
    for (arguments, message) in [
        (&["-l", "4", "-n", "10"][..], "-n/--iters 10 must be a multiple of the post list's size"),
        (&["-l", "4", "-Q", "3"][..], "must be a multiple of -Q/--cq-mod 3"),
        (&["-l", "32", "-t", "16"][..], "above -t/--tx-depth 16"),
        (
            &["-l", "32", "-t", "64", "-n", "96", "-r", "16"][..],
            "-l/--post_list 32: above the 16 messages the receiver's posted receives credit at once",
        ),
    ] {
        let (code, _, stderr) = run_apart("gdr-send-bw", arguments, NIC);
        assert_eq!(code, 2, "{arguments:?}: {stderr}");
        assert!(stderr.contains(message), "{arguments:?}: {stderr}");
    }
}

/// At 8 MiB gdrperf signals at least every 8th request (64 MiB between signals), which does not
/// divide a list of 12: every list's last request is still signalled (as perftest's, whose `-Q`
/// divides its list), so the room of a list always comes back and a send queue of exactly one
/// list streams on. Before, the tail of the first list stayed uncompleted and the run stalled;
/// `--timeout 10` turns such a stall into a failure here, not a hang.
#[test]
fn a_list_is_signalled_at_its_end_whatever_the_signal_interval() {
    for binary in ["gdr-write-bw", "gdr-send-bw"] {
        let arguments = ["-s", "8M", "-l", "12", "-t", "12", "-n", "24", "--warmup", "24", "--timeout", "10"];
        let (code, stdout, stderr) = run_apart(binary, &arguments, "rate=100,post_list=12");
        assert_eq!(code, 0, "{binary}: {stdout}{stderr}");
        assert!(stdout.lines().any(|line| line.trim_start().starts_with("8388608 ")), "{binary}: {stdout}");
    }
}

/// Runs `binary` in loopback with `arguments` (stdout kept), sends `signal` once `csv` holds
/// `rows_before` rows (polled every 20 ms, at most 120 s; never a fixed delay) and returns the
/// exit code and stdout.
fn signal_after_rows(
    binary: &str,
    arguments: &[&str],
    csv: &str,
    rows_before: usize,
    signal: i32,
) -> (Option<i32>, String) {
    use std::io::Read;
    let mut all = vec!["--loopback", "-d", "simulated0", "--csv", csv];
    all.extend_from_slice(arguments);
    let mut child = command(binary, &all, NIC)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).expect("stdout is text");
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while rows(csv).len() < rows_before {
        assert!(std::time::Instant::now() < deadline, "{binary}: {rows_before} rows not written in 120 s");
        assert!(child.try_wait().expect("the child").is_none(), "{binary}: ended before the signal");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill with the id of our own child, which has not been reaped (try_wait saw it running).
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().expect("the child ends");
    (status.code(), reader.join().expect("the reader"))
}

/// `--run_infinitely`: a row per `-D` window until Ctrl-C, which ends the run as perftest's
/// (" User stopped traffic", the closing rule, exit 0) with every printed row in the CSV, the
/// JSON and perftest's JSON; under `-b` perftest dies by the signal: exit 130, rows kept.
#[test]
fn run_infinitely_reports_each_window_until_ctrl_c_and_keeps_every_row() {
    let scratch = Scratch::new("endless");
    let (csv, json, perftest) =
        (scratch.file("endless.csv"), scratch.file("endless.json"), scratch.file("perftest.json"));
    let arguments = [
        "--run_infinitely",
        "-D",
        "1",
        "-s",
        "4096",
        "-t",
        "16",
        "--json",
        &json,
        "--out_json",
        "--out_json_file",
        &perftest,
    ];
    let (code, stdout) = signal_after_rows("gdr-write-bw", &arguments, &csv, 3, libc::SIGINT);
    assert_eq!(code, Some(0), "{stdout}");
    let printed: Vec<&str> = stdout.lines().filter(|line| line.starts_with(" 4096 ")).collect();
    let kept = rows(&csv);
    assert!(printed.len() >= 3 && kept.len() == printed.len(), "{} in the CSV: {stdout}", kept.len());
    assert!(printed.iter().all(|line| line.split_whitespace().count() == 5), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[lines.len() - 3..], ["", " User stopped traffic", RULE], "{stdout}");
    let gdrperf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json")).expect("JSON");
    assert_eq!(gdrperf["outcome"]["status"], "complete", "{gdrperf}");
    assert!(
        gdrperf["outcome"]["interrupted"].as_str().is_some_and(|text| text.contains("stopped by SIGINT")),
        "{gdrperf}"
    );
    assert_eq!(gdrperf["results"].as_array().map(Vec::len), Some(printed.len()), "{gdrperf}");
    let perftest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&perftest).expect("--out_json")).expect("JSON");
    assert_eq!(perftest["all_results"].as_array().map(Vec::len), Some(printed.len()), "{perftest}");

    // gdr-send-bw's server receives while it measures: the goodbye reaches it mid-size, and it
    // ends cleanly too (a server that failed would make the loopback exit 2).
    std::fs::remove_file(&csv).expect("the first run's CSV");
    let send = ["--run_infinitely", "-D", "1", "-s", "4096", "-t", "16"];
    let (code, stdout) = signal_after_rows("gdr-send-bw", &send, &csv, 2, libc::SIGINT);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains(" User stopped traffic"), "{stdout}");

    std::fs::remove_file(&csv).expect("the send run's CSV");
    let both = ["-b", "--run_infinitely", "-D", "1", "-s", "4096", "-t", "16"];
    let (code, stdout) = signal_after_rows("gdr-write-bw", &both, &csv, 2, libc::SIGINT);
    assert_eq!(code, Some(130), "{stdout}");
    assert!(!stdout.contains("User stopped traffic"), "{stdout}");
    assert!(rows(&csv).len() >= 2, "{stdout}");
}

/// `--write_with_imm` on gdr-write-bw: every WRITE carries immediate data and the server posts a
/// receive for each, counts them and reports its own figures (a server that posted none would
/// leave the writer retrying until the stall timeout, exit 2; one that miscounted would fail the
/// next size). A checked sweep passes; `-D` and `-b` are refused as the server needs a count.
#[test]
fn write_with_imm_has_the_server_receive_and_count_every_write() {
    let scratch = Scratch::new("write-imm");
    let csv = scratch.file("imm.csv");
    let arguments =
        ["--write_with_imm", "-a", "-n", "20", "-t", "16", "--validate", "--timeout", "10", "--csv", &csv];
    let (code, stdout, stderr) = run_apart("gdr-write-bw", &arguments, NIC);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("WRITE_WITH_IMM"), "{stdout}");
    let rows = rows(&csv);
    assert_eq!(rows.len(), 23, "{stdout}{stderr}");
    assert!(rows.iter().all(|row| row["validation"] == "pass" && row["iterations"] == "20"), "{rows:?}");
    for (arguments, message) in [
        (&["--write_with_imm", "-D", "2"][..], "use -n/--iters, not -D/--duration"),
        (&["--write_with_imm", "-b"][..], "drop -b/--bidirectional"),
    ] {
        let (code, _, stderr) = run_apart("gdr-write-bw", arguments, NIC);
        assert!(code == 2 && stderr.contains(message), "{arguments:?}: {stderr}");
    }
}
