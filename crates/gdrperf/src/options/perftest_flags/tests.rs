use super::*;
use crate::bench::BENCHES;
use crate::options::help::bench_command;
use crate::options::latency::{AtomicArgs, InlineArgs, LatencyArgs, WriteLatencyArgs};
use crate::options::send::SendArgs;
use crate::options::{BandwidthArgs, CommonArgs};
use clap::{CommandFactory, Parser};

#[derive(Parser)]
struct WriteBandwidth {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    #[command(flatten)]
    inline: crate::options::BandwidthInlineArgs,
}

#[derive(Parser)]
struct ReadBandwidth {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    #[command(flatten)]
    outs: crate::options::config::OutsArgs,
}

#[derive(Parser)]
struct SendBandwidth {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    #[command(flatten)]
    send: SendArgs,
}

#[derive(Parser)]
struct SendLatency {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
    #[command(flatten)]
    inline: InlineArgs,
}

#[derive(Parser)]
#[command(version)]
struct WriteLatency {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
    #[command(flatten)]
    write: WriteLatencyArgs,
}

#[derive(Parser)]
struct AtomicLatency {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
    #[command(flatten)]
    atomic: AtomicArgs,
}

/// The commands of gdr-write-bw, gdr-send-bw, gdr-send-lat, gdr-write-lat, gdr-read-bw and gdr-atomic-lat (the
/// others' options are a subset of these), as built.
fn commands() -> Vec<(Command, bool)> {
    let bench = |name: &str| BENCHES.iter().find(|bench| bench.name == name).unwrap();
    let mut commands = vec![
        (bench_command(WriteBandwidth::command().name("gdr-write-bw"), bench("write_bw")), false),
        (bench_command(SendBandwidth::command().name("gdr-send-bw"), bench("send_bw")), false),
        (bench_command(SendLatency::command().name("gdr-send-lat"), bench("send_lat")), true),
        (bench_command(WriteLatency::command().name("gdr-write-lat"), bench("write_lat")), true),
        (bench_command(ReadBandwidth::command().name("gdr-read-bw"), bench("read_bw")), false),
        (bench_command(AtomicLatency::command().name("gdr-atomic-lat"), bench("atomic_lat")), true),
    ];
    commands.iter_mut().for_each(|(command, _)| command.build());
    commands
}

fn run(command: &Command, latency: bool, line: &str) -> Result<(Vec<String>, Vec<String>), Refusal> {
    let arguments = std::iter::once("bench").chain(line.split_whitespace()).map(OsString::from);
    translate(command, arguments, latency).map(|(arguments, notes)| {
        (arguments.into_iter().skip(1).map(|word| word.into_string().unwrap()).collect(), notes)
    })
}

#[test]
fn every_same_or_alias_flag_is_an_option_of_some_bench_and_every_other_is_not() {
    let commands = commands();
    for flag in PERFTEST_FLAGS {
        let spellings: Vec<String> = flag
            .short
            .map(|short| format!("-{short}"))
            .into_iter()
            .chain([format!("--{}", flag.long)])
            .collect();
        let known =
            |spelling: &str| commands.iter().any(|(command, _)| gdrperf_option(command, spelling).is_some());
        match flag.status {
            Status::Same => assert!(spellings.iter().all(|spelling| known(spelling)), "{flag:?}"),
            Status::Differs { .. } => assert!(spellings.iter().any(|spelling| known(spelling)), "{flag:?}"),
            Status::AliasOf { gdrperf } => {
                for word in gdrperf.iter().filter(|word| word.starts_with('-')) {
                    assert!(known(word), "{flag:?}: {word} is no bench's option");
                }
                assert!(!known(&format!("--{}", flag.long)), "{flag:?}: clap takes it itself: say same");
            }
            _ => {
                assert!(spellings.iter().all(|spelling| !known(spelling)), "{flag:?}: gdrperf has it: say so")
            }
        }
    }
    let mut longs: Vec<&str> = PERFTEST_FLAGS.iter().map(|flag| flag.long).collect();
    longs.sort_unstable();
    longs.dedup();
    assert_eq!(longs.len(), PERFTEST_FLAGS.len(), "a flag is listed twice");
}

