//! The validated configuration of one run, built once from the command line.
//!
//! Every check of the user's input happens here, before any device is opened or socket bound,
//! so that a typo costs nothing and the message names the flag. Runtime state (devices, queue
//! pairs, sockets) never lives in this struct: it is plain data, shared read-only by both ends of
//! a loopback run.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cpu_placement::CpuRequest;
use crate::error::{Error, Result};
use crate::exchange::Token;
use crate::harness::args::{BandwidthArgs, CommonArgs, GdrPath, MemoryKind};
pub use crate::harness::perftest_defaults::TestDefaults;
use crate::verbs::Mtu;
use gdrperf_cuda::GpuSelection;

/// Which end of the connection this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Waits for a client on the TCP port.
    Server,
    /// Connects to the server on `host`.
    Client { host: String },
    /// Both ends in one process, over one device.
    Loopback,
}

/// When a size's measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopRule {
    /// After this many messages per QP.
    Iterations(u64),
    /// After this long; the message count is whatever completed.
    Duration(#[serde(serialize_with = "serialize_seconds")] Duration),
}

fn serialize_seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// What one latency sample spans (`--latency-span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LatencySpan {
    /// perftest's: from one post to the next, the whole iteration (wait, reap, repost and the
    /// recording included), `tposted[i + 1] − tposted[i]` in `print_report_lat`.
    #[default]
    Iteration,
    /// From the post to the arrival of the answer (or the READ's completion): the wire alone.
    Arrival,
}

impl LatencySpan {
    /// The name used in the CSV, the JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LatencySpan::Iteration => "iteration",
            LatencySpan::Arrival => "arrival",
        }
    }

    /// The run header's description.
    pub fn description(self) -> &'static str {
        match self {
            LatencySpan::Iteration => "iteration: post to next post (perftest's)",
            LatencySpan::Arrival => "arrival: post to arrival of the answer",
        }
    }
}

/// How bandwidth is shown on the console (files always carry both units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandwidthUnit {
    MebibytesPerSecond,
    GigabitsPerSecond,
}

/// Largest message: the length field of a scatter/gather entry is 32 bits, and a registered
/// buffer per QP of 1 GiB is already more than any NIC needs to reach line rate.
pub const MAX_MESSAGE_SIZE: u64 = 1 << 30;

/// perftest's `-a` sweep: 2 bytes to 8 MiB.
pub fn all_sizes() -> Vec<usize> {
    (1..=23).map(|exponent| 1usize << exponent).collect()
}

/// Test-independent, validated settings.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub role: Role,
    /// `-d`: RDMA devices as listed (empty: the first one the system lists).
    pub devices: Vec<String>,
    pub ib_port: u8,
    pub gid_index: Option<u32>,
    /// `-R`: the QPs are connected through rdma_cm (`verbs::connection_manager`), not from the hellos.
    pub rdma_cm: bool,
    pub tcp_port: u16,
    pub sizes: Vec<usize>,
    pub stop: StopRule,
    /// `-D` runs: whole seconds left out at each end (`-f`, else perftest's `duration / 4`); 0
    /// for `-n` runs.
    pub margin_seconds: u64,
    pub warmup: u64,
    pub qps: u32,
    pub tx_depth: u32,
    pub mtu: Option<Mtu>,
    pub unit: BandwidthUnit,
    pub validate: bool,
    pub csv: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub timeout: Duration,
    /// Server: how long to wait for a client that passes the challenge (`None`: for ever).
    pub accept_timeout: Option<Duration>,
    /// Where the measuring threads run (`--cpu`, `--numa-node`; default near the NIC).
    pub cpu: CpuRequest,
    pub memory: MemoryConfig,
    /// Server: the address to listen on (`None`: all of this host's IPv4 addresses).
    pub bind: Option<IpAddr>,
    /// The secret of the exchange's challenge; `None` runs it without (anyone may connect).
    pub token: Option<Token>,
    /// Acceptance thresholds as given; made absolute once the port's rate is known.
    pub acceptance: Acceptance,
    /// The command line, for the metadata of result files.
    pub argv: Vec<String>,
    /// Latency tests: what a sample spans (set from `--latency-span`); `None` elsewhere.
    pub latency_span: Option<LatencySpan>,
    /// RDMA READs each QP may have outstanding (set by gdr-read-bw from `-o/--outs`).
    pub read_depth: ReadDepth,
    /// Test hook, read once here from `GDRPERF_TEST_SHARED_BOUNCE` (never while an engine sets
    /// up): the write stream behaves as gdrperf did before the staged ring (every message into
    /// the same bounce bytes, no credits), so that a VM test can show that `--validate` catches
    /// what that did. Never set it to measure.
    pub shared_bounce_for_tests: bool,
}

