//! `gdrperf compare`: did this change regress, and how much does GPUDirect buy?
//!
//! The work is in the `gdrperf-report` library (reading result files, joining, judging); this
//! module only turns flags into calls and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use gdrperf_report::junit::junit_xml;
use gdrperf_report::{
    compare_memory_modes, compare_repeated, compare_runs, parse_tolerance, Comparison, ResultFile,
};

const AFTER_HELP: &str = "\
Examples:
  gdrperf compare --base a1.csv,a2.csv,a3.csv --new b1.csv,b2.csv,b3.csv --junit compare.xml
  gdrperf compare results/node1/before.json results/node1/after.json --tolerance 3%
  gdrperf compare h1.csv c1.csv s1.csv h2.csv c2.csv s2.csv h3.csv c3.csv s3.csv --by mem
  gdrperf compare --base accept-a1,accept-a2,accept-a3 --new accept-b1,accept-b2,accept-b3

Rows are joined on (test, memory modes, GPU, lane, size). Bandwidth rows compare bw_avg_gbit_s
(higher is better), latency rows t_typical_us (lower is better); --metric names another
column. Rows found in only one side are listed, never dropped.

One decision per comparison (--base/--new, 2 or more runs a side; 3 is the recipe): each sweep
(a test, memory mode, GPU and lane over its sizes; and a file's GPUDirect-over-staged and
GPUDirect-over-host speed-ups) is tested whole, in bands of 4 neighbouring sizes and size by
size, each a t-test over runs on the logs, all sharing one 3.5% false-alarm budget (weighted
Holm). A size is a REGRESSION when a test covering it found the new runs worse and both that
group's change and the size's own are worse than --tolerance. Simulated through this code
(results/compare/power.md, 23 sizes, heavy-tailed noise, per whole comparison): identical
sweeps end in a regression in at most 4.4% of comparisons; a 10% drop of the whole sweep is
found in 100% at 3% spread with 3 runs a side and 99.8% at 10% with 5; a 10% drop at 4
neighbouring sizes 99.9% at 3% with 5 (noise independent across sizes; where a run's sizes
share their noise: 89%, 31%, 81%). Stalled, interrupted and zero values are said; runs of one side that differ in commit, host or command are warned about by
name. With one run a side nothing measures the noise: a change beyond the tolerance is
\"undecided\", never a regression. --by mem sets the modes of one run (or of repeated runs:
the k-th file holding a row is run k) side by side, each speed-up with its 95% interval.
Acceptance folders (DIR_A DIR_B, or repeated: --base DIR,DIR,DIR --new DIR,DIR,DIR) are compared
bench file by bench file, the files sharing the one budget; the inventory diff comes first.

Exit codes (--json's \"verdict\", the whole's and each row's, spells them as every gdrperf
tool does: pass, undecided, fail, error; a row's \"finding\" says regression or improvement):
  0  pass, or undecided (the runs cannot tell a change beyond --tolerance from their noise;
     more runs a side would decide); always 0 with --by mem, which judges nothing
  1  fail: a regression (the printed verdict says \"regression\")
  2  an input could not be read or joined";

/// What to compare inside one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// The memory modes side by side: host, cuda-staged, cuda.
    Mem,
}

/// Flags of `gdrperf compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// BASE and NEW result files (CSV or JSON); with --by mem, the files of one run or of repeated runs. Required
    /// unless --base and --new are given.
    #[arg(value_name = "FILE", required_unless_present = "base")]
    files: Vec<PathBuf>,
    /// Repeated runs of the base, comma-separated (default: none): with --new, one decision for
    /// the whole comparison (see below); 3 runs a side is the recipe.
    #[arg(long, value_name = "FILE,FILE...", value_delimiter = ',', requires = "new", conflicts_with_all = ["files", "by"])]
    base: Vec<PathBuf>,
    /// Repeated runs of the new version, comma-separated (default: none).
    #[arg(long, value_name = "FILE,FILE...", value_delimiter = ',', requires = "base")]
    new: Vec<PathBuf>,
    /// How much worse a value may get before it counts as a regression (5%, 0.5%).
    #[arg(long, default_value = "5%", value_name = "PERCENT")]
    tolerance: String,
    /// Compare the memory modes inside one run instead of two runs (default: none, two runs).
    #[arg(long, value_enum)]
    by: Option<By>,
    /// With --by mem: the mode speed-ups are relative to (default cuda-staged, else host).
    #[arg(long, value_name = "MODE", requires = "by")]
    baseline: Option<String>,
    /// The column to compare (default bw_avg_gbit_s for bandwidth, t_typical_us for latency).
    #[arg(long, value_name = "COLUMN")]
    metric: Option<String>,
    /// Also write the comparison as JSON to this file (default: none).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write the decision as JUnit XML to this file, for CI (default: none): a test case per
    /// size, mode and lane, a failure naming the change, its 95% interval and p.
    #[arg(long, value_name = "PATH", conflicts_with = "by")]
    junit: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let read = |paths: &[PathBuf]| -> anyhow::Result<Vec<ResultFile>> {
        let files = paths.iter().map(|path| ResultFile::read(path)).collect::<Result<Vec<_>, _>>()?;
        for file in &files {
            println!("{}: {} rows, {}", file.name, file.rows.len(), file.provenance());
        }
        Ok(files)
    };
    if !args.base.is_empty() && args.base.iter().chain(&args.new).all(|path| path.is_dir()) {
        return crate::compare_folders::run(&args.base, &args.new, args.metric.as_deref(), &args.tolerance);
    }
    if !args.base.is_empty() {
        let (base, new) = (read(&args.base)?, read(&args.new)?);
        println!();
        let comparison =
            compare_repeated(&base, &new, args.metric.as_deref(), parse_tolerance(&args.tolerance)?)?;
        return report(&args, &comparison);
    }
    if let [base, new] = args.files.as_slice() {
        if base.is_dir() && new.is_dir() {
            let (base, new) = (std::slice::from_ref(base), std::slice::from_ref(new));
            return crate::compare_folders::run(base, new, args.metric.as_deref(), &args.tolerance);
        }
    }
    let files = read(&args.files)?;
    println!();
    match args.by {
        Some(By::Mem) => {
            let modes = compare_memory_modes(&files, args.metric.as_deref(), args.baseline.as_deref())?;
            print!("{}", modes.render());
            write_json(&args, &modes)?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let [base, new] = files.as_slice() else {
                bail!(
                    "compare takes two files, BASE and NEW (got {}); to set the memory modes of one run side by side, add --by mem",
                    files.len()
                );
            };
            let tolerance = parse_tolerance(&args.tolerance)?;
            let comparison = compare_runs(base, new, args.metric.as_deref(), tolerance)?;
            report(&args, &comparison)
        }
    }
}

/// Prints the comparison, writes what was asked, and gives its exit code.
fn report(args: &Args, comparison: &Comparison) -> anyhow::Result<ExitCode> {
    print!("{}", comparison.render());
    write_json(args, comparison)?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit_xml(comparison)).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from(comparison.exit_code()))
}

fn write_json(args: &Args, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let Some(path) = &args.json else { return Ok(()) };
    let text = serde_json::to_string_pretty(value).context("serializing the comparison")?;
    gdrperf_files::write_file(path, (text + "\n").as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
