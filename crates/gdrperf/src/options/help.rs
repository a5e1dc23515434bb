//! The bench binaries' command line with each test's own defaults in `--help`.
//!
//! `-s`, `-n`, `-t` and `--warmup` have per-test defaults (perftest's: 64 KiB and 5000
//! iterations for bandwidth, 2 bytes and 1000 for latency), so the shared `CommonArgs` cannot
//! name them in its attributes, and a new user learnt them only from the run header. The binary
//! passes its bench descriptor here and `--help` shows them the way clap shows fixed defaults.

use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};

use crate::bench::{Bench, Measures};
use crate::options::perftest_flags;
use crate::options::TestDefaults;

/// Parses the process's command line for `C` as bench `bench`'s binary: its name, its first help
/// line and its defaults all come from the descriptor (see [`crate::bench`]).
pub fn parse_bench<C: CommandFactory + FromArgMatches>(bench: &Bench) -> C {
    if let Some(message) = gdrperf_command_line::non_utf8_argument(std::env::args_os()) {
        eprintln!("{}: error: {message}", bench.binary);
        std::process::exit(2);
    }
    if gdrperf_command_line::secret_on_command_line(&gdrperf_command_line::arguments()) {
        eprintln!("{}: {}", bench.binary, gdrperf_command_line::SECRET_ON_COMMAND_LINE);
    }
    let command = C::command().name(bench.binary).bin_name(bench.binary).about(bench.about());
    let mut command = bench_command(command, bench);
    command.build();
    let latency = bench.measures == Measures::Latency;
    let arguments = match perftest_flags::translate(&command, std::env::args_os(), latency) {
        Ok((arguments, notes)) => {
            notes.iter().for_each(|note| eprintln!("{note}"));
            arguments
        }
        Err(refusal) => {
            eprintln!("error: {}", refusal.0);
            std::process::exit(2);
        }
    };
    let matches: ArgMatches = command.get_matches_from(arguments);
    C::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// `command` as bench `bench`'s binary shows it: its defaults in the help, and no `-q` on the
/// latency tests (perftest's have none; a library caller's `-q` other than 1 is still refused
/// by `LatencyConfig`).
pub fn bench_command(command: Command, bench: &Bench) -> Command {
    let command = with_exit_codes(with_test_defaults(command, bench.defaults));
    if bench.measures == Measures::Latency
        && command.get_arguments().any(|argument| argument.get_id() == "qps")
    {
        return command.mut_arg("qps", |argument| argument.hide(true));
    }
    command
}

/// `command` with the exit-code contract every gdrperf tool keeps at the end of its help (after
/// any text of its own).
pub fn with_exit_codes(command: Command) -> Command {
    let own = command.get_after_help().map(ToString::to_string);
    let text = gdrperf_command_line::help_with_exit_codes(own.as_deref());
    command.after_help(text)
}

/// `command` with "[default: N]" appended to the help of the options `defaults` fills.
pub fn with_test_defaults(command: Command, defaults: TestDefaults) -> Command {
    let shown = [
        ("size", defaults.size.to_string()),
        ("iters", defaults.iterations.to_string()),
        ("tx_depth", defaults.tx_depth.to_string()),
        ("warmup", defaults.warmup.to_string()),
    ];
    shown.into_iter().fold(command, |command, (id, value)| {
        if command.get_arguments().all(|argument| argument.get_id() != id) {
            return command;
        }
        command.mut_arg(id, |argument| {
            let help = argument.get_help().map(ToString::to_string).unwrap_or_default();
            argument.help(format!("{help} [default: {value}]"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::CommonArgs;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[test]
    fn the_tests_defaults_appear_in_help_and_do_not_become_values() {
        let defaults = TestDefaults { size: 2, iterations: 1000, tx_depth: 1, warmup: 16 };
        let mut command = with_test_defaults(Cli::command(), defaults);
        let help = command.render_help().to_string();
        for expected in [
            "powers of two: 64K = 65536) [default: 2]",
            "for each size [default: 1000]",
            "per QP [default: 1]",
            "measurement [default: 16]",
        ] {
            assert!(help.contains(expected), "{expected:?} missing from:\n{help}");
        }
        // Shown, not set: an unset -n still leaves -D free (they exclude each other).
        let matches = command.try_get_matches_from(["bench", "-D", "2"]).unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        assert_eq!((cli.common.iters, cli.common.duration), (None, Some(2.0)));
    }
}
