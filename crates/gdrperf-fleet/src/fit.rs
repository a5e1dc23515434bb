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
//! 1. combined effects `a` (either end, any direction), a few Jacobi sweeps, damped by half
//!    after the first so sparse schedules (two peers a port) settle rather than swing;
//! 2. role effects: each port's median when sending and when receiving, with the peers'
//!    combined effects taken off: a NIC slow only when sending shows in the first only;
//! 3. residuals with the role effects off (the combined one where a role has fewer than three
//!    rows) give the noise (1.4826 x the median absolute residual, each residual scaled up for
//!    what its ends' effects absorbed) and the links.

use crate::observation::{Observation, Source};

const BINS: usize = 512;
const LOW: f64 = -4.0;
const HIGH: f64 = 2.0;
const SWEEPS: usize = 8;
/// A role effect stands in for the combined one in residuals from this many rows on.
pub const ROLE_ROWS: u32 = 3;
/// The noise is never taken below 0.5 %: rows that agree to the last digit (hand-built files,
/// a constant simulator) would otherwise make any difference "certain".
pub const NOISE_FLOOR: f64 = 0.005;

/// Fixed-bin histograms, one per key, for approximate medians in bounded memory.
struct Histograms {
    low: f64,
    width: f64,
    bins: usize,
    counts: Vec<u32>,
}

impl Histograms {
    fn new(keys: usize, low: f64, high: f64, bins: usize) -> Histograms {
        Histograms { low, width: (high - low) / bins as f64, bins, counts: vec![0; keys * bins] }
    }

    fn clear(&mut self) {
        self.counts.iter_mut().for_each(|count| *count = 0);
    }

    fn add(&mut self, key: usize, value: f64) {
        let bin = ((value - self.low) / self.width).floor().clamp(0.0, (self.bins - 1) as f64) as usize;
        self.counts[key * self.bins + bin] += 1;
    }

    /// The approximate `rank`-th smallest value (0-based): the rows of a bin spread evenly over it.
    fn order_statistic(&self, key: usize, rank: u64) -> f64 {
        let counts = &self.counts[key * self.bins..(key + 1) * self.bins];
        let mut before = 0u64;
        for (bin, &count) in counts.iter().enumerate() {
            let count = u64::from(count);
            if before + count > rank {
                let within = (rank - before) as f64 + 0.5;
                return self.low + self.width * (bin as f64 + within / count as f64);
            }
            before += count;
        }
        self.low + self.width * self.bins as f64
    }

    /// The median of `n` values of `key` (the mean of the middle two for even `n`); None for none.
    fn median(&self, key: usize, n: u64) -> Option<f64> {
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(self.order_statistic(key, n / 2)),
            _ => Some(0.5 * (self.order_statistic(key, n / 2 - 1) + self.order_statistic(key, n / 2))),
        }
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
    pub fn in_role(&self, sending: bool) -> f64 {
        match sending {
            true if self.sending_rows >= ROLE_ROWS => self.sending,
            false if self.receiving_rows >= ROLE_ROWS => self.receiving,
            _ => self.combined,
        }
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
    /// Per class and port (`class * ports + port`).
    pub effects: Vec<Effect>,
}

impl Fit {
    pub fn effect(&self, class: u32, port: u32) -> &Effect {
        &self.effects[class as usize * self.ports + port as usize]
    }

