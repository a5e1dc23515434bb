//! Which run parameters differ between the two sides of a comparison: a 500-iteration run
//! against a 200-iteration one, or `-t 1` against `-t 128`, changes the figures by itself.
//!
//! JSON files carry the bench's `metadata.parameters` (stop rule, warm-up, QPs, TX depth, CQ
//! moderation, ...); CSV files only the rows, whose setting columns are compared instead.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::results::ResultFile;

/// Row columns that are settings, not measurements (see docs/columns.md).
const SETTING_COLUMNS: [&str; 8] =
    ["qps", "tx_depth", "cq_mod", "bidirectional", "mtu", "inline_size", "arrival", "latency_span"];

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
    for column in SETTING_COLUMNS.into_iter().filter(|column| !named.contains(*column)) {
        let values = |side: &[ResultFile]| -> BTreeSet<String> {
            side.iter()
                .flat_map(|file| &file.rows)
                .map(|row| row.text(column))
                .filter(|value| !value.is_empty())
                .collect()
        };
        let (base_values, new_values) = (values(base), values(new));
        if !base_values.is_empty() && !new_values.is_empty() {
            differences.extend(line(column, base_values, new_values));
        }
    }
    differences
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
