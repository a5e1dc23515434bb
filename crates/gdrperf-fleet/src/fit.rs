//! The robust fit: log bandwidth of a row = class level + the sender's effect + the receiver's
//! effect + a residual, by median polish over histograms.
//!
//! Median polish (Tukey) alternates medians: the class level is the median of the rows, each
//! port's effect the median of its rows once the level and its peers' effects are taken off.
//! A median ignores a minority of bad rows, so a healthy port measured against one slow peer
//! keeps an effect near zero, and a slow port's effect is its deficit. Medians come from fixed
//! histograms (512 bins over [-4, 2) in log units, 0.012 wide, interpolated within the bin), so
//! memory is bounded by ports, not rows, and every pass is one streaming visit of the rows.
//!
//! Three stages:
//! 1. combined effects `a` (either end, any direction), Jacobi sweeps, damped by half after the
//!    first so sparse schedules (two peers a port) settle rather than swing, until no port's
//!    median moves more than [`SETTLED`] between sweeps (then each effect takes its median) or
//!    [`MAX_SWEEPS`] ran;
//! 2. role effects: each port's median when sending and when receiving, with the peers'
//!    combined effects taken off: a NIC slow only when sending shows in the first only;
//! 3. residuals with the role effects off (the combined one where a role has fewer than three
//!    rows) give the noise (1.4826 x the median absolute residual, each residual scaled up for
//!    what its ends' effects absorbed) and the links.

use std::collections::HashMap;

use crate::observation::{Observation, Source};

const BINS: usize = 512;
const LOW: f64 = -4.0;
const HIGH: f64 = 2.0;
/// The sweeps stop after this many even if effects still move: a sparse schedule (two peers a
/// port) approaches its fixed point slowly, and its verdicts were measured with eight.
pub const MAX_SWEEPS: usize = 8;
/// The sweeps stop once no port's median moved more than this from one sweep to the next: half
/// a histogram bin (0.0059 in log units, 0.6 % of bandwidth), the resolution a binned median has.
/// Taking the peers' latest effects off then changed nothing the histograms can tell, and further
/// sweeps would only move each effect by halves towards that same median (or by the histogram's
/// rounding, up to a bin either way): it takes the median at once. In dense schedules (all-pairs:
/// thousands of rows a port, a slow peer among them moves a median by a fraction of a bin) the
/// medians stand still from the second sweep; in sparse ones (two peers a port) they keep moving
/// and all eight sweeps run, as before the rule. Half a bin is far inside the 15 % deficit the
/// judge names (14 bins).
pub const SETTLED: f64 = (HIGH - LOW) / BINS as f64 / 2.0;
/// A role effect stands in for the combined one in residuals from this many rows on.
pub const ROLE_ROWS: u32 = 3;
/// The noise is never taken below 0.5 %: rows that agree to the last digit (hand-built files,
/// a constant simulator) would otherwise make any difference "certain".
pub const NOISE_FLOOR: f64 = 0.005;

/// A histogram bin's count: `u32`, or `u16` where no key can count more than `u16::MAX` values
/// (half the memory the increments of a pass wait on).
pub(crate) trait Count: Copy + Default + Into<u64> {
    /// The largest count the type holds.
    const MOST: u64;
    fn increment(&mut self);
}

impl Count for u32 {
    const MOST: u64 = u32::MAX as u64;
    #[inline]
    fn increment(&mut self) {
        *self += 1;
    }
}

impl Count for u16 {
    const MOST: u64 = u16::MAX as u64;
    #[inline]
    fn increment(&mut self) {
        *self += 1;
    }
}

/// Fixed-bin histograms, one per key, for approximate medians in bounded memory.
///
/// Stored bin-major (`counts[bin * keys + key]`): most rows of most ports fall in the few bins
/// around the class level, and in this order those bins of every port lie together, a few MB
/// that stay in cache, where key-major order spread them over the whole table (134 MB at 4096
/// nodes x 8 lanes), a cache and TLB miss for nearly every row.
///
/// The count type `C` must hold the most values any one key is given (a bin counts at most its
/// key's values): [`fits_in`] says whether it does. No increment checks it.
struct Histograms<C: Count = u32> {
    low: f64,
    width: f64,
    bins: usize,
    keys: usize,
    counts: Vec<C>,
}

/// Whether a count of type `C` holds `most`, the most values one key of a table is given.
fn fits_in<C: Count>(most: u64) -> bool {
    most <= C::MOST
}

