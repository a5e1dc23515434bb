//! Every option of every `gdrperf` subcommand shows its default in `--help` (clap lists the
//! values of those with a fixed set): the same rule as the bench binaries' (benches/tests).

use std::process::Command;

/// The options of a `--help` text that take a value, each with its whole description.
fn value_options(help: &str) -> Vec<(String, String)> {
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
        if (2..=6).contains(&indent) && (trimmed.starts_with('-') || trimmed.starts_with('[')) {
            let (name, description) = trimmed.split_once("  ").unwrap_or((trimmed, ""));
            options.push((name.trim().to_string(), description.trim().to_string()));
            open = true;
        } else if let Some(last) = options.last_mut().filter(|_| open) {
            last.1.push(' ');
            last.1.push_str(trimmed);
        }
    }
    options.retain(|(name, _)| name.contains('<') || name.starts_with('['));
    options
}

#[test]
fn every_option_of_every_subcommand_shows_its_default() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for subcommand in ["doctor", "copy-bw", "selftest", "accept", "compare", "slurm"] {
        let output =
            Command::new(env!("CARGO_BIN_EXE_gdrperf")).args([subcommand, "--help"]).output().unwrap();
        assert!(output.status.success(), "gdrperf {subcommand} --help failed");
        let help = String::from_utf8(output.stdout).unwrap();
        for (name, description) in value_options(&help) {
            seen += 1;
            let description = description.to_lowercase();
            if !description.contains("default") && !description.contains("required") {
                missing.push(format!("gdrperf {subcommand}: {name} says no default"));
            }
        }
    }
    assert!(seen > 20, "too few options parsed ({seen})");
    assert!(missing.is_empty(), "options whose --help hides the default:\n{}", missing.join("\n"));
}
