//! The validated configuration of one run, built once from the command line.
//!
//! Every check of the user's input happens here (and in `super::bandwidth`, `super::latency`,
//! `super::send` for the options of some benches), before any device is opened or socket bound,
//! so that a typo costs nothing and the error ([`ConfigError`]) names the flag and the value. Only
//! what needs the peer waits for the hellos (staged memory against the peer's:
//! [`refuse_staged`](crate::options::bandwidth::refuse_staged); placements that pair up), and
//! what needs the machine for it (a `-d` list against the GPUs found, rdma_cm's route). Runtime
//! state (devices, queue pairs, sockets) never lives in this struct: it is plain data, shared
//! read-only by both ends of a loopback run.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{ConfigError, Error, Result};
use crate::exchange::Token;
use crate::options::args::{BandwidthInlineArgs, CommonArgs};
use crate::options::cpu_request::CpuRequest;
use crate::options::perftest_defaults::duration_margin;
pub use crate::options::perftest_defaults::TestDefaults;
pub use crate::options::values::{BandwidthUnit, LatencyFilePaths, LatencySpan, Role, StopRule};
use crate::verbs::Mtu;
use gdrperf_command_line::MAX_TIMEOUT_SECONDS;

mod memory;
mod token_file;

pub use memory::MemoryConfig;
use token_file::read_token_file;

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
    /// `--ipv6`: without `-x`, an IPv6 GID rather than the IPv4-mapped one.
    pub ipv6_gid: bool,
    /// `-R`: the QPs are connected through rdma_cm (`verbs::connection_manager`), not from the hellos.
    pub rdma_cm: bool,
    pub tcp_port: u16,
    /// `--tclass` and `-S/--sl` (0 when not given); `None` with `-R`, where rdma_cm's route
    /// sets both.
    pub traffic_class: Option<u8>,
    pub service_level: Option<u8>,
    /// `-T/--tos`, with `-R` only: rdma_cm's type of service (`None`: rdma_cm's default).
    pub type_of_service: Option<u8>,
    pub sizes: Vec<usize>,
    pub stop: StopRule,
    /// `-D` runs: whole seconds left out at each end (`-f`, else perftest's `duration / 4`); 0
    /// for `-n` runs.
    pub margin_seconds: u64,
    /// `--run-infinitely`: the one size again and again, a row per `-D` window, until Ctrl-C.
    pub run_infinitely: bool,
    pub warmup: u64,
    pub qps: u32,
    pub tx_depth: u32,
    pub mtu: Option<Mtu>,
    pub unit: BandwidthUnit,
    pub validate: bool,
    pub csv: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// perftest's `--out_json` report: its file (`--out_json_file`, else perftest_out.json).
    pub perftest_json: Option<PathBuf>,
    /// `--prom`: the run's figures as a Prometheus textfile.
    pub prometheus: Option<PathBuf>,
    /// perftest's `--output`: one figure per size on stdout.
    pub output: Option<crate::options::values::OutputFigure>,
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
    /// RDMA READs and atomics each QP may have outstanding (set from `-o/--outs` by gdr-read-bw,
    /// gdr-atomic-bw, gdr-read-lat and gdr-atomic-lat).
    pub read_depth: ReadDepth,
    /// Test hook, read once here from `GDRPERF_TEST_SHARED_BOUNCE` (never while an engine sets
    /// up): the write stream behaves as gdrperf did before the staged ring (every message into
    /// the same bounce bytes, no credits), so that a VM test can show that `--validate` catches
    /// what that did. Never set it to measure.
    pub shared_bounce_for_tests: bool,
}

