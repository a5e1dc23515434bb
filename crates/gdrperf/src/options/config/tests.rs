use super::*;
use crate::bench::Verb;
use crate::options::args::{BandwidthArgs, MemoryKind};
use crate::options::bandwidth::{refuse_staged, StagedRules};
use clap::Parser;

#[test]
fn outstanding_reads_follow_perftest_within_the_device_bound() {
    // rxe allows 128, mlx5 16: -o above is lowered with a message, none means the maximum.
    assert_eq!(ReadDepth::from_outs(None).unwrap().on_device(128), (128, None));
    assert_eq!(ReadDepth::from_outs(Some(8)).unwrap().on_device(16), (8, None));
    let (depth, message) = ReadDepth::from_outs(Some(64)).unwrap().on_device(16);
    assert_eq!(depth, 16);
    assert!(message.unwrap().contains("-o/--outs 64 is above the device's max_qp_rd_atom (16)"));
    assert!(ReadDepth::from_outs(Some(0)).unwrap_err().to_string().contains("-o/--outs must be at least 1"));
    assert_eq!(ReadDepth::Fixed(16).on_device(128), (16, None));
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
}

const DEFAULTS: TestDefaults = TestDefaults { size: 65536, iterations: 5000, tx_depth: 128, warmup: 16 };

/// The settings of a bandwidth bench's command line `arguments`, or the configuration's error;
/// clap must take the arguments.
fn configure(arguments: &[&str]) -> Result<(BenchConfig, BandwidthConfig)> {
    let cli = Cli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
        .expect("clap takes the arguments");
    let common = BenchConfig::from_args(&cli.common, DEFAULTS)?;
    let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, Verb::Write)?;
    Ok((common, bandwidth))
}

/// [`configure`], or the message the user reads where clap or the configuration refuse them.
fn build(arguments: &[&str]) -> std::result::Result<(BenchConfig, BandwidthConfig), String> {
    match Cli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied())) {
        Err(error) => Err(error.to_string()),
        Ok(_) => configure(arguments).map_err(|error| error.to_string()),
    }
}

/// The [`ConfigError`] that `arguments` make.
fn config_error(arguments: &[&str]) -> ConfigError {
    match configure(arguments) {
        Err(Error::Config(error)) => error,
        other => panic!("{arguments:?} gave {:?}, not a configuration error", other.map(|_| ())),
    }
}

#[test]
fn defaults_make_a_server_with_perftest_values() {
    let (common, bandwidth) = build(&[]).unwrap();
    assert_eq!(common.role, Role::Server);
    assert_eq!(common.sizes, vec![65536]);
    assert_eq!(common.stop, StopRule::Iterations(5000));
    // 64 KiB is above perftest's 8 KiB limit: every request signalled, as ib_write_bw.
    assert_eq!((common.tx_depth, bandwidth.cq_mod), (128, 1));
    let (_, bandwidth) = build(&["-s", "8192"]).unwrap();
    assert_eq!(bandwidth.cq_mod, 100);
    let (common, bandwidth) = build(&["-s", "4096", "-t", "32"]).unwrap();
    assert_eq!((common.tx_depth, bandwidth.cq_mod), (32, 32), "an unset -Q shrinks to the TX depth");
}

#[test]
fn margins_default_to_a_quarter_and_take_f() {
    let margin = |arguments: &[&str]| build(arguments).unwrap().0.margin_seconds;
    assert_eq!(margin(&[]), 0, "-n runs have no margin");
    assert_eq!(margin(&["-D", "5"]), 1);
    assert_eq!(margin(&["-D", "3"]), 0);
    assert_eq!(margin(&["-D", "10", "-f", "4"]), 4);
    assert_eq!(margin(&["-D", "10", "--margin", "0"]), 0);
    assert_eq!(build(&["-D", "10", "-f", "3"]).unwrap().0.shared_parameters()["margin"], 3);
}

/// 128 bits as 32 hex digits, the form `gdrperf token` prints.
const STRONG_TOKEN: &str = "5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4";

