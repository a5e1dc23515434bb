//! Numbers as people read them in FAIL lines and tables.

pub use gdrperf_threshold::format::{number, percent_change};

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
    fn table_numbers_never_round_to_zero() {
        assert_eq!(table_number(91.5), "91.50");
        assert_eq!(table_number(0.000612), "0.000612");
        assert_eq!(table_number(0.25), "0.250");
        assert_eq!(table_number(0.0), "0.00");
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
