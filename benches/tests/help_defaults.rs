//! Every option of every bench binary shows its default in `--help` (and clap lists the values
//! of those with a fixed set), so that a new user need not learn them from the run header.

use std::process::Command;

mod help_text;
use help_text::value_options;

#[test]
fn every_option_of_every_bench_shows_its_default() {
    // Every bench of the one list, built next to this test's deps/ folder.
    let test = std::env::current_exe().unwrap();
    let folder = test.parent().and_then(std::path::Path::parent).unwrap().to_path_buf();
    let mut missing = Vec::new();
    for bench in gdrperf::bench::BENCHES {
        let binary = folder.join(bench.binary);
        let binary = binary.to_str().unwrap();
        let output = Command::new(binary).arg("--help").output().unwrap();
        assert!(output.status.success(), "{binary} --help failed");
        let help = String::from_utf8(output.stdout).unwrap();
        let options = value_options(&help);
        assert!(options.len() > 20, "{binary}: too few options parsed from:\n{help}");
        for (name, description) in options {
            let description = description.to_lowercase();
            if !description.contains("default") && !description.contains("required") {
                missing.push(format!("{binary}: {name} says no default"));
            }
        }
        assert!(help.contains("[possible values: auto, dmabuf, peermem]"), "{binary}: --gdr's values");
        // The exit-code contract every gdrperf tool keeps ends each bench's help.
        let contract = help.rfind("Exit codes (the same for every gdrperf tool and script):");
        assert!(
            contract.is_some_and(|at| help[at..].contains("  1  fail: a measured miss")
                && help[at..].contains("  2  error: could not run")),
            "{binary}: no exit-code contract at the end of:\n{help}"
        );
    }
    assert!(missing.is_empty(), "options whose --help hides the default:\n{}", missing.join("\n"));
}

#[test]
fn the_tests_own_defaults_are_shown() {
    let help = |binary: &str| {
        String::from_utf8(Command::new(binary).arg("--help").output().unwrap().stdout).unwrap()
    };
    let bandwidth = help(env!("CARGO_BIN_EXE_gdr-write-bw"));
    let latency = help(env!("CARGO_BIN_EXE_gdr-read-lat"));
    let option = |help: &str, name: &str| {
        value_options(help).into_iter().find(|(option, _)| option.starts_with(name)).unwrap().1
    };
    assert!(option(&bandwidth, "-n, --iters").ends_with("[default: 5000]"), "{bandwidth}");
    assert!(option(&bandwidth, "-t, --tx-depth").ends_with("[default: 128]"), "{bandwidth}");
    assert!(option(&latency, "-n, --iters").ends_with("[default: 1000]"), "{latency}");
    assert!(option(&latency, "-s, --size").ends_with("[default: 2]"), "{latency}");
}