impl<C: Count> Histograms<C> {
    fn new(keys: usize, low: f64, high: f64, bins: usize) -> Histograms<C> {
        Histograms {
            low,
            width: (high - low) / bins as f64,
            bins,
            keys,
            counts: vec![C::default(); keys * bins],
        }
    }

    fn clear(&mut self) {
        self.counts.fill(C::default());
    }

    /// Counts `value` in its bin of `key`, values beyond either end in the end bin. The cast
    /// truncates and saturates (below zero and NaN to 0): for these bins, the same as
    /// `floor().clamp(..)` without its call into libm, once for each end of each row of every pass.
    #[cfg(test)]
    fn add(&mut self, key: usize, value: f64) {
        self.adder().add(key, value);
    }

    /// The table's increments as a value of its own, for a pass's loop over a slice of rows: its
    /// fields held in registers, not read again through `self` after every increment.
    #[inline]
    fn adder(&mut self) -> Adder<'_, C> {
        Adder {
            low: self.low,
            width: self.width,
            last: self.bins - 1,
            keys: self.keys,
            counts: &mut self.counts,
        }
    }

    /// The median of every key's `rows(key)` values (the mean of the middle two for an even
    /// count; None for none), in one scan of the table in memory order. Within a bin its values
    /// are taken as spread evenly over it; a rank past the values counted reads as the top.
    fn medians(&self, rows: impl Fn(usize) -> u64) -> Vec<Option<f64>> {
        let top = self.low + self.width * self.bins as f64;
        let wanted: Vec<u64> = (0..self.keys).map(rows).collect();
        // The ranks (0-based) of the middle value, or of the middle two.
        let ranks = |n: u64| (n.saturating_sub(1) / 2, n / 2);
        let mut before = vec![0u64; self.keys];
        let mut lower = vec![top; self.keys];
        let mut upper = vec![top; self.keys];
        for bin in 0..self.bins {
            let counts = &self.counts[bin * self.keys..(bin + 1) * self.keys];
            for (key, &count) in counts.iter().enumerate() {
                if count.into() == 0u64 {
                    continue;
                }
                let count: u64 = count.into();
                let (first, second) = ranks(wanted[key]);
                let start = before[key];
                let at = |rank: u64| {
                    let within = (rank - start) as f64 + 0.5;
                    self.low + self.width * (bin as f64 + within / count as f64)
                };
                if (start..start + count).contains(&first) {
                    lower[key] = at(first);
                }
                if (start..start + count).contains(&second) {
                    upper[key] = at(second);
                }
                before[key] = start + count;
            }
        }
        (0..self.keys)
            .map(|key| match wanted[key] {
                0 => None,
                n if n % 2 == 1 => Some(upper[key]),
                _ => Some(0.5 * (lower[key] + upper[key])),
            })
            .collect()
    }
}

/// [`Histograms::add`] with the table's fields copied out (the same bins).
struct Adder<'a, C: Count> {
    low: f64,
    width: f64,
    last: usize,
    keys: usize,
    counts: &'a mut [C],
}

impl<C: Count> Adder<'_, C> {
    #[inline]
    fn add(&mut self, key: usize, value: f64) {
        let bin = (((value - self.low) / self.width) as usize).min(self.last);
        self.counts[bin * self.keys + key].increment();
    }
}

/// One port's effects in one class (log units: -0.357 is 30 % below the class).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Effect {
    pub combined: f64,
    pub sending: f64,
    pub receiving: f64,
    pub rows: u32,
    pub sending_rows: u32,
    pub receiving_rows: u32,
}

impl Effect {
    /// The effect a row takes off for this port in `role` (sending when `true`).
    #[inline]
    pub fn in_role(&self, sending: bool) -> f64 {
        match sending {
            true if self.sending_rows >= ROLE_ROWS => self.sending,
            false if self.receiving_rows >= ROLE_ROWS => self.receiving,
            _ => self.combined,
        }
    }
}

/// Which (class, port) pairs have rows, each given a key in the order first seen: effects and
/// histograms are indexed by key, so memory grows with the pairs present, never with classes x
/// ports (a crafted file of many classes and many ports, each class meeting few of them, once
/// asked for 37 GB). The index from (class, port) to key is a table while classes x ports fits
/// [`DENSE_INDEX_ENTRIES`] (4 bytes an entry, the fast path of a real job: one or a few classes),
/// a hash map beyond.
#[derive(Debug, Clone)]
pub struct Keys {
    ports: usize,
    dense: Vec<u32>,
    sparse: HashMap<(u32, u32), u32>,
    /// Key -> (class, port).
    pub pairs: Vec<(u32, u32)>,
}

