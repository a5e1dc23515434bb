//! What makes a pair low in a live `locate` job: its client's exit status and rows, each lane's
//! bandwidth at the largest size against that lane's median in the first pass.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gdrperf_files::columns::{self as column, ColumnName};

use crate::error::Result;
use crate::layout::{for_each_line, PairLine};
use crate::plan::{BenchPair, Role};

/// A pair's lane is low below this share of the first pass's median.
const LOW_SHARE: f64 = 0.85;

/// The first pass's median plateau per lane name, and over all lanes (for a lane the first pass
/// did not show), ln Gb/s.
#[derive(Debug, Default)]
pub(super) struct Levels {
    pub(super) lanes: BTreeMap<String, f64>,
    all: Option<f64>,
}

impl Levels {
    pub(super) fn of<'a>(lines: impl Iterator<Item = &'a PairLine>) -> Levels {
        let mut per_lane: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for line in lines {
            for (lane, value) in plateaus(line) {
                per_lane.entry(lane).or_default().push(value);
            }
        }
        let mut every: Vec<f64> = per_lane.values().flatten().copied().collect();
        let all = median(&mut every);
        let lanes = per_lane
            .into_iter()
            .filter_map(|(lane, mut values)| Some((lane, median(&mut values)?)))
            .collect();
        Levels { lanes, all }
    }

    /// Whether `value` is more than 15 % below its lane's level (no level: not low).
    pub(super) fn low(&self, lane: &str, value: f64) -> bool {
        self.lanes.get(lane).copied().or(self.all).is_some_and(|level| value < level + LOW_SHARE.ln())
    }
}

/// The client lines of `pairs`, by (round, port), read from their clients' record files.
pub(super) fn client_lines(
    out: &crate::layout::OutputDir,
    pairs: &[BenchPair],
) -> Result<HashMap<(usize, u16), PairLine>> {
    let wanted: BTreeSet<(usize, u16)> = pairs.iter().map(|pair| (pair.round, pair.port)).collect();
    let clients: BTreeSet<usize> = pairs.iter().map(|pair| pair.client_rank).collect();
    let mut lines = HashMap::new();
    for rank in clients {
        for_each_line(&out.records(rank), &mut |line| {
            let key = (line.record.pair.round, line.record.pair.port);
            if line.record.role == Role::Client && wanted.contains(&key) {
                lines.insert(key, line);
            }
            Ok(())
        })?;
    }
    Ok(lines)
}

/// Per lane of a client's rows, ln of the bandwidth at the largest size measured (rows of lane
/// `all`, a sum over lanes, left out), by lane name; empty without a `bw_avg_gbit_s` column.
pub(super) fn plateaus(line: &PairLine) -> Vec<(String, f64)> {
    let Some(header) = &line.header else { return Vec::new() };
    let find = |name: ColumnName| header.iter().position(|column| column == name.name());
    let (Some(bw), Some(bytes)) = (find(column::BW_AVG_GBIT_S), find(column::BYTES)) else {
        return Vec::new();
    };
    let lane = find(column::LANE);
    let mut best: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
    for row in &line.rows {
        let field = |index: usize| row.get(index).map(String::as_str).unwrap_or("");
        let lane = lane.map(field).unwrap_or("");
        let (Ok(size), Ok(value)) = (field(bytes).parse::<u64>(), field(bw).parse::<f64>()) else { continue };
        if lane == "all" || value <= 0.0 {
            continue;
        }
        let entry = best.entry(lane).or_insert((size, value));
        if size > entry.0 {
            *entry = (size, value);
        }
    }
    best.into_iter().map(|(lane, (_, value))| (lane.to_string(), value.ln())).collect()
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}
