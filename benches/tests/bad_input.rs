//! Bad input to every bench binary, checked where no RDMA device or GPU exists (CI): each case
//! must exit 2 with a message naming the problem, and nothing may panic (a backtrace in stderr
//! fails the case: the binaries run with RUST_BACKTRACE=1 so that a panic cannot hide).
//!
//! One table holds the options every binary shares; each binary adds the cases of its own
//! options. A case lists the texts stderr must contain: one of them when the message depends on
//! the machine (an unknown device reads differently with and without RDMA devices present).

use std::process::Command;

use gdrperf::bench::{Bench, Measures, BENCHES};

/// One bad command line and what stderr must say about it (any one of `expected`).
struct Case {
    arguments: &'static [&'static str],
    expected: &'static [&'static str],
}

const fn case(arguments: &'static [&'static str], expected: &'static [&'static str]) -> Case {
    Case { arguments, expected }
}

/// Options of `CommonArgs`, which every binary takes.
const COMMON: &[Case] = &[
    case(&["--loopback", "-s", "0"], &["-s/--size must be at least 1 byte"]),
    case(&["--loopback", "-s", "-5"], &["unexpected argument '-5'"]),
    case(&["--loopback", "-s", "12Q"], &["'12Q' is not a size"]),
    case(&["--loopback", "-s", "2G"], &["is above the largest supported message"]),
    case(&["--loopback", "-s", "99999999999G"], &["is too large"]),
    case(&["--loopback", "-n", "0"], &["-n/--iters must be at least 1"]),
    case(&["--loopback", "-n", "-3"], &["unexpected argument '-3'"]),
    case(&["--loopback", "-D", "0"], &["-D/--duration must be a whole number of seconds from 1 to 86400"]),
    case(&["--loopback", "-D", "-1"], &["-D/--duration must be a whole number of seconds from 1 to 86400"]),
    case(&["--loopback", "-D", "nan"], &["-D/--duration must be a whole number of seconds from 1 to 86400"]),
    case(&["-n", "5", "-D", "1"], &["'--iters <N>' cannot be used with '--duration <SECONDS>'"]),
    case(&["--loopback", "host1"], &["'--loopback' cannot be used with '[HOST]'"]),
    case(&["-p", "0"], &["-p/--port must be a TCP port between 1 and 65535"]),
    case(&["-p", "65536"], &["invalid value '65536' for '--port <TCP_PORT>'"]),
    case(&["--loopback", "-i", "0"], &["-i/--ib-port must be at least 1 (ports count from 1), not 0"]),
    case(&["--loopback", "-x", "abc"], &["invalid value 'abc' for '--gid-index <INDEX>'"]),
    case(&["--loopback", "-q", "0"], &["-q/--qp"]),
    case(&["--loopback", "-t", "0"], &["-t/--tx-depth must be between 1 and 16384"]),
    case(&["--loopback", "-m", "1500"], &["-m/--mtu must be one of 256, 512, 1024, 2048, 4096"]),
    case(&["--loopback", "--timeout", "0"], &["--timeout must be at least 1 second"]),
    case(&["--loopback", "--mem", "tpu"], &["invalid value 'tpu' for '--mem <KIND[,KIND...]>'"]),
    case(&["--loopback", "--mem", "host,cuda-staged,host"], &["--mem lists host twice"]),
    case(&["--loopback", "--mem", "host", "-d", "rxe0,,rxe1"], &["-d/--ib-dev has an empty entry"]),
    case(&["--loopback", "--gpu", "1"], &["add --mem cuda"]),
    // Lanes on one GPU need a NIC each (-d one device per --gpu entry, no (GPU, NIC) pair twice).
    case(
        &["--loopback", "--mem", "cuda", "--gpu", "0,0"],
        &["--gpu lists GPU 0 twice: several lanes on one GPU need a NIC each"],
    ),
    case(&["--loopback", "--mem", "cuda", "--gpu", "0,0", "-d", "simulated0"], &["-d lists 1"]),
    case(
        &["--loopback", "--mem", "cuda", "--gpu", "0,0", "-d", "simulated0,simulated0"],
        &["-d/--ib-dev pairs simulated0 with GPU 0 twice: each lane on one GPU needs a NIC of its own"],
    ),
    case(
        &["--loopback", "--mem", "cuda", "--gpu", "0,0", "-d", "auto,auto"],
        &["auto picks the one NIC nearest GPU 0"],
    ),
    case(&["--loopback", "--mem", "cuda", "--gpu", "x"], &["--gpu x"]),
    case(&["--loopback", "--mem", "cuda", "--gpu-bus-id", "zz"], &["--gpu-bus-id zz"]),
    case(&["--loopback", "--mem", "cuda", "--gpu-bus-id", "0000:17:00"], &["--gpu-bus-id 0000:17:00"]),
    case(
        &["--loopback", "--mem", "cuda", "--gpu", "1", "--gpu-bus-id", "0000:17:00.0"],
        &["cannot be used with"],
    ),
    // Out of range only shows once CUDA is loaded: without a driver, that is what is missing.
    case(
        &["--loopback", "--mem", "cuda", "--gpu", "99", "-n", "5"],
        &["libcuda.so not found", "GPU 99", "99"],
    ),
    case(
        &["--loopback", "-d", "mlx5_9", "-n", "5"],
        &["RDMA device 'mlx5_9' not found", "no RDMA device found"],
    ),
    case(
        &["--loopback", "-n", "5", "--csv", "/nonexistent/dir/x.csv"],
        &["writing results to /nonexistent/dir/x.csv"],
    ),
    case(&["--loopback", "-n", "5", "--json", "/nonexistent/dir/x.json"], &["/nonexistent/dir/x.json"]),
    case(&["--bind", "nowhere"], &["--bind nowhere: not an IP address"]),
    case(&["--bind", "10.0.0.1", "host1"], &["'--bind <ADDR>' cannot be used with '[HOST]'"]),
    case(&["--bind", "127.0.0.1", "--loopback"], &["'--bind <ADDR>' cannot be used with '--loopback'"]),
    case(&["--token", "", "host1"], &["--token (or GDRPERF_TOKEN) is empty"]),
    // 8 characters cannot hold 128 random bits; the refusal names the fix.
    case(
        &["--token", "s3cretTK", "host1"],
        &["8 characters of base64", "a token needs 128", "`gdrperf token`", "openssl rand -hex 16"],
    ),
    case(&["--no-such-flag"], &["unexpected argument '--no-such-flag'"]),
    // --tclass, -T/--tos and -S, checked before any device opens: -T is rdma_cm's ToS (with -R
    // only, as perftest), --tclass the QPs' traffic class (without -R).
    case(&["--loopback", "--tclass", "300"], &["invalid value '300' for '--tclass <0-255>'"]),
    case(&["-R", "-T", "300", "host1"], &["invalid value '300' for '--tos <0-255>'"]),
    case(&["--loopback", "-T", "106"], &["-T/--tos is rdma_cm's type of service, valid only with -R"]),
    case(&["--loopback", "-S", "16"], &["-S/--sl must be between 0 and 15"]),
    case(&["-R", "--tclass", "106", "host1"], &["--tclass is not supported with -R"]),
    case(&["-R", "--sl", "1", "host1"], &["-S/--sl is not supported with -R"]),
    // perftest's flags that gdrperf lacks: refused by the list (docs/perftest-flags.md), each
    // naming gdrperf's spelling or saying it is not supported.
    case(&["--loopback", "--use_rocm=0"], &["gdrperf's device memory is NVIDIA's (CUDA) only"]),
    case(&["--loopback", "-c", "UD"], &["gdrperf runs RC queue pairs only"]),
    case(&["--loopback", "-W", "x"], &["the nic_* columns and --max-nic-errors"]),
    // Instant::now() + u64::MAX seconds would overflow (a panic): timeouts stop at 30 days.
    case(
        &["--loopback", "--timeout", "18446744073709551615"],
        &["--timeout must be at most 2592000 seconds (30 days), not 18446744073709551615"],
    ),
    case(
        &["--accept-timeout", "18446744073709551615"],
        &["--accept-timeout must be at most 2592000 seconds (30 days), not 18446744073709551615"],
    ),
];

