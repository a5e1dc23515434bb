//! A comparison as JUnit XML, the report format CI systems read (GitLab, Jenkins, GitHub
//! actions that publish test results): one test suite per sweep, one test case per size (and
//! memory mode, lane and speed-up), and one case for the whole comparison's decision. A
//! regression is a `<failure>` whose message names the change, its 95% interval and the test
//! that found it; an undecided row is `<skipped>` (neither passed nor failed); a pass is a bare
//! test case.

use crate::compare::{Change, ComparedRow, Comparison, Decision};
use crate::format::percent_change;

/// The JUnit XML document of `comparison`.
pub fn junit_xml(comparison: &Comparison) -> String {
    let mut suites = Vec::new();
    for label in &comparison.sweeps {
        let rows: Vec<&ComparedRow> =
            comparison.rows.iter().filter(|row| &crate::compare::sweep_label(row) == label).collect();
        let failures = rows.iter().filter(|row| row.verdict == Change::Regression).count();
        let skipped = rows.iter().filter(|row| row.verdict == Change::Undecided).count();
        let mut suite = format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
            escape(&format!("gdrperf compare: {label}")),
            rows.len()
        );
        for row in rows {
            suite.push_str(&test_case(label, row));
        }
        suite.push_str("  </testsuite>\n");
        suites.push((suite, rows_count(comparison, label), failures, skipped));
    }
    let decision_failed = comparison.verdict == Decision::Regression;
    let decision_case = format!(
        "  <testsuite name=\"gdrperf compare: decision\" tests=\"1\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n    \
         <testcase classname=\"gdrperf.compare\" name=\"whole comparison ({} vs {} runs)\">{}</testcase>\n  </testsuite>\n",
        u8::from(decision_failed),
        u8::from(comparison.verdict == Decision::Undecided),
        comparison.base_runs,
        comparison.new_runs,
        match comparison.verdict {
            Decision::Regression => format!(
                "<failure type=\"regression\" message=\"{}\"/>",
                escape(&format!("{} rows regressed", comparison.regressions()))
            ),
            Decision::Undecided => "<skipped message=\"undecided: more runs a side would decide\"/>".to_string(),
            Decision::Pass => String::new(),
        }
    );
    let tests: usize = suites.iter().map(|(_, tests, _, _)| tests).sum::<usize>() + 1;
    let failures: usize =
        suites.iter().map(|(_, _, failures, _)| failures).sum::<usize>() + usize::from(decision_failed);
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gdrperf compare\" tests=\"{tests}\" \
         failures=\"{failures}\" errors=\"0\">\n"
    );
    out.push_str(&decision_case);
    for (suite, ..) in suites {
        out.push_str(&suite);
    }
    out.push_str("</testsuites>\n");
    out
}

fn rows_count(comparison: &Comparison, label: &str) -> usize {
    comparison.rows.iter().filter(|row| crate::compare::sweep_label(row) == label).count()
}

fn test_case(label: &str, row: &ComparedRow) -> String {
    let interval = row
        .interval
        .map(|(low, high)| {
            format!(", 95% interval [{}, {}]", percent_change(low - 1.0), percent_change(high - 1.0))
        })
        .unwrap_or_default();
    let p = row.p_value.map(|p| format!(", p={p:.4} at this size")).unwrap_or_default();
    let what = format!(
        "{} {}: {} -> {} ({}{interval}{p}; {} vs {} runs)",
        row.metric,
        row.bytes,
        row.base,
        row.new,
        percent_change(row.change),
        row.base_runs,
        row.new_runs
    );
    let body = match row.verdict {
        Change::Regression => format!(
            "<failure type=\"regression\" message=\"{}\"/>",
            escape(&format!("regression: {what}; found by {}", row.found_by.as_deref().unwrap_or("-")))
        ),
        Change::Undecided => format!("<skipped message=\"{}\"/>", escape(&format!("undecided: {what}"))),
        Change::Pass | Change::Improvement => String::new(),
    };
    format!(
        "    <testcase classname=\"{}\" name=\"{} bytes\">{body}</testcase>\n",
        escape(&format!("gdrperf.compare.{label}")),
        row.bytes
    )
}

/// Text as an XML attribute value.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compare_repeated, ResultFile};

    fn runs(prefix: &str, small: &[f64], large: f64) -> Vec<ResultFile> {
        small
            .iter()
            .enumerate()
            .map(|(run, value)| {
                ResultFile::parse_csv(
                    &format!("{prefix}{run}.csv"),
                    &format!(
                        "test,bytes,bw_avg_gbit_s,mem_local\nwrite_bw,4096,{value},host\nwrite_bw,65536,{},host\n",
                        large * (1.0 + run as f64 / 100.0)
                    ),
                )
                .unwrap()
            })
            .collect()
    }

    /// Read back by a real XML parser: one case per row and one for the decision, the
    /// regression a failure naming ratio, interval and p.
    #[test]
    fn a_regression_is_a_failure_a_consumer_reads_back() {
        let comparison = compare_repeated(
            &runs("a", &[80.0, 80.8, 79.2], 95.0),
            &runs("b", &[70.0, 70.7, 69.3], 95.0),
            None,
            0.05,
        )
        .unwrap();
        let xml = junit_xml(&comparison);
        let document = roxmltree::Document::parse(&xml).unwrap();
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(root.attribute("tests"), Some("3"));
        assert_eq!(root.attribute("failures"), Some("2"), "{xml}");
        let cases: Vec<roxmltree::Node> =
            document.descendants().filter(|node| node.has_tag_name("testcase")).collect();
        assert_eq!(cases.len(), 3);
        let failed: Vec<&str> = cases
            .iter()
            .filter_map(|case| case.children().find(|child| child.has_tag_name("failure")))
            .filter_map(|failure| failure.attribute("message"))
            .collect();
        assert_eq!(failed.len(), 2, "{xml}");
        assert!(
            failed[1].contains("-12.5%") && failed[1].contains("95% interval [") && failed[1].contains("p="),
            "{xml}"
        );
        let passed = compare_repeated(
            &runs("a", &[80.0, 80.8, 79.2], 95.0),
            &runs("b", &[80.0, 80.8, 79.2], 95.0),
            None,
            0.05,
        )
        .unwrap();
        let xml = junit_xml(&passed);
        let document = roxmltree::Document::parse(&xml).unwrap();
        assert_eq!(document.root_element().attribute("failures"), Some("0"));
    }

    #[test]
    fn attribute_text_is_escaped() {
        assert_eq!(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
    }
}
