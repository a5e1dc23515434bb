//! Secrets kept off what is recorded or shown: a `--token`'s value redacted from every command
//! line a file or a screen gets, and taken out of a child's command line into its environment.

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