/// `-Q`/`-b` of the bandwidth tests.
const BANDWIDTH: &[Case] = &[
    case(&["--loopback", "--run_infinitely", "-a"], &["'--run-infinitely' cannot be used with '--all'"]),
    case(&["--loopback", "--run-infinitely", "-n", "5"], &["cannot be used with"]),
    // perftest's post list checks (perftest_parameters.c), before any device opens.
    case(
        &["--loopback", "-l", "4", "-n", "10"],
        &["-n/--iters 10 must be a multiple of the post list's size"],
    ),
    // -Q above -t is lowered to -t, as perftest does (the VM test clamped_cq_mod shows it).
    case(&["--loopback", "-D", "1.5"], &["-D/--duration must be a whole number of seconds"]),
    case(&["--loopback", "-Q", "0"], &["-Q/--cq-mod must be at least 1"]),
    case(
        &["--loopback", "--concurrent", "--mem", "host,host-staged"],
        &["--concurrent runs the GPUs (or devices) of one --mem kind"],
    ),
    // Refused when the configuration is built, before any device is opened or size measured.
    case(&["--loopback", "-b", "--mem", "host-staged"], &["staged memory runs one direction at a time"]),
    case(&["--loopback", "--max-lat", "5us"], &["--max-lat applies to latency results"]),
];

