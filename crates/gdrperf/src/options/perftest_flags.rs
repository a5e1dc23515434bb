//! perftest's command-line flags as a perftest user types them: the one list
//! ([`PERFTEST_FLAGS`], in `perftest_flags/list.rs`) saying, for every flag of perftest's
//! `perftest_parameters.c` (`long_options[]`, 00b55b6), whether gdrperf takes it the same way,
//! as an alias of its own spelling, differently, or not at all.
//!
//! Both the parser's behaviour and the reference table derive from it. [`translate`] runs over
//! a bench binary's arguments before clap: an alias becomes gdrperf's spelling, a flag gdrperf
//! ignores is dropped with a note on stderr, and a flag gdrperf lacks is refused with exit
//! status 2 and a message naming gdrperf's spelling or saying it is not supported (a script
//! fails on the first such flag, with its reason, not with clap's bare "unexpected argument").
//! `docs/perftest-flags.md` is [`render_markdown`]'s output; a test fails when the file differs
//! (`GDRPERF_WRITE_FLAGS_DOC=1` rewrites it).

use std::ffi::OsString;

use clap::Command;

mod flag;
mod list;
pub use flag::{PerftestFlag, Status};
pub use list::PERFTEST_FLAGS;

/// The list's entry for `--long` or `-s`.
fn lookup(token: &str) -> Option<&'static PerftestFlag> {
    if let Some(long) = token.strip_prefix("--") {
        return PERFTEST_FLAGS.iter().find(|flag| flag.long == long);
    }
    let mut characters = token.strip_prefix('-')?.chars();
    let (Some(short), None) = (characters.next(), characters.next()) else { return None };
    PERFTEST_FLAGS.iter().find(|flag| flag.short == Some(short))
}

/// Whether `command` has an option spelled `token` ("--size", "-s", an alias), and whether it
/// takes a value.
fn gdrperf_option(command: &Command, token: &str) -> Option<bool> {
    let takes_value = |argument: &clap::Arg| argument.get_action().takes_values();
    if let Some(long) = token.strip_prefix("--") {
        return command
            .get_arguments()
            .find(|argument| {
                argument.get_long() == Some(long)
                    || argument.get_all_aliases().is_some_and(|aliases| aliases.contains(&long))
            })
            .map(takes_value);
    }
    let mut characters = token.strip_prefix('-')?.chars();
    let (Some(short), None) = (characters.next(), characters.next()) else { return None };
    command
        .get_arguments()
        .find(|argument| {
            argument.get_short() == Some(short)
                || argument.get_all_short_aliases().is_some_and(|aliases| aliases.contains(&short))
        })
        .map(takes_value)
}