    /// A row's residual: what neither end's effect explains.
    pub fn residual(&self, row: &Observation) -> f64 {
        let sender = self.effect(row.class, row.sender);
        let receiver = self.effect(row.class, row.receiver);
        let (sender_effect, receiver_effect) = if row.directed {
            (sender.in_role(true), receiver.in_role(false))
        } else {
            (sender.combined, receiver.combined)
        };
        f64::from(row.log_gbps) - self.level[row.class as usize] - sender_effect - receiver_effect
    }
}

/// Fits every class of `source`.
pub fn fit(source: &dyn Source) -> Fit {
    let catalog = source.catalog();
    let classes = catalog.classes.len();
    let ports = catalog.ports.len();
    let keys = classes * ports;
    let mut fit = Fit {
        ports,
        level: vec![0.0; classes],
        noise: vec![NOISE_FLOOR; classes],
        rows: vec![0; classes],
        effects: vec![Effect::default(); keys],
    };
    // The class level: ln(Gb/s) from 0.0009 to 160 000, 0.005 wide.
    let mut levels = Histograms::new(classes, -7.0, 12.0, 4096);
    source.visit(&mut |row| {
        levels.add(row.class as usize, f64::from(row.log_gbps));
        fit.rows[row.class as usize] += 1;
        let key = |port: u32| row.class as usize * ports + port as usize;
        fit.effects[key(row.sender)].rows += 1;
        fit.effects[key(row.receiver)].rows += 1;
        if row.directed {
            fit.effects[key(row.sender)].sending_rows += 1;
            fit.effects[key(row.receiver)].receiving_rows += 1;
        }
    });
    for class in 0..classes {
        fit.level[class] = levels.median(class, fit.rows[class]).unwrap_or(0.0);
    }
    drop(levels);

    let mut histograms = Histograms::new(keys * 2, LOW, HIGH, BINS);
    for sweep in 0..SWEEPS {
        histograms.clear();
        let current = &fit;
        source.visit(&mut |row| {
            let base = f64::from(row.log_gbps) - current.level[row.class as usize];
            let key = |port: u32| row.class as usize * ports + port as usize;
            histograms.add(2 * key(row.sender), base - current.effects[key(row.receiver)].combined);
            histograms.add(2 * key(row.receiver), base - current.effects[key(row.sender)].combined);
        });
        let damping = if sweep == 0 { 1.0 } else { 0.5 };
        for (key, effect) in fit.effects.iter_mut().enumerate() {
            if let Some(median) = histograms.median(2 * key, u64::from(effect.rows)) {
                effect.combined += damping * (median - effect.combined);
            }
        }
        recentre(&mut fit, classes);
    }

    histograms.clear();
    let current = &fit;
    source.visit(&mut |row| {
        if !row.directed {
            return;
        }
        let base = f64::from(row.log_gbps) - current.level[row.class as usize];
        let key = |port: u32| row.class as usize * ports + port as usize;
        histograms.add(2 * key(row.sender), base - current.effects[key(row.receiver)].combined);
        histograms.add(2 * key(row.receiver) + 1, base - current.effects[key(row.sender)].combined);
    });
    for (key, effect) in fit.effects.iter_mut().enumerate() {
        effect.sending =
            histograms.median(2 * key, u64::from(effect.sending_rows)).unwrap_or(effect.combined);
        effect.receiving =
            histograms.median(2 * key + 1, u64::from(effect.receiving_rows)).unwrap_or(effect.combined);
    }
    drop(histograms);

    // The noise: the median absolute residual of the class, 0.0005 wide up to 2.
    let mut spread = Histograms::new(classes, 0.0, 2.0, 4096);
    let current = &fit;
    source.visit(&mut |row| {
        // A residual of ends fitted from few rows is shrunk: an end with n rows took about 1/n
        // of it into its own effect. Scaled back up (at most twice), the noise of a sparse
        // schedule is not underestimated, which would make small deficits look sure.
        let rows_of = |port: u32, sending: bool| {
            let effect = current.effect(row.class, port);
            let role_rows = if sending { effect.sending_rows } else { effect.receiving_rows };
            if row.directed && role_rows >= ROLE_ROWS {
                role_rows
            } else {
                effect.rows
            }
        };
        let kept =
            1.0 - 1.0 / f64::from(rows_of(row.sender, true)) - 1.0 / f64::from(rows_of(row.receiver, false));
        spread.add(row.class as usize, current.residual(row).abs() / kept.max(0.25).sqrt());
    });
    for class in 0..classes {
        if let Some(absolute) = spread.median(class, fit.rows[class]) {
            fit.noise[class] = (1.4826 * absolute).max(NOISE_FLOOR);
        }
    }
    fit
}

/// Moves the median of each class's port effects into the class level, so that "a port's
/// effect" means "against the typical port" whatever the sweeps did.
fn recentre(fit: &mut Fit, classes: usize) {
    for class in 0..classes {
        let range = class * fit.ports..(class + 1) * fit.ports;
        let mut values: Vec<f64> = fit.effects[range.clone()]
            .iter()
            .filter(|effect| effect.rows > 0)
            .map(|effect| effect.combined)
            .collect();
        if values.is_empty() {
            continue;
        }
        values.sort_by(f64::total_cmp);
        let middle = values[values.len() / 2];
        // Each row holds two ends: the level moves by twice the shift of one end.
        fit.level[class] += 2.0 * middle;
        for effect in &mut fit.effects[range] {
            effect.combined -= middle;
        }
    }
}
