//! Options of the latency benchmarks (`gdr-read-lat`, `gdr-write-lat`, `gdr-send-lat`) and the
//! validated settings built from them.
//!
//! As with [`crate::harness::CommonArgs`], the clap structs only describe the command line; the
//! `from_args` constructors check everything once, before any device is opened, and name the flag
//! in every message.

use std::path::PathBuf;
use std::time::Duration;

use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;

use crate::bench::{Bench, Operation};
use crate::error::{Error, Result};
use crate::harness::args::CommonArgs;
use crate::harness::config::{BenchConfig, LatencyFilePaths, LatencySpan, Role, StopRule, MAX_INLINE_SIZE};
use crate::output::latency_row::LatencyFiles;

/// Options every latency benchmark takes. The options only some take are in [`InlineArgs`]
/// and [`WriteLatencyArgs`], flattened by the binaries that support them, so that clap refuses
/// them everywhere else.
#[derive(Debug, Clone, clap::Args)]
pub struct LatencyArgs {
    /// Write each size's latency distribution into DIR (created if missing):
    /// per size, files named like read_lat-4096B.hgrm (percentile table, the format HdrHistogram's
    /// plotter reads) and read_lat-4096B.hdr (the whole histogram, V2-encoded, to merge or re-plot later).
    /// Default: none.
    #[arg(long = "hdr-dir", value_name = "DIR")]
    pub hdr_dir: Option<PathBuf>,

    /// Write an HdrHistogram interval log (one histogram per --hlog-interval) to PATH, to see
    /// latency drift over a long -D run. With several sizes, one file per size: PATH with the
    /// size (-4096B) before the extension. Default: none.
    #[arg(long = "hlog", value_name = "PATH")]
    pub hlog: Option<PathBuf>,

    /// Length of one interval of the --hlog interval log, in seconds.
    #[arg(long = "hlog-interval", value_name = "SECONDS", default_value_t = 1.0)]
    pub hlog_interval: f64,

    /// Dump every raw sample (nanoseconds, one per line, in the order taken) to PATH, as
    /// perftest's -H does. With several sizes, one file per size: PATH with the size (-4096B)
    /// before the extension. Needs -n (at most 1000000), since every sample is kept in memory.
    /// Default: none.
    #[arg(short = 'H', long = "histogram-raw", value_name = "PATH")]
    pub histogram_raw: Option<PathBuf>,

    /// What one sample spans: `iteration` (perftest's: from one post to the next, the whole
    /// iteration) or `arrival` (from the post to the answer's arrival: the wire alone).
    #[arg(long = "latency-span", value_name = "SPAN", value_enum, default_value_t = LatencySpan::Iteration)]
    pub latency_span: LatencySpan,
}

/// `-I` of the latency tests whose request carries the payload (gdr-write-lat, gdr-send-lat).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InlineArgs {
    /// Send messages up to this many bytes inline (the CPU copies them into the work request: no
    /// DMA read of the payload, lower latency). Default: perftest's (220 for write_lat, 236 for
    /// send_lat); 0 turns it off.
    #[arg(short = 'I', long = "inline-size", value_name = "BYTES")]
    pub inline_size: Option<u32>,
}

/// gdr-write-lat's own options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WriteLatencyArgs {
    #[command(flatten)]
    pub inline: InlineArgs,

    /// Announce each write with WRITE_WITH_IMM and wait for the receive completion, instead of
    /// polling the last byte of the buffer. This is what GPU memory (not CPU-visible) always
    /// uses; the flag lets host memory be measured the same way.
    #[arg(long = "write-with-imm")]
    pub write_with_imm: bool,
}

/// What a latency binary parsed of the options that only some tests take; the defaults where
/// its command line does not offer them.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestOptions {
    pub inline_size: Option<u32>,
    pub write_with_imm: bool,
}

impl From<&InlineArgs> for TestOptions {
    fn from(args: &InlineArgs) -> TestOptions {
        TestOptions { inline_size: args.inline_size, write_with_imm: false }
    }
}

impl From<&WriteLatencyArgs> for TestOptions {
    fn from(args: &WriteLatencyArgs) -> TestOptions {
        TestOptions { inline_size: args.inline.inline_size, write_with_imm: args.write_with_imm }
    }
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

impl LatencyConfig {
    /// `options`: what the binary's own flags said (clap already refused the flags a binary
    /// lacks; the checks below also hold for a library caller that passes them anyway).
    pub fn from_args(
        args: &LatencyArgs,
        options: TestOptions,
        common: &BenchConfig,
        test: LatencyTest,
    ) -> Result<LatencyConfig> {
        if common.qps != 1 {
            return Err(config(
                "-q/--qp: latency tests time one message at a time over one QP (as perftest's do); drop -q",
            ));
        }
        if common.acceptance.min_bw.is_some() {
            return Err(config("--min-bw applies to bandwidth results: a latency test is held to --max-lat"));
        }
        let inline_size = match (options.inline_size, test.default_inline_size()) {
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
        if options.write_with_imm && test != LatencyTest::Write {
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
        Ok(LatencyConfig { test, inline_size, write_with_imm: options.write_with_imm, files })
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

fn config(message: &str) -> Error {
    Error::Config(message.to_string())
}

/// What every latency binary builds from its command line, in one step: the common settings
/// (with perftest's latency defaults), the latency settings, and the HDR files when asked for.
pub fn latency_setup(
    common: &CommonArgs,
    latency: &LatencyArgs,
    options: TestOptions,
    bench: &Bench,
) -> Result<(BenchConfig, LatencyConfig, Option<LatencyFiles>)> {
    let test = match bench.operation {
        Operation::Read => LatencyTest::Read,
        Operation::Write => LatencyTest::Write,
        Operation::Send => LatencyTest::Send,
    };
    let name = bench.name;
    let mut common = BenchConfig::from_args(common, bench.defaults)?;
    common.latency_span = Some(latency.latency_span);
    let latency = LatencyConfig::from_args(latency, options, &common, test)?;
    let files = latency
        .files
        .any()
        .then(|| LatencyFiles::create(&latency.files, name, &common.sizes))
        .transpose()?
        .map(|files| files.with_command(&common.argv));
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
        #[command(flatten)]
        own: WriteLatencyArgs,
    }

    const DEFAULTS: TestDefaults = TestDefaults { size: 2, iterations: 1000, tx_depth: 1, warmup: 16 };

    fn latency(test: LatencyTest, arguments: &[&str]) -> Result<LatencyConfig> {
        let cli = LatencyCli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
            .map_err(|error| Error::Config(error.to_string()))?;
        let common = BenchConfig::from_args(&cli.common, DEFAULTS)?;
        LatencyConfig::from_args(&cli.latency, (&cli.own).into(), &common, test)
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
}
