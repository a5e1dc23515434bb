//! A seeded generator whose stream is fixed by this file (SplitMix64, Steele, Lea and Flood 2014).
//!
//! Every rank of a job computes the same schedule from the same seed, and a simulation must give
//! the same fleet for the same seed next year: a generator from a crate may change its stream
//! between versions (rand's `StdRng` says it does), so the few lines of SplitMix64 live here.

/// SplitMix64: 64 bits of state, one add and three mixes per number.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A generator for one item of a seeded family (a pair run, a lane): the same `(seed, key)`
    /// always starts the same stream, whatever else was drawn before.
    pub fn keyed(seed: u64, key: u64) -> SplitMix64 {
        let mut mixer = SplitMix64::new(seed ^ key.wrapping_mul(0xD605_BBB5_8C8A_BE0B));
        let start = mixer.next_u64();
        SplitMix64::new(start)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..bound` (bound > 0), by Lemire's multiply-shift (bias below 2^-32 here).
    pub fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }

    /// A standard normal draw (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for index in (1..items.len()).rev() {
            let other = self.below(index + 1);
            items.swap(index, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64s() {
        // First outputs of SplitMix64 from seed 0 (the reference C code's values).
        let mut generator = SplitMix64::new(0);
        assert_eq!(generator.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(generator.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn shuffles_are_permutations_and_repeat_by_seed() {
        let shuffled = |seed| {
            let mut items: Vec<usize> = (0..50).collect();
            SplitMix64::new(seed).shuffle(&mut items);
            items
        };
        let mut sorted = shuffled(7);
        assert_eq!(shuffled(7), sorted);
        assert_ne!(shuffled(8), sorted);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }
}