/// The (class, port) index is a flat table up to this many entries (64 MiB), a hash map beyond.
pub const DENSE_INDEX_ENTRIES: usize = 16 << 20;
const NO_KEY: u32 = u32::MAX;

impl Keys {
    fn new(classes: usize, ports: usize) -> Keys {
        let dense = match classes.checked_mul(ports) {
            Some(entries) if entries <= DENSE_INDEX_ENTRIES => vec![NO_KEY; entries],
            _ => Vec::new(),
        };
        Keys { ports, dense, sparse: HashMap::new(), pairs: Vec::new() }
    }

    /// The key of (class, port), added when new.
    #[inline]
    fn insert(&mut self, class: u32, port: u32) -> usize {
        let next = self.pairs.len() as u32;
        let key = if self.dense.is_empty() {
            *self.sparse.entry((class, port)).or_insert(next)
        } else {
            let slot = &mut self.dense[class as usize * self.ports + port as usize];
            if *slot == NO_KEY {
                *slot = next;
            }
            *slot
        };
        if key == next {
            self.pairs.push((class, port));
        }
        key as usize
    }

    /// The key of (class, port), None where the pair has no rows ([`KeyView::get`]).
    #[inline]
    pub fn get(&self, class: u32, port: u32) -> Option<usize> {
        self.view().get(class, port)
    }

    /// The index as a value to copy into a pass's loop.
    #[inline]
    pub fn view(&self) -> KeyView<'_> {
        KeyView { ports: self.ports, dense: &self.dense, sparse: &self.sparse }
    }

    /// How many (class, port) pairs have rows.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// [`Keys`]'s index, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct KeyView<'a> {
    ports: usize,
    dense: &'a [u32],
    sparse: &'a HashMap<(u32, u32), u32>,
}

impl KeyView<'_> {
    /// The key of (class, port), None where the pair has no rows.
    #[inline]
    pub fn get(&self, class: u32, port: u32) -> Option<usize> {
        let key = if self.dense.is_empty() {
            self.sparse.get(&(class, port)).copied().unwrap_or(NO_KEY)
        } else {
            self.dense[class as usize * self.ports + port as usize]
        };
        (key != NO_KEY).then_some(key as usize)
    }
}

/// A [`Fit`]'s level, effects and keys, borrowed as a value to copy into a pass's loop over a
/// slice of rows: the same lookups and the same residuals as the fit's own.
#[derive(Debug, Clone, Copy)]
pub struct FitView<'a> {
    pub level: &'a [f64],
    pub effects: &'a [Effect],
    pub keys: KeyView<'a>,
}

impl FitView<'_> {
    /// The key of a row's end (every end of a visited row has one).
    #[inline]
    pub fn key(&self, class: u32, port: u32) -> usize {
        self.keys.get(class, port).unwrap_or(0)
    }

    /// A row's residual: what neither end's effect explains.
    #[inline(always)]
    pub fn residual(&self, row: &Observation) -> f64 {
        let sender = &self.effects[self.key(row.class, row.sender)];
        let receiver = &self.effects[self.key(row.class, row.receiver)];
        let (sender_effect, receiver_effect) = if row.directed {
            (sender.in_role(true), receiver.in_role(false))
        } else {
            (sender.combined, receiver.combined)
        };
        f64::from(row.log_gbps) - self.level[row.class as usize] - sender_effect - receiver_effect
    }
}

/// The fitted model of every class.
#[derive(Debug, Clone)]
pub struct Fit {
    pub ports: usize,
    /// Per class: the level (log Gb/s), the noise (robust SD of a row's residual), the rows.
    pub level: Vec<f64>,
    pub noise: Vec<f64>,
    pub rows: Vec<u64>,
    /// The (class, port) pairs with rows.
    pub keys: Keys,
    /// Per key of [`Fit::keys`].
    pub effects: Vec<Effect>,
    /// Median-polish sweeps run before the effects settled (at most [`MAX_SWEEPS`]).
    pub sweeps: usize,
}

