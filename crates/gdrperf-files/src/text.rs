//! A peer's or a file's text made safe to print: what the channel shows of a reason the peer
//! sent, and what every reader of a result file, a Slurm record or a manifest shows of theirs.
//! This is the one cleaning function of the project: every string from outside goes through it
//! where it enters.

/// The most of a peer's text we print: a real reason is one line.
pub const PEER_TEXT_CHARS: usize = 400;

/// Whether `character` could change what a terminal or an editor shows around it: a control
/// character (ESC, CR, LF, BEL...), or a Unicode format character, the bidirectional overrides
/// and isolates (U+202A-U+202E, U+2066-U+2069) above all, which reorder what is displayed
/// ("Trojan Source", CVE-2021-42574), zero-width characters (U+200B-U+200F, U+2060-U+2064,
/// U+FEFF) that hide text, and the line and paragraph separators U+2028/U+2029. The list is
/// Unicode's general category Cf (format) with Zl and Zp, as of Unicode 15.
pub fn is_unsafe_character(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{00AD}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08E2}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{110CD}'
                | '\u{13430}'..='\u{1343F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0001}'
                | '\u{E0020}'..='\u{E007F}'
        )
}

/// A peer's or a file's text made safe for a terminal, a log, a CSV cell or a web page's text:
/// every [`is_unsafe_character`] escaped (`\n`, `\u{1b}`, `\u{202e}`: no cursor moves, no fake
/// lines, no reordered text) and the whole cut at [`PEER_TEXT_CHARS`] characters.
pub fn printable(text: &str) -> String {
    printable_within(text, PEER_TEXT_CHARS)
}

/// [`printable`] with another limit on its length (in characters), for text whose honest form
/// is longer than a line (a file name in a manifest, a path).
pub fn printable_within(text: &str, limit: usize) -> String {
    let mut out = String::new();
    for (count, character) in text.chars().enumerate() {
        if count == limit {
            out.push_str(&format!("... ({} more characters cut)", text.chars().count() - count));
            break;
        }
        if character.is_control() {
            out.extend(character.escape_default());
        } else if is_unsafe_character(character) {
            out.extend(character.escape_unicode());
        } else {
            out.push(character);
        }
    }
    out
}

/// [`printable`] without a copy when nothing needs escaping or cutting (the common case, for
/// writers of millions of lines).
pub fn printable_cow(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(is_unsafe_character) || text.chars().nth(PEER_TEXT_CHARS).is_some() {
        std::borrow::Cow::Owned(printable(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Text of several lines (a summary's head) with each line made printable but not cut: the
/// line breaks stay, everything else [`is_unsafe_character`] is escaped.
pub fn printable_lines(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let (body, end) = line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n"));
            printable_within(body, usize::MAX) + end
        })
        .collect()
}

/// `cell` as a spreadsheet will read it as text: one starting with `=`, `+`, `-` or `@` that
/// is not a number gets a leading `'` (OWASP's advice against CSV injection). Peer text (a host
/// or device name, a cause) reaches CSV cells, and a spreadsheet would run `=HYPERLINK(...)` as
/// a formula. Numbers are never touched, so figures stay figures (docs/columns.md).
pub fn spreadsheet_safe(cell: &str) -> std::borrow::Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@']) && cell.parse::<f64>().is_err();
    if formula {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}