/// `-o/--outs` of the benches that READ or run atomics (gdr-read-bw, gdr-atomic-bw,
/// gdr-read-lat, gdr-atomic-lat), as perftest offers it to its READ and atomic tests (`verb == READ ||
/// verb == ATOMIC` in `usage`): the QP's outstanding READs and atomics.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct OutsArgs {
    /// RDMA READs and atomics each QP may have outstanding (its max_rd_atomic), at most the
    /// device's max_qp_rd_atom (higher is lowered to it, as perftest does) [default: the
    /// device's max_qp_rd_atom]
    #[arg(short = 'o', long = "outs", value_name = "N")]
    pub outs: Option<u32>,
}

impl OutsArgs {
    /// The depth asked for, checked (`ReadDepth::from_outs`).
    pub fn read_depth(&self) -> Result<ReadDepth> {
        ReadDepth::from_outs(self.outs)
    }
}

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

    /// What the run header and the run's parameters say of it.
    pub fn describe(self) -> String {
        match self {
            ReadDepth::Fixed(depth) | ReadDepth::Asked(depth) => depth.to_string(),
            ReadDepth::DeviceMax => "the device's max_qp_rd_atom".into(),
        }
    }

    /// `-o/--outs` as given (`None`: the device's maximum).
    pub fn from_outs(outs: Option<u32>) -> Result<ReadDepth> {
        match outs {
            None => Ok(ReadDepth::DeviceMax),
            Some(0) => Err(out_of_range("-o/--outs", 0, "at least 1 outstanding READ or atomic")),
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
                return Err(conflict("--loopback", "runs both ends here: drop HOST, or drop --loopback"))
            }
        };
        if args.ib_port == 0 {
            return Err(out_of_range("-i/--ib-port", 0, "at least 1 (ports count from 1)"));
        }
        if args.port == 0 && role != Role::Loopback {
            return Err(out_of_range("-p/--port", 0, "a TCP port between 1 and 65535"));
        }
        let sizes = match (args.all, args.size) {
            (true, _) => all_sizes(),
            (false, Some(size)) => vec![check_size(size)?],
            (false, None) => vec![check_size(defaults.size)?],
        };
        // perftest's --run_infinitely reports every -D seconds, its DEF_DURATION (5) by default.
        let duration = match (args.run_infinitely, args.duration) {
            (true, None) => Some(5.0),
            (_, duration) => duration,
        };
        let stop = match (args.iters, duration) {
            (Some(_), Some(_)) => return Err(conflict("-n/--iters", "and -D/--duration exclude each other")),
            (Some(0), None) => return Err(out_of_range("-n/--iters", 0, "at least 1")),
            (Some(iterations), None) => StopRule::Iterations(iterations),
            (None, Some(seconds)) if !((1.0..=86_400.0).contains(&seconds) && seconds.fract() == 0.0) => {
                // Whole seconds, as perftest's -D: its margin is duration / 4 in whole seconds.
                return Err(out_of_range(
                    "-D/--duration",
                    seconds,
                    "a whole number of seconds from 1 to 86400",
                ));
            }
            (None, Some(seconds)) => StopRule::Duration(Duration::from_secs_f64(seconds)),
            (None, None) => StopRule::Iterations(defaults.iterations),
        };
        let margin_seconds = match stop {
            // Each window of an endless run is reported whole, as perftest's.
            StopRule::Duration(_) if args.run_infinitely => 0,
            StopRule::Duration(duration) => duration_margin(duration.as_secs(), args.margin)?,
            StopRule::Iterations(_) => 0,
        };
        let tx_depth = args.tx_depth.unwrap_or(defaults.tx_depth);
        if tx_depth == 0 || tx_depth > 16_384 {
            return Err(out_of_range("-t/--tx-depth", tx_depth, "between 1 and 16384"));
        }
        if args.qps == 0 || args.qps > 1024 {
            return Err(out_of_range("-q/--qp", args.qps, "between 1 and 1024"));
        }
        let mtu = match args.mtu {
            None => None,
            Some(bytes) => Some(
                Mtu::from_bytes(bytes)
                    .ok_or_else(|| out_of_range("-m/--mtu", bytes, "one of 256, 512, 1024, 2048, 4096"))?,
            ),
        };
        if args.timeout == 0 {
            return Err(out_of_range("--timeout", 0, "at least 1 second"));
        }
        if args.timeout > MAX_TIMEOUT_SECONDS {
            return Err(out_of_range("--timeout", args.timeout, MAX_TIMEOUT_TEXT));
        }
        let accept_timeout = match args.accept_timeout {
            None => None,
            Some(_) if role != Role::Server => {
                return Err(conflict("--accept-timeout", "applies to the server (no HOST, no --loopback)"))
            }
            Some(0) => return Err(out_of_range("--accept-timeout", 0, "at least 1 second")),
            Some(seconds) if seconds > MAX_TIMEOUT_SECONDS => {
                return Err(out_of_range("--accept-timeout", seconds, MAX_TIMEOUT_TEXT))
            }
            Some(seconds) => Some(Duration::from_secs(seconds)),
        };
        let bind = match &args.bind {
            None => None,
            Some(_) if role != Role::Server => {
                return Err(conflict("--bind", "applies to the server (no HOST, no --loopback)"))
            }
            Some(text) => Some(text.parse::<IpAddr>().map_err(|_| ConfigError::Malformed {
                flag: "--bind",
                value: text.clone(),
                problem: "not an IP address (examples: 10.0.0.1, 0.0.0.0, ::)".into(),
            })?),
        };
        let from_file = match &args.token_file {
            None => None,
            Some(_) if args.token.is_some() => {
                return Err(conflict(
                    "--token-file",
                    "cannot be used with --token or GDRPERF_TOKEN: give the secret one way",
                ))
            }
            Some(path) => Some(read_token_file(path)?),
        };
        let token = match from_file.as_ref().or(args.token.as_ref()) {
            None => None,
            Some(text) => Some(
                Token::new(text).map_err(|weak| conflict("--token (or GDRPERF_TOKEN)", weak.to_string()))?,
            ),
        };
        let (traffic_class, service_level) = check_quality_of_service(args)?;
        let type_of_service = check_type_of_service(args)?;
        let cpu = CpuRequest::from_flags(args.cpu.as_deref(), args.numa_node)?;
        let memory = MemoryConfig::from_args(args)?;
        let largest = *sizes.iter().max().unwrap_or(&0) as u64;
        if largest * u64::from(args.qps) > 16 * MAX_MESSAGE_SIZE {
            return Err(ConfigError::AboveLimit {
                flag: "-s/--size x -q/--qp",
                value: largest * u64::from(args.qps),
                limit: "16 GiB of registered memory: lower -s or -q".into(),
            }
            .into());
        }
        let devices = check_devices(&args.ib_dev)?;
        crate::options::repeated_gpus::check_repeated_gpus(&memory.gpu, &devices)?;
        if devices.iter().any(|device| device == "auto") && !memory.kinds.iter().any(|kind| kind.is_on_gpu())
        {
            let kinds: Vec<&str> = memory.kinds.iter().map(|kind| kind.label()).collect();
            return Err(conflict(
                "-d/--ib-dev",
                format!(
                    "auto picks the NIC nearest to a GPU; --mem {} has none: name the device",
                    kinds.join(",")
                ),
            ));
        }
        Ok(BenchConfig {
            role,
            devices,
            ib_port: args.ib_port,
            gid_index: args.gid_index,
            ipv6_gid: args.ipv6,
            rdma_cm: args.rdma_cm,
            tcp_port: args.port,
            traffic_class,
            service_level,
            type_of_service,
            sizes,
            stop,
            margin_seconds,
            run_infinitely: args.run_infinitely,
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
            output: args.output,
            prometheus: args.prom.clone(),
            perftest_json: args.out_json.then(|| {
                args.out_json_file
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(crate::options::values::PERFTEST_JSON_DEFAULT_FILE))
            }),
            timeout: Duration::from_secs(args.timeout),
            accept_timeout,
            cpu,
            memory,
            bind,
            token,
            acceptance: Acceptance {
                min_bw: match args.limit_bw {
                    Some(limit) => Some(limit_bw(limit, args.report_gbits)?),
                    None => args.min_bw,
                },
                max_lat: args.max_lat.map(|limit| limit.on(args.lat_pct)),
                max_nic_errors: args.max_nic_errors,
                min_msg_rate_mpps: match args.min_msg_rate {
                    Some(rate) if !(rate.is_finite() && rate >= 0.0) => {
                        return Err(malformed("-y/--min-msg-rate", &rate.to_string(), "not a rate in Mpps"))
                    }
                    rate => rate,
                },
            },
            argv: gdrperf_command_line::redact_command_line(gdrperf_command_line::arguments()),
            latency_span: None,
            read_depth: ReadDepth::Fixed(16),
            shared_bounce_for_tests: std::env::var_os("GDRPERF_TEST_SHARED_BOUNCE").is_some(),
        })
    }

    /// The largest message of the sweep: the size of each QP's buffer.
    pub fn max_size(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(1)
    }

    /// Whether a server listens, without a token, on an address other hosts can reach (any but
    /// loopback): whoever connects first gets the run's memory keys, so the server warns.
    pub fn routable_without_token(&self) -> bool {
        self.role == Role::Server && self.token.is_none() && !self.listen_address().ip().is_loopback()
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
            // Not -m: as perftest's check_mtu, each side's -m is negotiated to the smaller
            // (the hello's active MTU carries it, `LocalResources::hello`), never a mismatch.
            "validate": self.validate,
            // Both sides connect the same way, or neither finds the other: checked with the terms.
            "rdma_cm": self.rdma_cm,
        })
    }
}

