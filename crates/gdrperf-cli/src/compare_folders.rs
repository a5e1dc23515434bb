//! `gdrperf compare BASE_DIR NEW_DIR` on two acceptance folders (or `--base DIR,DIR,DIR --new
//! DIR,DIR,DIR` on repeated ones): first what changed in the node (`inventory.json`, diffed by
//! `gdrperf_report::inventory_diff`: a NIC swapped, firmware moved, a link retrained narrower),
//! then the numbers, bench file by bench file, as `gdrperf compare` judges result files, the
//! files sharing one false-alarm budget (`compare_sharing`) so that the folder's exit code is
//! one calibrated decision. Kept apart from `compare.rs`, which only hands folders over.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use gdrperf_files::columns as column;
use gdrperf_report::inventory_diff;
use gdrperf_report::report_inventory::FILE_NAME as INVENTORY;
use gdrperf_report::{compare_sharing, parse_tolerance, Decision, ResultFile};
use serde_json::Value;

/// Compares acceptance folders (one or more runs a side); exit 1 when the decision over every
/// bench file is a regression. Inventory changes (of the first folder of each side) are
/// printed, not judged: a firmware update is not a failure by itself.
pub fn run(
    base_folders: &[std::path::PathBuf],
    new_folders: &[std::path::PathBuf],
    metric: Option<&str>,
    tolerance: &str,
) -> anyhow::Result<ExitCode> {
    let tolerance = parse_tolerance(tolerance)?;
    let (base, new) = (base_folders[0].as_path(), new_folders[0].as_path());
    let inventory = |folder: &Path| -> anyhow::Result<Option<Value>> {
        let path = folder.join(INVENTORY);
        if !path.exists() {
            println!(
                "{}: no {INVENTORY} (written before gdrperf recorded one): its facts read '-'",
                folder.display()
            );
            return Ok(None);
        }
        let text = gdrperf_files::read_named_text(&path, gdrperf_files::MAX_RESULT_FILE_BYTES)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Some(serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?))
    };
    let (base_inventory, new_inventory) = (inventory(base)?, inventory(new)?);
    if base_inventory.is_none() && new_inventory.is_none() {
        println!("inventory: not compared (neither folder has {INVENTORY})");
    } else {
        print!(
            "{}",
            inventory_diff::render(&inventory_diff::diff(
                base_inventory.as_ref().unwrap_or(&Value::Null),
                new_inventory.as_ref().unwrap_or(&Value::Null)
            ))
        );
    }
    let folders: Vec<&Path> = base_folders.iter().chain(new_folders).map(|folder| folder.as_path()).collect();
    let listed = folders.iter().map(|folder| bench_files(folder)).collect::<anyhow::Result<Vec<_>>>()?;
    let common: Vec<&String> =
        listed[0].iter().filter(|name| listed.iter().all(|files| files.contains(name))).collect();
    for (folder, files) in folders.iter().zip(&listed) {
        for name in files.iter().filter(|name| !common.contains(name)) {
            println!("only in {}: {name}", folder.display());
        }
    }
    let read = |folders: &[std::path::PathBuf], name: &str| -> anyhow::Result<Vec<ResultFile>> {
        Ok(folders
            .iter()
            .map(|folder| ResultFile::read(&folder.join(name)))
            .collect::<Result<Vec<_>, _>>()?)
    };
    let mut verdicts = Vec::new();
    for name in &common {
        let (base_runs, new_runs) = (read(base_folders, name)?, read(new_folders, name)?);
        let comparison = compare_sharing(&base_runs, &new_runs, metric, tolerance, common.len())?;
        println!("\n{name}");
        print!("{}", comparison.render());
        verdicts.push(comparison.verdict);
    }
    let verdict = if verdicts.contains(&Decision::Regression) {
        Decision::Regression
    } else if verdicts.contains(&Decision::Undecided) {
        Decision::Undecided
    } else {
        Decision::Pass
    };
    println!("\nfolders: {} (the {} bench files share one false-alarm budget)", verdict.word(), common.len());
    Ok(ExitCode::from(verdict.contract().exit_code()))
}

/// The bench result files an acceptance folder's summary names (its `result_file` column).
fn bench_files(folder: &Path) -> anyhow::Result<Vec<String>> {
    let path = folder.join("summary.json");
    let text =
        gdrperf_files::read_named_text(&path, gdrperf_files::MAX_RESULT_FILE_BYTES).with_context(|| {
            format!("cannot read {} (is {} an acceptance folder?)", path.display(), folder.display())
        })?;
    let summary: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let mut files: Vec<String> = summary["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| row[column::RESULT_FILE.name()].as_str())
        .filter(|file| !file.is_empty() && folder.join(file).is_file())
        .map(str::to_string)
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}
