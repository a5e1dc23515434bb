//! Soak: a profile's levels by name and the stability verdict over a run's intervals.
//!
//! Levels are named like DCGM's `dcgmi diag -r 1..4` (r1 seconds, r2 about 2 minutes, r3 about
//! 15 minutes, r4 longer), so a person picks the depth by name; each level names its source.
//! The stability judgement is a pure function of the intervals: the worst interval's bandwidth
//! against the median (a latency lane: the worst interval's latency, the profile's statistic,
//! against the median, a rise rather than a dip), no NIC error counter moving, no AER counter moving, no link changing
//! (the PCIe events come from `gdrperf_topology::pcie_health`) and no GPU error where NVML is
//! present (an XID, the GPU's PCIe replays, a hardware slowdown: `gdrperf_cuda::gpu_watch`; a
//! GPU held at its power cap or a thermal limit is tied to its interval but does not fail). A dip level the profile does not
//! set is said: the dip is reported, not judged. Each reason names its interval and what moved
//! there (the error counters by name, the PCIe event), and the worst interval carries what moved
//! in it: a dip is tied in time to its likely cause, which a sum over the run cannot do.
//!
//! ```toml
//! [soak]
//! interval_s = 10
//! source = "why this interval"
//! max_dip = { value = "10%", source = "..." }   # optional, bandwidth lanes
//! max_rise = { value = "50%", source = "..." }  # optional, latency lanes
//! levels.r1 = { duration = "30s", source = "..." }
//! levels.r3 = { duration = "15m", source = "..." }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evaluate::Verdict;
use crate::significance::median;
use crate::sourced_value::SourcedValue;

/// The `[soak]` section of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakCheck {
    /// Length of one interval: one bench run, one counter and AER re-read.
    pub interval_s: f64,
    /// Where the interval comes from.
    pub source: String,
    /// How far the worst interval may fall below the median, as "N%".
    #[serde(default)]
    pub max_dip: Option<SourcedValue>,
    /// How far the worst interval's latency may rise above the median, as "N%" (latency lanes).
    #[serde(default)]
    pub max_rise: Option<SourcedValue>,
    /// Levels by name (`r1`..`r4`).
    pub levels: BTreeMap<String, SoakLevel>,
}

/// One named soak depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakLevel {
    /// `30s`, `2m`, `15m`, `1h`.
    pub duration: String,
    pub source: String,
}

impl SoakCheck {
    /// Checks the section once, when the profile is parsed: every duration parses, every level
    /// and the dip level name a source.
    pub fn check(&self) -> Result<(), String> {
        if !(self.interval_s.is_finite() && self.interval_s > 0.0) {
            return Err("[soak] interval_s must be a positive number of seconds".into());
        }
        if self.source.trim().is_empty() {
            return Err("[soak] source is empty: say where the interval comes from".into());
        }
        if self.levels.is_empty() {
            return Err("[soak] levels is empty: name at least one (r1, r2, ...)".into());
        }
        for (name, level) in &self.levels {
            parse_duration(&level.duration).map_err(|error| format!("[soak] levels.{name}: {error}"))?;
            if level.source.trim().is_empty() {
                return Err(format!(
                    "[soak] levels.{name}: source is empty: say where {} comes from",
                    level.duration
                ));
            }
        }
        if let Some(dip) = &self.max_dip {
            dip_percent(&dip.value)?;
            if dip.source.trim().is_empty() {
                return Err("[soak] max_dip: source is empty: say where the level comes from".into());
            }
        }
        if let Some(rise) = &self.max_rise {
            rise_percent(&rise.value)?;
            if rise.source.trim().is_empty() {
                return Err("[soak] max_rise: source is empty: say where the level comes from".into());
            }
        }
        Ok(())
    }

    /// `--soak NAME|DURATION`: a level of this profile, else a duration (`20m`), in seconds,
    /// with what the choice rests on.
    pub fn resolve(&self, asked: &str) -> Result<(f64, String), String> {
        if let Some(level) = self.levels.get(asked) {
            return Ok((parse_duration(&level.duration)?, format!("level {asked}: {}", level.source)));
        }
        parse_duration(asked).map(|seconds| (seconds, "a duration given on the command line".into())).map_err(
            |_| {
                format!(
                    "--soak {asked}: neither a level of this profile ({}) nor a duration like 90s, 15m, 1h",
                    self.levels.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            },
        )
    }
}

/// `90s`, `2m`, `15m`, `1h` (or plain seconds) in seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (number, scale) = match text.char_indices().last() {
        Some((at, 's')) => (&text[..at], 1.0),
        Some((at, 'm')) => (&text[..at], 60.0),
        Some((at, 'h')) => (&text[..at], 3600.0),
        _ => (text, 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value * scale),
        _ => Err(format!("{text:?} is not a duration (like 90s, 15m, 1h)")),
    }
}