/// Options of the latency tests.
const LATENCY: &[Case] = &[
    case(&["--loopback", "-q", "2"], &["latency tests time one message at a time over one QP"]),
    case(
        &["--loopback", "--hlog-interval", "0"],
        &["--hlog-interval must be between 0.001 and 3600 seconds"],
    ),
    case(
        &["--loopback", "--raw-samples", "/tmp/raw", "-D", "1"],
        &["--raw-samples, -H and -U keep every sample in memory"],
    ),
    case(&["--loopback", "-H", "-D", "1"], &["--raw-samples, -H and -U keep every sample in memory"]),
    case(&["--loopback", "-Q", "4"], &["unexpected argument '-Q'"]),
    case(&["--loopback", "--concurrent"], &["unexpected argument '--concurrent'"]),
    case(&["--loopback", "--min-bw", "1Gb/s"], &["--min-bw applies to bandwidth results"]),
    case(&["--loopback", "-l", "4"], &["post lists are supported in the bandwidth tests only"]),
    case(&["--loopback", "--run_infinitely"], &["run_infinitely exists only in BW tests"]),
    case(&["--loopback", "--run-infinitely"], &["--run-infinitely exists only in the bandwidth tests"]),
];

const WRITE_BW: &[Case] = &[
    case(&["--loopback", "-I", "5000"], &["-I/--inline-size 5000 is above 1024 bytes"]),
    case(
        &["--loopback", "-D", "2", "-f", "1"],
        &["-D/--duration 2 must be longer than twice the margin (-f/--margin 1)"],
    ),
    case(&["--loopback", "-f", "1"], &["--duration"]),
    // Refused when the configuration is built, before any device is opened.
    case(
        &["--loopback", "-D", "2", "--mem", "host-staged"],
        &["a staged receiver counts the messages it copies"],
    ),
];

const READ_BW: &[Case] = &[
    case(&["--loopback", "-o", "0"], &["-o/--outs must be at least 1 outstanding READ"]),
    case(&["--loopback", "-o", "x"], &["invalid value 'x' for '--outs <N>'"]),
    case(&["--loopback", "-I", "64"], &["unexpected argument '-I'"]),
    case(&["--loopback", "-b", "--mem", "cuda-staged"], &["staged memory runs one direction at a time"]),
];

const SEND_BW: &[Case] = &[
    case(&["--loopback", "-b", "--run-infinitely"], &["not supported in a bidirectional SEND test"]),
    case(&["--loopback", "-r", "0"], &["-r/--rx-depth must be between 1 and 16384"]),
    case(&["--loopback", "-I", "5000"], &["-I/--inline-size 5000 is above 1024 bytes"]),
    // Refused before CUDA loads or a device opens: the receiver would have no host-memory ring.
    case(&["--loopback", "--mem", "cuda", "--validate"], &["--validate on gdr-send-bw checks every payload"]),
];

