//! A bandwidth row's ceiling columns (`ceiling_gbps`, `ceiling_limited_by`, `pct_of_ceiling`,
//! `ceiling_causes`, near the end of every bandwidth row): the path's ceiling from both
//! ends' facts, the row's share of it, and when the row is short, the causes. The judgement is
//! `gdrperf-ceiling`'s; this module only says which end is which and what the row moved.

use gdrperf_ceiling::{judge_row, row_links, EndFacts, LaneCeiling, RowEnds, RowFigures, SharedLink};

use crate::output::context::RowContext;
pub use crate::output::context::RowPath;
use crate::output::row_columns::columns;

columns! {
    /// The four columns, and what one of them becomes on a missed threshold.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct CeilingColumns {
        column ceiling_gbps: Option<f64>,
        column ceiling_limited_by: String,
        column pct_of_ceiling: Option<f64>,
        /// Each cause's line, most likely first, joined by " | "; empty unless the row is short.
        column ceiling_causes: String,
        /// The causes the row lists if it misses a threshold (`--min-bw`), short of its ceiling
        /// or not: what `ceiling_causes` becomes then (no column of its own).
        hidden causes_if_failed: String,
        /// The PCIe links (GPU, NIC) the row's data crosses, by end and address: what the
        /// aggregate of lanes on one GPU counts once (no column of its own).
        hidden links: Vec<SharedLink>,
    }
}

impl CeilingColumns {
    /// The columns of a row of `context.test` that moved `message_bytes` messages at
    /// `measured_gbps`; empty without path facts.
    pub fn for_row(
        context: &RowContext,
        message_bytes: u64,
        bidirectional: bool,
        measured_gbps: f64,
    ) -> Self {
        let Some(path) = context.path.as_deref() else { return CeilingColumns::default() };
        let ends =
            RowEnds { local_is_client: path.local_is_client, local: &path.local, peer: path.peer.as_ref() };
        let figures = RowFigures {
            test: &context.test,
            message_bytes,
            bidirectional,
            measured_gbps,
            nic_errors_moved: (context.nic.nic_errors > 0).then_some(context.nic.nic_counters.as_str()),
        };
        let judgement = judge_row(ends, figures, path.shortfall_percent, false);
        let causes_if_failed = judge_row(ends, figures, path.shortfall_percent, true).causes_column();
        CeilingColumns {
            causes_if_failed,
            links: row_links(ends, figures),
            ceiling_gbps: judgement.ceiling_gbps,
            ceiling_causes: judgement.causes_column(),
            ceiling_limited_by: judgement.ceiling_limited_by,
            pct_of_ceiling: judgement.pct_of_ceiling,
        }
    }

    /// The aggregate of `--concurrent` lanes: their ceilings add (each lane its own path), except
    /// that a PCIe link several lanes cross counts once for them (lanes on one GPU share its
    /// link: [`gdrperf_ceiling::lanes`]); the limits and causes are listed once each, and a shared
    /// link that binds is named as the limit.
    pub fn aggregate(lanes: impl Iterator<Item = CeilingColumns> + Clone, measured_gbps: f64) -> Self {
        let all: Vec<CeilingColumns> = lanes.collect();
        let together = gdrperf_ceiling::lanes::aggregate(
            &all.iter()
                .map(|lane| LaneCeiling { gbps: lane.ceiling_gbps, links: &lane.links })
                .collect::<Vec<_>>(),
        );
        let ceiling_gbps = together.gbps;
        let limited: Vec<String> = all.iter().map(|lane| lane.ceiling_limited_by.clone()).collect();
        let causes: Vec<String> =
            all.iter().map(|lane| lane.ceiling_causes.clone()).filter(|c| !c.is_empty()).collect();
        let if_failed: Vec<String> =
            all.iter().map(|lane| lane.causes_if_failed.clone()).filter(|c| !c.is_empty()).collect();
        let ceiling_limited_by = match together.counted_once.is_empty() {
            true => distinct(&limited, " + "),
            false => together.counted_once.join(" + "),
        };
        CeilingColumns {
            causes_if_failed: distinct(&if_failed, " | "),
            ceiling_gbps,
            ceiling_limited_by,
            pct_of_ceiling: ceiling_gbps.filter(|gbps| *gbps > 0.0).map(|gbps| 100.0 * measured_gbps / gbps),
            ceiling_causes: distinct(&causes, " | "),
            links: Vec::new(),
        }
    }

    /// The row missed a threshold: `ceiling_causes` becomes the causes a failed row lists
    /// (short of its ceiling or not), which are returned, one per cause.
    pub fn threshold_missed(&mut self) -> Vec<String> {
        if !self.causes_if_failed.is_empty() {
            self.ceiling_causes = self.causes_if_failed.clone();
        }
        self.ceiling_causes.split(" | ").filter(|cause| !cause.is_empty()).map(str::to_string).collect()
    }

    /// The console's note after a row: "  54.1% of 230.46 Gb/s (server NIC PCIe 32 GT/s x8)",
    /// then one line per cause. Empty without a hardware ceiling (the header says why).
    pub fn console_note(&self) -> String {
        let Some(gbps) = self.ceiling_gbps else { return String::new() };
        let pct = self.pct_of_ceiling.map(|pct| format!("{pct:.1}% of ")).unwrap_or_default();
        let mut note = format!("  {pct}{gbps:.2} Gb/s ({})", self.ceiling_limited_by);
        for cause in self.ceiling_causes.split(" | ").filter(|cause| !cause.is_empty()) {
            note.push_str(&format!("\n     cause: {cause}"));
        }
        note
    }
}

/// The run header's "Ceiling" line: why the rows carry no figure, or how it is made.
pub fn header(local: &EndFacts, peer: Option<&EndFacts>) -> String {
    let software = [Some(local), peer]
        .into_iter()
        .flatten()
        .find_map(|facts| facts.software_device.as_ref().map(|driver| format!("{} ({driver})", facts.nic)));
    match (software, peer) {
        (Some(device), _) => format!("{}: {device}; rows carry no percentage", gdrperf_ceiling::SOFTWARE_DEVICE),
        (None, None) => "this side's facts only (the peer sent none)".into(),
        (None, Some(_)) => format!(
            "per row from both ends' facts (wire, NIC and GPU PCIe links); causes under rows short by more than {}%",
            gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT
        ),
    }
}

/// The distinct values in order of first appearance, joined by `separator`.
fn distinct(values: &[String], separator: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value.as_str()) {
            seen.push(value);
        }
    }
    seen.join(separator)
}

#[cfg(test)]
mod tests;
