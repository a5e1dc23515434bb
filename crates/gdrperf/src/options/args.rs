//! Command-line options shared by every bench binary, spelled as perftest spells them.
//!
//! These structs only describe the command line; [`crate::options::BenchConfig`] turns them into
//! a checked configuration once, so nothing downstream re-validates or reads raw flags.

use std::path::PathBuf;

/// Options every benchmark takes.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Server to connect to (default: none: this side is the server and waits for a client).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,

    /// Run server and client in this process, on one device: single-node acceptance, no second host.
    #[arg(long, conflicts_with = "host")]
    pub loopback: bool,

    /// RDMA device to use (default: the first one listed; `auto`: the one nearest to each GPU on
    /// PCIe). A list (mlx5_0,mlx5_1) pairs with the --gpu list in order, one NIC per GPU; with
    /// host memory it runs once per device.
    #[arg(short = 'd', long = "ib-dev", value_name = "DEVICE[,DEVICE...]", value_delimiter = ',')]
    pub ib_dev: Vec<String>,

    /// Port of the RDMA device.
    #[arg(short = 'i', long = "ib-port", default_value_t = 1, value_name = "PORT")]
    pub ib_port: u8,

    /// GID index (default: the RoCE v2 IPv4-mapped GID on RoCE, the LID on InfiniBand). With -R
    /// rdma_cm picks the GID from the address, as in perftest: the header shows the one it used.
    #[arg(short = 'x', long = "gid-index", value_name = "INDEX")]
    pub gid_index: Option<u32>,

    /// Without -x on RoCE: address the port by a RoCE v2 GID that holds an IPv6 address, not the
    /// IPv4-mapped one (perftest's --ipv6).
    #[arg(long = "ipv6", conflicts_with = "gid_index")]
    pub ipv6: bool,

    /// Connect the queue pairs through rdma_cm, as perftest's -R: the server's IP address is
    /// resolved to a device, port, GID and route by the RDMA connection manager, which swaps QP
    /// numbers (the TCP channel still carries parameters, keys and results). Both sides give it.
    #[arg(short = 'R', long = "rdma_cm", visible_alias = "rdma-cm")]
    pub rdma_cm: bool,

    /// Traffic class of the QPs' global route header, 0-255 (perftest's --tclass; default 0). On
    /// RoCE it is the IP header's DSCP and ECN byte (DSCP 26 is 104): a lossless (PFC) class
    /// needs the right one, or the test measures another queue. Not with -R (rdma_cm builds the
    /// route: give -T/--tos there).
    #[arg(long = "tclass", value_name = "0-255")]
    pub traffic_class: Option<u8>,

    /// With -R only, as perftest: rdma_cm's type of service for the connections, 0-255
    /// (rdma_set_option RDMA_OPTION_ID_TOS; on RoCE the IP header's DSCP and ECN byte, the
    /// traffic class). Without -R use --tclass. [default: rdma_cm's, from configfs'
    /// default_roce_tos]
    #[arg(short = 'T', long = "tos", value_name = "0-255")]
    pub type_of_service: Option<u8>,

    /// Service level of the QPs' address, 0-15 (perftest's -S; default 0): on InfiniBand the
    /// subnet manager maps it to a virtual lane and its QoS. Not with -R (rdma_cm's path record
    /// gives it).
    #[arg(short = 'S', long = "sl", value_name = "0-15")]
    pub service_level: Option<u8>,

    /// TCP port of the out-of-band exchange (with -R, rdma_cm listens from the same number up).
    #[arg(short = 'p', long = "port", default_value_t = 18515, value_name = "TCP_PORT")]
    pub port: u16,

    /// Message size in bytes (suffixes K, M, G are powers of two: 64K = 65536).
    #[arg(short = 's', long = "size", value_parser = gdrperf_command_line::parse_size, value_name = "BYTES")]
    pub size: Option<u64>,

    /// Sweep all sizes from 2 bytes to 8 MiB in powers of two.
    #[arg(short = 'a', long = "all", conflicts_with = "size")]
    pub all: bool,

    /// Iterations (messages per QP) for each size.
    #[arg(short = 'n', long = "iters", value_name = "N")]
    pub iters: Option<u64>,

    /// Run each size for this many seconds instead of a fixed number of iterations (default: none: -n).
    #[arg(
        short = 'D',
        long = "duration",
        conflicts_with = "iters",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub duration: Option<f64>,

    /// -D only: seconds left out of the measurement at each end (ramp-up and drain, perftest's
    /// margin; default: a quarter of -D, in whole seconds). -D must be longer than twice it.
    #[arg(short = 'f', long = "margin", value_name = "SECONDS", requires = "duration")]
    pub margin: Option<u64>,

    /// Bandwidth tests: run until Ctrl-C, a row every -D seconds (default 5, perftest's), each
    /// over its own window, no margin (perftest's --run_infinitely). Ctrl-C ends the run with
    /// exit 0 and every row kept (exit 130 with -b, where perftest dies by the signal).
    #[arg(long = "run-infinitely", alias = "run_infinitely", conflicts_with_all = ["all", "iters", "margin"])]
    pub run_infinitely: bool,

    /// Number of queue pairs (connections), used round-robin.
    #[arg(short = 'q', long = "qp", default_value_t = 1, value_name = "N")]
    pub qps: u32,

    /// Outstanding work requests per QP.
    #[arg(short = 't', long = "tx-depth", value_name = "N")]
    pub tx_depth: Option<u32>,

    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default: the smaller active MTU of both ports).
    #[arg(short = 'm', long = "mtu", value_name = "BYTES")]
    pub mtu: Option<u32>,

    /// Report bandwidth in Gb/s (10^9 bit/s) instead of MiB/s on the console (files carry both).
    #[arg(long = "report-gbits")]
    pub report_gbits: bool,

    /// Untimed iterations per QP before each size's measurement.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,

    /// Fill the source with a pattern and check the destination after each size; a mismatch fails the run.
    #[arg(long)]
    pub validate: bool,

    /// Write one CSV row per size to this file (created before measuring, each row written as its size completes;
    /// default: none). Columns: docs/columns.md.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Write results with run metadata as JSON to this file (rewritten as each size completes; default: none).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write perftest's JSON report (perftest's `--out_json`: `test_info` and `results` with
    /// perftest's key names, `jq .results.BW_average`), beside --json; to perftest_out.json
    /// unless --out_json_file names another file. Keeps every size of a sweep in `all_results`.
    #[arg(long = "out_json")]
    pub out_json: bool,

    /// The file of --out_json (default perftest_out.json). As in perftest, it only names the
    /// file: without --out_json nothing is written.
    #[arg(long = "out_json_file", value_name = "PATH")]
    pub out_json_file: Option<PathBuf>,

    /// Write the run's figures as a Prometheus textfile-collector file (name it NAME.prom in
    /// node_exporter's --collector.textfile.directory): bytes per second, messages per second,
    /// seconds; rewritten whole as each size completes (default: none). Metrics:
    /// docs/perftest-dropin.md.
    #[arg(long = "prom", value_name = "PATH")]
    pub prom: Option<PathBuf>,

    /// Print one figure per size on stdout and nothing else, as perftest's --output: bandwidth
    /// or message_rate (bandwidth tests), latency (latency tests: the average, µs) (default:
    /// none, the table).
    #[arg(long = "output", value_enum, value_name = "FIGURE")]
    pub output: Option<crate::options::values::OutputFigure>,

    /// Acceptance: fail any size whose average bandwidth is below this (90Gb/s, 11000MiB/s, or
    /// 80% of the port's rate; default: none, no limit).
    #[arg(long = "min-bw", value_name = "RATE", value_parser = parse_bandwidth_threshold)]
    pub min_bw: Option<gdrperf_threshold::BandwidthThreshold>,

    /// perftest's -w/--limit_bw: --min-bw in the table's unit (MiB/s, Gb/s with --report-gbits):
    /// the run exits with status 1 when a size's average is below it (default: none).
    #[arg(short = 'w', long = "limit_bw", value_name = "BW", conflicts_with = "min_bw")]
    pub limit_bw: Option<f64>,

    /// Acceptance: fail any size whose message rate is below this many Mpps (perftest's
    /// -y/--limit_msgrate; default: none).
    #[arg(short = 'y', long = "min-msg-rate", visible_alias = "limit_msgrate", value_name = "MPPS")]
    pub min_msg_rate: Option<f64>,

    /// Acceptance: fail any size whose latency (the statistic of --lat-pct) is above this (5us; default: none).
    #[arg(long = "max-lat", value_name = "TIME", value_parser = parse_latency_threshold)]
    pub max_lat: Option<gdrperf_threshold::LatencyThreshold>,

    /// Acceptance: fail any size during which more than N NIC error counter increments
    /// (retransmissions, sequence errors, RNR NAKs, drops: the row's nic_errors) were counted on
    /// this side's port (default: none, no limit).
    #[arg(long = "max-nic-errors", value_name = "N")]
    pub max_nic_errors: Option<u64>,

    /// The latency statistic --max-lat applies to: typical (median), avg, max, 99, 99.9, 99.99.
    #[arg(long = "lat-pct", value_name = "STATISTIC", default_value = "typical", value_parser = parse_latency_statistic)]
    pub lat_pct: gdrperf_threshold::LatencyStatistic,

    /// Where this side's buffers live: host (baseline), cuda (GPUDirect RDMA: the NIC reads and
    /// writes GPU memory), cuda-staged (GPU payload copied through pinned host memory). A list
    /// (host,cuda,cuda-staged) runs each in turn, on every --gpu, into one table and CSV.
    #[arg(
        long = "mem",
        value_parser = memory_kind_parser(),
        default_value = "host",
        value_name = "KIND[,KIND...]",
        value_delimiter = ','
    )]
    pub mem: Vec<MemoryKind>,

    /// GPUs for the cuda kinds: a CUDA device index, a list (0,2,3) or `all` (default 0). The
    /// run visits each in turn, or all at once with --concurrent (bandwidth tests). A GPU listed
    /// twice (0,0) is two lanes on it, each with its own NIC from -d (one device per entry). Indices are
    /// CUDA's: fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID (then PCI bus order, as
    /// nvidia-smi), counting only the GPUs in CUDA_VISIBLE_DEVICES; the header and every row
    /// give each index's bus id (0000:19:00.0). --gpu-bus-id does not depend on the order.
    #[arg(long = "gpu", value_name = "INDEX[,INDEX...]|all", conflicts_with = "gpu_bus_id")]
    pub gpu: Option<String>,

    /// GPU for the cuda kinds, by PCI address (0000:17:00.0; default: none, --gpu's index).
    #[arg(long = "gpu-bus-id", value_name = "BDF")]
    pub gpu_bus_id: Option<String>,

    /// How the NIC reaches GPU memory: dmabuf (ibv_reg_dmabuf_mr), peermem (ibv_reg_mr through
    /// nvidia-peermem), or auto (dma-buf when the GPU supports it, else peermem).
    #[arg(long = "gdr", value_enum, default_value_t = GdrPath::Auto, value_name = "MODE")]
    pub gdr: GdrPath,

    /// Register every buffer without PCIe relaxed ordering (perftest's flag). By default each
    /// registration asks for it (IBV_ACCESS_RELAXED_ORDERING), as perftest does; the header,
    /// CSV and JSON say whether it was asked for and taken.
    #[arg(long = "disable_pcie_relaxed", visible_alias = "disable-pcie-relaxed")]
    pub disable_pcie_relaxed: bool,

    /// Seconds to wait for the peer (connect, exchange) or for completion progress before giving up.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub timeout: u64,

    /// Server: give up when no client has passed the token and parameter checks after this many
    /// seconds (default: wait for ever, as perftest does). Clients that fail them are turned
    /// away and named on stderr; the server keeps waiting for the right one.
    #[arg(long = "accept-timeout", value_name = "SECONDS", conflicts_with_all = ["host", "loopback"])]
    pub accept_timeout: Option<u64>,

    /// Server: listen for the client on this address only (default: every address of this host).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["host", "loopback"])]
    pub bind: Option<String>,

    // --- CPU placement (see gdrperf::node::cpu_placement) ---
    /// CPUs for the measuring thread (and each --concurrent lane's): a list (3, 0-7, 0-3,8-11)
    /// or `none` to leave it to the scheduler. Default: the CPUs of the NIC's NUMA node (sysfs),
    /// unpinned where the machine gives no NUMA information. Buffers are allocated after pinning.
    #[arg(long = "cpu", value_name = "LIST|none", conflicts_with = "numa_node")]
    pub cpu: Option<String>,

    /// Run on the CPUs of this NUMA node instead of the NIC's (default: none, the NIC's node; see --cpu).
    #[arg(long = "numa-node", value_name = "N")]
    pub numa_node: Option<u32>,

    /// Shared secret: the server reveals its buffer addresses and keys only to a client that
    /// proves it knows the same token (an HMAC over a fresh challenge; the token itself never
    /// crosses the network). Give both sides the same one, preferably through the environment:
    /// other users of the host can read a command line. Default: none (no check).
    #[arg(long, env = "GDRPERF_TOKEN", hide_env_values = true, value_name = "SECRET")]
    pub token: Option<String>,

    /// Read the shared secret (--token) from this file, its first line: unlike a --token on the
    /// command line, a file readable by you alone shows the secret to no other user (one that
    /// others may read is refused, as ssh refuses such a key: chmod 600). Default: none (--token
    /// or GDRPERF_TOKEN, if given).
    #[arg(long = "token-file", value_name = "PATH")]
    pub token_file: Option<std::path::PathBuf>,
}