/// The refusal of `-b` with staged memory, in the same words wherever it is made (here for
/// loopback, in `session::refuse_staged` once the peer's memory is known).
pub(crate) const STAGED_BIDIRECTIONAL: &str =
    "staged memory runs one direction at a time: drop -b/--bidirectional";

/// RDMA READs a QP may have outstanding (its `max_rd_atomic` and `max_dest_rd_atomic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadDepth {
    /// 16, whatever the device: the benches without a READ stream.
    Fixed(u32),
    /// The device's `max_qp_rd_atom`: perftest's default for READ tests.
    DeviceMax,
    /// `-o N`, lowered to the device's `max_qp_rd_atom` with a message where above it, as
    /// perftest does (`ctx_set_out_reads` in `perftest_parameters.c`).
    Asked(u32),
}

impl ReadDepth {
    /// The depth on a device whose QPs allow `device_max` outstanding READs: the value, and a
    /// line for stderr where `-o` was lowered.
    pub fn on_device(self, device_max: u32) -> (u32, Option<String>) {
        match self {
            ReadDepth::Fixed(depth) => (depth, None),
            ReadDepth::DeviceMax => (device_max, None),
            ReadDepth::Asked(asked) if asked > device_max => (
                device_max,
                Some(format!(
                    "-o/--outs {asked} is above the device's max_qp_rd_atom ({device_max}): using {device_max}, as perftest does"
                )),
            ),
            ReadDepth::Asked(asked) => (asked, None),
        }
    }

    /// `-o/--outs` as given (`None`: the device's maximum).
    pub fn from_outs(outs: Option<u32>) -> Result<ReadDepth> {
        match outs {
            None => Ok(ReadDepth::DeviceMax),
            Some(0) => Err(Error::Config("-o/--outs must be at least 1 outstanding READ".into())),
            Some(asked) => Ok(ReadDepth::Asked(asked)),
        }
    }
}