/// `--tclass` and `-S/--sl`: perftest's defaults (0), the SL within InfiniBand's 0-15, and
/// neither with `-R`, where the route rdma_cm resolves sets both (`-T/--tos` sets its ToS).
fn check_quality_of_service(args: &CommonArgs) -> Result<(Option<u8>, Option<u8>)> {
    if let Some(level) = args.service_level.filter(|level| *level > 15) {
        return Err(out_of_range("-S/--sl", level, "between 0 and 15 (InfiniBand has 16 service levels)"));
    }
    if !args.rdma_cm {
        return Ok((Some(args.traffic_class.unwrap_or(0)), Some(args.service_level.unwrap_or(0))));
    }
    let given = [("--tclass", args.traffic_class.is_some()), ("-S/--sl", args.service_level.is_some())];
    match given.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(conflict(
            flag,
            "is not supported with -R: rdma_cm's resolved route sets the traffic class and service level; \
             give the traffic class as -T/--tos (rdma_cm's ToS, as perftest), or rdma_cm's default ToS in configfs \
             (/sys/kernel/config/rdma_cm/DEVICE/ports/N/default_roce_tos), or drop -R to set them on the QPs",
        )),
        None => Ok((None, None)),
    }
}

/// `-T/--tos`: rdma_cm's type of service, valid only with `-R`, as perftest (which exits with
/// "TOS only valid for rdma_cm based QP and RawEth QP" without it).
fn check_type_of_service(args: &CommonArgs) -> Result<Option<u8>> {
    match (args.type_of_service, args.rdma_cm) {
        (Some(_), false) => Err(conflict(
            "-T/--tos",
            "is rdma_cm's type of service, valid only with -R (as perftest); for the QPs' traffic class without -R \
             give --tclass",
        )),
        (tos, _) => Ok(tos),
    }
}