pub use crate::memory_kind::MemoryKind;

/// How GPU memory is registered with the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GdrPath {
    Auto,
    Dmabuf,
    Peermem,
}

/// Options of the bandwidth benchmarks.
#[derive(Debug, Clone, clap::Args)]
pub struct BandwidthArgs {
    /// Signal one work request in N (CQ moderation; default 100, but 1 when the one size (-s) is
    /// above 8 KiB, as perftest; lowered to the TX depth when larger).
    /// The last request of a run is always signaled.
    #[arg(short = 'Q', long = "cq-mod", value_name = "N")]
    pub cq_mod: Option<u32>,

    /// Measure both directions at once (each side sends); bandwidth is the sum.
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,

    /// With -b: after the table, perftest's "Local results" and "Remote results" tables, each
    /// direction's figures on its own (perftest's --report-both); --csv and --json add each
    /// direction as a row (lane local, remote), --out_json ends with the remote one as perftest's.
    /// Without -b it changes nothing, as in perftest.
    #[arg(long = "report-both")]
    pub report_both: bool,

    /// Post N work requests per post call, chained in one list (perftest's -l/--post_list). The
    /// CQ moderation then defaults to N; -n must be a multiple of N, N a multiple of -Q, and N at
    /// most -t. 1, the default: every call posts what the send queue has room for.
    #[arg(short = 'l', long = "post-list", alias = "post_list", value_name = "N")]
    pub post_list: Option<u32>,

