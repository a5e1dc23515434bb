//! `gdrperf compare`: did this change regress, and how much does GPUDirect buy?
//!
//! The work is in the `gdrperf-report` library (reading result files, joining, judging); this
//! module only turns flags into calls and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use gdrperf_report::{compare_memory_modes, compare_repeated, compare_runs, parse_tolerance, ResultFile};

const AFTER_HELP: &str = "\
Examples:
  gdrperf compare --base a1.json,a2.json,a3.json --new b1.json,b2.json,b3.json
  gdrperf compare results/node1/before.json results/node1/after.json --tolerance 3%
  gdrperf compare write_bw-host.csv write_bw-cuda.csv write_bw-cuda-staged.csv --by mem

Rows are joined on (test, memory modes, GPU, size). Bandwidth rows compare bw_avg_gbit_s
(higher is better), latency rows t_typical_us (lower is better); --metric names another
column. Rows found in only one file are listed, never dropped.

Evidence: with --base and --new (2 or more runs each; 3 is the recipe) a row regresses when a
one-sided t-test on the logs of its runs gives p < 0.05 and the ratio of the two sides'
geometric means is worse than --tolerance. At a run-to-run spread of 3% (a quiet host), 3 runs
a side flag a 10% drop 96 times in 100 and identical runs about once in 100
(docs/methodology.md, \"Judging a change\", has the table). A change beyond the tolerance but
within the noise reads \"not significant\" with the runs a side that would decide it. With one
run a side nothing measures the noise (identical sweeps under load differ by 5-40% per size): a
change beyond the tolerance reads \"single run, cannot tell from noise\" and is never a
regression. Parameters that differ between the runs (stop rule, TX depth, QPs, ...) are
printed as \"parameters differ: ...\" above the table.

Exit codes:
  0  no row regressed (always 0 with single runs and with --by mem)
  1  at least one row regressed
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
    /// BASE and NEW result files (CSV or JSON); with --by mem, the file(s) of one run. Required
    /// unless --base and --new are given.
    #[arg(value_name = "FILE", required_unless_present = "base")]
    files: Vec<PathBuf>,
    /// Repeated runs of the base, comma-separated (default: none): with --new, each row tested
    /// for significance (a t-test on the logs); 3 runs a side is the recipe.
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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let read = |paths: &[PathBuf]| -> anyhow::Result<Vec<ResultFile>> {
        let files = paths.iter().map(|path| ResultFile::read(path)).collect::<Result<Vec<_>, _>>()?;
        for file in &files {
            println!("{}: {} rows, {}", file.name, file.rows.len(), file.provenance());
        }
        Ok(files)
    };
    if !args.base.is_empty() {
        let (base, new) = (read(&args.base)?, read(&args.new)?);
        println!();
        let comparison =
            compare_repeated(&base, &new, args.metric.as_deref(), parse_tolerance(&args.tolerance)?)?;
        print!("{}", comparison.render());
        write_json(&args, &comparison)?;
        return Ok(if comparison.regressions() > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    if let [base, new] = args.files.as_slice() {
        if base.is_dir() && new.is_dir() {
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
            print!("{}", comparison.render());
            write_json(&args, &comparison)?;
            Ok(if comparison.regressions() > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
    }
}

fn write_json(args: &Args, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let Some(path) = &args.json else { return Ok(()) };
    let text = serde_json::to_string_pretty(value).context("serializing the comparison")?;
    gdrperf_files::write_file(path, (text + "\n").as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