impl Fit {
    /// The effect of `port` in `class` (all zero, no rows, where it has none).
    pub fn effect(&self, class: u32, port: u32) -> Effect {
        self.keys.get(class, port).map_or_else(Effect::default, |key| self.effects[key])
    }

    /// The level, effects and keys as a value ([`FitView`]).
    #[inline]
    pub fn view(&self) -> FitView<'_> {
        FitView { level: &self.level, effects: &self.effects, keys: self.keys.view() }
    }

    /// A row's residual: what neither end's effect explains ([`FitView::residual`], where the
    /// hot passes call it with the tables already in hand).
    #[inline]
    pub fn residual(&self, row: &Observation) -> f64 {
        self.view().residual(row)
    }
}

/// Fits every class of `source`.
pub fn fit(source: &dyn Source) -> Fit {
    fit_until(source, SETTLED)
}

/// [`fit`], the sweeps stopping once no median moved more than `settled` (0: all eight run).
fn fit_until(source: &dyn Source, settled: f64) -> Fit {
    fit_counting(source, settled, true)
}

/// [`fit_until`], its sweeps' and roles' tables of u16 counts where `narrow` and every port's
/// rows fit them, else of u32 counts (the same fit either way).
fn fit_counting(source: &dyn Source, settled: f64, narrow: bool) -> Fit {
    let catalog = source.catalog();
    let classes = catalog.classes.len();
    let ports = catalog.ports.len();
    let mut fit = Fit {
        ports,
        level: vec![0.0; classes],
        noise: vec![NOISE_FLOOR; classes],
        rows: vec![0; classes],
        keys: Keys::new(classes, ports),
        effects: Vec::new(),
        sweeps: 0,
    };
    // The class level: ln(Gb/s) from 0.0009 to 160 000, 0.005 wide.
    let mut levels = Histograms::<u32>::new(classes, -7.0, 12.0, 4096);
    source.visit_slices(&mut |rows| {
        let (mut levels, class_rows) = (levels.adder(), &mut fit.rows[..]);
        let (keys, effects) = (&mut fit.keys, &mut fit.effects);
        for row in rows {
            levels.add(row.class as usize, f64::from(row.log_gbps));
            class_rows[row.class as usize] += 1;
            for (port, sending) in [(row.sender, true), (row.receiver, false)] {
                let key = keys.insert(row.class, port);
                if key == effects.len() {
                    effects.push(Effect::default());
                }
                let effect = &mut effects[key];
                effect.rows += 1;
                if row.directed {
                    match sending {
                        true => effect.sending_rows += 1,
                        false => effect.receiving_rows += 1,
                    }
                }
            }
        }
    });
    let class_rows = fit.rows.clone();
    for (level, median) in fit.level.iter_mut().zip(levels.medians(|class| class_rows[class])) {
        *level = median.unwrap_or(0.0);
    }
    drop(levels);

    // A bin of the sweeps' and roles' tables counts at most its port's rows: u16 counts where
    // every port has at most u16::MAX rows (all-pairs at 4096 nodes: about 4 100 a port).
    let most_rows = fit.effects.iter().map(|effect| u64::from(effect.rows)).max().unwrap_or(0);
    match narrow && fits_in::<u16>(most_rows) {
        true => polish::<u16>(source, &mut fit, settled),
        false => polish::<u32>(source, &mut fit, settled),
    }

    // The noise: the median absolute residual of the class, 0.0005 wide up to 2.
    let mut spread = Histograms::<u32>::new(classes, 0.0, 2.0, 4096);
    let current = &fit;
    source.visit_slices(&mut |rows| {
        let (current, mut spread) = (current.view(), spread.adder());
        for row in rows {
            // A residual of ends fitted from few rows is shrunk: an end with n rows took about
            // 1/n of it into its own effect. Scaled back up (at most twice), the noise of a
            // sparse schedule is not underestimated, which would make small deficits look sure.
            let rows_of = |port: u32, sending: bool| {
                let effect = &current.effects[current.key(row.class, port)];
                let role_rows = if sending { effect.sending_rows } else { effect.receiving_rows };
                if row.directed && role_rows >= ROLE_ROWS {
                    role_rows
                } else {
                    effect.rows
                }
            };
            let kept = 1.0
                - 1.0 / f64::from(rows_of(row.sender, true))
                - 1.0 / f64::from(rows_of(row.receiver, false));
            spread.add(row.class as usize, current.residual(row).abs() / kept.max(0.25).sqrt());
        }
    });
    for (noise, absolute) in fit.noise.iter_mut().zip(spread.medians(|class| class_rows[class])) {
        if let Some(absolute) = absolute {
            *noise = (1.4826 * absolute).max(NOISE_FLOOR);
        }
    }
    fit
}