/// A latency may rise without bound (a stalled interval is many times the median): any positive
/// percentage.
fn rise_percent(text: &str) -> Result<f64, String> {
    match text.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(percent) if percent.is_finite() && percent > 0.0 => Ok(percent),
        _ => Err(format!("[soak] max_rise {text:?} is not a percentage above 0%")),
    }
}

fn dip_percent(text: &str) -> Result<f64, String> {
    match text.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(percent) if (0.0..100.0).contains(&percent) => Ok(percent),
        _ => Err(format!("[soak] max_dip {text:?} is not a percentage from 0% to below 100%")),
    }
}

/// One soak interval as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// Seconds from the soak's start to this interval's start.
    pub start_s: f64,
    /// `None`: the interval's run measured nothing (it failed), or the lane measures latency.
    pub bandwidth_gbps: Option<f64>,
    /// A latency lane's figure over the interval, in µs: the statistic the profile's `[latency]`
    /// check judges (`t_typical_us` unless it says another); `None` for a bandwidth lane or a
    /// run that measured nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// The NIC's error counters over the interval (the row's `nic_errors`: both ends).
    pub nic_errors: u64,
    /// Which error counters moved in the interval and by how much (the error counters of the
    /// row's `nic_counters`, e.g. `rcvd_seq_err` and `completer_retry_err` when packets are
    /// lost), so that a marked interval names what moved, not only a sum.
    pub nic_error_counters: BTreeMap<String, u64>,
    /// What moved on PCIe in the interval (`pcie_health` events, worded).
    pub pcie_events: Vec<String>,
    /// What the GPU itself reported as errors in the interval, through NVML (an XID event, its
    /// PCIe replay counter moving, a hardware slowdown: `gdrperf_cuda::gpu_watch`); they fail
    /// the soak as a PCIe event does. Empty where NVML is absent (the soak says so once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_events: Vec<String>,
    /// Normal limits that held the GPU's clocks in the interval (the power cap, a thermal
    /// limit): not failures, but tied to the interval so that a dip there names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_held_back: Vec<String>,
}

/// The stability verdict and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    pub verdict: Verdict,
    /// A bandwidth lane's median; `None` for a latency lane.
    pub median_gbps: Option<f64>,
    /// A latency lane's median, in µs; absent for a bandwidth lane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_latency_us: Option<f64>,
    /// Index of the interval with the lowest bandwidth (a latency lane: the highest latency).
    pub worst_interval: Option<usize>,
    /// How far the worst interval is below the median, in percent (bandwidth lanes).
    pub dip_percent: Option<f64>,
    /// How far the worst interval is above the median, in percent (latency lanes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rise_percent: Option<f64>,
    /// The dip level and its source, or why there is none.
    pub level: String,
    /// Why it did not pass, each tied to its interval.
    pub reasons: Vec<String>,
    /// The intervals to mark on the plot: the worst, and every one where something moved (a GPU
    /// held back by its power or thermal limit included, though that alone does not fail).
    pub marked: Vec<usize>,
    /// What moved in the worst interval (error counters beyond the allowance, PCIe events, the
    /// GPU's errors and limits):
    /// the dip tied in time to its likely cause; empty when nothing moved there.
    pub worst_interval_moved: Vec<String>,
}

/// Judges a bandwidth lane's `intervals` against the profile's dip level (`None`: the dip is
/// reported only) and its `max_nic_errors` per interval (the same allowance a row has: 0 in a
/// real profile; the Soft-RoCE smoke profile allows TCG's occasional retransmission).
pub fn judge(intervals: &[Interval], max_dip: Option<&SourcedValue>, max_nic_errors: u64) -> Stability {
    judge_by(Figure::Bandwidth, intervals, max_dip, max_nic_errors)
}

/// Judges a latency lane's `intervals`: the worst is the highest latency, held against the
/// profile's rise level (`None`: the rise is reported only); errors and PCIe events as
/// [`judge`].
pub fn judge_latency(
    intervals: &[Interval],
    max_rise: Option<&SourcedValue>,
    max_nic_errors: u64,
) -> Stability {
    judge_by(Figure::Latency, intervals, max_rise, max_nic_errors)
}

/// What a lane's intervals measure, and so which way is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    Bandwidth,
    Latency,
}

impl Figure {
    fn of(self, interval: &Interval) -> Option<f64> {
        match self {
            Figure::Bandwidth => interval.bandwidth_gbps,
            Figure::Latency => interval.latency_us,
        }
    }

    /// How far `value` is from `median` the worse way, in percent of the median.
    fn worse_by(self, value: f64, median: f64) -> f64 {
        match self {
            Figure::Bandwidth => (median - value) / median * 100.0,
            Figure::Latency => (value - median) / median * 100.0,
        }
    }
}

