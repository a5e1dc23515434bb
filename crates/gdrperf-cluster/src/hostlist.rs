//! Slurm's hostlist syntax, expanded: `node[01-04,07],gpu-a[1-2]` is six node names.
//!
//! Slurm hands a step its nodes in this compressed form (`SLURM_JOB_NODELIST`,
//! `SLURM_STEP_NODELIST`); `scontrol show hostnames` expands it, but a benchmark task cannot
//! count on scontrol being installed on compute nodes, so we expand it ourselves, with
//! scontrol's rules (the tests of `scripts/two-host-tests.sh` compare against the real thing):
//!
//! - names are separated by commas (or whitespace) outside brackets;
//! - `[a-b,c]` is a list of numbers and ranges; a range keeps the width of its lower bound,
//!   so `[08-10]` is 08, 09, 10 and `[8-10]` is 8, 9, 10;
//! - a name may hold several brackets (`rack[1-2]-node[1-3]`): every combination. With two
//!   brackets the left one varies slowest; with more, scontrol (22.05) varies the last bracket
//!   fastest, then the first, the second, ..., the second-to-last slowest, and so do we;
//! - order and repeats are kept as written (rank order follows node order).
//!
//! One extension: text after the last bracket (`node[1-2]-ib`), which scontrol 22.05 refuses,
//! is kept as a suffix of every name.

use crate::error::{ClusterError, Result};

/// More names than this in one list is a typo (`node[1-100000000]`), not a cluster.
pub const MAX_HOSTS: usize = 1 << 20;

/// Expands a hostlist into node names, in order.
///
/// ```
/// let nodes = gdrperf_cluster::hostlist::expand("node[01-03,07],gpu-a[1-2]").unwrap();
/// assert_eq!(nodes, ["node01", "node02", "node03", "node07", "gpu-a1", "gpu-a2"]);
/// ```
pub fn expand(text: &str) -> Result<Vec<String>> {
    let fail = |reason: String| ClusterError::Hostlist { text: text.to_string(), reason };
    let mut names = Vec::new();
    for item in split_top_level(text).map_err(fail)? {
        let pieces = parse_item(item).map_err(fail)?;
        let count = pieces.iter().try_fold(1usize, |count, piece| {
            count.checked_mul(piece.alternatives.len()).filter(|&n| n <= MAX_HOSTS)
        });
        match count {
            Some(count) if names.len() + count <= MAX_HOSTS => {}
            _ => return Err(fail(format!("more than {MAX_HOSTS} names"))),
        }
        combine(&pieces, &mut names);
    }
    if names.is_empty() {
        return Err(fail("no node names in it".into()));
    }
    Ok(names)
}

/// One part of a name: literal text (one alternative), or the numbers of a bracket.
struct Piece {
    alternatives: Vec<String>,
    bracket: bool,
}

/// Splits at commas and whitespace that are outside brackets; checks bracket balance.
fn split_top_level(text: &str) -> std::result::Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (index, character) in text.char_indices() {
        match character {
            '[' if depth > 0 => return Err(format!("nested '[' at byte {index}")),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("']' without '[' at byte {index}")),
            ']' => depth = 0,
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                items.push(&text[start..index]);
                start = index + character.len_utf8();
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err("'[' without ']'".into());
    }
    items.push(&text[start..]);
    Ok(items.into_iter().filter(|item| !item.is_empty()).collect())
}

/// `rack[1-2]-n[3,5]` -> "rack", [1, 2], "-n", [3, 5].
fn parse_item(item: &str) -> std::result::Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = item;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']').ok_or("'[' without ']'")?;
        if open > 0 {
            pieces.push(Piece { alternatives: vec![rest[..open].to_string()], bracket: false });
        }
        pieces.push(Piece { alternatives: parse_bracket(&rest[open + 1..close])?, bracket: true });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece { alternatives: vec![rest.to_string()], bracket: false });
    }
    Ok(pieces)
}

/// The inside of one bracket: `01-04,07` -> 01, 02, 03, 04, 07.
fn parse_bracket(inside: &str) -> std::result::Result<Vec<String>, String> {
    let mut numbers = Vec::new();
    for range in inside.split(',') {
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        let parse = |digits: &str| -> std::result::Result<u64, String> {
            if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(format!("[{inside}]: {range:?} is not a number or a range like 1-4"));
            }
            digits.parse().map_err(|_| format!("[{inside}]: {digits} is too large"))
        };
        let (first, last) = (parse(low)?, parse(high)?);
        if last < first {
            return Err(format!("[{inside}]: range {range} runs backwards"));
        }
        if last - first >= MAX_HOSTS as u64 || numbers.len() + (last - first) as usize >= MAX_HOSTS {
            return Err(format!("[{inside}]: more than {MAX_HOSTS} names"));
        }
        let width = low.len();
        numbers.extend((first..=last).map(|number| format!("{number:0width$}")));
    }
    Ok(numbers)
}