#[test]
fn bind_picks_the_listening_address_and_the_token_stays_hidden() {
    let (common, _) = build(&[]).unwrap();
    assert_eq!(common.listen_address(), "0.0.0.0:18515".parse().unwrap());
    let (common, _) = build(&["--bind", "::1", "-p", "7000", "--token", STRONG_TOKEN]).unwrap();
    assert_eq!(common.listen_address(), "[::1]:7000".parse().unwrap());
    assert!(common.token.is_some());
    assert!(!format!("{common:?}").contains(STRONG_TOKEN), "the secret must not appear in a debug print");
    assert_eq!(common.accept_timeout, None, "like perftest, a server waits for ever by default");
    let (common, _) = build(&["--accept-timeout", "30"]).unwrap();
    assert_eq!(common.accept_timeout, Some(Duration::from_secs(30)));
}

#[test]
fn rdma_cm_is_a_shared_parameter_and_leaves_the_gid_to_the_connection_manager() {
    let (common, _) = build(&["-R", "node2"]).unwrap();
    assert!(common.rdma_cm);
    assert_eq!(common.shared_parameters()["rdma_cm"], true, "both sides must agree on -R");
    assert!(build(&["--rdma_cm"]).unwrap().0.rdma_cm, "perftest's long spelling");
    assert_eq!(build(&[]).unwrap().0.shared_parameters()["rdma_cm"], false);
    // perftest takes -R -x N and lets rdma_cm's address pick the GID: so do we (the harness
    // says which GID rdma_cm used when it is not N).
    let (common, _) = build(&["-R", "-x", "3", "node2"]).unwrap();
    assert_eq!((common.rdma_cm, common.gid_index), (true, Some(3)));
}

#[test]
fn tos_is_rdma_cms_and_tclass_the_qps_as_in_perftest() {
    let (common, _) = build(&["-R", "-T", "106", "node2"]).unwrap();
    assert_eq!((common.type_of_service, common.traffic_class), (Some(106), None));
    assert_eq!(build(&["-R", "--tos", "0", "node2"]).unwrap().0.type_of_service, Some(0));
    assert_eq!(build(&["-R", "node2"]).unwrap().0.type_of_service, None, "rdma_cm's default");
    let (common, _) = build(&["--tclass", "106", "node2"]).unwrap();
    assert_eq!((common.type_of_service, common.traffic_class), (None, Some(106)));
    let error = build(&["-T", "106", "node2"]).unwrap_err();
    assert!(
        error.contains("-T/--tos") && error.contains("only with -R") && error.contains("--tclass"),
        "{error}"
    );
    let error = build(&["-R", "--tclass", "106", "node2"]).unwrap_err();
    assert!(error.contains("--tclass") && error.contains("-T/--tos"), "{error}");
    assert!(build(&["-R", "-S", "1", "node2"]).unwrap_err().contains("-S/--sl"));
}

#[test]
fn host_makes_a_client_and_all_sweeps_two_bytes_to_eight_mebibytes() {
    let (common, _) = build(&["-a", "node2"]).unwrap();
    assert_eq!(common.role, Role::Client { host: "node2".into() });
    assert_eq!(common.sizes.first(), Some(&2));
    assert_eq!(common.sizes.last(), Some(&(8 << 20)));
    assert_eq!(common.sizes.len(), 23);
}

