//! Text made safe for report.html: escaping, a JSON value as a table cell, a verdict as the page
//! shows it. The page and its sections (inventory, soak, charts) all use these, so none of the
//! sections needs the page that holds them.

use serde_json::Value;

/// Escapes text for HTML element content and double- or single-quoted attributes. Five
/// replacements, written here rather than taken from a crate for one function.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// A JSON value as a cell: strings bare, null as "-". For free-form JSON (metadata, the
/// inventory, the soak); a result column's text goes through [`text_cell`].
pub(crate) fn cell(value: &Value) -> String {
    match value {
        Value::String(text) => text_cell(text),
        Value::Null => "-".into(),
        other => escape(&other.to_string()),
    }
}

/// A column's text as a cell (`ResultRow::text`: numbers written as JSON writes them, "" when
/// absent or null): escaped, and "-" when empty.
pub(crate) fn text_cell(text: &str) -> String {
    if text.is_empty() {
        "-".into()
    } else {
        escape(text)
    }
}

/// A verdict of `summary.json` as the page shows it, which is also its style's class: the
/// exit-code contract's words (pass, undecided, fail, error) upper-cased, and the upper-case
/// words of folders written before JSON spelled those (PASS, SKIP, FAIL, ERROR) as they were, so
/// that a signed folder of either age reads back; anything else is shown as an error.
pub(crate) fn shown_verdict(verdict: &str) -> &'static str {
    match verdict {
        "pass" | "PASS" => "PASS",
        "undecided" => "UNDECIDED",
        "SKIP" => "SKIP",
        "fail" | "FAIL" => "FAIL",
        _ => "ERROR",
    }
}