const READ_LAT: &[Case] = &[
    case(&["--loopback", "-I", "64"], &["unexpected argument '-I'"]),
    case(&["--loopback", "--write-with-imm"], &["unexpected argument '--write-with-imm'"]),
];

const WRITE_LAT: &[Case] =
    &[case(&["--loopback", "-I", "5000"], &["-I/--inline-size 5000 is above 1024 bytes"])];

const SEND_LAT: &[Case] = &[
    case(&["--loopback", "-I", "5000"], &["-I/--inline-size 5000 is above 1024 bytes"]),
    case(&["--loopback", "--write-with-imm"], &["unexpected argument '--write-with-imm'"]),
];

/// An atomic is 8 bytes (ib_atomic_lat exits on any other size too), and has no inline payload.
const ATOMIC_LAT: &[Case] = &[
    case(
        &["--loopback", "-s", "64"],
        &["-s/--size 64: an atomic is 8 bytes, the only size gdr-atomic-lat runs"],
    ),
    case(&["--loopback", "-a"], &["-s/--size -a (23 sizes): an atomic is 8 bytes"]),
    case(&["--loopback", "-A", "XOR"], &["invalid value 'XOR' for '--atomic-type <TYPE>'"]),
    case(&["--loopback", "-I", "64"], &["unexpected argument '-I'"]),
];

/// As gdr-atomic-lat's (ib_atomic_bw exits on any other size too), and `-o` as gdr-read-bw's.
const ATOMIC_BW: &[Case] = &[
    case(
        &["--loopback", "-s", "64"],
        &["-s/--size 64: an atomic is 8 bytes, the only size gdr-atomic-bw runs (ib_atomic_bw refuses"],
    ),
    case(&["--loopback", "-a"], &["-s/--size -a (23 sizes): an atomic is 8 bytes"]),
    case(&["--loopback", "-A", "XOR"], &["invalid value 'XOR' for '--atomic-type <TYPE>'"]),
    case(&["--loopback", "-I", "64"], &["unexpected argument '-I'"]),
    case(&["--loopback", "-o", "0"], &["-o/--outs must be at least 1 outstanding READ or atomic"]),
];

/// The case lists of bench `bench`: the common ones, its kind's, and its own (by name).
fn tables(bench: &Bench) -> Vec<&'static [Case]> {
    let kind = match bench.measures {
        Measures::Bandwidth => BANDWIDTH,
        Measures::Latency => LATENCY,
    };
    let own: &'static [Case] = match bench.name {
        "write_bw" => WRITE_BW,
        "read_bw" => READ_BW,
        "send_bw" => SEND_BW,
        "read_lat" => READ_LAT,
        "write_lat" => WRITE_LAT,
        "send_lat" => SEND_LAT,
        "atomic_lat" => ATOMIC_LAT,
        "atomic_bw" => ATOMIC_BW,
        _ => &[],
    };
    vec![COMMON, kind, own]
}

/// Every bench of `gdrperf::bench::BENCHES` with its binary (built by cargo next to this test's
/// `deps/` folder) and its case lists: a new bench is checked without being named here.
fn binaries() -> Vec<(&'static str, String, Vec<&'static [Case]>)> {
    let test = std::env::current_exe().expect("the test knows its path");
    let folder = test.parent().and_then(std::path::Path::parent).expect("target/<profile>/deps/<test>");
    BENCHES
        .iter()
        .map(|bench| {
            let binary = folder.join(bench.binary);
            assert!(binary.exists(), "{} is in BENCHES but not built: {}", bench.binary, binary.display());
            (bench.name, binary.to_string_lossy().into_owned(), tables(bench))
        })
        .collect()
}

/// Runs `binary` and returns its exit code and stderr; a panic fails at once.
fn run(binary: &str, arguments: &[&str], environment: &[(&str, &str)]) -> (i32, String) {
    let output = Command::new(binary)
        .args(arguments)
        .env("RUST_BACKTRACE", "1")
        .env_remove("GDRPERF_TOKEN")
        .envs(environment.iter().copied())
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for sign in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!stderr.contains(sign), "{binary} {arguments:?} panicked: {stderr}");
    }
    (output.status.code().unwrap_or(-1), stderr)
}

