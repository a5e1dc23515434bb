//! The rules every gdrperf binary applies to its command line, in one crate that the benches,
//! `gdrperf` and `gdrperf-cluster` all reach without pulling in verbs or measurement: arguments
//! are text ([`non_utf8_argument`]), secrets stay out of what is recorded or shown, a timeout has
//! a ceiling ([`MAX_TIMEOUT_SECONDS`]), and a size is spelled one way everywhere ([`parse_size`]).
//!
//! Result files travel: they are attached to tickets, copied to shared folders, gathered on
//! rank 0 of a Slurm job. A `--token` on the command line must therefore never reach them. The
//! benches (run metadata), `gdrperf accept` (its summary) and `gdrperf slurm` (plan and per-pair
//! status) all record command lines, and every place that records or prints one goes through
//! [`redact_command_line`]: one rule, one list.

mod size;
pub mod verdict;

pub use size::{parse_nonzero_size, parse_size};
pub use verdict::Verdict;

/// The exit-code contract every gdrperf tool and script keeps, shown at the end of each
/// `--help` (the benches', `gdrperf`'s and its subcommands') so that a script or CI job reads
/// one meaning per code whichever tool it ran; its four words are [`Verdict`]'s.
pub const EXIT_CODES: &str = "\
Exit codes (the same for every gdrperf tool and script):
  0  pass: every judged row met its threshold, or there was nothing to judge;
     or undecided: nothing missed, but a part could not be decided (a comparison that cannot
     tell a change from noise, a row not run for want of a GPU, a pair to test again)
  1  fail: a measured miss: a row missed its threshold, a check failed, or a comparison found a regression
  2  error: could not run: bad flags or input, a missing device, file or binary, or a run that ended in an error
  130, 143  stopped by SIGINT or SIGTERM (rows finished before are kept)
Every --json file and JSON summary spells its verdict with these four words: \"pass\",
\"undecided\", \"fail\", \"error\"; a tool's finer word (a skip's reason, regression or
improvement, a doctor line's WARN) is in another field beside it.";

/// A tool's own text after its help (`own`, if any) followed by [`EXIT_CODES`].
pub fn help_with_exit_codes(own: Option<&str>) -> String {
    match own {
        Some(own) => format!("{own}\n\n{EXIT_CODES}"),
        None => EXIT_CODES.to_string(),
    }
}

/// What a secret's value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// The options whose value is a secret, spelled as on the command line.
pub const SECRET_OPTIONS: &[&str] = &["--token"];

/// `arguments` with the value of every [`SECRET_OPTIONS`] entry replaced by [`REDACTED`], in both
/// spellings clap accepts (`--token VALUE` and `--token=VALUE`). A trailing `--token` without a
/// value is kept as it is (there is nothing to hide, and the bench refuses it anyway). The
/// environment (`GDRPERF_TOKEN`) is never part of a command line, so it needs no rule here.
pub fn redact_command_line<I, S>(arguments: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut redacted = Vec::new();
    let mut value_follows = false;
    for argument in arguments {
        let argument = argument.as_ref();
        if value_follows {
            redacted.push(REDACTED.to_string());
            value_follows = false;
            continue;
        }
        if SECRET_OPTIONS.contains(&argument) {
            value_follows = true;
            redacted.push(argument.to_string());
            continue;
        }
        let inline = SECRET_OPTIONS
            .iter()
            .find(|option| argument.strip_prefix(**option).is_some_and(|rest| rest.starts_with('=')));
        match inline {
            Some(option) => redacted.push(format!("{option}={REDACTED}")),
            None => redacted.push(argument.to_string()),
        }
    }
    redacted
}

/// `arguments` without the secret options and their values (both spellings), and the last
/// secret's value. `gdrperf slurm` runs the bench with the first and hands the second over in
/// the `GDRPERF_TOKEN` environment variable: a child's command line is readable by every user of
/// the node (`ps`, `/proc/PID/cmdline`) and lands in Slurm's accounting, its environment is not.
pub fn take_secret<S: AsRef<str>>(arguments: &[S]) -> (Vec<String>, Option<String>) {
    let mut kept = Vec::new();
    let mut secret = None;
    let mut value_follows = false;
    for argument in arguments {
        let argument = argument.as_ref();
        if value_follows {
            secret = Some(argument.to_string());
            value_follows = false;
        } else if SECRET_OPTIONS.contains(&argument) {
            value_follows = true;
        } else if let Some(value) =
            SECRET_OPTIONS.iter().find_map(|option| argument.strip_prefix(*option)?.strip_prefix('='))
        {
            secret = Some(value.to_string());
        } else {
            kept.push(argument.to_string());
        }
    }
    (kept, secret)
}