/// `--min-bw` / `--max-lat` as the user wrote them.
#[derive(Debug, Clone, Default)]
pub struct Acceptance {
    pub min_bw: Option<gdrperf_threshold::BandwidthThreshold>,
    pub max_lat: Option<gdrperf_threshold::LatencyLimit>,
    pub max_nic_errors: Option<u64>,
    /// `--min-msg-rate` / perftest's `-y`, Mpps.
    pub min_msg_rate_mpps: Option<f64>,
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
            min_msg_rate_mpps: self.min_msg_rate_mpps,
        })
    }
}

/// `-d` entries: names, or `auto`; empty names (`-d a,,b`) are a typo.
fn check_devices(devices: &[String]) -> Result<Vec<String>> {
    if devices.iter().any(|device| device.trim().is_empty()) {
        return Err(conflict(
            "-d/--ib-dev",
            "has an empty entry: give device names separated by commas (mlx5_0,mlx5_1)",
        ));
    }
    Ok(devices.iter().map(|device| device.trim().to_string()).collect())
}

fn check_size(size: u64) -> Result<usize> {
    if size == 0 {
        return Err(out_of_range("-s/--size", 0, "at least 1 byte"));
    }
    if size > MAX_MESSAGE_SIZE {
        return Err(ConfigError::AboveLimit {
            flag: "-s/--size",
            value: size,
            limit: format!("the largest supported message ({MAX_MESSAGE_SIZE} bytes)"),
        }
        .into());
    }
    Ok(size as usize)
}

