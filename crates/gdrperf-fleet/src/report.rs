//! The verdict as text for a person: classes first (level, noise, ceiling), then each named part.

use std::fmt::Write;

use crate::base::{BaseComparison, MoveKind, Movement};
use crate::judge::{Finding, PartKind, Verdict};
use crate::observation::Catalog;
use crate::read::InputCount;
use crate::switch_map::SwitchMap;

/// What was read, in one line: files, rows read and kept, and every reason a row was left out
/// (only those that occurred).
pub fn input_text(input: &InputCount) -> String {
    let mut text =
        format!("INPUT: {} file(s), {} rows read, {} kept", input.files, input.rows_read, input.rows_kept);
    let reasons = [
        (input.lane_all, "lane `all` (a sum of lanes, not a port)"),
        (input.no_bandwidth, "without a bandwidth (latency rows, a failed size)"),
    ];
    let dropped = [
        (input.duplicates, "duplicate rows"),
        (input.not_a_number, "bandwidth not a number"),
        (input.not_finite, "bandwidth not finite"),
        (input.not_positive, "bandwidth zero or negative"),
        (input.above_ceiling, "above their own ceiling by more than 10 %"),
        (input.implausible, "over 10 times their class's median"),
        (input.short_rows, "with fewer fields than the header"),
        (input.truncated_last_lines, "last lines cut (no newline at the end of the file)"),
    ];
    let listed = |items: &[(u64, &str)]| -> Vec<String> {
        items.iter().filter(|(count, _)| *count > 0).map(|(count, what)| format!("{count} {what}")).collect()
    };
    let skipped = listed(&reasons);
    if !skipped.is_empty() {
        let _ = write!(text, "; not port bandwidth rows: {}", skipped.join(", "));
    }
    let wrong = listed(&dropped);
    let _ =
        write!(text, "; dropped: {}", if wrong.is_empty() { "none".to_string() } else { wrong.join(", ") });
    if !input.files_repeated.is_empty() {
        let _ = write!(text, "; files identical to one before, skipped: {}", input.files_repeated.join(", "));
    }
    text.push('\n');
    text
}

/// The switch map's line: what it holds and how much of the rows it covers.
pub fn switch_map_text(map: &SwitchMap, catalog: &Catalog, path: &std::path::Path) -> String {
    let (covered, nodes) = map.coverage(catalog);
    format!(
        "SWITCHES: {}: {} switches; {covered} of the rows' {nodes} nodes under one, {} under none\n",
        gdrperf_files::printable(&path.display().to_string()),
        map.switches.len(),
        nodes - covered
    )
}

/// The line of the groups the node names gave ([`crate::node_names`]): how many, at which
/// levels, the first few.
pub fn name_groups_text(map: &SwitchMap) -> String {
    let mut levels: std::collections::BTreeMap<usize, Vec<&str>> = std::collections::BTreeMap::new();
    for switch in &map.switches {
        levels.entry(switch.level).or_default().push(switch.name.as_str());
    }
    let described: Vec<String> = levels
        .iter()
        .map(|(level, names)| {
            let shown: Vec<&str> = names.iter().take(4).copied().collect();
            format!(
                "{} at level {level} ({}{})",
                names.len(),
                shown.join(" "),
                if names.len() > shown.len() { " ..." } else { "" }
            )
        })
        .collect();
    format!(
        "GROUPS FROM NODE NAMES: {} groups, tested as switches ({}; level 0: the number before a node's last)\n",
        map.switches.len(),
        described.join(", ")
    )
}

