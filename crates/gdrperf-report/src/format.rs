//! Numbers as people read them in FAIL lines and tables.

/// `x` with three significant digits and no trailing zeros ("41.2", "90", "0.8", "11000"):
/// enough to see how far a value is from its threshold, short enough to read at a glance.
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 6) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A measured value in a table column: two decimals from 1 up ("91.50"), three significant
/// digits below ("0.000612"), so that Soft-RoCE's small figures do not all read "0.00".
pub fn table_number(x: f64) -> String {
    if x.abs() >= 1.0 || x == 0.0 || !x.is_finite() {
        format!("{x:.2}")
    } else {
        let decimals = (2 - x.abs().log10().floor() as i32).clamp(2, 9) as usize;
        format!("{x:.decimals$}")
    }
}

/// A relative change as a signed percentage with one decimal: "-54.2%", "+3.0%".
pub fn percent_change(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

/// Columns under a header, two spaces apart: the tables of `compare` and `accept`. A column
/// whose cells are all numbers (or "-", "+3.0%", "2.10x") is right-aligned, header included;
/// text columns are left-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let cell = |row: &Vec<String>, index: usize| row.get(index).cloned().unwrap_or_default();
    let widths: Vec<usize> = (0..columns)
        .map(|index| {
            rows.iter()
                .map(|row| cell(row, index).chars().count())
                .chain([header[index].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric: Vec<bool> = (0..columns)
        .map(|index| {
            let mut cells = rows
                .iter()
                .map(|row| cell(row, index))
                .filter(|text| !text.is_empty() && text != "-")
                .peekable();
            cells.peek().is_some()
                && cells.all(|text| text.trim_end_matches(['%', 'x']).parse::<f64>().is_ok())
        })
        .collect();
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = (0..columns)
            .map(|index| {
                let (text, width) = (cells.get(index).cloned().unwrap_or_default(), widths[index]);
                if numeric[index] {
                    format!("{text:>width$}")
                } else {
                    format!("{text:<width$}")
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|title| title.to_string()).collect());
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(number(41.2), "41.2");
        assert_eq!(number(90.0), "90");
        assert_eq!(number(0.8), "0.8");
        assert_eq!(number(11000.0), "11000");
        assert_eq!(number(92.274688), "92.3");
        assert_eq!(number(0.001234), "0.00123");
        assert_eq!(number(-4.56789), "-4.57");
    }

    #[test]
    fn table_numbers_never_round_to_zero() {
        assert_eq!(table_number(91.5), "91.50");
        assert_eq!(table_number(0.000612), "0.000612");
        assert_eq!(table_number(0.25), "0.250");
        assert_eq!(table_number(0.0), "0.00");
    }

    #[test]
    fn percent_changes_are_signed() {
        assert_eq!(percent_change(-0.5422), "-54.2%");
        assert_eq!(percent_change(0.03), "+3.0%");
    }

    #[test]
    fn tables_align_columns() {
        let text = table(
            &["test", "value"],
            &[vec!["write_bw".into(), "1.5".into()], vec!["x".into(), "100.25".into()]],
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "test       value");
        assert_eq!(lines[1], "write_bw     1.5");
        assert_eq!(lines[2], "x         100.25");
    }
}
