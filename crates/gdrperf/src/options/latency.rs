//! Options of the latency benchmarks (`gdr-read-lat`, `gdr-write-lat`, `gdr-send-lat`,
//! `gdr-atomic-lat`) and the validated settings built from them.
//!
//! As with [`crate::options::CommonArgs`], the clap structs only describe the command line; the
//! `from_args` constructors check everything once, before any device is opened, and name the flag
//! in every message.

use std::path::PathBuf;
use std::time::Duration;

use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;

use crate::error::{ConfigError, Error, Result};
use crate::options::config::check_inline_size;
use crate::options::config::{BenchConfig, LatencyFilePaths, LatencySpan, Role, StopRule};
use crate::options::perftest_defaults::{inline_size, InlineReason, InlineRequest};

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

    /// Dump every raw sample (nanoseconds, one per line, in the order taken) to PATH. With
    /// several sizes, one file per size: PATH with the size (-4096B) before the extension. Needs
    /// -n (at most 1000000), since every sample is kept in memory. Default: none. (Before issue
    /// 20 this was -H, which is now perftest's.)
    #[arg(long = "raw-samples", alias = "histogram-raw", value_name = "PATH")]
    pub histogram_raw: Option<PathBuf>,

    /// Print each size's samples in µs, sorted, less the two largest, as perftest's -H
    /// (`#, usec` then `i, value` lines on stdout, before the size's row). Needs -n.
    #[arg(short = 'H', long = "report-histogram", alias = "report-histogrm")]
    pub report_histogram: bool,

    /// Print each size's samples in µs in the order taken, as perftest's -U. Needs -n.
    #[arg(short = 'U', long = "report-unsorted")]
    pub report_unsorted: bool,

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
    #[arg(long = "write-with-imm", alias = "write_with_imm")]
    pub write_with_imm: bool,
}

/// `-A` of gdr-atomic-lat: which atomic it times.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct AtomicArgs {
    /// The atomic operation timed, as perftest's -A names them: FETCH_AND_ADD adds 1 to the
    /// peer's 8-byte counter, CMP_AND_SWAP swaps in the next value when the counter holds the
    /// expected one (both advance the counter by 1, which --validate checks).
    #[arg(short = 'A', long = "atomic-type", alias = "atomic_type", value_enum, value_name = "TYPE",
          default_value_t = AtomicOperation::FetchAndAdd)]
    pub atomic_type: AtomicOperation,
}

/// The atomic gdr-atomic-lat times (`-A`), spelled as perftest's `atomicTypesStr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AtomicOperation {
    #[value(name = "FETCH_AND_ADD")]
    FetchAndAdd,
    #[value(name = "CMP_AND_SWAP")]
    CompareAndSwap,
}

impl AtomicOperation {
    /// perftest's name of it (the run header, the run's parameters).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOperation::FetchAndAdd => "FETCH_AND_ADD",
            AtomicOperation::CompareAndSwap => "CMP_AND_SWAP",
        }
    }
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
    Atomic,
}

impl LatencyTest {
    /// perftest's default inline size for the test, `None` where inline does not apply.
    pub(crate) fn default_inline_size(self) -> Option<u32> {
        match self {
            LatencyTest::Read | LatencyTest::Atomic => None,
            LatencyTest::Write => Some(220),
            LatencyTest::Send => Some(236),
        }
    }
}