/// One line naming a part: what, where, how far below, from what, how sure.
pub fn finding_line(finding: &Finding) -> String {
    let mut line = format!("{}: {}", finding.kind.name(), finding.node);
    if let Some(device) = &finding.device {
        let _ = write!(line, " {device}");
    }
    if let Some(bus) = &finding.gpu_bus_id {
        let _ = write!(line, " (GPU {bus})");
    }
    if let (Some(peer), Some(device)) = (&finding.peer_node, &finding.peer_device) {
        let _ = write!(line, " <-> {peer} {device}");
    }
    if matches!(finding.kind, PartKind::Rail | PartKind::Group) {
        let shown: Vec<&str> = finding.members.iter().take(8).map(String::as_str).collect();
        let more = finding.members.len().saturating_sub(shown.len());
        let _ = write!(
            line,
            " on {} nodes ({}{})",
            finding.members.len(),
            shown.join(" "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    }
    let _ = write!(line, ", {:.1} % below", finding.below_pct);
    match finding.kind {
        PartKind::ClassBelowCeiling => {
            let _ = write!(line, " its ceiling, over {} rows", finding.pairs);
        }
        PartKind::NodeWithoutRows => {
            line = format!("{}: {}: no rows at all (dead, or never ran)", finding.kind.name(), finding.node)
        }
        PartKind::NodeRowsStop => {
            line = format!(
            "{}: {}: no rows after round {} of a fixed schedule whose rows go on to round {} (died mid-job?)",
            finding.kind.name(),
            finding.node,
            finding.pairs,
            finding.peers
        )
        }
        PartKind::PortWithoutRows => {
            line = format!(
                "{}: {} {}: no rows, where most nodes have rows on that device",
                finding.kind.name(),
                finding.node,
                finding.device.as_deref().unwrap_or("")
            )
        }
        PartKind::NicPortIntermittent => {
            let low = finding.low_rows.unwrap_or(0);
            let _ = write!(
                line,
                " in {low} of its {} rows ({:.0} %), the class's transient rows apart",
                finding.pairs,
                100.0 * low as f64 / finding.pairs.max(1) as f64
            );
        }
        PartKind::Rail => {
            let _ = write!(line, " the class, {} rows", finding.pairs);
        }
        PartKind::Group => {
            let _ = write!(
                line,
                " the class towards the rest (median of its members), {} rows; {} rows among its members at the class",
                finding.pairs, finding.peers
            );
            if let Some(origin) = finding.group_from {
                let _ = write!(line, "; grouped by {}", origin.words());
            }
        }
        _ => {
            let _ = write!(line, " the class, {} rows with {} peers", finding.pairs, finding.peers);
            if let (PartKind::Link, Some(low)) = (finding.kind, finding.low_rows) {
                let _ = write!(line, " ({low} low)");
            }
        }
    }
    if let Some(more) = finding.agreeing_rows_needed {
        let _ = write!(line, "; {more} agreeing rows more would name it");
    }
    if let (Some(z), Some(p)) = (finding.z, finding.p_adjusted) {
        let _ = write!(line, ", z {z:.1}, adjusted p {p:.1e}");
    }
    if !matches!(finding.kind, PartKind::NodeWithoutRows | PartKind::NodeRowsStop | PartKind::PortWithoutRows)
    {
        let _ = write!(line, " [{}]", finding.class);
    }
    line
}

/// The whole report.
pub fn text(verdict: &Verdict) -> String {
    let mut text = String::new();
    for class in &verdict.classes {
        let _ = write!(
            text,
            "class {}: {} rows, level {:.2} Gb/s, noise {:.1} %",
            class.class, class.rows, class.level_gbps, class.noise_pct
        );
        match class.ceiling_gbps {
            Some(ceiling) => {
                let _ = writeln!(
                    text,
                    ", ceiling {ceiling:.2} Gb/s ({:.0} % of it)",
                    100.0 * class.level_gbps / ceiling
                );
            }
            None => text.push_str(", no ceiling in the rows\n"),
        }
        if let Some(words) = &class.cannot_tell {
            let _ = writeln!(text, "  cannot tell: {words}");
        }
    }
    listed(&mut text, "NAMED", &verdict.findings, finding_line);
    listed(
        &mut text,
        "WATCH (surely slower, under the bar; exit code unchanged)",
        &verdict.watch,
        finding_line,
    );
    let _ = writeln!(
        text,
        "TRANSIENT: {} rows more than the bar below what their ends explain, in no named part: counted, not named",
        verdict.transient_rows
    );
    // A fabric with many dips lists thousands of pairs: the text shows the first, the JSON all.
    let shown = &verdict.retest[..verdict.retest.len().min(RETESTS_SHOWN)];
    let _ = writeln!(
        text,
        "RETEST (mostly low, too few rows to name a link; run the pair again): {}",
        if verdict.retest.is_empty() { "none".to_string() } else { verdict.retest.len().to_string() }
    );
    for finding in shown {
        let _ = writeln!(text, "  {}", finding_line(finding));
    }
    if verdict.retest.len() > shown.len() {
        let _ = writeln!(text, "  ... and {} more (all in the JSON)", verdict.retest.len() - shown.len());
    }
    text
}

/// Pairs to retest shown in the text; the JSON lists all.
pub const RETESTS_SHOWN: usize = 40;

/// "HEADING: none", or "HEADING: N" and one indented line per item.
fn listed<T>(text: &mut String, heading: &str, items: &[T], line: impl Fn(&T) -> String) {
    if items.is_empty() {
        let _ = writeln!(text, "{heading}: none");
    } else {
        let _ = writeln!(text, "{heading}: {}", items.len());
        for item in items {
            let _ = writeln!(text, "  {}", line(item));
        }
    }
}

/// One line for a part that moved against the earlier job.
pub fn movement_line(movement: &Movement) -> String {
    let mut line = format!("{}: {}", movement.kind.name(), movement.node);
    if let Some(device) = &movement.device {
        let _ = write!(line, " {device}");
    }
    if let (MoveKind::NicReplaced | MoveKind::GpuReplaced, Some(then), Some(now)) =
        (movement.kind, &movement.then, &movement.now)
    {
        let what = if movement.kind == MoveKind::NicReplaced { "NIC GUID" } else { "GPU" };
        let _ = write!(line, " ({what} {then} -> {now}): not compared [{}]", movement.class);
        return line;
    }
    if let Some(change) = movement.change_pct {
        let against = if movement.node == "all" { "its level" } else { "within its class" };
        let _ = write!(
            line,
            ", {change:+.1} % {against} against the base, {} rows then, {} now",
            movement.rows_then, movement.rows_now
        );
    }
    if movement.peers > 0 {
        let _ = write!(line, ", at least {} peers in each", movement.peers);
    }
    if let (Some(z), Some(p)) = (movement.z, movement.p_adjusted) {
        let _ = write!(line, ", z {z:.1}, adjusted p {p:.1e}");
    }
    let _ = write!(line, " [{}]", movement.class);
    line
}

/// The comparison with the earlier job, after the verdict.
pub fn base_text(comparison: &BaseComparison) -> String {
    let mut text = format!(
        "AGAINST THE BASE: {} classes and {} class ports compared; ports only in the base: {}, only now: {}\n",
        comparison.classes_compared, comparison.ports_compared, comparison.ports_only_then, comparison.ports_only_now
    );
    listed(&mut text, "MOVED", &comparison.movements, movement_line);
    text
}