/// Whether `arguments` give a secret option on the command line (where `ps` shows it); the
/// binaries then warn and name the safe ways (`--token-file`, `GDRPERF_TOKEN`).
pub fn secret_on_command_line<S: AsRef<str>>(arguments: &[S]) -> bool {
    take_secret(arguments).0.len() != arguments.len()
}

/// The warning printed when [`secret_on_command_line`] holds.
pub const SECRET_ON_COMMAND_LINE: &str = "warning: --token on the command line is visible to every user of this \
     host (ps, /proc/PID/cmdline, Slurm accounting); use --token-file PATH or the GDRPERF_TOKEN environment variable";

/// The longest timeout any binary takes (`--timeout`, `--accept-timeout`, `gdrperf accept
/// --run-timeout`, `gdrperf slurm --*-timeout`): 30 days. A deadline is `Instant::now()` plus the
/// timeout, and `u64::MAX` seconds overflows that sum (a panic); 30 days is longer than any
/// acceptance run.
pub const MAX_TIMEOUT_SECONDS: u64 = 30 * 24 * 3600;

/// This process's arguments as text, never panicking: `std::env::args` panics on an argument
/// that is not UTF-8 (a file name in another encoding). Every binary refuses such an argument
/// first ([`non_utf8_argument`]); this lossy reading is what records a command line afterwards.
pub fn arguments() -> Vec<String> {
    std::env::args_os().map(|argument| argument.to_string_lossy().into_owned()).collect()
}

/// A message naming the first of `arguments` that is not UTF-8, or `None` when all are text.
/// The binaries print it and exit 2 before parsing: their options, file names included, are
/// recorded as text in result files and plans, so an argument that is not text is a usage error.
pub fn non_utf8_argument<I, S>(arguments: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    arguments.into_iter().enumerate().find_map(|(position, argument)| {
        let argument = argument.as_ref();
        argument.to_str().is_none().then(|| {
            format!(
                "argument {position} ({}) is not valid UTF-8; gdrperf takes text arguments only \
                 (rename the file or pick another path)",
                argument.to_string_lossy()
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_of_the_token_lose_their_value_and_nothing_else_changes() {
        let line = ["gdr-write-bw", "--token", "s3cret", "-s", "64K", "--token=other", "--json", "o.json"];
        assert_eq!(
            redact_command_line(line),
            ["gdr-write-bw", "--token", REDACTED, "-s", "64K", "--token=<redacted>", "--json", "o.json"]
        );
    }

    #[test]
    fn a_value_that_looks_like_an_option_is_still_the_secret() {
        // clap takes the next word as the value even when it starts with a dash.
        assert_eq!(redact_command_line(["b", "--token", "--json"]), ["b", "--token", REDACTED]);
    }

    #[test]
    fn options_that_merely_start_like_the_secret_one_are_kept() {
        let line = ["b", "--tokenizer=x", "--tokens", "y", "--token"];
        assert_eq!(redact_command_line(line), line);
    }

    #[test]
    fn the_first_argument_that_is_not_text_is_named() {
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"/tmp/a\xff.csv");
        let line = [std::ffi::OsStr::new("gdr-write-bw"), std::ffi::OsStr::new("--csv"), bad];
        let message = non_utf8_argument(line).unwrap();
        assert!(message.starts_with("argument 2 (/tmp/a\u{fffd}.csv) is not valid UTF-8"), "{message}");
        assert_eq!(non_utf8_argument(["gdr-write-bw", "--csv", "a.csv"]), None);
    }

    #[test]
    fn the_secret_is_taken_out_of_the_arguments_in_both_spellings() {
        let line = ["-a", "--token", "s3cret", "-s", "64K", "--token=other", "--mem", "cuda"];
        let (kept, secret) = take_secret(&line);
        assert_eq!(kept, ["-a", "-s", "64K", "--mem", "cuda"]);
        assert_eq!(secret.as_deref(), Some("other"));
        assert!(secret_on_command_line(&line));
        let plain = ["-a", "--tokenizer=x", "--token-file", "/run/t"];
        assert_eq!(take_secret(&plain), (plain.map(String::from).to_vec(), None));
        assert!(!secret_on_command_line(&plain));
    }
}
