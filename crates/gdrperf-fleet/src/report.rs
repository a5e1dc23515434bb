//! The verdict as text for a person: classes first (level, noise, ceiling), then each named part.

use std::fmt::Write;

use crate::base::{BaseComparison, MoveKind, Movement};
use crate::judge::{Finding, PartKind, Verdict};

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
    let _ = write!(line, ", {:.1} % below", finding.below_pct);
    match finding.kind {
        PartKind::ClassBelowCeiling => {
            let _ = write!(line, " its ceiling, over {} rows", finding.pairs);
        }
        PartKind::NodeWithoutRows => {
            line = format!("{}: {}: no rows at all (dead, or never ran)", finding.kind.name(), finding.node)
        }
        _ => {
            let _ = write!(line, " the class, {} rows with {} peers", finding.pairs, finding.peers);
        }
    }
    if let (Some(z), Some(p)) = (finding.z, finding.p_adjusted) {
        let _ = write!(line, ", z {z:.1}, adjusted p {p:.1e}");
    }
    if finding.kind != PartKind::NodeWithoutRows {
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
    text
}

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
