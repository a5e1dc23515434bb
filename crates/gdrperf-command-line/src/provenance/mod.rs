//! What made a result file: the git commit the binary was built from (embedded by `build.rs`),
//! the command line that ran it and the date it ran ([`utc_timestamp`]). Every file a gdrperf
//! binary writes names them, so a result is complete by construction (brief: "each file names
//! command, git commit, machine, date"). The benches and `gdrperf`'s subcommands stamp their
//! files through this one module, so every file says it the same way.

mod timestamp;

pub use timestamp::utc_timestamp;

/// The commit the binary was built from: 40 hexadecimal digits, `-dirty` appended when the
/// sources differed from it, or `unknown (built outside a git checkout)`.
pub const GIT_COMMIT: &str = env!("GDRPERF_GIT_COMMIT");

/// A command line as one could paste it into a shell: arguments holding a space, a quote or
/// another character the shell reads are single-quoted, and a `--token`'s value is redacted
/// ([`crate::secret::redact_command_line`]): every recorded or printed command line passes
/// here.
pub fn command_line(argv: &[String]) -> String {
    crate::secret::redact_command_line(argv)
        .iter()
        .map(|argument| {
            let plain = !argument.is_empty()
                && argument.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                argument.clone()
            } else {
                format!("'{}'", argument.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The comment lines that open a gdrperf CSV or `.hgrm` file: `# key: value`, the keys of the
/// JSON metadata (`gdrperf compare` reads them back as the file's metadata).
pub fn comment_lines(test: &str, argv: &[String], date: &str, host: &str) -> String {
    format!(
        "# test: {test}\n# command: {}\n# git_commit: {GIT_COMMIT}\n# gdrperf_version: {}\n# date: {date}\n# host: {host}\n",
        command_line(argv),
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_is_a_commit_id_or_says_why_not() {
        let id = GIT_COMMIT.strip_suffix("-dirty").unwrap_or(GIT_COMMIT);
        let is_commit = id.len() == 40 && id.chars().all(|c| c.is_ascii_hexdigit());
        assert!(
            is_commit || GIT_COMMIT == "unknown (built outside a git checkout)",
            "GIT_COMMIT is {GIT_COMMIT:?}"
        );
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_read() {
        let argv = ["gdr-write-bw", "-s", "4096", "--mem", "host,cuda:0", "--label", "a b", "it's"];
        let argv: Vec<String> = argv.iter().map(|word| word.to_string()).collect();
        assert_eq!(command_line(&argv), r"gdr-write-bw -s 4096 --mem host,cuda:0 --label 'a b' 'it'\''s'");
        assert_eq!(command_line(&[String::new()]), "''");
        let secret: Vec<String> =
            ["gdr-write-bw", "--token", "s3cret", "--token=s3cret"].map(String::from).into();
        assert!(!command_line(&secret).contains("s3cret"), "{}", command_line(&secret));
    }

    #[test]
    fn comment_lines_name_test_command_commit_date_and_host() {
        let text =
            comment_lines("write_bw", &["gdr-write-bw".into(), "-a".into()], "2026-12-03T00:00:00Z", "node1");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# test: write_bw");
        assert_eq!(lines[1], "# command: gdr-write-bw -a");
        assert_eq!(lines[2], format!("# git_commit: {GIT_COMMIT}"));
        assert_eq!(lines[4..], ["# date: 2026-12-03T00:00:00Z", "# host: node1"]);
        assert!(lines.iter().all(|line| line.starts_with("# ")));
    }
}
