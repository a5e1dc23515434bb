//! Options of the latency benchmarks (`gdr-read-lat`, `gdr-write-lat`, `gdr-send-lat`) and of
//! the SEND/RECV bandwidth benchmark (`gdr-send-bw`), and the validated settings built from them.
//!
//! As with [`crate::harness::CommonArgs`], the clap structs only describe the command line; the
//! `from_args` constructors check everything once, before any device is opened, and name the flag
//! in every message.

use std::path::PathBuf;
use std::time::Duration;

use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;

use crate::error::{Error, Result};
use crate::harness::args::CommonArgs;
use crate::harness::config::{BenchConfig, Role, StopRule, TestDefaults};
use crate::output::latency_row::LatencyFiles;

/// Options every latency benchmark takes.
#[derive(Debug, Clone, clap::Args)]
pub struct LatencyArgs {
    /// Send messages up to this many bytes inline (the CPU copies them into the work request: no
    /// DMA read of the payload, lower latency). Default: perftest's (220 for write_lat, 236 for
    /// send_lat); 0 turns it off. Not for read_lat: a READ request carries no payload.
    #[arg(short = 'I', long = "inline-size", value_name = "BYTES")]
    pub inline_size: Option<u32>,

    /// Write each size's latency distribution into DIR (created if missing):
    /// <test>-<size>B.hgrm (percentile table, the format HdrHistogram's plotter reads) and
    /// <test>-<size>B.hdr (the whole histogram, V2-encoded, to merge or re-plot later).
    #[arg(long = "hdr-dir", value_name = "DIR")]
    pub hdr_dir: Option<PathBuf>,

    /// Write an HdrHistogram interval log (one histogram per --hlog-interval) to PATH, to see
    /// latency drift over a long -D run. With several sizes, one file per size: PATH with
    /// -<size>B before the extension.
    #[arg(long = "hlog", value_name = "PATH")]
    pub hlog: Option<PathBuf>,

    /// Length of one interval of the --hlog interval log, in seconds.
    #[arg(long = "hlog-interval", value_name = "SECONDS", default_value_t = 1.0)]
    pub hlog_interval: f64,

    /// Dump every raw sample (nanoseconds, one per line, in the order taken) to PATH, as
    /// perftest's -H does. With several sizes, one file per size: PATH with -<size>B before the
    /// extension. Needs -n (at most 1000000), since every sample is kept in memory.
    #[arg(short = 'H', long = "histogram-raw", value_name = "PATH")]
    pub histogram_raw: Option<PathBuf>,

    /// gdr-write-lat only: announce each write with WRITE_WITH_IMM and wait for the receive
    /// completion, instead of polling the last byte of the buffer. This is what GPU memory
    /// (not CPU-visible) always uses; the flag lets host memory be measured the same way.
    #[arg(long = "write-with-imm")]
    pub write_with_imm: bool,
}

/// Which latency test the options are checked for: they differ in what applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyTest {
    Read,
    Write,
    Send,
}

impl LatencyTest {
    /// perftest's default inline size for the test, `None` where inline does not apply.
    fn default_inline_size(self) -> Option<u32> {
        match self {
            LatencyTest::Read => None,
            LatencyTest::Write => Some(220),
            LatencyTest::Send => Some(236),
        }
    }
}

/// Largest inline size we accept. NICs accept a few hundred bytes (ConnectX: up to ~900, rxe:
/// 256+); above that the QP cannot be created, and the message would only say "invalid argument".
pub const MAX_INLINE_SIZE: u32 = 1024;

/// Validated latency settings.
#[derive(Debug, Clone)]
pub struct LatencyConfig {
    pub test: LatencyTest,
    /// Messages up to this size are posted inline (0: never).
    pub inline_size: u32,
    /// write_lat: WRITE_WITH_IMM and a receive completion even where the buffer could be polled.
    pub write_with_imm: bool,
    pub files: LatencyFilePaths,
}

/// Where the latency distribution goes, besides the result rows.
#[derive(Debug, Clone, Default)]
pub struct LatencyFilePaths {
    pub hdr_dir: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    pub hlog_interval: Duration,
    pub histogram_raw: Option<PathBuf>,
}

impl LatencyFilePaths {
    /// Whether any file is asked for.
    pub fn any(&self) -> bool {
        self.hdr_dir.is_some() || self.hlog.is_some() || self.histogram_raw.is_some()
    }
}

