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