impl BenchConfig {
    /// Checks the common options and fills in the test's defaults.
    pub fn from_args(args: &CommonArgs, defaults: TestDefaults) -> Result<BenchConfig> {
        let role = match (&args.host, args.loopback) {
            (Some(host), false) => Role::Client { host: host.clone() },
            (None, true) => Role::Loopback,
            (None, false) => Role::Server,
            (Some(_), true) => {
                return Err(config("--loopback runs both ends here: drop HOST, or drop --loopback"))
            }
        };
        if args.ib_port == 0 {
            return Err(config("-i/--ib-port counts from 1"));
        }
        if args.port == 0 && role != Role::Loopback {
            return Err(config("-p/--port must be a TCP port between 1 and 65535"));
        }
        let sizes = match (args.all, args.size) {
            (true, _) => all_sizes(),
            (false, Some(size)) => vec![check_size(size)?],
            (false, None) => vec![check_size(defaults.size)?],
        };
        let stop = match (args.iters, args.duration) {
            (Some(_), Some(_)) => return Err(config("-n/--iters and -D/--duration exclude each other")),
            (Some(0), None) => return Err(config("-n/--iters must be at least 1")),
            (Some(iterations), None) => StopRule::Iterations(iterations),
            (None, Some(seconds)) if !((1.0..=86_400.0).contains(&seconds) && seconds.fract() == 0.0) => {
                // Whole seconds, as perftest's -D: its margin is duration / 4 in whole seconds.
                return Err(config("-D/--duration must be a whole number of seconds from 1 to 86400"));
            }
            (None, Some(seconds)) => StopRule::Duration(Duration::from_secs_f64(seconds)),
            (None, None) => StopRule::Iterations(defaults.iterations),
        };
        let margin_seconds = match stop {
            StopRule::Duration(duration) => duration_margin(duration.as_secs(), args.margin)?,
            StopRule::Iterations(_) => 0,
        };
        let tx_depth = args.tx_depth.unwrap_or(defaults.tx_depth);
        if tx_depth == 0 || tx_depth > 16_384 {
            return Err(config("-t/--tx-depth must be between 1 and 16384"));
        }
        if args.qps == 0 || args.qps > 1024 {
            return Err(config("-q/--qp must be between 1 and 1024"));
        }
        let mtu = match args.mtu {
            None => None,
            Some(bytes) => Some(
                Mtu::from_bytes(bytes)
                    .ok_or_else(|| config("-m/--mtu must be one of 256, 512, 1024, 2048, 4096"))?,
            ),
        };
        if args.timeout == 0 {
            return Err(config("--timeout must be at least 1 second"));
        }
        let accept_timeout = match args.accept_timeout {
            None => None,
            Some(_) if role != Role::Server => {
                return Err(config("--accept-timeout applies to the server (no HOST, no --loopback)"))
            }
            Some(0) => return Err(config("--accept-timeout must be at least 1 second")),
            Some(seconds) => Some(Duration::from_secs(seconds)),
        };
        let bind = match &args.bind {
            None => None,
            Some(_) if role != Role::Server => {
                return Err(config("--bind applies to the server (no HOST, no --loopback)"))
            }
            Some(text) => Some(text.parse::<IpAddr>().map_err(|_| {
                config(&format!("--bind {text}: not an IP address (examples: 10.0.0.1, 0.0.0.0, ::)"))
            })?),
        };
        let token = match &args.token {
            None => None,
            Some(text) => Some(Token::new(text).ok_or_else(|| {
                config("--token (or GDRPERF_TOKEN) is empty: an empty secret protects nothing; unset it or give a secret")
            })?),
        };
        let cpu = CpuRequest::from_flags(args.cpu.as_deref(), args.numa_node).map_err(Error::Config)?;
        let memory = MemoryConfig::from_args(args)?;
        let largest = *sizes.iter().max().unwrap_or(&0) as u64;
        if largest * u64::from(args.qps) > 16 * MAX_MESSAGE_SIZE {
            return Err(config("size x QPs needs more than 16 GiB of registered memory; lower -s or -q"));
        }
        Ok(BenchConfig {
            role,
            devices: check_devices(&args.ib_dev)?,
            ib_port: args.ib_port,
            gid_index: args.gid_index,
            rdma_cm: args.rdma_cm,
            tcp_port: args.port,
            sizes,
            stop,
            margin_seconds,
            warmup: args.warmup.unwrap_or(defaults.warmup),
            qps: args.qps,
            tx_depth,
            mtu,
            unit: if args.report_gbits {
                BandwidthUnit::GigabitsPerSecond
            } else {
                BandwidthUnit::MebibytesPerSecond
            },
            validate: args.validate,
            csv: args.csv.clone(),
            json: args.json.clone(),
            timeout: Duration::from_secs(args.timeout),
            accept_timeout,
            cpu,
            memory,
            bind,
            token,
            acceptance: Acceptance {
                min_bw: args.min_bw,
                max_lat: args.max_lat.map(|limit| limit.on(args.lat_pct)),
                max_nic_errors: args.max_nic_errors,
            },
            argv: gdrperf_stats::redact_command_line(std::env::args()),
            latency_span: None,
            read_depth: ReadDepth::Fixed(16),
            shared_bounce_for_tests: std::env::var_os("GDRPERF_TEST_SHARED_BOUNCE").is_some(),
        })
    }

    /// The largest message of the sweep: the size of each QP's buffer.
    pub fn max_size(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(1)
    }

    /// Where a server listens for its client.
    pub fn listen_address(&self) -> SocketAddr {
        SocketAddr::new(self.bind.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), self.tcp_port)
    }

    /// The settings both peers must share, compared field by field at the exchange.
    pub fn shared_parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "sizes": self.sizes,
            "stop": self.stop,
            "margin": self.margin_seconds,
            "warmup": self.warmup,
            "qps": self.qps,
            "tx_depth": self.tx_depth,
            "mtu": self.mtu.map(Mtu::bytes),
            "validate": self.validate,
            // Both sides connect the same way, or neither finds the other: checked with the terms.
            "rdma_cm": self.rdma_cm,
        })
    }
}

/// `--min-bw` / `--max-lat` as the user wrote them.
#[derive(Debug, Clone, Default)]
pub struct Acceptance {
    pub min_bw: Option<gdrperf_threshold::BandwidthThreshold>,
    pub max_lat: Option<gdrperf_threshold::LatencyLimit>,
    pub max_nic_errors: Option<u64>,
}

impl Acceptance {
    /// Makes the thresholds absolute for a port whose kernel-reported rate is `port_rate`
    /// ("100 Gb/sec (4X EDR)"); `bidirectional` rows sum two directions.
    pub fn resolve(
        &self,
        port_rate: Option<&str>,
        bidirectional: bool,
    ) -> Result<gdrperf_threshold::Thresholds> {
        let min_bw = match &self.min_bw {
            None => None,
            Some(threshold) => Some(
                threshold
                    .resolve(port_rate, bidirectional)
                    .map_err(|source| Error::Threshold { flag: "--min-bw", source })?,
            ),
        };
        Ok(gdrperf_threshold::Thresholds {
            min_bw,
            max_lat: self.max_lat,
            max_nic_errors: self.max_nic_errors,
        })
    }
}

