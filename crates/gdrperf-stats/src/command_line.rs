//! The command line a result file or a printed plan records, with secrets taken out.
//!
//! Result files travel: they are attached to tickets, copied to shared folders, gathered on
//! rank 0 of a Slurm job. A `--token` on the command line must therefore never reach them. It
//! lives here, next to [`crate::utc_timestamp`], because the benches (run metadata), `gdrperf
//! accept` (its summary) and `gdrperf slurm` (plan and per-pair status) all record command
//! lines, and this is the one crate they share that knows nothing of verbs. Every place that
//! records or prints a command line goes through [`redact_command_line`]: one rule, one list.

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
}
