//! The data pattern of `--validate`: what each byte of a checked transfer holds, per size, per
//! QP and (for staged rings) per message, and where a received buffer first differs from it.
//! Pure functions over bytes, so that the buffers, the staged rings and the engines check alike.

/// Where a checked buffer first differs from its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    pub offset: usize,
    pub expected: u8,
    pub found: u8,
}

/// The pattern seed of a transfer: different per size and per QP, so that data left over from
/// another size or delivered to the wrong QP's buffer is caught.
pub fn pattern_seed(size: usize, queue_pair: usize) -> u64 {
    (size as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((queue_pair as u64) << 56) ^ 0x5a
}

/// Byte `offset` of the pattern: never all-zero (a cleared buffer never passes), and not
/// periodic at any power of two (a misplaced block is caught).
pub fn pattern_byte(seed: u64, offset: usize) -> u8 {
    // splitmix64's finaliser: every bit of seed and offset reaches every bit of the result.
    let mut mixed = (offset as u64).wrapping_add(seed);
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((mixed ^ (mixed >> 31)) as u8) | 1
}

pub fn fill_pattern(bytes: &mut [u8], seed: u64) {
    for (offset, byte) in bytes.iter_mut().enumerate() {
        *byte = pattern_byte(seed, offset);
    }
}

pub fn find_mismatch(bytes: &[u8], seed: u64) -> Option<Mismatch> {
    bytes.iter().enumerate().find_map(|(offset, &found)| {
        let expected = pattern_byte(seed, offset);
        (found != expected).then_some(Mismatch { offset, expected, found })
    })
}

/// The 8-byte stamp of message `index`: mixed with the seed, so a stamp of another size or QP
/// never matches by accident.
fn stamp(seed: u64, index: u64) -> [u8; 8] {
    (index ^ seed.rotate_left(29)).to_le_bytes()
}

/// The message index a stamp carries.
fn unstamp(seed: u64, bytes: [u8; 8]) -> u64 {
    u64::from_le_bytes(bytes) ^ seed.rotate_left(29)
}

/// Byte `offset` of message `index` (`len` bytes) of the pattern `seed`: the pattern, with the
/// message's index stamped into its first 8 bytes and, from 16 bytes on, its last 8 (so a
/// message overwritten from either end by another shows the other's index).
pub fn message_byte(seed: u64, index: u64, len: usize, offset: usize) -> u8 {
    let stamp = stamp(seed, index);
    if offset < 8 {
        stamp[offset]
    } else if len >= 16 && offset >= len - 8 {
        stamp[offset - (len - 8)]
    } else {
        pattern_byte(seed, offset)
    }
}

/// Where message `index` (`len` bytes) of the pattern `seed` differs from the plain pattern:
/// its stamps, as (offset, bytes): the first 8 bytes (fewer in a shorter message) and, from 16
/// bytes on, the last 8.
pub fn message_stamps(seed: u64, index: u64, len: usize) -> Vec<(usize, Vec<u8>)> {
    let stamp = stamp(seed, index);
    let mut stamps = vec![(0, stamp[..len.min(8)].to_vec())];
    if len >= 16 {
        stamps.push((len - 8, stamp.to_vec()));
    }
    stamps
}

/// Writes message `index` of the pattern `seed` into `bytes` (what a staged sender sends: the
/// tests build expected messages with it).
#[cfg(test)]
pub fn fill_message(bytes: &mut [u8], seed: u64, index: u64) {
    fill_pattern(bytes, seed);
    for (offset, stamp) in message_stamps(seed, index, bytes.len()) {
        bytes[offset..offset + stamp.len()].copy_from_slice(&stamp);
    }
}

/// How a checked message differs from message `index` of its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageMismatch {
    /// The message carries another message's index: it was overwritten or delivered out of order.
    Stamp { found: u64, at_end: bool },
    /// A byte differs otherwise.
    Byte(Mismatch),
}

impl MessageMismatch {
    /// "message 17 (slot 1 of 8) holds message 25", "message 3: byte 17 is 0x00, expected 0x5b".
    pub fn describe(&self, index: u64, slot: u64, slots: u64) -> String {
        match self {
            MessageMismatch::Stamp { found, at_end } => format!(
                "message {index} (slot {slot} of {slots}) carries the stamp of message {found} at its {}: overwritten or out of order",
                if *at_end { "end" } else { "start" }
            ),
            MessageMismatch::Byte(mismatch) => format!(
                "message {index}: byte {} is {:#04x}, expected {:#04x}",
                mismatch.offset, mismatch.found, mismatch.expected
            ),
        }
    }
}