#[test]
fn a_perftest_command_line_runs_or_is_refused_flag_by_flag() {
    let commands = commands();
    let (write_bw, _) = &commands[0];
    let (arguments, notes) =
        run(write_bw, false, "--tclass 106 -S 0 --use_cuda=0 --report_gbits -F -a node2").unwrap();
    assert_eq!(
        arguments,
        ["--tclass", "106", "-S", "0", "--mem", "cuda", "--gpu", "0", "--report-gbits", "-a", "node2"]
            .map(String::from)
    );
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("note: perftest's -F is ignored: "), "{notes:?}");
    let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
    assert_eq!((cli.common.traffic_class, cli.common.service_level), (Some(106), Some(0)));
    // -T is rdma_cm's ToS, as in perftest: with -R it reaches type_of_service, not --tclass.
    let (arguments, _) = run(write_bw, false, "-R -T 106 node2").unwrap();
    let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
    assert_eq!((cli.common.type_of_service, cli.common.traffic_class), (Some(106), None));

    // Relaxed ordering: asked for unless --disable_pcie_relaxed, as perftest's setup_mr_flags.
    let ordering = |line: &str| {
        let (arguments, _) = run(write_bw, false, line).unwrap();
        let cli =
            WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
        let config = crate::options::BenchConfig::from_args(
            &cli.common,
            crate::options::perftest_defaults::WRITE_BW_DEFAULTS,
        );
        config.unwrap().memory.relaxed_ordering
    };
    assert_eq!(ordering("node2"), crate::verbs::RelaxedOrdering::Asked);
    assert_eq!(ordering("--disable_pcie_relaxed node2"), crate::verbs::RelaxedOrdering::Off);

    // -w is --min-bw in the table's unit, -y a message-rate floor; both fail the run (exit 1).
    let acceptance = |line: &str| {
        let (arguments, _) = run(write_bw, false, line).unwrap();
        let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments))
            .map_err(|error| error.kind())?;
        let config = crate::options::BenchConfig::from_args(
            &cli.common,
            crate::options::perftest_defaults::WRITE_BW_DEFAULTS,
        );
        Ok::<_, clap::error::ErrorKind>(config.unwrap().acceptance.resolve(None, false).unwrap())
    };
    let floor = acceptance("-w 1000 node2").unwrap().min_bw.unwrap();
    assert_eq!((floor.gbit_s * 1e9 / 8.0 / 1_048_576.0).round(), 1000.0, "MiB/s by default");
    let floor = acceptance("--report_gbits -w 90 node2").unwrap().min_bw.unwrap();
    assert_eq!(floor.gbit_s, 90.0, "Gb/s with --report_gbits");
    assert_eq!(acceptance("-y 0.5 node2").unwrap().min_msg_rate_mpps, Some(0.5));
    let (arguments, _) = run(write_bw, false, "--output=message_rate node2").unwrap();
    let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
    assert_eq!(cli.common.output, Some(crate::options::values::OutputFigure::MessageRate));
    assert_eq!(acceptance("--limit_msgrate=2 node2").unwrap().min_msg_rate_mpps, Some(2.0));
    assert_eq!(
        acceptance("-w 1 --min-bw 2Gb/s node2").unwrap_err(),
        clap::error::ErrorKind::ArgumentConflict,
        "one floor, not two"
    );

    let refused = |line: &str| run(write_bw, false, line).unwrap_err().0;
    // --run_infinitely is gdrperf's --run-infinitely; clap refuses it with -a.
    let (arguments, _) = run(write_bw, false, "--run_infinitely -D 2 node2").unwrap();
    let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
    assert!(cli.common.run_infinitely);
    let (arguments, _) = run(write_bw, false, "-a --run_infinitely node2").unwrap();
    let conflict = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments));
    assert_eq!(conflict.err().map(|error| error.kind()), Some(clap::error::ErrorKind::ArgumentConflict));
    // -l and --report-both are gdrperf's own options now, with perftest's spellings.
    assert_eq!(run(write_bw, false, "-l 4").unwrap().0, ["-l", "4"].map(String::from));
    let (arguments, _) = run(write_bw, false, "--post_list=4 -b --report-both node2").unwrap();
    let cli = WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
    assert_eq!((cli.bandwidth.post_list, cli.bandwidth.report_both), (Some(4), true));
    let (send_lat, _) = &commands[2];
    let on_latency = run(send_lat, true, "-l 4").unwrap_err().0;
    assert!(on_latency.contains("bandwidth tests only"), "{on_latency}");
    let (arguments, notes) = run(send_lat, true, "--report-both").unwrap();
    assert!(arguments.is_empty() && notes[0].contains("--report-both is ignored"), "{notes:?}");
    assert_eq!(run(write_bw, false, "-I 64").unwrap().0, ["--inline-size", "64"].map(String::from));
    let (read_bw, _) = &commands[4];
    let on_read = run(read_bw, false, "-I 64").unwrap_err().0;
    assert!(on_read.contains("not supported by gdr-read-bw"), "{on_read}");
    assert!(refused("--out_json --use_rocm 0").starts_with("unexpected argument '--use_rocm'"));
    assert!(refused("--use_cuda").contains("needs a value"));
    // gdrperf's own options keep their values, even one that looks like a perftest flag.
    assert_eq!(run(write_bw, false, "--csv -F").unwrap().0, ["--csv", "-F"].map(String::from));
    assert_eq!(run(write_bw, false, "-- -F").unwrap().0, ["--", "-F"].map(String::from));
}