/// Every combination of the pieces, in scontrol's order, appended to `out`.
fn combine(pieces: &[Piece], out: &mut Vec<String>) {
    // The brackets, slowest first: the second-to-last down to the first, then the last one.
    // A bracket of one number counts as a bracket in this order, as it does for scontrol.
    let brackets: Vec<usize> = (0..pieces.len()).filter(|&index| pieces[index].bracket).collect();
    let order: Vec<usize> = match brackets.split_last() {
        Some((&last, others)) => others.iter().rev().copied().chain([last]).collect(),
        None => Vec::new(),
    };
    // An odometer over `order`: the last wheel turns fastest.
    let mut choice = vec![0usize; pieces.len()];
    loop {
        out.push(
            pieces.iter().zip(&choice).map(|(piece, &index)| piece.alternatives[index].as_str()).collect(),
        );
        let mut wheel = order.len();
        loop {
            if wheel == 0 {
                return;
            }
            wheel -= 1;
            let piece = order[wheel];
            choice[piece] += 1;
            if choice[piece] < pieces[piece].alternatives.len() {
                break;
            }
            choice[piece] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        expand(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn plain_names_and_lists() {
        assert_eq!(names("node1"), ["node1"]);
        assert_eq!(names("a,b c"), ["a", "b", "c"]);
        assert_eq!(names("n[1-3]"), ["n1", "n2", "n3"]);
    }

    #[test]
    fn zero_padding_follows_the_lower_bound() {
        assert_eq!(names("node[08-10]"), ["node08", "node09", "node10"]);
        assert_eq!(names("node[8-10]"), ["node8", "node9", "node10"]);
        assert_eq!(names("node[001-002,7]"), ["node001", "node002", "node7"]);
    }

    #[test]
    fn lists_inside_brackets_and_several_groups() {
        assert_eq!(
            names("node[01-04,07],gpu-a[1-2]"),
            ["node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"]
        );
    }

    #[test]
    fn several_brackets_in_one_name_combine_in_scontrols_order() {
        // Each expected list is what `scontrol show hostnames` (Slurm 22.05) printed.
        assert_eq!(names("r[1-2]n[3,5]"), ["r1n3", "r1n5", "r2n3", "r2n5"]);
        assert_eq!(names("n[1-2]-[3-4]"), ["n1-3", "n1-4", "n2-3", "n2-4"]);
        assert_eq!(names("x[1-3]y[1-2]z[5]"), ["x1y1z5", "x2y1z5", "x3y1z5", "x1y2z5", "x2y2z5", "x3y2z5"]);
        assert_eq!(
            names("x[1-2]y[1-2]z[1-2]"),
            ["x1y1z1", "x1y1z2", "x2y1z1", "x2y1z2", "x1y2z1", "x1y2z2", "x2y2z1", "x2y2z2"]
        );
        assert_eq!(names("x[5]y[1-2]z[1-2]"), ["x5y1z1", "x5y1z2", "x5y2z1", "x5y2z2"]);
        assert_eq!(
            names("a[1-2]b[1-2]c[1-2]d[1-2]")[..6],
            ["a1b1c1d1", "a1b1c1d2", "a2b1c1d1", "a2b1c1d2", "a1b2c1d1", "a1b2c1d2"]
        );
        assert_eq!(names("a[1-2]b[1-2]c[1-2]d[1-2]")[8], "a1b1c2d1");
    }

    #[test]
    fn text_after_the_last_bracket_is_a_suffix() {
        assert_eq!(names("rack[1-2]-gpu[1]-ib"), ["rack1-gpu1-ib", "rack2-gpu1-ib"]);
    }

    #[test]
    fn order_and_repeats_are_kept() {
        assert_eq!(names("b,a1,a1"), ["b", "a1", "a1"]);
    }

    #[test]
    fn malformed_lists_are_errors_naming_the_problem() {
        let message = |text: &str| expand(text).unwrap_err().to_string();
        assert!(message("node[1-3").contains("'[' without ']'"));
        assert!(message("node1-3]").contains("']' without '['"));
        assert!(message("node[[1]]").contains("nested"));
        assert!(message("node[3-1]").contains("runs backwards"));
        assert!(message("node[a-b]").contains("not a number"));
        assert!(message("node[]").contains("not a number"));
        assert!(message("node[1-99999999999]").contains("more than"));
        assert!(message(" , ").contains("no node names"));
        assert!(message("node[1-99999999999999999999999]").contains("too large"));
    }
}