/// A perftest flag refused: the message a user sees, with exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// `arguments` (the program name first) for `command`, perftest's spellings translated by the
/// list: aliases rewritten, ignored flags dropped (their notes returned, for stderr), the first
/// refused flag returned as a [`Refusal`]. Anything the list does not name is left to clap.
pub fn translate(
    command: &Command,
    arguments: impl IntoIterator<Item = OsString>,
    latency: bool,
) -> Result<(Vec<OsString>, Vec<String>), Refusal> {
    let mut arguments = arguments.into_iter();
    let mut translated: Vec<OsString> = arguments.next().into_iter().collect();
    let mut notes = Vec::new();
    let rest: Vec<OsString> = arguments.collect();
    let binary = command.get_name().to_string();
    let mut index = 0;
    while index < rest.len() {
        let original = &rest[index];
        index += 1;
        let Some(text) = original.to_str() else {
            translated.push(original.clone());
            continue;
        };
        if text == "--" {
            translated.extend(rest[index - 1..].iter().cloned());
            break;
        }
        let (token, inline_value) = match text.split_once('=') {
            Some((token, value)) if token.starts_with("--") => (token, Some(value)),
            _ => (text, None),
        };
        let gdrperf = gdrperf_option(command, token);
        let Some(flag) = lookup(token) else {
            translated.push(original.clone());
            // The value of one of gdrperf's options passes untouched, even if it starts with '-'.
            if gdrperf == Some(true) && inline_value.is_none() && index < rest.len() {
                translated.push(rest[index].clone());
                index += 1;
            }
            continue;
        };
        let mut value = || -> Option<String> {
            if !flag.takes_value {
                return None;
            }
            if let Some(value) = inline_value {
                return Some(value.to_string());
            }
            let value = rest.get(index).and_then(|value| value.to_str()).map(str::to_string);
            index += usize::from(value.is_some());
            value
        };
        let refuse =
            |reason: String| Refusal(format!("unexpected argument '{token}' for {binary}: {reason}"));
        let unsupported_here = || {
            refuse(format!(
                "perftest's {} ({}) is not supported by {binary}; see docs/perftest-flags.md",
                flag.spelling(),
                flag.meaning
            ))
        };
        match flag.status_for(latency) {
            Status::Same | Status::Differs { .. } => {
                if gdrperf.is_none() {
                    return Err(unsupported_here());
                }
                translated.push(original.clone());
                if gdrperf == Some(true) && inline_value.is_none() && index < rest.len() {
                    translated.push(rest[index].clone());
                    index += 1;
                }
            }
            Status::AliasOf { gdrperf: replacement } => {
                let targets_exist = replacement
                    .iter()
                    .filter(|word| word.starts_with('-'))
                    .all(|word| gdrperf_option(command, word).is_some());
                if !targets_exist {
                    return Err(unsupported_here());
                }
                let value = value();
                if flag.takes_value && value.is_none() {
                    return Err(refuse(format!("needs a value ({})", flag.meaning)));
                }
                let value = value.unwrap_or_default();
                translated.extend(replacement.iter().map(|word| OsString::from(word.replace("{}", &value))));
            }
            Status::Ignored { how } => {
                let _ = value();
                notes.push(format!("note: perftest's {token} is ignored: {how}"));
            }
            Status::Refused { how } => {
                return Err(refuse(format!("perftest's {} differs here: {how}", flag.spelling())))
            }
            Status::NotSupported { why } => {
                return Err(refuse(format!(
                    "perftest's {} ({}) is not supported: {why}",
                    flag.spelling(),
                    flag.meaning
                )))
            }
        }
    }
    Ok((translated, notes))
}

/// The reference table: every perftest flag and what gdrperf does with it.
pub fn render_markdown() -> String {
    let mut text = String::from(
        "# perftest's flags in gdrperf\n\n\
         Generated from `crates/gdrperf/src/options/perftest_flags/list.rs` by \
         `GDRPERF_WRITE_FLAGS_DOC=1 cargo test -p gdrperf --lib perftest_flags`; a test fails when \
         this file and the list disagree. Do not edit by hand.\n\n\
         Every flag of perftest's `long_options[]` (`src/perftest_parameters.c`, linux-rdma/perftest \
         00b55b6). The bench binaries read a command line through this list before their own \
         parser: **same** and **differs** flags are gdrperf's own options; an **alias** is rewritten \
         to gdrperf's spelling; an **ignored** flag is dropped with a note on stderr; **refused** and \
         **not supported** flags stop the binary with exit status 2 and this table's reason. A \
         same or alias flag on a binary that lacks the option (perftest's `-I` on gdr-read-bw) is \
         refused as not supported by that binary.\n\n\
         | perftest flag | value | perftest meaning | gdrperf | latency binaries |\n|---|---|---|---|---|\n",
    );
    for flag in PERFTEST_FLAGS {
        let latency = flag.on_latency.map(describe).unwrap_or_default();
        text.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            flag.spelling(),
            if flag.takes_value { "yes" } else { "no" },
            flag.meaning,
            describe(flag.status),
            latency
        ));
    }
    text
}

/// A status as the table's cell says it.
fn describe(status: Status) -> String {
    match status {
        Status::Same => "same".into(),
        Status::AliasOf { gdrperf } => format!("alias of `{}`", gdrperf.join(" ").replace("{}", "VALUE")),
        Status::Differs { how } => format!("different: {how}"),
        Status::Ignored { how } => format!("different: ignored ({how})"),
        Status::Refused { how } => format!("different, refused: {how}"),
        Status::NotSupported { why } => format!("not supported: {why}"),
    }
}

#[cfg(test)]
mod tests;
