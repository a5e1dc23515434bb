//! Numbers as people read them in FAIL lines.

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

/// A relative change as a signed percentage with one decimal: "-54.2%", "+3.0%".
pub fn percent_change(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
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
    fn percent_changes_are_signed() {
        assert_eq!(percent_change(-0.5422), "-54.2%");
        assert_eq!(percent_change(0.03), "+3.0%");
    }
}
