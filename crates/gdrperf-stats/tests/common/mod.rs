//! Shared helpers for the integration tests: a seeded generator (no `rand` dependency needed for
//! three distributions), reference statistics computed the slow, obvious way, and a base64 decoder
//! for reading interval logs back.

#![allow(dead_code)] // each test binary uses a different subset

/// SplitMix64: tiny, seedable, good enough to shape test distributions reproducibly.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1_u64 << 53) as f64
    }

    /// Uniform integer in [low, high].
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }
}

/// Uniform latencies between 1 µs and 5 µs.
pub fn uniform_samples(count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..count).map(|_| rng.between(1_000, 5_000)).collect()
}

/// 90% around 1.5 µs, 10% around 8 µs: a fast path and a slow path (e.g. a cache miss).
pub fn bimodal_samples(count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| if rng.next_unit() < 0.9 { rng.between(1_450, 1_550) } else { rng.between(7_500, 8_500) })
        .collect()
}

/// Pareto (shape 1.2) from 1 µs up: most samples near 1 µs, a tail reaching milliseconds.
pub fn long_tail_samples(count: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let u = 1.0 - rng.next_unit(); // (0, 1]
            (1_000.0 * u.powf(-1.0 / 1.2)).min(1.0e12) as u64
        })
        .collect()
}

/// Nearest-rank percentile by sorting: rank ⌈q·n⌉ (at least 1), the textbook definition.
pub fn sorted_percentile(samples: &[u64], quantile: f64) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

/// Two-pass mean and population standard deviation.
pub fn two_pass_mean_and_deviation(samples: &[u64]) -> (f64, f64) {
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&x| x as f64).sum::<f64>() / n;
    let squares = samples.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>();
    (mean, (squares / n).sqrt())
}

/// Standard base64 (with padding) decoder, enough to read interval-log histograms back.
pub fn base64_decode(text: &str) -> Vec<u8> {
    fn sextet(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            other => panic!("not base64: {other}"),
        }
    }
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut accumulator = 0_u32;
        for (i, &c) in chunk.iter().enumerate() {
            accumulator |= sextet(c) << (18 - 6 * i);
        }
        let produced = chunk.len() * 6 / 8;
        for i in 0..produced {
            out.push((accumulator >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[test]
fn base64_decoder_reads_a_known_string() {
    assert_eq!(base64_decode("aGRyaGlzdG9ncmFt"), b"hdrhistogram");
    assert_eq!(base64_decode("Z2Rycw=="), b"gdrs");
    assert_eq!(base64_decode("Z2RycGU="), b"gdrpe");
}
