//! `gdrperf compare BASE_DIR NEW_DIR` on two acceptance folders: first what changed in the node
//! (`inventory.json`, diffed by `gdrperf_report::inventory_diff`: a NIC swapped, firmware
//! moved, a link retrained narrower), then the numbers, bench file by bench file, as
//! `gdrperf compare` judges two result files. Kept apart from `compare.rs`, which only hands
//! two folders over.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use gdrperf_report::inventory_diff;
use gdrperf_report::report_inventory::FILE_NAME as INVENTORY;
use gdrperf_report::{compare_runs, parse_tolerance, ResultFile};
use serde_json::Value;

/// Compares two acceptance folders; exit 1 when a number regressed beyond `tolerance`.
/// Inventory changes are printed, not judged: a firmware update is not a failure by itself.
pub fn run(base: &Path, new: &Path, metric: Option<&str>, tolerance: &str) -> anyhow::Result<ExitCode> {
    let tolerance = parse_tolerance(tolerance)?;
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
    let (base_files, new_files) = (bench_files(base)?, bench_files(new)?);
    for name in base_files.iter().filter(|name| !new_files.contains(name)) {
        println!("only in {}: {name}", base.display());
    }
    for name in new_files.iter().filter(|name| !base_files.contains(name)) {
        println!("only in {}: {name}", new.display());
    }
    let mut regressions = 0;
    for name in base_files.iter().filter(|name| new_files.contains(name)) {
        let (base_file, new_file) = (ResultFile::read(&base.join(name))?, ResultFile::read(&new.join(name))?);
        let comparison = compare_runs(&base_file, &new_file, metric, tolerance)?;
        println!("\n{name}");
        print!("{}", comparison.render());
        regressions += comparison.regressions();
    }
    Ok(if regressions > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
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
        .filter_map(|row| row["result_file"].as_str())
        .filter(|file| !file.is_empty() && folder.join(file).is_file())
        .map(str::to_string)
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}