/// Stages 1 and 2 of [`fit_until`]: the combined effects by median polish, then the role
/// effects, with counts of type `C` (each bin of `C`'s tables counts at most its port's rows,
/// which `C` must hold).
fn polish<C: Count>(source: &dyn Source, fit: &mut Fit, settled: f64) {
    let classes = fit.level.len();
    let keys = fit.keys.len();
    let mut histograms = Histograms::<C>::new(keys, LOW, HIGH, BINS);
    let mut previous: Vec<Option<f64>> = vec![None; keys];
    for sweep in 0..MAX_SWEEPS {
        histograms.clear();
        let current = &*fit;
        source.visit_slices(&mut |rows| {
            let (current, mut histograms) = (current.view(), histograms.adder());
            for row in rows {
                let base = f64::from(row.log_gbps) - current.level[row.class as usize];
                let (sender, receiver) =
                    (current.key(row.class, row.sender), current.key(row.class, row.receiver));
                histograms.add(sender, base - current.effects[receiver].combined);
                histograms.add(receiver, base - current.effects[sender].combined);
            }
        });
        let medians = histograms.medians(|key| u64::from(current.effects[key].rows));
        // Settled: taking the peers' latest effects off moved no port's median by `settled`.
        let settled_now = sweep > 0
            && medians.iter().zip(&previous).all(|pair| match pair {
                (Some(median), Some(before)) => (median - before).abs() < settled,
                (median, before) => median.is_none() && before.is_none(),
            });
        // Damped while the medians move; once they stand still, each effect takes its median,
        // the point the damped sweeps would approach by halves.
        let damping = if sweep == 0 || settled_now { 1.0 } else { 0.5 };
        for (effect, median) in fit.effects.iter_mut().zip(&medians) {
            if let Some(median) = median {
                effect.combined += damping * (median - effect.combined);
            }
        }
        let middles = recentre(fit, classes);
        // This sweep's medians in the next sweep's terms: recentring moved every effect.
        previous = medians
            .iter()
            .zip(&fit.keys.pairs)
            .map(|(median, &(class, _))| median.map(|median| median - middles[class as usize]))
            .collect();
        fit.sweeps = sweep + 1;
        if settled_now {
            break;
        }
    }
    drop(histograms);

    // Sending medians at `key`, receiving ones at `keys + key`.
    let mut histograms = Histograms::<C>::new(keys * 2, LOW, HIGH, BINS);
    let current = &*fit;
    source.visit_slices(&mut |rows| {
        let (current, mut histograms) = (current.view(), histograms.adder());
        for row in rows {
            if !row.directed {
                continue;
            }
            let base = f64::from(row.log_gbps) - current.level[row.class as usize];
            let (sender, receiver) =
                (current.key(row.class, row.sender), current.key(row.class, row.receiver));
            histograms.add(sender, base - current.effects[receiver].combined);
            histograms.add(keys + receiver, base - current.effects[sender].combined);
        }
    });
    let medians = histograms.medians(|index| {
        let effect = &current.effects[index % keys.max(1)];
        u64::from(if index < keys { effect.sending_rows } else { effect.receiving_rows })
    });
    drop(histograms);
    for (key, effect) in fit.effects.iter_mut().enumerate() {
        effect.sending = medians[key].unwrap_or(effect.combined);
        effect.receiving = medians[keys + key].unwrap_or(effect.combined);
    }
}

