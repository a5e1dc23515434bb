//! `gdrperf report DIR`: writes (again) the self-contained `report.html` of an acceptance
//! folder, for example one copied off a cluster or written before reports existed. `gdrperf
//! accept` writes the same page at the end of every run; the page is built in
//! `gdrperf_report::report_html` from the folder's files alone.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
Examples:
  gdrperf report acceptance-node7-2026-12-04T101500Z
  gdrperf report results/softroce/examples/acceptance --check    (verify the manifest only)

The folder must hold summary.json (as gdrperf accept writes it). The page holds the verdict,
per test plots, path ceiling causes, thresholds with sources, inventory.json, the commands and
a sha256sum manifest of every file (a link or special file in the folder is an error). --check
verifies the files against an existing report.html's manifest and names files it does not list:
exit 0 when all match, 1 when a file changed, went missing or was added.

The manifest proves the folder matches the page, not who made either: anyone who can edit the
folder can write the page again. Record the page's own SHA-256, printed when it is written, where
the folder's writers cannot change it.";

/// Flags of `gdrperf report`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The acceptance folder.
    #[arg(value_name = "DIR")]
    folder: PathBuf,
    /// Verify the folder against the manifest of its report.html instead of writing one.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use gdrperf_report::{manifest, report_html};
    if args.check {
        let path = args.folder.join(report_html::FILE_NAME);
        // The page itself read as any input: a regular file inside the folder, bounded.
        let html = manifest::read_inside(&args.folder, report_html::FILE_NAME)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| String::from_utf8(bytes).context("not UTF-8 text"))
            .with_context(|| format!("cannot read {}", path.display()))?;
        let text = report_html::manifest_text(&html)
            .with_context(|| format!("{} has no manifest block", path.display()))?;
        let problems = manifest::verify(&args.folder, &text, &[report_html::FILE_NAME]);
        for problem in &problems {
            println!("{problem}");
        }
        println!(
            "{} files listed, {} problems; report.html sha256 {} (compare with the digest recorded when it was signed)",
            text.lines().count(),
            problems.len(),
            manifest::sha256_hex(html.as_bytes())
        );
        return Ok(ExitCode::from(u8::from(!problems.is_empty())));
    }
    let written = report_html::write(&args.folder)?;
    println!("{}", written.describe());
    Ok(ExitCode::SUCCESS)
}