#[test]
fn bad_input_is_refused_with_the_flag_named() {
    let cases: &[(&[&str], &str)] = &[
        (&["-s", "0"], "-s/--size"),
        (&["-n", "0"], "-n/--iters"),
        (&["-D", "-1"], "-D/--duration"),
        (&["-D", "1.5"], "whole number of seconds"),
        (&["-n", "5", "-D", "2"], "--duration"),
        (&["-D", "4", "-f", "2"], "longer than twice the margin (-f/--margin 2)"),
        (&["-D", "1", "-f", "1"], "-D/--duration 1 must be longer"),
        (&["-f", "1"], "--duration"),
        (&["-m", "1500"], "-m/--mtu"),
        (&["-Q", "0"], "-Q/--cq-mod"),
        (&["-q", "0"], "-q/--qp"),
        (&["-i", "0"], "-i/--ib-port"),
        (&["--loopback", "host1"], "--loopback"),
        (&["-s", "4G"], "-s/--size"),
        (&["--gpu", "1"], "add --mem cuda"),
        (&["--mem", "host,host"], "--mem lists host twice"),
        (&["--mem", "host,cuda", "--concurrent"], "give one kind"),
        (&["-d", "rxe0,,rxe1"], "empty entry"),
        (&["--mem", "cuda", "--gpu", "x"], "--gpu x"),
        (&["--mem", "cuda", "--gpu-bus-id", "17:00"], "--gpu-bus-id 17:00"),
        (&["--mem", "cuda-staged", "--gdr", "dmabuf"], "does not apply to cuda-staged"),
        (&["--bind", "nowhere"], "--bind nowhere: not an IP address"),
        (&["--bind", "10.0.0.1", "host1"], "cannot be used with"),
        (&["--bind", "127.0.0.1", "--loopback"], "cannot be used with"),
        (&["--token", ""], "--token (or GDRPERF_TOKEN) is empty"),
        (&["--token", "s3cretTK"], "a token needs 128, so that a recorded handshake cannot be guessed offline: make one with `gdrperf token`"),
        (&["--token", "0123456789abcdef0123456789abcde"], "31 characters of hex digits"),
        (&["--cpu", "1-x"], "--cpu 1-x: '1-x' is not a CPU or range"),
        (&["--cpu", "1", "--numa-node", "0"], "cannot be used with"),
        (&["--accept-timeout", "0"], "--accept-timeout must be at least 1 second"),
        (&["--accept-timeout", "5", "host1"], "cannot be used with"),
        (
            &["--timeout", "18446744073709551615"],
            "--timeout must be at most 2592000 seconds (30 days), not 18446744073709551615",
        ),
        (&["--timeout", "2592001"], "--timeout must be at most 2592000 seconds (30 days), not 2592001"),
        (
            &["--accept-timeout", "18446744073709551615"],
            "--accept-timeout must be at most 2592000 seconds (30 days), not 18446744073709551615",
        ),
    ];
    for (arguments, expected) in cases {
        let message = build(arguments).err().unwrap_or_default();
        assert!(message.contains(expected), "{arguments:?} gave {message:?}");
    }
}

#[test]
fn bad_values_name_the_flag_and_the_value_given() {
    let out_of_range = |flag, value: &str| ConfigError::OutOfRange {
        flag,
        value: value.into(),
        allowed: match flag {
            "-s/--size" => "at least 1 byte",
            "-t/--tx-depth" => "between 1 and 16384",
            "-m/--mtu" => "one of 256, 512, 1024, 2048, 4096",
            _ => "a whole number of seconds from 1 to 86400",
        },
    };
    assert_eq!(config_error(&["-s", "0"]), out_of_range("-s/--size", "0"));
    assert_eq!(config_error(&["-t", "20000"]), out_of_range("-t/--tx-depth", "20000"));
    assert_eq!(config_error(&["-m", "1500"]), out_of_range("-m/--mtu", "1500"));
    assert_eq!(config_error(&["-D", "1.5"]), out_of_range("-D/--duration", "1.5"));
    assert_eq!(
        config_error(&["-m", "1500"]).to_string(),
        "-m/--mtu must be one of 256, 512, 1024, 2048, 4096, not 1500"
    );
    assert!(matches!(
        config_error(&["-s", "4G"]),
        ConfigError::AboveLimit { flag: "-s/--size", value: 4_294_967_296, .. }
    ));
    assert!(matches!(
        config_error(&["--bind", "nowhere"]),
        ConfigError::Malformed { flag: "--bind", value, .. } if value == "nowhere"
    ));
    assert!(matches!(config_error(&["--mem", "host,host"]), ConfigError::Conflict { flag: "--mem", .. }));
    assert!(matches!(
        config_error(&["--gpu", "1"]),
        ConfigError::Conflict { flag: "--gpu, --gpu-bus-id and --gdr", .. }
    ));
    assert!(matches!(config_error(&["-Q", "0"]), ConfigError::OutOfRange { flag: "-Q/--cq-mod", .. }));
    assert!(matches!(
        config_error(&["-D", "4", "-f", "2"]),
        ConfigError::Conflict { flag: "-D/--duration", .. }
    ));
}

