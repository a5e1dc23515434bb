//! A peer's text made safe to print: what the channel shows of a reason the peer sent.

/// The most of a peer's text we print: a real reason is one line.
pub const PEER_TEXT_CHARS: usize = 400;

/// A peer's text made safe for a terminal and a log, before anyone knows who the peer is: control
/// characters escaped (no cursor moves, no fake lines) and cut at [`PEER_TEXT_CHARS`].
pub fn printable(text: &str) -> String {
    let mut out = String::new();
    for (count, character) in text.chars().enumerate() {
        if count == PEER_TEXT_CHARS {
            out.push_str(&format!("... ({} more characters cut)", text.chars().count() - count));
            break;
        }
        if character.is_control() {
            out.extend(character.escape_default());
        } else {
            out.push(character);
        }
    }
    out
}
