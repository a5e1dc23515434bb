//! What a PCIe link carries of payload in one direction: lanes × rate × line-code efficiency,
//! less each TLP's header and framing at the Max Payload Size. Sources in docs/methodology.md.
//!
//! - **Line code** (PCIe Base Spec 5.0, 4.2): 8b/10b at 2.5 and 5 GT/s; 128b/130b at 8, 16 and
//!   32 GT/s. At 64 GT/s (PCIe 6.0, 4.2 "Flit Mode") PAM4 carries 1 bit per bit (no line code)
//!   in 256-byte flits of which 236 bytes carry TLPs (6 DLP, 8 CRC, 6 FEC).
//! - **TLP overhead**, non-flit: 8 bytes of framing and data-link layer per TLP (Gen1/2: STP 1 +
//!   sequence 2 + LCRC 4 + END 1; Gen3+: STP token 4 + LCRC 4) plus the header: 16 bytes for a
//!   Memory Write with 64-bit address (GPU BARs and host memory above 4 GiB), 12 for a
//!   Completion with data. So 24 bytes per write and 20 per completion: the figures of
//!   Neugebauer et al., "Understanding PCIe performance for end host networking", SIGCOMM 2018.
//!   In flit mode the per-TLP framing moves into the flit; the header sizes are taken as above
//!   (flit-mode header layouts were not checked: an upper bound on the overhead).
//! - **Not counted**: DLLPs (Ack, flow-control updates) and read requests, which share the link
//!   in proportions no spec fixes; completions split at the Read Completion Boundary (64 or 128
//!   bytes) below the MPS, the completer's choice. So the figure is an upper bound.
//!
//! Which TLPs carry the data depends on the end: the NIC of the end whose memory is read (the
//! data source) receives it as completions; the NIC of the end written to sends memory writes.

use serde::{Deserialize, Serialize};

/// Which TLPs carry the payload over a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlpKind {
    /// Memory Write, 64-bit address (4 DW header): the NIC writing received data to memory.
    MemoryWrite,
    /// Completion with data (3 DW header): memory answering the NIC's reads of data to send.
    CompletionWithData,
}

/// Bytes of header each TLP kind carries.
fn header_bytes(kind: TlpKind) -> u64 {
    match kind {
        TlpKind::MemoryWrite => 16,
        TlpKind::CompletionWithData => 12,
    }
}

/// Framing and data-link bytes per TLP outside flit mode (STP, sequence, LCRC, END).
pub const NON_FLIT_FRAMING_BYTES: u64 = 8;
/// Of each 256-byte flit at 64 GT/s, the bytes that carry TLPs.
pub const FLIT_TLP_BYTES: f64 = 236.0;
pub const FLIT_BYTES: f64 = 256.0;

/// The line code of a link speed, as a fraction of the raw bits, and whether it is flit mode.
/// `None` for a speed the model does not know.
pub fn line_code(speed_gts: f64) -> Option<(f64, bool)> {
    let near = |value: f64| (speed_gts - value).abs() < 0.05;
    if near(2.5) || near(5.0) {
        Some((8.0 / 10.0, false))
    } else if near(8.0) || near(16.0) || near(32.0) {
        Some((128.0 / 130.0, false))
    } else if near(64.0) {
        Some((FLIT_TLP_BYTES / FLIT_BYTES, true))
    } else {
        None
    }
}

/// The name of the line code, for the ceiling's explanation.
pub fn line_code_name(speed_gts: f64) -> &'static str {
    match line_code(speed_gts) {
        Some((_, true)) => "PAM4 flits, 236 of 256 bytes",
        Some((code, _)) if code < 0.9 => "8b/10b",
        Some(_) => "128b/130b",
        None => "unknown",
    }
}

/// Payload Gb/s a link carries in one direction for messages of `message_bytes` split into TLPs
/// of at most `max_payload_bytes`. `None` for an unknown speed.
pub fn payload_gbps(
    speed_gts: f64,
    width: u32,
    max_payload_bytes: u32,
    kind: TlpKind,
    message_bytes: u64,
) -> Option<f64> {
    let (code, flit) = line_code(speed_gts)?;
    let raw = speed_gts * f64::from(width) * code;
    let message_bytes = message_bytes.max(1);
    let tlps = message_bytes.div_ceil(u64::from(max_payload_bytes.max(1)));
    let per_tlp = header_bytes(kind) + if flit { 0 } else { NON_FLIT_FRAMING_BYTES };
    Some(raw * message_bytes as f64 / (message_bytes + tlps * per_tlp) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn gen4_x16_at_mps_256_carries_about_230_gbps_of_writes() {
        // 16 GT/s x 16 lanes x 128/130 = 252.06 Gb/s; 256 of every 280 bytes are payload.
        let writes = payload_gbps(16.0, 16, 256, TlpKind::MemoryWrite, 1 << 20).unwrap();
        assert!(close(writes, 16.0 * 16.0 * 128.0 / 130.0 * 256.0 / 280.0), "{writes}");
        let completions = payload_gbps(16.0, 16, 256, TlpKind::CompletionWithData, 1 << 20).unwrap();
        assert!(close(completions, 16.0 * 16.0 * 128.0 / 130.0 * 256.0 / 276.0), "{completions}");
    }

    #[test]
    fn older_and_newer_speeds_use_their_own_line_codes() {
        // Gen2 x8: 5 x 8 x 0.8 = 32 Gb/s raw; MPS 128: 128/152.
        let gen2 = payload_gbps(5.0, 8, 128, TlpKind::MemoryWrite, 4096).unwrap();
        assert!(close(gen2, 32.0 * 128.0 / 152.0));
        // Gen6 x16: 64 x 16 x 236/256, then 16 bytes of header per 256-byte write.
        let gen6 = payload_gbps(64.0, 16, 256, TlpKind::MemoryWrite, 4096).unwrap();
        assert!(close(gen6, 1024.0 * 236.0 / 256.0 * 256.0 / 272.0));
        assert_eq!(payload_gbps(128.0, 16, 256, TlpKind::MemoryWrite, 4096), None);
        assert_eq!(line_code_name(2.5), "8b/10b");
        assert_eq!(line_code_name(32.0), "128b/130b");
    }

    #[test]
    fn a_message_smaller_than_the_mps_is_one_tlp() {
        let one = payload_gbps(32.0, 16, 256, TlpKind::MemoryWrite, 64).unwrap();
        assert!(close(one, 512.0 * 128.0 / 130.0 * 64.0 / 88.0));
    }
}