/// Validated latency settings.
#[derive(Debug, Clone)]
pub struct LatencyConfig {
    pub test: LatencyTest,
    /// `-I`, or the test's default on devices perftest knows (0: never); what a run uses is
    /// [`LatencyConfig::inline_size_for`].
    pub inline_size: u32,
    /// `-I` was given (then it holds on any device).
    pub inline_asked: bool,
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
            return Err(conflict(
                "-q/--qp",
                format!(
                    "{}: latency tests time one message at a time over one QP (as perftest's do); drop -q",
                    common.qps
                ),
            ));
        }
        if common.acceptance.min_bw.is_some() {
            return Err(conflict(
                "--min-bw",
                "applies to bandwidth results: a latency test is held to --max-lat",
            ));
        }
        if common.run_infinitely {
            return Err(conflict("--run-infinitely", "exists only in the bandwidth tests (as perftest's)"));
        }
        let inline_size = match (options.inline_size, test.default_inline_size()) {
            (Some(_), None) => {
                return Err(conflict(
                    "-I/--inline-size",
                    "does not apply to read_lat: a READ request carries no payload",
                ))
            }
            (Some(size), Some(_)) => check_inline_size(size)?,
            (None, default) => default.unwrap_or(0),
        };
        if test == LatencyTest::Atomic {
            check_atomic_size(&common.sizes, crate::bench::ATOMIC_LAT.binary)?;
        }
        if options.write_with_imm && test != LatencyTest::Write {
            return Err(conflict("--write-with-imm", "applies to gdr-write-lat only"));
        }
        let files = LatencyFilePaths {
            hdr_dir: args.hdr_dir.clone(),
            hlog: args.hlog.clone(),
            hlog_interval: check_interval(args.hlog_interval)?,
            histogram_raw: args.histogram_raw.clone(),
            report_sorted: args.report_histogram,
            report_unsorted: args.report_unsorted,
        };
        if files.keeps_every_sample() {
            match common.stop {
                StopRule::Duration(_) => {
                    return Err(conflict(
                        "--raw-samples, -H and -U",
                        "keep every sample in memory: use them with -n, not -D (--hlog records long runs)",
                    ))
                }
                StopRule::Iterations(iterations) if iterations > EXACT_SAMPLE_LIMIT => {
                    return Err(conflict(
                        "--raw-samples, -H and -U",
                        format!(
                            "keep every sample in memory: -n must be at most {EXACT_SAMPLE_LIMIT}, not {iterations}"
                        ),
                    ))
                }
                StopRule::Iterations(_) => {}
            }
        }
        if files.any() && common.role == Role::Server {
            return Err(conflict(
                "--hdr-dir, --hlog, --raw-samples, -H and -U",
                "are written where the samples are taken, by the client \
                 (or with --loopback): give them to the client, not the server",
            ));
        }
        let inline_asked = options.inline_size.is_some();
        Ok(LatencyConfig { test, inline_size, inline_asked, write_with_imm: options.write_with_imm, files })
    }

    /// The inline size a run uses and why: perftest's rule (`perftest_defaults::inline_size`) on this device
    /// (`known_device`: `perftest_defaults::perftest_knows_inline`)
    /// and memory (`cpu_visible`: host memory, not GPU memory).
    pub fn inline_size_for(&self, known_device: bool, cpu_visible: bool) -> (u32, InlineReason) {
        inline_size(self.inline_request(), known_device, cpu_visible)
    }

    /// `-I` as given, or the test's default (for [`crate::engines::latency::ping_pong_setup`]).
    pub fn inline_request(&self) -> InlineRequest {
        InlineRequest { size: self.inline_size, asked: self.inline_asked }
    }

    /// Whether a message of `size` bytes is posted inline, by [`LatencyConfig::inline_size_for`].
    pub fn inline(&self, size: usize, known_device: bool, cpu_visible: bool) -> bool {
        size <= self.inline_size_for(known_device, cpu_visible).0 as usize
    }
}

/// The one size of an atomic: 8 bytes.
pub const ATOMIC_SIZE: usize = 8;

/// The sizes `binary` (an atomic test) was asked for are its one size, [`ATOMIC_SIZE`]: perftest
/// exits on any other too ("Message size cannot be changed for Atomic tests").
pub fn check_atomic_size(sizes: &[usize], binary: &str) -> Result<()> {
    if sizes == [ATOMIC_SIZE] {
        return Ok(());
    }
    let asked = match sizes {
        [one] => one.to_string(),
        many => format!("-a ({} sizes)", many.len()),
    };
    let perftest = binary.replace("gdr-", "ib_").replace('-', "_");
    Err(conflict(
        "-s/--size",
        format!(
            "{asked}: an atomic is {ATOMIC_SIZE} bytes, the only size {binary} runs ({perftest} refuses others too)"
        ),
    ))
}

