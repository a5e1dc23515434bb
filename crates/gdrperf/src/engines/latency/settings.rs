//! What a latency binary builds from its command line before it runs: its checked settings and,
//! when asked for, its HDR files, made in one step, so that every latency binary makes them the
//! same way. The next step of the set-up, what the run asks of the harness (queues, buffers,
//! header lines), is `setup.rs` beside this file.

use crate::bench::{Bench, Verb};
use crate::error::{ConfigError, Result};
use crate::options::args::CommonArgs;
use crate::options::config::BenchConfig;
use crate::options::latency::{LatencyArgs, LatencyConfig, LatencyTest, TestOptions};
use crate::output::latency_row::LatencyFiles;

/// What every latency binary builds from its command line, in one step: the common settings
/// (with perftest's latency defaults), the latency settings, and the HDR files when asked for.
pub fn latency_settings(
    common: &CommonArgs,
    latency: &LatencyArgs,
    options: TestOptions,
    bench: &Bench,
) -> Result<(BenchConfig, LatencyConfig, Option<LatencyFiles>)> {
    if common.margin.is_some() {
        // perftest's latency tests under -D report one average over the middle window; ours
        // sample the whole duration, so a margin would be accepted and do nothing.
        return Err(ConfigError::conflict(
            "-f/--margin",
            "applies to bandwidth tests: a latency test's -D samples the whole duration",
        )
        .into());
    }
    let test = match bench.verb {
        Verb::Read => LatencyTest::Read,
        Verb::Write => LatencyTest::Write,
        Verb::Send => LatencyTest::Send,
        Verb::Atomic => LatencyTest::Atomic,
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