fn judge_by(
    figure: Figure,
    intervals: &[Interval],
    limit: Option<&SourcedValue>,
    max_nic_errors: u64,
) -> Stability {
    let (direction, setting, change) = match figure {
        Figure::Bandwidth => ("below", "max_dip", "dip"),
        Figure::Latency => ("above", "max_rise", "rise"),
    };
    let level = match limit {
        Some(limit) => {
            format!("worst interval at most {} {direction} the median ({})", limit.value, limit.source)
        }
        None => format!("none: the profile sets no {setting}, so the {change} is reported, not judged"),
    };
    let measured: Vec<f64> = intervals.iter().filter_map(|interval| figure.of(interval)).collect();
    let median_value = median(&measured);
    let worst_interval = intervals
        .iter()
        .enumerate()
        .filter_map(|(index, interval)| Some((index, figure.worse_by(figure.of(interval)?, 1.0))))
        // The first of the worst, as the earliest interval is the one to look at.
        .min_by(|a, b| b.1.total_cmp(&a.1))
        .map(|(index, _)| index);
    let worse_percent = match (median_value, worst_interval) {
        (Some(median), Some(worst)) if median > 0.0 => {
            figure.of(&intervals[worst]).map(|value| figure.worse_by(value, median))
        }
        _ => None,
    };
    let mut reasons = Vec::new();
    let mut marked: Vec<usize> = worst_interval.into_iter().collect();
    let mut verdict = Verdict::Pass;
    if intervals.is_empty() {
        reasons.push("no interval was measured".to_string());
        verdict = Verdict::Error;
    }
    for (index, interval) in intervals.iter().enumerate() {
        let at = format!("interval {index} (at {:.0} s)", interval.start_s);
        if figure.of(interval).is_none() {
            reasons.push(format!("{at}: the run measured nothing"));
            verdict = Verdict::Error;
        }
        let errors = interval.nic_errors > max_nic_errors;
        if errors {
            reasons.push(format!("{at}: {}", nic_error_words(interval, max_nic_errors)));
        }
        for event in interval.pcie_events.iter().chain(&interval.gpu_events) {
            reasons.push(format!("{at}: {event}"));
        }
        let failing = errors || !interval.pcie_events.is_empty() || !interval.gpu_events.is_empty();
        if failing && verdict == Verdict::Pass {
            verdict = Verdict::Fail;
        }
        if (failing || !interval.gpu_held_back.is_empty()) && !marked.contains(&index) {
            marked.push(index);
        }
    }
    let worst_interval_moved: Vec<String> = worst_interval
        .map(|worst| {
            let interval = &intervals[worst];
            let errors =
                (interval.nic_errors > max_nic_errors).then(|| nic_error_words(interval, max_nic_errors));
            errors
                .into_iter()
                .chain(interval.pcie_events.iter().cloned())
                .chain(interval.gpu_events.iter().cloned())
                .chain(interval.gpu_held_back.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let limit_percent = limit.and_then(|limit| match figure {
        Figure::Bandwidth => dip_percent(&limit.value).ok(),
        Figure::Latency => rise_percent(&limit.value).ok(),
    });
    if let (Some(worse), Some(limit), Some(worst)) = (worse_percent, limit_percent, worst_interval) {
        if worse > limit {
            let tie = match worst_interval_moved.is_empty() {
                true => "nothing else moved in that interval".to_string(),
                false => format!("in the same interval: {}", worst_interval_moved.join("; ")),
            };
            let median = match figure {
                Figure::Bandwidth => format!("{:.3} Gb/s", median_value.unwrap_or_default()),
                Figure::Latency => format!("{:.2} us", median_value.unwrap_or_default()),
            };
            reasons.push(format!(
                "interval {worst}: {worse:.1}% {direction} the median {median} (level {limit}%); {tie}"
            ));
            if verdict == Verdict::Pass {
                verdict = Verdict::Fail;
            }
        }
    }
    marked.sort_unstable();
    let bandwidth = figure == Figure::Bandwidth;
    Stability {
        verdict,
        median_gbps: median_value.filter(|_| bandwidth),
        median_latency_us: median_value.filter(|_| !bandwidth),
        worst_interval,
        dip_percent: worse_percent.filter(|_| bandwidth),
        rise_percent: worse_percent.filter(|_| !bandwidth),
        level,
        reasons,
        marked,
        worst_interval_moved,
    }
}

/// "NIC error counters moved by 230 (allowed 50): completer_retry_err +120, rcvd_seq_err +110";
/// the names are left out when the bench wrote none (an older file).
fn nic_error_words(interval: &Interval, max_nic_errors: u64) -> String {
    let names: Vec<String> =
        interval.nic_error_counters.iter().map(|(name, delta)| format!("{name} +{delta}")).collect();
    let named = match names.is_empty() {
        true => String::new(),
        false => format!(": {}", names.join(", ")),
    };
    format!("NIC error counters moved by {} (allowed {max_nic_errors}){named}", interval.nic_errors)
}

#[cfg(test)]
mod tests;