#[test]
fn staged_memory_refuses_both_directions_before_any_device_is_opened() {
    // Loopback: both memories are known from the command line.
    for kind in ["host-staged", "cuda-staged"] {
        assert_eq!(config_error(&["--loopback", "-b", "--mem", kind]), ConfigError::StagedBidirectional);
    }
    assert!(configure(&["--loopback", "-b", "--mem", "host"]).is_ok());
    // A WRITE stream's staged receiver counts what it copies: no -D (configure builds gdr-write-bw's).
    assert_eq!(
        config_error(&["--loopback", "-D", "2", "--mem", "host,host-staged"]),
        ConfigError::StagedReceiverDuration
    );
    let cli = Cli::try_parse_from(["test", "--loopback", "-D", "2", "--mem", "host-staged"]).unwrap();
    let common = BenchConfig::from_args(&cli.common, DEFAULTS).unwrap();
    let read = BandwidthConfig::from_args(&cli.bandwidth, &common, Verb::Read).unwrap();
    assert!(!read.staged.receiver_counts_messages, "a staged reader copies in what it read, timed");
    // Two processes: the hellos tell each side the other's memory; one rule decides on both.
    let both = StagedRules { bidirectional: true, receiver_counts_messages: false, post_list: false };
    assert_eq!(
        refuse_staged(both, MemoryKind::Host, MemoryKind::HostStaged),
        Err(ConfigError::StagedBidirectional)
    );
    assert_eq!(refuse_staged(both, MemoryKind::Host, MemoryKind::Host), Ok(()));
    let timed = StagedRules { bidirectional: false, receiver_counts_messages: true, post_list: false };
    assert_eq!(
        refuse_staged(timed, MemoryKind::HostStaged, MemoryKind::Host),
        Err(ConfigError::StagedReceiverDuration)
    );
    assert_eq!(
        refuse_staged(timed, MemoryKind::Host, MemoryKind::HostStaged),
        Ok(()),
        "the writer may be staged"
    );
}

#[test]
fn nearest_nic_needs_gpu_memory_and_says_so_before_cuda_loads() {
    let error = config_error(&["-d", "auto"]);
    assert!(matches!(&error, ConfigError::Conflict { flag: "-d/--ib-dev", .. }), "{error:?}");
    assert!(
        error.to_string().contains("auto picks the NIC nearest to a GPU; --mem host has none"),
        "{error}"
    );
    assert!(
        configure(&["-d", "auto", "--mem", "host,cuda"]).is_ok(),
        "host memory beside GPU memory takes the GPU's NIC"
    );
}

#[test]
fn the_longest_timeout_is_accepted_and_its_message_names_it() {
    assert_eq!(MAX_TIMEOUT_TEXT, format!("at most {MAX_TIMEOUT_SECONDS} seconds (30 days)"));
    let longest = MAX_TIMEOUT_SECONDS.to_string();
    let (common, _) = build(&["--timeout", &longest, "--accept-timeout", &longest]).unwrap();
    assert_eq!(common.timeout, Duration::from_secs(MAX_TIMEOUT_SECONDS));
    // The deadline the exchange computes from it does not overflow.
    assert!(std::time::Instant::now().checked_add(common.timeout).is_some());
}