impl LatencyConfig {
    pub fn from_args(args: &LatencyArgs, common: &BenchConfig, test: LatencyTest) -> Result<LatencyConfig> {
        if common.qps != 1 {
            return Err(config(
                "-q/--qp: latency tests time one message at a time over one QP (as perftest's do); drop -q",
            ));
        }
        let inline_size = match (args.inline_size, test.default_inline_size()) {
            (Some(_), None) => {
                return Err(config(
                    "-I/--inline-size does not apply to read_lat: a READ request carries no payload",
                ))
            }
            (Some(size), Some(_)) if size > MAX_INLINE_SIZE => {
                return Err(config(&format!(
                    "-I/--inline-size {size} is above {MAX_INLINE_SIZE} bytes, more than NICs accept inline"
                )))
            }
            (Some(size), Some(_)) => size,
            (None, default) => default.unwrap_or(0),
        };
        if args.write_with_imm && test != LatencyTest::Write {
            return Err(config("--write-with-imm applies to gdr-write-lat only"));
        }
        let files = LatencyFilePaths {
            hdr_dir: args.hdr_dir.clone(),
            hlog: args.hlog.clone(),
            hlog_interval: check_interval(args.hlog_interval)?,
            histogram_raw: args.histogram_raw.clone(),
        };
        if files.histogram_raw.is_some() {
            match common.stop {
                StopRule::Duration(_) => {
                    return Err(config(
                        "-H/--histogram-raw keeps every sample in memory: use it with -n, not -D (--hlog records long runs)",
                    ))
                }
                StopRule::Iterations(iterations) if iterations > EXACT_SAMPLE_LIMIT => {
                    return Err(config(&format!(
                        "-H/--histogram-raw keeps every sample in memory: -n must be at most {EXACT_SAMPLE_LIMIT}"
                    )))
                }
                StopRule::Iterations(_) => {}
            }
        }
        if files.any() && common.role == Role::Server {
            return Err(config(
                "--hdr-dir, --hlog and -H/--histogram-raw are written where the samples are taken, by the client \
                 (or with --loopback): give them to the client, not the server",
            ));
        }
        Ok(LatencyConfig { test, inline_size, write_with_imm: args.write_with_imm, files })
    }

    /// Whether a message of `size` bytes is posted inline from a buffer the CPU can read.
    pub fn inline(&self, size: usize, cpu_visible: bool) -> bool {
        cpu_visible && size <= self.inline_size as usize
    }
}

