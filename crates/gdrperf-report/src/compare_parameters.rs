//! Which run parameters differ between the two sides of a comparison: a 500-iteration run
//! against a 200-iteration one, or `-t 1` against `-t 128`, changes the figures by itself.
//!
//! JSON files carry the bench's `metadata.parameters` (stop rule, warm-up, QPs, TX depth, CQ
//! moderation, ...); CSV files only the rows, whose setting columns are compared instead.
//! The rows' setting columns are named by [`ColumnName`]; `metadata.parameters` stays
//! `serde_json::Value`: it is the bench's settings as it recorded them, not result columns, and
//! every name in it is compared alike, so one added later needs nothing here.

use std::collections::BTreeSet;

use serde_json::Value;

use gdrperf_files::columns::{self as column, ColumnName};

use crate::results::ResultFile;

/// Row columns that are settings, not measurements (see docs/columns.md).
const SETTING_COLUMNS: [ColumnName; 8] = [
    column::QPS,
    column::TX_DEPTH,
    column::CQ_MOD,
    column::BIDIRECTIONAL,
    column::MTU,
    column::INLINE_SIZE,
    column::ARRIVAL,
    column::LATENCY_SPAN,
];

/// Parameters whose sets of values differ between the sides, as "name: base X, new Y". The
/// message sizes are left out: rows are joined per size, and the sizes only one side has are
/// listed by the comparison already.
pub fn differences(base: &[ResultFile], new: &[ResultFile]) -> Vec<String> {
    let mut differences = Vec::new();
    let mut named = BTreeSet::new();
    let parameters = |side: &[ResultFile]| -> Vec<serde_json::Map<String, Value>> {
        side.iter().filter_map(|file| file.metadata.get("parameters")?.as_object().cloned()).collect()
    };
    let (base_parameters, new_parameters) = (parameters(base), parameters(new));
    if base_parameters.len() == base.len() && new_parameters.len() == new.len() {
        let names: BTreeSet<&String> =
            base_parameters.iter().chain(&new_parameters).flat_map(|map| map.keys()).collect();
        // Sizes are joined per row; a parameter an older file lacks is not a difference.
        let everywhere =
            |name: &String| base_parameters.iter().chain(&new_parameters).all(|map| map.contains_key(name));
        for name in names.into_iter().filter(|name| *name != "sizes" && everywhere(name)) {
            let values = |side: &[serde_json::Map<String, Value>]| -> BTreeSet<String> {
                side.iter().map(|map| map.get(name).map_or_else(String::new, Value::to_string)).collect()
            };
            if let Some(line) = line(name, values(&base_parameters), values(&new_parameters)) {
                differences.push(line);
                named.insert(name.clone());
            }
        }
    }
    for column in SETTING_COLUMNS.into_iter().filter(|setting| !named.contains(setting.name())) {
        let values = |side: &[ResultFile]| -> BTreeSet<String> {
            side.iter()
                .flat_map(|file| &file.rows)
                .map(|row| row.text(column))
                .filter(|value| !value.is_empty())
                .collect()
        };
        let (base_values, new_values) = (values(base), values(new));
        if !base_values.is_empty() && !new_values.is_empty() {
            differences.extend(line(column.name(), base_values, new_values));
        }
    }
    differences
}

/// Metadata (the `#` header lines of a CSV, a JSON file's `metadata`) that one side's runs
/// should share: runs of different commits, hosts or commands on one side are not repeated runs
/// of one thing.
const SHARED_WITHIN_A_SIDE: [&str; 3] = ["git_commit", "host", "command"];

/// Warnings naming the runs of one side (`label`: "base", "new") that differ in commit, host or
/// command (output paths aside), each file with its value.
pub fn mixed_runs(label: &str, side: &[ResultFile]) -> Vec<String> {
    let mut warnings = Vec::new();
    for key in SHARED_WITHIN_A_SIDE {
        let values: Vec<(String, String)> = side
            .iter()
            .map(|file| (file.name.clone(), file.metadata_text(key)))
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| (name, if key == "command" { without_output_paths(&value) } else { value }))
            .collect();
        let distinct: BTreeSet<&String> = values.iter().map(|(_, value)| value).collect();
        if distinct.len() > 1 {
            let named: Vec<String> = values.iter().map(|(name, value)| format!("{name} {value}")).collect();
            warnings.push(format!(
                "the {label} runs differ in {key} ({}): they are not repeats of one run",
                named.join("; ")
            ));
        }
    }
    warnings
}