/// [`ConfigError::out_of_range`] as this module returns it.
fn out_of_range(flag: &'static str, value: impl ToString, allowed: &'static str) -> Error {
    ConfigError::out_of_range(flag, value, allowed).into()
}

/// [`MAX_TIMEOUT_SECONDS`] as the error message says it (a test keeps the two equal).
const MAX_TIMEOUT_TEXT: &str = "at most 2592000 seconds (30 days)";

/// perftest's `-w`: a floor in the unit of the table (perftest compares it with `bw_avg` in its
/// report unit), made a `--min-bw` threshold.
fn limit_bw(limit: f64, report_gbits: bool) -> Result<gdrperf_threshold::BandwidthThreshold> {
    let unit = if report_gbits { "Gb/s" } else { "MiB/s" };
    let text = format!("{limit}{unit}");
    if !(limit.is_finite() && limit >= 0.0) {
        return Err(malformed("-w/--limit_bw", &text, "not a bandwidth"));
    }
    gdrperf_threshold::BandwidthThreshold::parse(&text)
        .map_err(|error| malformed("-w/--limit_bw", &text, error))
}

/// [`ConfigError::conflict`] as this module returns it.
fn conflict(flag: &'static str, reason: impl Into<String>) -> Error {
    ConfigError::conflict(flag, reason).into()
}

/// [`ConfigError::malformed`] as this module returns it.
fn malformed(flag: &'static str, value: &str, problem: impl ToString) -> Error {
    ConfigError::malformed(flag, value, problem).into()
}

/// Largest inline size we accept. NICs accept a few hundred bytes (ConnectX: up to ~900, rxe:
/// 256+); above that the QP cannot be created, and the message would only say "invalid argument".
pub const MAX_INLINE_SIZE: u32 = 1024;

/// `-I/--inline-size` of the benches that take it: at most [`MAX_INLINE_SIZE`].
pub(crate) fn check_inline_size(size: u32) -> Result<u32> {
    if size > MAX_INLINE_SIZE {
        return Err(ConfigError::AboveLimit {
            flag: "-I/--inline-size",
            value: size.into(),
            limit: format!("{MAX_INLINE_SIZE} bytes, more than NICs accept inline"),
        }
        .into());
    }
    Ok(size)
}

impl BandwidthInlineArgs {
    /// `-I`, checked: at most `MAX_INLINE_SIZE` (1024) bytes.
    pub fn checked(&self) -> Result<u32> {
        check_inline_size(self.inline_size)
    }
}

// The bandwidth settings build on these; their home is `options::bandwidth`, named here too so
// that older paths keep working.
pub use crate::options::bandwidth::BandwidthConfig;

#[cfg(test)]
mod tests;
