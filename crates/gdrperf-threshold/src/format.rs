//! Numbers as people read them in FAIL lines.

/// `x` with three significant digits and no trailing zeros ("41.2", "90", "0.8", "11000"):
/// enough to see how far a value is from its threshold, short enough to read at a glance.
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if magnitude < -4 {
        // Below 0.0001, six decimals would print a limit such as 0.0000001 us as "0" (issue 44):
        // three significant digits in scientific form instead ("1e-7", "2.5e-12").
        let text = format!("{x:.2e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exponent}");
    }
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
        // Tiny limits keep their digits rather than print as 0.
        assert_eq!(number(0.0000001), "1e-7");
        assert_eq!(number(2.5e-12), "2.5e-12");
        assert_eq!(number(0.00012345), "0.000123");
        assert_eq!(number(-3.14159e-9), "-3.14e-9");
    }

    #[test]
    fn percent_changes_are_signed() {
        assert_eq!(percent_change(-0.5422), "-54.2%");
        assert_eq!(percent_change(0.03), "+3.0%");
    }
}