/// Moves the median of each class's port effects into the class level, so that "a port's
/// effect" means "against the typical port" whatever the sweeps did; returns each class's shift.
fn recentre(fit: &mut Fit, classes: usize) -> Vec<f64> {
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); classes];
    for (effect, &(class, _)) in fit.effects.iter().zip(&fit.keys.pairs) {
        values[class as usize].push(effect.combined);
    }
    let mut middles = vec![0.0; classes];
    for (class, list) in values.iter_mut().enumerate() {
        if list.is_empty() {
            continue;
        }
        list.sort_by(f64::total_cmp);
        let middle = list[list.len() / 2];
        // Each row holds two ends: the level moves by twice the shift of one end.
        fit.level[class] += 2.0 * middle;
        middles[class] = middle;
    }
    for (effect, &(class, _)) in fit.effects.iter_mut().zip(&fit.keys.pairs) {
        effect.combined -= middles[class as usize];
    }
    middles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::{ClassInfo, Observation, Stored};
    use gdrperf_cluster::random::SplitMix64;

    /// Ports `0..ports` of one class, a row for each `(sender, receiver)` of `pairs`, 100 Gb/s
    /// times the factor of each slow end and times `wobble(sender, receiver)` (no chance in it).
    fn fleet(
        ports: usize,
        pairs: &[(usize, usize)],
        slow: &[usize],
        wobble: fn(usize, usize) -> f64,
    ) -> Stored {
        let mut fleet = Stored::default();
        let class = fleet.catalog.class("write_bw", || ClassInfo {
            label: "write_bw".into(),
            gpu_memory: false,
            host_memory: true,
            ceiling_gbps: None,
        });
        let index: Vec<u32> =
            (0..ports).map(|port| fleet.catalog.port(&format!("n{port}"), "mlx5_0")).collect();
        for &(sender, receiver) in pairs {
            let factor = |port: usize| if slow.contains(&port) { 0.7 } else { 1.0 };
            let gbps: f64 = 100.0 * factor(sender) * factor(receiver) * wobble(sender, receiver);
            fleet.rows.push(Observation {
                class,
                sender: index[sender],
                receiver: index[receiver],
                directed: true,
                log_gbps: gbps.ln() as f32,
            });
        }
        fleet
    }

    fn all_pairs(ports: usize) -> Vec<(usize, usize)> {
        (0..ports).flat_map(|a| (0..ports).filter(move |&b| b != a).map(move |b| (a, b))).collect()
    }

    /// A fixed pattern of 3 % log-normal noise, as the simulator makes (seeded: the same every
    /// run), so each port's rows spread over several bins.
    fn noise(sender: usize, receiver: usize) -> f64 {
        (0.03 * SplitMix64::keyed(7, (sender * 1000 + receiver) as u64).normal()).exp()
    }

    #[test]
    fn all_pairs_settle_after_two_sweeps_where_eight_would_leave_them() {
        // 96 ports, all ordered pairs (190 rows a port), port 5 at 70 %: the first sweep finds
        // its -0.357, and every other port's median stays among its 188 healthy rows; the second
        // takes the peers' effects off: two rows of each port move up by port 5's deficit and the
        // rest by a few thousandths either way, which moves no median by half a bin: settled.
        let fleet = fleet(96, &all_pairs(96), &[5], noise);
        let early = fit(&fleet);
        let all = fit_until(&fleet, 0.0);
        assert_eq!((early.sweeps, all.sweeps), (2, MAX_SWEEPS));
        assert!((early.effect(0, 5).combined - 0.7f64.ln()).abs() < 0.02, "{}", early.effect(0, 5).combined);
        // The six sweeps more only wander within the histogram's rounding: a bin at most, where
        // the deficit is 30 bins.
        let bin = (HIGH - LOW) / BINS as f64;
        for (port, (a, b)) in early.effects.iter().zip(&all.effects).enumerate() {
            for (stopped, eight) in
                [(a.combined, b.combined), (a.sending, b.sending), (a.receiving, b.receiving)]
            {
                assert!((stopped - eight).abs() < bin, "port {port}: {a:?} {b:?}");
            }
        }
    }

    #[test]
    fn a_ring_keeps_sweeping() {
        // 16 ports, each sending to the next: two rows a port, so a median is a mean, and port
        // 5's deficit is shared with its two neighbours, then handed back and forth: medians
        // move by a bin or more in every sweep, and all eight run.
        let ring: Vec<(usize, usize)> = (0..16).map(|port| (port, (port + 1) % 16)).collect();
        assert_eq!(fit(&fleet(16, &ring, &[5], noise)).sweeps, MAX_SWEEPS);
    }

    #[test]
    fn a_value_goes_to_the_bin_floor_and_clamp_give() {
        // The cast that bins a value truncates and saturates: below the first bin (by less than
        // a bin or more), NaN, past the top and the infinities land where floor().clamp() puts
        // them, and so does every value on or near a bin's edge.
        let mut histograms = Histograms::<u32>::new(1, LOW, HIGH, BINS);
        let width = (HIGH - LOW) / BINS as f64;
        let mut values =
            vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, LOW - 0.5 * width, LOW - 3.0 * width];
        for bin in 0..=BINS + 1 {
            let edge = LOW + width * bin as f64;
            values.extend([edge, edge - 1e-12, edge + 1e-12, edge + 0.5 * width]);
        }
        for value in values {
            histograms.clear();
            histograms.add(0, value);
            let by_floor = ((value - LOW) / width).floor().clamp(0.0, (BINS - 1) as f64) as usize;
            assert_eq!(histograms.counts.iter().position(|&count| count == 1), Some(by_floor), "{value}");
        }
    }

    #[test]
    fn one_scan_gives_each_key_the_median_of_its_own_bins() {
        // Three keys over 8 bins of [0, 8): key 0 holds 1, 2, 2, 7 (even: the mean of the second
        // and third smallest, both in bin 2, spread over it as 2.25 and 2.75); key 1 holds 5
        // (odd: in the middle of bin 5); key 2 holds nothing; key 1 is asked for 3 values and
        // has 1, so its ranks past the values read as the top, 8.
        let mut histograms = Histograms::<u32>::new(3, 0.0, 8.0, 8);
        for value in [1.5, 2.1, 2.9, 7.0] {
            histograms.add(0, value);
        }
        histograms.add(1, 5.3);
        assert_eq!(histograms.medians(|key| [4, 1, 0][key]), [Some(2.5), Some(5.5), None]);
        assert_eq!(histograms.medians(|key| [4, 3, 0][key])[1], Some(8.0));
    }

    #[test]
    fn u16_counts_hold_up_to_their_most_and_no_more() {
        assert!(fits_in::<u16>(0));
        assert!(fits_in::<u16>(65_535));
        assert!(!fits_in::<u16>(65_536));
        assert!(fits_in::<u32>(65_536));
        assert!(fits_in::<u32>(u64::from(u32::MAX)));
        assert!(!fits_in::<u32>(u64::from(u32::MAX) + 1));
        // A bin of a u16 table counts up to u16::MAX values of its key.
        let mut narrow = Histograms::<u16>::new(2, LOW, HIGH, BINS);
        for _ in 0..65_535 {
            narrow.add(1, -0.1);
        }
        narrow.add(0, 0.3);
        let medians = narrow.medians(|key| [1, 65_535][key]);
        let mut wide = Histograms::<u32>::new(2, LOW, HIGH, BINS);
        for _ in 0..65_535 {
            wide.add(1, -0.1);
        }
        wide.add(0, 0.3);
        assert_eq!(medians, wide.medians(|key| [1, 65_535][key]));
    }

    #[test]
    fn u16_and_u32_counts_give_the_same_fit() {
        let slow = [3, 11];
        for (pairs, settled) in [
            (all_pairs(24), SETTLED),
            (all_pairs(24), 0.0),
            (
                (0..24)
                    .map(|p| (p, (p + 1) % 24))
                    .chain((0..24).map(|p| (p, (p + 2) % 24)))
                    .collect::<Vec<_>>(),
                SETTLED,
            ),
        ] {
            let source = fleet(24, &pairs, &slow, noise);
            let (narrow, wide) =
                (fit_counting(&source, settled, true), fit_counting(&source, settled, false));
            assert_eq!(narrow.effects, wide.effects);
            assert_eq!((narrow.level, narrow.noise, narrow.sweeps), (wide.level, wide.noise, wide.sweeps));
        }
    }

    #[test]
    fn a_port_with_more_rows_than_u16_holds_is_fitted_with_u32_counts() {
        // Six ports all-pairs 7 000 times over: 70 000 rows a port, more than a u16 bin could
        // count (all of a port's rows fall in a few bins), so the fit takes u32 counts (a u16
        // would wrap, or panic in a debug build): the fit of u32 counts, port 0's deficit (30 %)
        // whole.
        let pairs: Vec<(usize, usize)> = (0..7_000).flat_map(|_| all_pairs(6)).collect();
        let source = fleet(6, &pairs, &[0], noise);
        let fitted = fit(&source);
        let wide = fit_counting(&source, SETTLED, false);
        assert_eq!(fitted.effects, wide.effects);
        assert!(fitted.effect(0, 0).rows > 65_535);
        // Recentred among six ports: about 30 % below (-0.34), not a wrapped count's median.
        let slow = fitted.effect(0, 0).combined;
        assert!((-0.40..-0.30).contains(&slow), "{:?}", fitted.effect(0, 0));
    }
}