#[test]
fn token_file_gives_the_secret_one_way_only() {
    let folder = std::env::temp_dir().join(format!("gdrperf-token-file-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("token");
    std::fs::write(&path, "0123456789abcdef0123456789abcdef\nsecond line ignored\n").unwrap();
    let file = path.to_str().unwrap();
    // Readable by others (the umask's 644): refused, as ssh refuses such a key (issue 44).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = build(&["--token-file", file]).unwrap_err();
    assert!(open.contains("other users (mode 644)") && open.contains("chmod 600"), "{open}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (common, _) = build(&["--token-file", file]).unwrap();
    assert!(common.token.is_some());
    let both = build(&["--token-file", file, "--token", "0123456789abcdef0123456789abcdef"]).unwrap_err();
    assert!(both.contains("--token-file cannot be used with --token or GDRPERF_TOKEN"), "{both}");
    let missing = folder.join("absent");
    let error = build(&["--token-file", missing.to_str().unwrap()]).unwrap_err();
    assert!(error.contains("--token-file") && error.contains("cannot be read"), "{error}");
    std::fs::write(&path, "\n").unwrap();
    let empty = build(&["--token-file", file]).unwrap_err();
    assert!(empty.contains("is empty"), "{empty}");
    // Bounded: a huge file or a device is refused, never read whole (or for ever).
    std::fs::write(&path, "0123456789abcdef".repeat(1000)).unwrap();
    let huge = build(&["--token-file", file]).unwrap_err();
    assert!(huge.contains("is over 4096 bytes"), "{huge}");
    let device = build(&["--token-file", "/dev/zero"]).unwrap_err();
    assert!(device.contains("is not a regular file"), "{device}");
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn a_server_on_a_routable_address_without_a_token_is_flagged() {
    let flagged = |arguments: &[&str]| build(arguments).unwrap().0.routable_without_token();
    assert!(flagged(&["--bind", "10.0.0.1"]));
    assert!(flagged(&[]), "every address listens by default");
    assert!(!flagged(&["--bind", "127.0.0.1"]));
    assert!(!flagged(&["--bind", "::1"]));
    assert!(!flagged(&["--bind", "10.0.0.1", "--token", "0123456789abcdef0123456789abcdef"]));
    assert!(!flagged(&["10.0.0.2"]), "a client listens nowhere");
}

/// `-l N` as perftest checks it (perftest_parameters.c, "post_list > 1"): the moderation becomes
/// N without -Q, -n must be a multiple of N and N of -Q; a list longer than -t, a zero list and
/// staged memory are refused too.
#[test]
fn a_post_list_is_checked_as_perftest_checks_it() {
    use crate::error::PostListRule;
    use crate::options::perftest_defaults::CqReason;
    let (_, bandwidth) = configure(&["--loopback", "-l", "4", "-n", "100"]).unwrap();
    assert_eq!((bandwidth.post_list, bandwidth.cq_mod), (4, 4));
    assert_eq!(bandwidth.cq_moderation.reason, CqReason::PostList);
    assert!(bandwidth.header().contains(&("Post List".to_string(), "4".to_string())));
    let (_, bandwidth) = configure(&["--loopback", "-l", "4", "-Q", "2", "-n", "100"]).unwrap();
    assert_eq!((bandwidth.post_list, bandwidth.cq_mod), (4, 2));
    let (_, plain) = configure(&["--loopback", "-s", "4096"]).unwrap();
    assert_eq!((plain.post_list, plain.cq_mod), (1, 100), "no -l: perftest's post list of 1");
    assert!(!plain.header().iter().any(|(name, _)| name == "Post List"));
    let refused = |arguments: &[&str], rule| {
        assert_eq!(config_error(arguments), ConfigError::PostList { post_list: 4, rule }, "{arguments:?}")
    };
    refused(&["--loopback", "-l", "4", "-n", "10"], PostListRule::IterationsNotMultiple { iterations: 10 });
    refused(
        &["--loopback", "-l", "4", "-Q", "3", "-n", "100"],
        PostListRule::NotMultipleOfCqMod { cq_mod: 3 },
    );
    refused(&["--loopback", "-l", "4", "-t", "2", "-n", "100"], PostListRule::AboveTxDepth { tx_depth: 2 });
    assert!(matches!(config_error(&["--loopback", "-l", "0"]), ConfigError::OutOfRange { .. }));
    // A timed run has no count to divide.
    assert!(configure(&["--loopback", "-l", "4", "-D", "2"]).is_ok());
    assert_eq!(
        config_error(&["--loopback", "-l", "4", "-n", "100", "--mem", "host-staged"]),
        ConfigError::StagedPostList
    );
    let rules = StagedRules { post_list: true, ..StagedRules::default() };
    assert_eq!(
        refuse_staged(rules, MemoryKind::Host, MemoryKind::CudaStaged),
        Err(ConfigError::StagedPostList)
    );
    assert_eq!(refuse_staged(rules, MemoryKind::Host, MemoryKind::Host), Ok(()));
}