/// Where this side's buffers live; each side chooses its own. A list of kinds and GPUs is a
/// sweep: [`crate::harness::placement::plan`] turns it into placements once CUDA is loaded.
#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// `--mem`, in the order given.
    pub kinds: Vec<MemoryKind>,
    /// The GPUs for the cuda kinds (parsed, checked against the machine when CUDA is loaded).
    pub gpu: GpuSelection,
    pub gdr: GdrPath,
}

impl MemoryConfig {
    fn from_args(args: &CommonArgs) -> Result<MemoryConfig> {
        let gpu = match (&args.gpu, &args.gpu_bus_id) {
            (Some(text), _) => {
                GpuSelection::parse(text).map_err(|error| config(&format!("--gpu {text}: {error}")))?
            }
            (None, Some(text)) => GpuSelection::parse_bus_id(text)
                .map_err(|error| config(&format!("--gpu-bus-id {text}: {error}")))?,
            (None, None) => GpuSelection::Indices(vec![0]),
        };
        let kinds = args.mem.clone();
        if kinds.is_empty() {
            return Err(config("--mem needs a kind: host, cuda or cuda-staged"));
        }
        if let Some(twice) =
            kinds.iter().enumerate().find(|(at, kind)| kinds[..*at].contains(kind)).map(|(_, kind)| kind)
        {
            return Err(config(&format!("--mem lists {} twice", twice.label())));
        }
        let gpu_given = args.gpu.is_some() || args.gpu_bus_id.is_some();
        let any_gpu = kinds.iter().any(|&kind| kind.is_on_gpu());
        if !any_gpu && (gpu_given || args.gdr != GdrPath::Auto) {
            return Err(config("--gpu, --gpu-bus-id and --gdr apply to GPU memory: add --mem cuda"));
        }
        if !kinds.contains(&MemoryKind::Cuda) && args.gdr != GdrPath::Auto {
            return Err(config(
                "--gdr does not apply to cuda-staged: the NIC only touches pinned host memory there",
            ));
        }
        Ok(MemoryConfig { kinds, gpu, gdr: args.gdr })
    }
}

/// `-d` entries: names, or `auto`; empty names (`-d a,,b`) are a typo.
fn check_devices(devices: &[String]) -> Result<Vec<String>> {
    if devices.iter().any(|device| device.trim().is_empty()) {
        return Err(config(
            "-d/--ib-dev has an empty entry: give device names separated by commas (mlx5_0,mlx5_1)",
        ));
    }
    Ok(devices.iter().map(|device| device.trim().to_string()).collect())
}

use super::perftest_defaults::{cq_moderation, duration_margin, CqModeration};

/// Bandwidth-specific, validated settings.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthConfig {
    /// The effective CQ moderation (perftest's rule), `cq_moderation.value`.
    pub cq_mod: u32,
    pub cq_moderation: CqModeration,
    pub bidirectional: bool,
    /// `--concurrent`: every placement at once, one lane each.
    pub concurrent: bool,
}

impl BandwidthConfig {
    /// The bandwidth settings both peers must share.
    pub fn parameters(&self) -> serde_json::Value {
        serde_json::json!({ "cq_mod": self.cq_mod, "bidirectional": self.bidirectional, "concurrent": self.concurrent })
    }

    /// The run-header lines of the bandwidth settings.
    pub fn header(&self) -> Vec<(String, String)> {
        vec![
            ("CQ moderation".into(), self.cq_moderation.describe()),
            (
                "Direction".into(),
                if self.bidirectional { "bidirectional" } else { "client -> server" }.into(),
            ),
        ]
    }

    pub fn from_args(args: &BandwidthArgs, common: &BenchConfig) -> Result<BandwidthConfig> {
        let cq_moderation = cq_moderation(args.cq_mod, &common.sizes, common.tx_depth)?;
        if args.concurrent && common.memory.kinds.len() > 1 {
            return Err(config(
                "--concurrent runs the GPUs (or devices) of one --mem kind at once: give one kind",
            ));
        }
        // Staged memory with -b is refused once both memories are known, right after the hellos
        // and on both sides in the same words (`session::StagedRules`): refused here, a server or
        // client would leave its peer waiting for it. A loopback run has no peer to tell.
        let staged = common.memory.kinds.iter().any(|kind| kind.is_staged());
        if args.bidirectional && staged && matches!(common.role, Role::Loopback) {
            return Err(config(STAGED_BIDIRECTIONAL));
        }
        if common.acceptance.max_lat.is_some() {
            return Err(config("--max-lat applies to latency results: a bandwidth test is held to --min-bw"));
        }
        Ok(BandwidthConfig {
            cq_mod: cq_moderation.value,
            cq_moderation,
            bidirectional: args.bidirectional,
            concurrent: args.concurrent,
        })
    }
}

