//! Test patterns for checking that copied data arrived intact.
//!
//! A byte counter (`i as u8`) repeats every 256 bytes, so a chunk copied to the
//! wrong place at a multiple of 256 would still compare equal. These patterns
//! instead hash the 8-byte word index with a seed, so every word of a buffer (and
//! of differently seeded buffers) differs, and a misplaced or stale chunk shows.

/// SplitMix64's finalizer: a fast, well-mixed 64-bit hash.
fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// Byte `index` of the pattern with `seed`.
pub fn pattern_byte(seed: u64, index: usize) -> u8 {
    let word = mix(seed ^ mix(index as u64 / 8));
    word.to_le_bytes()[index % 8]
}

/// Fills `buffer` with the pattern for `seed`, as if it started at byte `start` of the pattern.
pub fn fill_pattern(buffer: &mut [u8], seed: u64, start: usize) {
    let seed_word = |word_index: usize| mix(seed ^ mix(word_index as u64)).to_le_bytes();
    let mut index = start;
    let mut remaining = buffer;
    // Head up to the first word boundary, whole words, then the tail.
    while !remaining.is_empty() {
        let word = seed_word(index / 8);
        let within = index % 8;
        let take = (8 - within).min(remaining.len());
        remaining[..take].copy_from_slice(&word[within..within + take]);
        remaining = &mut remaining[take..];
        index += take;
    }
}

/// A new vector of `len` pattern bytes for `seed`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    fill_pattern(&mut bytes, seed, 0);
    bytes
}

/// The first index where `actual` differs from `expected`, if any (lengths must match).
pub fn first_mismatch(expected: &[u8], actual: &[u8]) -> Option<usize> {
    if expected.len() != actual.len() {
        return Some(expected.len().min(actual.len()));
    }
    // Compare in large blocks first; only search bytes inside a differing block.
    const BLOCK: usize = 4096;
    expected.chunks(BLOCK).zip(actual.chunks(BLOCK)).enumerate().find_map(|(block, (left, right))| {
        (left != right).then(|| block * BLOCK + left.iter().zip(right).position(|(a, b)| a != b).unwrap_or(0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_bytewise_definition_at_any_start() {
        for start in [0usize, 1, 7, 8, 13, 4096] {
            let mut bytes = vec![0u8; 37];
            fill_pattern(&mut bytes, 42, start);
            let expected: Vec<u8> = (start..start + 37).map(|index| pattern_byte(42, index)).collect();
            assert_eq!(bytes, expected, "start {start}");
        }
    }

    #[test]
    fn pattern_does_not_repeat_at_power_of_two_offsets() {
        let bytes = pattern(1 << 20, 7);
        for shift in [256usize, 4096, 65536, 1 << 19] {
            assert_ne!(bytes[..shift], bytes[shift..2 * shift], "repeats at {shift}");
        }
        assert_ne!(pattern(64, 1), pattern(64, 2), "seeds must differ");
    }

    #[test]
    fn first_mismatch_finds_the_first_differing_byte() {
        let expected = pattern(10_000, 3);
        let mut actual = expected.clone();
        assert_eq!(first_mismatch(&expected, &actual), None);
        actual[9_000] ^= 1;
        actual[5_000] ^= 1;
        assert_eq!(first_mismatch(&expected, &actual), Some(5_000));
        assert_eq!(first_mismatch(&expected, &actual[..100]), Some(100));
    }
}