#[test]
fn aliases_and_per_binary_options_follow_the_list() {
    let commands = commands();
    let (send_bw, _) = &commands[1];
    let (send_lat, latency) = &commands[2];
    let words =
        |command: &Command, latency: bool, line: &str| run(command, latency, line).unwrap().0.join(" ");
    assert_eq!(words(send_bw, false, "--inline_size=64 -r 64"), "--inline-size 64 -r 64");
    assert_eq!(
        words(send_lat, *latency, "-I 64 --out_json --out_json_file=x.json"),
        "--inline-size 64 --out_json --out_json_file=x.json"
    );
    // perftest's file rules: --out_json alone writes perftest_out.json, --out_json_file only
    // names the file, and both together are one request (no "used multiple times").
    let file_of = |line: &str| {
        let (arguments, _) = run(&commands[0].0, false, line).unwrap();
        let cli =
            WriteBandwidth::try_parse_from(std::iter::once("bench".to_string()).chain(arguments)).unwrap();
        let config = crate::options::BenchConfig::from_args(
            &cli.common,
            crate::options::perftest_defaults::WRITE_BW_DEFAULTS,
        );
        config.unwrap().perftest_json.map(|path| path.display().to_string())
    };
    assert_eq!(file_of("--out_json node2"), Some("perftest_out.json".into()));
    assert_eq!(file_of("--out_json --out_json_file=F.json node2"), Some("F.json".into()));
    assert_eq!(file_of("--out_json_file F.json --out_json node2"), Some("F.json".into()));
    assert_eq!(file_of("--out_json_file F.json node2"), None);
    let (arguments, notes) = run(send_lat, *latency, "-r 16 -n 5").unwrap();
    assert_eq!((arguments.join(" "), notes.len()), ("-n 5".to_string(), 1), "-r is ignored by send_lat");
    assert!(run(send_bw, false, "-H").unwrap_err().0.contains("not supported by gdr-send-bw"));
    let (atomic_lat, latency) = &commands[5];
    assert_eq!(
        words(atomic_lat, *latency, "--atomic_type=CMP_AND_SWAP -A FETCH_AND_ADD"),
        "--atomic_type=CMP_AND_SWAP -A FETCH_AND_ADD"
    );
    let parsed = AtomicLatency::try_parse_from(["bench", "--atomic_type", "CMP_AND_SWAP"]).unwrap();
    assert_eq!(parsed.atomic.atomic_type, crate::options::latency::AtomicOperation::CompareAndSwap);
    assert!(run(send_bw, false, "-A CMP_AND_SWAP").unwrap_err().0.contains("not supported by gdr-send-bw"));
    assert!(commands[3]
        .0
        .get_arguments()
        .any(|argument| argument.get_id() == "qps" && argument.is_hide_set()));
    assert!(!commands[0]
        .0
        .get_arguments()
        .any(|argument| argument.get_id() == "qps" && argument.is_hide_set()));
}

#[test]
fn the_flag_reference_is_the_lists_rendering() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/perftest-flags.md");
    let rendered = render_markdown();
    if std::env::var_os("GDRPERF_WRITE_FLAGS_DOC").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/perftest-flags.md differs from the list: GDRPERF_WRITE_FLAGS_DOC=1 cargo test -p gdrperf --lib perftest_flags"
    );
    assert_eq!(rendered.lines().filter(|line| line.starts_with("| `-")).count(), PERFTEST_FLAGS.len());
}