fn check_size(size: u64) -> Result<usize> {
    if size == 0 {
        return Err(config("-s/--size must be at least 1 byte"));
    }
    if size > MAX_MESSAGE_SIZE {
        return Err(config(&format!(
            "-s/--size {size} is above the largest supported message ({MAX_MESSAGE_SIZE} bytes)"
        )));
    }
    Ok(size as usize)
}

fn config(message: &str) -> Error {
    Error::Config(message.to_string())
}

/// Largest inline size we accept. NICs accept a few hundred bytes (ConnectX: up to ~900, rxe:
/// 256+); above that the QP cannot be created, and the message would only say "invalid argument".
pub const MAX_INLINE_SIZE: u32 = 1024;

/// Where the latency distribution goes, besides the result rows.
#[derive(Debug, Clone, Default)]
pub struct LatencyFilePaths {
    pub hdr_dir: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub hlog_interval: Duration,
    pub histogram_raw: Option<PathBuf>,
    /// `-H`: perftest's sorted listing on stdout.
    pub report_sorted: bool,
    /// `-U`: perftest's unsorted listing on stdout.
    pub report_unsorted: bool,
}

impl LatencyFilePaths {
    /// Whether any file is asked for.
    pub fn any(&self) -> bool {
        self.hdr_dir.is_some() || self.hlog.is_some() || self.keeps_every_sample()
    }

    /// Whether an output needs every sample kept in memory (the raw dump, `-H`, `-U`).
    pub fn keeps_every_sample(&self) -> bool {
        self.histogram_raw.is_some() || self.report_sorted || self.report_unsorted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn outstanding_reads_follow_perftest_within_the_device_bound() {
        // rxe allows 128, mlx5 16: -o above is lowered with a message, none means the maximum.
        assert_eq!(ReadDepth::from_outs(None).unwrap().on_device(128), (128, None));
        assert_eq!(ReadDepth::from_outs(Some(8)).unwrap().on_device(16), (8, None));
        let (depth, message) = ReadDepth::from_outs(Some(64)).unwrap().on_device(16);
        assert_eq!(depth, 16);
        assert!(message.unwrap().contains("-o/--outs 64 is above the device's max_qp_rd_atom (16)"));
        assert!(ReadDepth::from_outs(Some(0))
            .unwrap_err()
            .to_string()
            .contains("-o/--outs must be at least 1"));
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

    fn build(arguments: &[&str]) -> Result<(BenchConfig, BandwidthConfig)> {
        let cli = Cli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
            .map_err(|error| Error::Config(error.to_string()))?;
        let common = BenchConfig::from_args(&cli.common, DEFAULTS)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common)?;
        Ok((common, bandwidth))
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

    #[test]
    fn bind_picks_the_listening_address_and_the_token_stays_hidden() {
        let (common, _) = build(&[]).unwrap();
        assert_eq!(common.listen_address(), "0.0.0.0:18515".parse().unwrap());
        let (common, _) = build(&["--bind", "::1", "-p", "7000", "--token", "s3cret"]).unwrap();
        assert_eq!(common.listen_address(), "[::1]:7000".parse().unwrap());
        assert!(common.token.is_some());
        assert!(!format!("{common:?}").contains("s3cret"), "the secret must not appear in a debug print");
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
        let error = build(&["-R", "-x", "3"]).unwrap_err().to_string();
        assert!(error.contains("--gid-index") && error.contains("--rdma_cm"), "{error}");
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
            (&["--cpu", "1-x"], "--cpu 1-x: '1-x' is not a CPU or range"),
            (&["--cpu", "1", "--numa-node", "0"], "cannot be used with"),
            (&["--accept-timeout", "0"], "--accept-timeout must be at least 1 second"),
            (&["--accept-timeout", "5", "host1"], "cannot be used with"),
        ];
        for (arguments, expected) in cases {
            let message = build(arguments).err().map(|error| error.to_string()).unwrap_or_default();
            assert!(message.contains(expected), "{arguments:?} gave {message:?}");
        }
    }
}
