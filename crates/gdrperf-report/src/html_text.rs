//! Text made safe for report.html: escaping and a JSON value as a table cell. Below the page and
//! its sections (inventory, soak, charts), which all use it, so none of them imports the page.

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

/// A JSON value as a cell: strings bare, null as "-".
pub(crate) fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) if text.is_empty() => "-".into(),
        Value::String(text) => escape(text),
        other => escape(&other.to_string()),
    }
}