#[test]
fn every_binary_refuses_bad_input_with_exit_2_and_a_message_naming_it() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, binary, tables) in binaries() {
        for case in tables.iter().flat_map(|table| table.iter()) {
            let (code, stderr) = run(&binary, case.arguments, &[]);
            checked += 1;
            if code != 2 || !case.expected.iter().any(|text| stderr.contains(text)) {
                failures.push(format!(
                    "{name} {:?}: exit {code}, expected 2 and one of {:?}; stderr: {stderr}",
                    case.arguments, case.expected
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_perftest_command_line_parses_in_every_binary() {
    // perftest's spellings of a GPUDirect run with -T and -S: every flag is taken (-F with a
    // note), so what stops the run here is the machine (no CUDA driver, no RDMA device), never
    // the command line.
    for (name, binary, _) in binaries() {
        let arguments =
            ["--loopback", "-T", "106", "-S", "0", "--use_cuda=0", "--report_gbits", "-F", "-n", "5"];
        let (_, stderr) = run(&binary, &arguments, &[]);
        assert!(stderr.contains("note: perftest's -F is ignored: "), "{name}: {stderr}");
        for refusal in ["unexpected argument", "invalid value", "error: the argument"] {
            assert!(!stderr.contains(refusal), "{name} refused a perftest flag: {stderr}");
        }
    }
}

#[test]
fn an_argument_that_is_not_utf8_exits_2_with_a_message_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let not_text = std::ffi::OsStr::from_bytes(b"/tmp/a\xff.csv");
    for (name, binary, _) in binaries() {
        for arguments in [vec!["--loopback".as_ref(), "--csv".as_ref(), not_text], vec![not_text]] {
            let output = Command::new(&binary)
                .args(&arguments)
                .env("RUST_BACKTRACE", "1")
                .env_remove("GDRPERF_TOKEN")
                .output()
                .expect("the binary runs");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{name} {arguments:?}: {stderr}");
            assert!(stderr.contains("(/tmp/a\u{fffd}.csv) is not valid UTF-8"), "{name}: {stderr}");
        }
    }
}

#[test]
fn an_empty_token_in_the_environment_is_refused_not_ignored() {
    for (name, binary, _) in binaries() {
        let (code, stderr) = run(&binary, &["-n", "5", "127.0.0.1"], &[("GDRPERF_TOKEN", "")]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains("--token (or GDRPERF_TOKEN) is empty"), "{name}: {stderr}");
    }
}

#[test]
fn help_hides_the_token_of_the_environment() {
    let (_, binary, _) = &binaries()[0];
    let output = Command::new(binary).arg("--help").env("GDRPERF_TOKEN", "s3cret-value").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("GDRPERF_TOKEN"), "{help}");
    assert!(!help.contains("s3cret-value"), "--help printed the secret: {help}");
}

#[test]
fn gpu_memory_without_a_cuda_driver_is_a_clear_error() {
    if gdrperf_cuda::libcuda_present() {
        eprintln!("libcuda is installed here: this case is covered on machines without it");
        return;
    }
    // Staged GPU memory loads CUDA as well, in every binary (all five take it).
    for (name, binary, _) in binaries() {
        for memory in ["cuda", "cuda-staged"] {
            let (code, stderr) = run(&binary, &["--loopback", "--mem", memory, "-n", "5"], &[]);
            assert_eq!(code, 2, "{name} --mem {memory}: {stderr}");
            assert!(stderr.contains("libcuda.so not found"), "{name} --mem {memory}: {stderr}");
        }
    }
}

#[test]
fn no_rdma_device_is_a_clear_error() {
    if std::path::Path::new("/sys/class/infiniband").exists() {
        eprintln!("this host has RDMA devices: the missing-device case is covered elsewhere");
        return;
    }
    for (name, binary, _) in binaries() {
        let (code, stderr) = run(&binary, &["--loopback", "-n", "5"], &[]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains("no RDMA device found"), "{name}: {stderr}");
        assert!(stderr.contains("scripts/softroce.sh"), "{name}: {stderr}");
    }
}