    /// Run every listed GPU (--gpu 0,1 / all) or device (-d a,b) at the same time: one thread,
    /// control connection, QP set and buffer each, a row per lane and an aggregate row per size.
    /// Both sides give it.
    #[arg(long)]
    pub concurrent: bool,
}

/// `--mem`'s parser: the kinds by their labels, as clap lists possible values; `host-staged`
/// (the staged path without a GPU, for tests) is accepted but left out of the help. Here rather
/// than a clap derive on `MemoryKind`, which is the exchange's plain data.
fn memory_kind_parser() -> impl clap::builder::TypedValueParser<Value = MemoryKind> {
    use clap::builder::TypedValueParser as _;
    let listed = MemoryKind::ALL
        .map(|kind| clap::builder::PossibleValue::new(kind.label()).hide(kind == MemoryKind::HostStaged));
    clap::builder::PossibleValuesParser::new(listed)
        .try_map(|label| MemoryKind::from_label(&label).ok_or_else(|| format!("{label}: not a memory kind")))
}

/// `-I` of the bandwidth benches whose request carries the payload (gdr-write-bw, gdr-send-bw).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct BandwidthInlineArgs {
    /// Post messages up to this many bytes inline: the CPU copies them into the work request, so
    /// the NIC reads no payload from memory. 0, the default, never (perftest's bandwidth default).
    /// Host memory only: with GPU memory (the CPU cannot read it) nothing is inlined.
    #[arg(short = 'I', long = "inline-size", value_name = "BYTES", default_value_t = 0)]
    pub inline_size: u32,
}

/// gdr-write-bw's `--write-with-imm` (perftest's `--write_with_imm` on ib_write_bw).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct WriteImmediateArgs {
    /// Write with immediate data: the server posts a receive for every message, counts them and
    /// reports its own figures, as perftest's write_bw server then does (both sides give it; -n
    /// only, one direction).
    #[arg(long = "write-with-imm", alias = "write_with_imm")]
    pub write_with_imm: bool,
}

fn parse_bandwidth_threshold(text: &str) -> Result<gdrperf_threshold::BandwidthThreshold, String> {
    gdrperf_threshold::BandwidthThreshold::parse(text).map_err(|error| error.to_string())
}

fn parse_latency_threshold(text: &str) -> Result<gdrperf_threshold::LatencyThreshold, String> {
    gdrperf_threshold::LatencyThreshold::parse(text).map_err(|error| error.to_string())
}

fn parse_latency_statistic(text: &str) -> Result<gdrperf_threshold::LatencyStatistic, String> {
    gdrperf_threshold::LatencyStatistic::parse(text).map_err(|error| error.to_string())
}