/// A bench command without the paths it wrote to, which differ between repeats by design.
fn without_output_paths(command: &str) -> String {
    const OUTPUTS: [&str; 4] = ["--csv", "--json", "--hdr-dir", "--output"];
    let mut kept = Vec::new();
    let mut skip = false;
    for word in command.split_whitespace() {
        if skip {
            skip = false;
        } else if OUTPUTS.contains(&word) {
            skip = true;
        } else if !OUTPUTS.iter().any(|flag| word.starts_with(&format!("{flag}="))) {
            kept.push(word);
        }
    }
    kept.join(" ")
}

fn line(name: &str, base: BTreeSet<String>, new: BTreeSet<String>) -> Option<String> {
    let join = |values: BTreeSet<String>| values.into_iter().collect::<Vec<_>>().join(" / ");
    (base != new).then(|| format!("{name}: base {}, new {}", join(base), join(new)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(name: &str, parameters: &str, tx_depth: u32) -> ResultFile {
        let text = format!(
            r#"{{"metadata": {{"parameters": {parameters}}}, "results": [
                {{"test": "write_bw", "bytes": 2, "bw_avg_gbit_s": 1.0, "tx_depth": {tx_depth}}}]}}"#
        );
        ResultFile::parse_json(name, &text).unwrap()
    }

    #[test]
    fn differing_parameters_are_named_with_both_values() {
        let base = json("a.json", r#"{"stop": {"iterations": 500}, "tx_depth": 128, "sizes": [2]}"#, 128);
        let same = json("b.json", r#"{"stop": {"iterations": 500}, "tx_depth": 128, "sizes": [2, 4]}"#, 128);
        assert!(
            differences(std::slice::from_ref(&base), &[same]).is_empty(),
            "sizes are not a parameter here"
        );
        let new = json("c.json", r#"{"stop": {"iterations": 200}, "tx_depth": 1, "sizes": [2]}"#, 1);
        assert_eq!(
            differences(&[base], &[new]),
            [r#"stop: base {"iterations":500}, new {"iterations":200}"#, "tx_depth: base 128, new 1"]
        );
    }

    #[test]
    fn runs_of_one_side_with_other_commits_hosts_or_settings_are_named() {
        let run = |name: &str, commit: &str, host: &str, depth: u32| {
            let text = format!(
                "# git_commit: {commit}\n# host: {host}\n# command: gdr-write-bw -a -t {depth} --csv {name}\n\
                 test,bytes,bw_avg_gbit_s\nwrite_bw,2,1\n"
            );
            ResultFile::parse_csv(name, &text).unwrap()
        };
        let same = [run("a1.csv", "abc", "node1", 64), run("a2.csv", "abc", "node1", 64)];
        assert!(mixed_runs("base", &same).is_empty(), "output paths differ by design");
        let mixed = [run("a1.csv", "abc", "node1", 64), run("a2.csv", "def", "node2", 128)];
        let warnings = mixed_runs("base", &mixed);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("git_commit (a1.csv abc; a2.csv def)"), "{warnings:?}");
        assert!(warnings[1].contains("host (a1.csv node1; a2.csv node2)"), "{warnings:?}");
        assert!(warnings[2].contains("a2.csv gdr-write-bw -a -t 128"), "{warnings:?}");
    }

    #[test]
    fn csv_files_are_compared_by_their_setting_columns() {
        let csv = |tx: u32| {
            ResultFile::parse_csv(
                "x.csv",
                &format!("test,bytes,bw_avg_gbit_s,tx_depth,qps\nwrite_bw,2,1,{tx},1\n"),
            )
            .unwrap()
        };
        assert_eq!(differences(&[csv(128)], &[csv(1)]), ["tx_depth: base 128, new 1"]);
        assert!(differences(&[csv(128)], &[csv(128)]).is_empty());
    }
}