fn check_interval(seconds: f64) -> Result<Duration> {
    if !(seconds.is_finite() && (0.001..=3600.0).contains(&seconds)) {
        return Err(
            ConfigError::out_of_range("--hlog-interval", seconds, "between 0.001 and 3600 seconds").into()
        );
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// [`ConfigError::conflict`] as this module returns it.
fn conflict(flag: &'static str, reason: impl Into<String>) -> Error {
    ConfigError::conflict(flag, reason).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{CommonArgs, TestDefaults};
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
            .expect("clap takes the arguments");
        let common = BenchConfig::from_args(&cli.common, DEFAULTS)?;
        LatencyConfig::from_args(&cli.latency, (&cli.own).into(), &common, test)
    }

    #[test]
    fn inline_defaults_follow_perftest_and_apply_to_cpu_memory_only() {
        assert_eq!(latency(LatencyTest::Write, &["--loopback"]).unwrap().inline_size, 220);
        assert_eq!(latency(LatencyTest::Send, &["--loopback"]).unwrap().inline_size, 236);
        assert_eq!(latency(LatencyTest::Read, &["--loopback"]).unwrap().inline_size, 0);
        let send = latency(LatencyTest::Send, &["--loopback", "-I", "64"]).unwrap();
        assert!(send.inline(64, false, true), "-I holds on a device perftest does not know");
        assert!(!send.inline(65, true, true));
        assert!(!send.inline(2, true, false), "GPU memory is never posted inline");
        let write = latency(LatencyTest::Write, &["--loopback"]).unwrap();
        assert!(write.inline(220, true, true) && !write.inline(221, true, true));
        assert_eq!(
            write.inline_size_for(false, true),
            (0, InlineReason::UnknownDevice),
            "rxe: 0, as perftest"
        );
        assert!(!write.inline(2, false, true));
    }

    #[test]
    fn bad_latency_input_is_refused_with_the_flag_named() {
        let cases: &[(LatencyTest, &[&str], &str)] = &[
            (LatencyTest::Read, &["--loopback", "-I", "64"], "-I/--inline-size does not apply"),
            (LatencyTest::Send, &["--loopback", "-I", "5000"], "-I/--inline-size 5000"),
            (LatencyTest::Send, &["--loopback", "--write-with-imm"], "--write-with-imm"),
            (LatencyTest::Write, &["--loopback", "-q", "2"], "-q/--qp"),
            (LatencyTest::Write, &["--loopback", "-D", "2", "--raw-samples", "x"], "use them with -n"),
            (LatencyTest::Write, &["--loopback", "-D", "2", "-U"], "use them with -n"),
            (LatencyTest::Write, &["--loopback", "-n", "2000000", "-H"], "at most 1000000"),
            (LatencyTest::Write, &["-H"], "by the client"),
            (LatencyTest::Write, &["--loopback", "--hlog", "x", "--hlog-interval", "0"], "--hlog-interval"),
            (LatencyTest::Write, &["--hdr-dir", "x"], "by the client"),
        ];
        for (test, arguments, expected) in cases {
            let message = latency(*test, arguments).err().map(|error| error.to_string()).unwrap_or_default();
            assert!(message.contains(expected), "{arguments:?} gave {message:?}");
        }
        assert!(latency(LatencyTest::Write, &["node2", "--hdr-dir", "x", "--raw-samples", "y", "-n", "10"])
            .is_ok());
        let listings =
            latency(LatencyTest::Read, &["--loopback", "-H", "-U", "--histogram-raw", "y"]).unwrap();
        assert!(listings.files.report_sorted && listings.files.report_unsorted);
        assert!(listings.files.histogram_raw.is_some(), "the old long name still names the raw dump");
        let cli = LatencyCli::try_parse_from(["test", "--loopback", "-D", "8", "-f", "1"]).unwrap();
        let refused = crate::engines::latency::latency_settings(
            &cli.common,
            &cli.latency,
            (&cli.own).into(),
            &crate::bench::WRITE_LAT,
        )
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
        assert!(refused.contains("-f/--margin applies to bandwidth tests"), "{refused}");
    }
}