/// Checks `bytes` against message `index` of the pattern `seed`: a stamp of another message is
/// named as such, any other difference by its first byte.
pub fn find_message_mismatch(bytes: &[u8], seed: u64, index: u64) -> Option<MessageMismatch> {
    let len = bytes.len();
    let stamps = [(0, false), (len.saturating_sub(8), true)];
    for (start, at_end) in stamps {
        if len >= 16 || (start == 0 && len >= 8) {
            let found = unstamp(seed, bytes[start..start + 8].try_into().expect("8 bytes"));
            if found != index && found < (1 << 48) {
                return Some(MessageMismatch::Stamp { found, at_end });
            }
        }
    }
    bytes.iter().enumerate().find_map(|(offset, &found)| {
        let expected = message_byte(seed, index, len, offset);
        (found != expected).then_some(MessageMismatch::Byte(Mismatch { offset, expected, found }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_messages_round_trip_and_name_the_message_that_overwrote_them() {
        let seed = pattern_seed(4096, 1);
        let mut slot = vec![0u8; 4096];
        fill_message(&mut slot, seed, 17);
        assert_eq!(find_message_mismatch(&slot, seed, 17), None);
        assert!(slot.iter().enumerate().all(|(offset, &byte)| byte == message_byte(seed, 17, 4096, offset)));
        // The old shared bounce buffer: message 18 landed on the bytes of 17 before 17 was copied
        // in, so what was copied in as 17 is 18 (same pattern, other stamp).
        fill_message(&mut slot, seed, 18);
        assert_eq!(
            find_message_mismatch(&slot, seed, 17),
            Some(MessageMismatch::Stamp { found: 18, at_end: false })
        );
        // Overwritten from the start only up to half (the later message's first packets).
        let mut half = vec![0u8; 4096];
        fill_message(&mut half, seed, 17);
        let mut later = vec![0u8; 4096];
        fill_message(&mut later, seed, 25);
        half[..2048].copy_from_slice(&later[..2048]);
        assert_eq!(
            find_message_mismatch(&half, seed, 17),
            Some(MessageMismatch::Stamp { found: 25, at_end: false })
        );
        // Its tail only.
        let mut tail = vec![0u8; 4096];
        fill_message(&mut tail, seed, 17);
        tail[4000..].copy_from_slice(&later[4000..]);
        assert_eq!(
            find_message_mismatch(&tail, seed, 17),
            Some(MessageMismatch::Stamp { found: 25, at_end: true })
        );
        // A corrupted body byte, and an all-zero (never copied in) slot.
        let mut corrupted = vec![0u8; 4096];
        fill_message(&mut corrupted, seed, 17);
        corrupted[100] ^= 1;
        assert!(matches!(
            find_message_mismatch(&corrupted, seed, 17),
            Some(MessageMismatch::Byte(Mismatch { offset: 100, .. }))
        ));
        assert!(find_message_mismatch(&[0u8; 4096], seed, 17).is_some());
        let text = MessageMismatch::Stamp { found: 25, at_end: false }.describe(17, 1, 8);
        assert!(text.contains("message 17 (slot 1 of 8)") && text.contains("message 25"), "{text}");
    }

    #[test]
    fn small_messages_carry_what_stamp_fits() {
        let seed = pattern_seed(4, 0);
        for len in [1usize, 4, 8, 12, 16] {
            let mut bytes = vec![0u8; len];
            fill_message(&mut bytes, seed, 3);
            assert_eq!(find_message_mismatch(&bytes, seed, 3), None, "{len}");
            assert!(find_message_mismatch(&bytes, seed, 4).is_some(), "{len}: another index differs");
        }
    }

    #[test]
    fn pattern_round_trips_and_catches_single_byte_errors() {
        let seed = pattern_seed(4096, 0);
        let mut bytes = vec![0u8; 4096];
        assert_eq!(find_mismatch(&bytes, seed).map(|mismatch| mismatch.offset), Some(0));
        fill_pattern(&mut bytes, seed);
        assert_eq!(find_mismatch(&bytes, seed), None);
        bytes[4095] ^= 0x10;
        assert_eq!(find_mismatch(&bytes, seed).map(|mismatch| mismatch.offset), Some(4095));
    }

    #[test]
    fn patterns_differ_between_sizes_and_queue_pairs() {
        let mut bytes = vec![0u8; 256];
        fill_pattern(&mut bytes, pattern_seed(256, 0));
        assert!(find_mismatch(&bytes, pattern_seed(256, 1)).is_some());
        assert!(find_mismatch(&bytes, pattern_seed(128, 0)).is_some());
    }
}
