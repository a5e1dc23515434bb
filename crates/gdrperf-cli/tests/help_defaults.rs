//! Every option of every `gdrperf` subcommand shows its default in `--help` (clap lists the
//! values of those with a fixed set): the same rule as the bench binaries' (benches/tests).

use std::process::Command;

#[path = "../../../benches/tests/help_text/mod.rs"]
mod help_text;
use help_text::value_options;

#[test]
fn every_option_of_every_subcommand_shows_its_default() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for subcommand in
        ["doctor", "copy-bw", "selftest", "accept", "compare", "slurm", "fleet judge", "fleet simulate"]
    {
        let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
            .args(subcommand.split(' ').chain(["--help"]))
            .output()
            .unwrap();
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

/// Every subcommand's help, at any depth, ends with the exit-code contract every gdrperf tool
/// keeps; a subcommand with codes of its own (doctor, accept) states them before it.
#[test]
fn every_subcommand_states_the_exit_code_contract() {
    let help = |words: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_gdrperf")).args(words).arg("--help").output().unwrap();
        assert!(output.status.success(), "gdrperf {words:?} --help failed");
        String::from_utf8(output.stdout).unwrap()
    };
    let top = help(&[]);
    // The subcommands as `gdrperf --help` lists them (two-space indent, then the name).
    let commands_at = top.find("Commands:").expect("a Commands: section");
    let names: Vec<String> = top[commands_at..]
        .lines()
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let mut pages = vec![(vec![], top.clone())];
    for name in &names {
        pages.push((vec![name.as_str()], help(&[name])));
    }
    pages.push((vec!["fleet", "judge"], help(&["fleet", "judge"])));
    for (words, text) in &pages {
        let tail =
            text.rfind("Exit codes (the same for every gdrperf tool and script):").map(|at| &text[at..]);
        assert!(
            tail.is_some_and(|tail| tail.contains("  0  pass")
                && tail.contains("or undecided:")
                && tail.contains("  1  fail: a measured miss")
                && tail.contains("  2  error: could not run")
                && tail.contains("\"pass\",\n\"undecided\", \"fail\", \"error\"")),
            "gdrperf {words:?} --help lacks the contract at its end:\n{text}"
        );
    }
}
