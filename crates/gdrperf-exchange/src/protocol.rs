//! The protocol's version and the frame sizes it allows: what both sides must agree on before
//! a byte is decoded, kept apart so every part of the channel reads them from one place.

/// Bumped whenever a message changes shape; peers of different versions refuse each other.
/// Version 2 added the challenge that precedes the hellos; version 3 the placement list and lane
/// of the hello and `NextPlacement` (several memory placements, or lanes, in one run); version 4
/// the `Terms` that precede every hello, so that no key goes to a peer whose parameters differ;
/// version 5 the `-R` server's run secret in its hello and its `RdmaCmListening` (its rdma_cm
/// listener opens only after the admission, and accepts only the admitted client).
pub const PROTOCOL_VERSION: u32 = 5;

/// No legitimate message comes near this (a hello for 64 QPs is a few KiB): anything larger is
/// refused before allocating, so a stray or hostile peer cannot make us allocate gigabytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// The largest frame read while the challenge is under way, before the peer proved anything: a
/// `Challenge`, `Proof` or `Accepted` is a few hundred bytes of JSON, a `Failed` reason one line.
/// Anything larger is refused from its length prefix, so that a stranger costs no memory.
pub const PRE_PROOF_MAX_BYTES: usize = 4 << 10;

/// The largest frame read while the terms are agreed (still before any key is shown, and with no
/// token every peer gets this far): the run parameters are a few hundred bytes, a mismatch reason
/// a few lines. Many handshakes run at once (`HANDSHAKES_AT_ONCE`), each bounded by this.
pub const TERMS_MAX_BYTES: usize = 64 << 10;