fn check_interval(seconds: f64) -> Result<Duration> {
    if !(seconds.is_finite() && (0.001..=3600.0).contains(&seconds)) {
        return Err(config("--hlog-interval must be between 0.001 and 3600 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Options of gdr-send-bw, besides the bandwidth ones (-Q, -b).
#[derive(Debug, Clone, clap::Args)]
pub struct SendArgs {
    /// Receives kept posted per QP; the receiver reposts each one as it consumes it. A sender
    /// that finds none posted is told to retry later (RNR), which costs bandwidth: keep it at or
    /// above -t/--tx-depth.
    #[arg(short = 'r', long = "rx-depth", value_name = "N", default_value_t = 512)]
    pub rx_depth: u32,

    /// Send messages up to this many bytes inline (0, the default, never).
    #[arg(short = 'I', long = "inline-size", value_name = "BYTES", default_value_t = 0)]
    pub inline_size: u32,
}

/// Validated gdr-send-bw settings.
#[derive(Debug, Clone, Copy)]
pub struct SendConfig {
    pub rx_depth: u32,
    pub inline_size: u32,
}

impl SendConfig {
    pub fn from_args(args: &SendArgs) -> Result<SendConfig> {
        if args.rx_depth == 0 || args.rx_depth > 16_384 {
            return Err(config("-r/--rx-depth must be between 1 and 16384"));
        }
        if args.inline_size > MAX_INLINE_SIZE {
            return Err(config(&format!(
                "-I/--inline-size {} is above {MAX_INLINE_SIZE} bytes, more than NICs accept inline",
                args.inline_size
            )));
        }
        Ok(SendConfig { rx_depth: args.rx_depth, inline_size: args.inline_size })
    }
}

fn config(message: &str) -> Error {
    Error::Config(message.to_string())
}

/// perftest's defaults for its latency tests: 2-byte messages, 1000 iterations, one outstanding.
pub const LATENCY_DEFAULTS: TestDefaults =
    TestDefaults { size: 2, iterations: 1000, tx_depth: 1, warmup: 16 };

/// What every latency binary builds from its command line, in one step: the common settings
/// (with perftest's latency defaults), the latency settings, and the HDR files when asked for.
pub fn latency_setup(
    common: &CommonArgs,
    latency: &LatencyArgs,
    test: LatencyTest,
    name: &'static str,
) -> Result<(BenchConfig, LatencyConfig, Option<LatencyFiles>)> {
    let common = BenchConfig::from_args(common, LATENCY_DEFAULTS)?;
    let latency = LatencyConfig::from_args(latency, &common, test)?;
    let files =
        latency.files.any().then(|| LatencyFiles::create(&latency.files, name, &common.sizes)).transpose()?;
    Ok((common, latency, files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{CommonArgs, TestDefaults};
    use clap::Parser;

    #[derive(Parser)]
    struct LatencyCli {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        latency: LatencyArgs,
    }

    #[derive(Parser)]
    struct SendCli {
        #[command(flatten)]
        send: SendArgs,
    }

    const DEFAULTS: TestDefaults = TestDefaults { size: 2, iterations: 1000, tx_depth: 1, warmup: 16 };

    fn latency(test: LatencyTest, arguments: &[&str]) -> Result<LatencyConfig> {
        let cli = LatencyCli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
            .map_err(|error| Error::Config(error.to_string()))?;
        let common = BenchConfig::from_args(&cli.common, DEFAULTS)?;
        LatencyConfig::from_args(&cli.latency, &common, test)
    }

    #[test]
    fn inline_defaults_follow_perftest_and_apply_to_cpu_memory_only() {
        assert_eq!(latency(LatencyTest::Write, &["--loopback"]).unwrap().inline_size, 220);
        assert_eq!(latency(LatencyTest::Send, &["--loopback"]).unwrap().inline_size, 236);
        assert_eq!(latency(LatencyTest::Read, &["--loopback"]).unwrap().inline_size, 0);
        let send = latency(LatencyTest::Send, &["--loopback", "-I", "64"]).unwrap();
        assert!(send.inline(64, true));
        assert!(!send.inline(65, true));
        assert!(!send.inline(2, false), "GPU memory is never posted inline");
    }

    #[test]
    fn bad_latency_input_is_refused_with_the_flag_named() {
        let cases: &[(LatencyTest, &[&str], &str)] = &[
            (LatencyTest::Read, &["--loopback", "-I", "64"], "-I/--inline-size does not apply"),
            (LatencyTest::Send, &["--loopback", "-I", "5000"], "-I/--inline-size 5000"),
            (LatencyTest::Send, &["--loopback", "--write-with-imm"], "--write-with-imm"),
            (LatencyTest::Write, &["--loopback", "-q", "2"], "-q/--qp"),
            (LatencyTest::Write, &["--loopback", "-D", "2", "-H", "x"], "use it with -n"),
            (LatencyTest::Write, &["--loopback", "-n", "2000000", "-H", "x"], "at most 1000000"),
            (LatencyTest::Write, &["--loopback", "--hlog", "x", "--hlog-interval", "0"], "--hlog-interval"),
            (LatencyTest::Write, &["--hdr-dir", "x"], "by the client"),
        ];
        for (test, arguments, expected) in cases {
            let message = latency(*test, arguments).err().map(|error| error.to_string()).unwrap_or_default();
            assert!(message.contains(expected), "{arguments:?} gave {message:?}");
        }
        assert!(latency(LatencyTest::Write, &["node2", "--hdr-dir", "x", "-H", "y", "-n", "10"]).is_ok());
    }

    #[test]
    fn send_options_default_to_perftest_and_are_checked() {
        let parse = |arguments: &[&str]| {
            SendCli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
                .map_err(|error| Error::Config(error.to_string()))
                .and_then(|cli| SendConfig::from_args(&cli.send))
        };
        let defaults = parse(&[]).unwrap();
        assert_eq!((defaults.rx_depth, defaults.inline_size), (512, 0));
        assert!(parse(&["-r", "0"]).unwrap_err().to_string().contains("-r/--rx-depth"));
        assert!(parse(&["-I", "4096"]).unwrap_err().to_string().contains("-I/--inline-size"));
    }
}
