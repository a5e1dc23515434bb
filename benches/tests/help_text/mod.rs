//! Reading clap's `--help` text: shared by the benches' and `gdrperf`'s help tests
//! (crates/gdrperf-cli/tests/help_defaults.rs includes this file by path).

/// The options of a `--help` text that take a value, each with its whole description.
pub fn value_options(help: &str) -> Vec<(String, String)> {
    let mut options: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in help.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent == 0 && !trimmed.is_empty() {
            // A section title ("Options:") ends the option before it.
            open = false;
            continue;
        }
        let starts_option =
            (2..=6).contains(&indent) && (trimmed.starts_with('-') || trimmed.starts_with('['));
        if starts_option {
            let (name, description) = trimmed.split_once("  ").unwrap_or((trimmed, ""));
            options.push((name.trim().to_string(), description.trim().to_string()));
            open = true;
        } else if let Some(last) = options.last_mut().filter(|_| open) {
            last.1.push(' ');
            last.1.push_str(trimmed);
        }
    }
    options.retain(|(name, _)| name.contains('<') || name.starts_with('['));
    options.into_iter().map(|(name, description)| (name, description.trim().to_string())).collect()
}
