//! Acceptance thresholds as users write them: `--min-bw 90Gb/s`, `--min-bw 11000MiB/s`,
//! `--min-bw 80%` (of the port's rate), `--max-lat 5us` on a chosen statistic (`--lat-pct 99`).
//!
//! Parsing and resolving are two steps on purpose: the text is checked when the command line is
//! read (a typo fails before anything is measured), while a percentage can only become Gb/s once
//! the device is open and its port rate known.
//!
//! ```
//! use gdrperf_threshold::{BandwidthThreshold, LatencyStatistic, LatencyThreshold};
//!
//! let threshold: BandwidthThreshold = "80%".parse()?;
//! let limit = threshold.resolve(Some("100 Gb/sec (4X EDR)"), false)?;
//! assert_eq!(limit.gbit_s, 80.0);
//!
//! let latency = LatencyThreshold::parse("800ns")?.on(LatencyStatistic::parse("99.9")?);
//! assert_eq!(latency.max_us, 0.8);
//! assert_eq!(latency.statistic.column().name(), "p99_9_us");
//! # Ok::<(), gdrperf_threshold::ThresholdError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use gdrperf_files::columns::{self as column, ColumnName};

use crate::error::{Result, ThresholdError};
use crate::format::number;

/// Bits in a gigabit: network rates are decimal (10^9), as perftest's `--report_gbits`.
pub const BITS_PER_GBIT: f64 = 1e9;
/// Bytes in a mebibyte: perftest's "MB/sec" is 2^20 bytes per second.
pub const BYTES_PER_MIB: f64 = 1_048_576.0;

/// Gb/s to MiB/s.
pub fn gbit_to_mib(gbit_s: f64) -> f64 {
    gbit_s * BITS_PER_GBIT / 8.0 / BYTES_PER_MIB
}

/// MiB/s to Gb/s.
pub fn mib_to_gbit(mib_s: f64) -> f64 {
    mib_s * BYTES_PER_MIB * 8.0 / BITS_PER_GBIT
}

/// The unit a bandwidth is shown in: the one the user wrote the threshold in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandwidthUnit {
    GigabitsPerSecond,
    MebibytesPerSecond,
}

impl BandwidthUnit {
    pub fn label(self) -> &'static str {
        match self {
            BandwidthUnit::GigabitsPerSecond => "Gb/s",
            BandwidthUnit::MebibytesPerSecond => "MiB/s",
        }
    }

    /// A rate in Gb/s expressed in this unit.
    pub fn from_gbit(self, gbit_s: f64) -> f64 {
        match self {
            BandwidthUnit::GigabitsPerSecond => gbit_s,
            BandwidthUnit::MebibytesPerSecond => gbit_to_mib(gbit_s),
        }
    }

    /// A rate in this unit expressed in Gb/s.
    pub fn to_gbit(self, value: f64) -> f64 {
        value / self.from_gbit(1.0)
    }
}

/// `--min-bw`: the least average bandwidth every size must reach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BandwidthThreshold {
    GigabitsPerSecond(f64),
    MebibytesPerSecond(f64),
    /// A share of the port's active rate, in percent (`80%`).
    PercentOfPort(f64),
}

impl BandwidthThreshold {
    /// Parses `90Gb/s`, `90 Gbit/s`, `90Gbps`, `11000MiB/s`, `80%` (unit names in any case).
    /// A bare number is refused: Gb/s and MiB/s differ by a factor of 8.4, too much to guess.
    pub fn parse(text: &str) -> Result<BandwidthThreshold> {
        let fail = |reason: &str| ThresholdError::BandwidthThreshold {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (value, unit) = split_number(text).ok_or_else(|| fail("it does not start with a number"))?;
        if !(value.is_finite() && value > 0.0) {
            return Err(fail("it must be a positive number"));
        }
        match unit.to_ascii_lowercase().as_str() {
            "gb/s" | "gbit/s" | "gbps" | "gb/sec" | "gbit/sec" => {
                Ok(BandwidthThreshold::GigabitsPerSecond(value))
            }
            "mib/s" | "mib/sec" => Ok(BandwidthThreshold::MebibytesPerSecond(value)),
            "%" if value <= 100.0 => Ok(BandwidthThreshold::PercentOfPort(value)),
            "%" => Err(fail("a share of the port rate cannot exceed 100%")),
            "" => Err(fail("it has no unit")),
            "mb/s" | "mbps" | "mb/sec" => {
                Err(fail("MB/s and Mb/s are ambiguous here; use MiB/s (2^20 bytes/s) or Gb/s (10^9 bits/s)"))
            }
            _ => Err(fail(&format!("unknown unit {unit:?}"))),
        }
    }

    /// The threshold in Gb/s for a port whose sysfs rate reads `port_rate` ("100 Gb/sec (4X EDR)").
    /// `bidirectional`: the row sums both directions, so a share of the port means a share of
    /// twice its rate (as NVIDIA's ngc_rdma_test.sh doubles its pass rate for `-b`).
    pub fn resolve(&self, port_rate: Option<&str>, bidirectional: bool) -> Result<BandwidthLimit> {
        let directions = if bidirectional { 2.0 } else { 1.0 };
        Ok(match *self {
            BandwidthThreshold::GigabitsPerSecond(gbit_s) => {
                BandwidthLimit { gbit_s, unit: BandwidthUnit::GigabitsPerSecond, basis: None }
            }
            BandwidthThreshold::MebibytesPerSecond(mib_s) => BandwidthLimit {
                gbit_s: mib_to_gbit(mib_s),
                unit: BandwidthUnit::MebibytesPerSecond,
                basis: None,
            },
            BandwidthThreshold::PercentOfPort(percent) => {
                let unknown =
                    |detail: String| ThresholdError::UnknownPortRate { threshold: self.to_string(), detail };
                let text = port_rate.ok_or_else(|| unknown(String::new()))?;
                let port_gbit_s =
                    parse_port_rate(text).ok_or_else(|| unknown(format!(" (sysfs says {text:?})")))?;
                let both = if bidirectional { " in each direction" } else { "" };
                BandwidthLimit {
                    gbit_s: percent / 100.0 * port_gbit_s * directions,
                    unit: BandwidthUnit::GigabitsPerSecond,
                    basis: Some(format!(
                        "{}% of the {} Gb/s port{both}",
                        number(percent),
                        number(port_gbit_s)
                    )),
                }
            }
        })
    }
}

impl FromStr for BandwidthThreshold {
    type Err = ThresholdError;
    fn from_str(text: &str) -> Result<BandwidthThreshold> {
        BandwidthThreshold::parse(text)
    }
}

impl fmt::Display for BandwidthThreshold {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BandwidthThreshold::GigabitsPerSecond(value) => write!(out, "{} Gb/s", number(value)),
            BandwidthThreshold::MebibytesPerSecond(value) => write!(out, "{} MiB/s", number(value)),
            BandwidthThreshold::PercentOfPort(value) => write!(out, "{}% of the port rate", number(value)),
        }
    }
}

/// A bandwidth threshold made absolute: what a row's `bw_avg_gbit_s` is held against.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthLimit {
    /// The least acceptable average, Gb/s.
    pub gbit_s: f64,
    /// The unit FAIL lines use: the one the threshold was written in.
    pub unit: BandwidthUnit,
    /// Where a relative threshold came from ("80% of the 100 Gb/s port").
    pub basis: Option<String>,
}

impl fmt::Display for BandwidthLimit {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{} {}", number(self.unit.from_gbit(self.gbit_s)), self.unit.label())?;
        if let Some(basis) = &self.basis {
            write!(out, " ({basis})")?;
        }
        Ok(())
    }
}

/// The Gb/s of a port rate as the kernel words it in `/sys/class/infiniband/*/ports/*/rate`:
/// "100 Gb/sec (4X EDR)" gives 100, "2.5 Gb/sec (1X SDR)" 2.5. `None` when the text has no
/// positive Gb/sec figure (some software devices report 0).
pub fn parse_port_rate(text: &str) -> Option<f64> {
    let (value, rest) = split_number(text)?;
    let unit = rest.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
    (matches!(unit.as_str(), "gb/sec" | "gb/s") && value.is_finite() && value > 0.0).then_some(value)
}

/// `--max-lat`: the most a latency statistic may be, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyThreshold {
    pub max_us: f64,
}

impl LatencyThreshold {
    /// Parses `5us`, `5 us`, `5µs`, `800ns`, `0.01ms`; a bare number is microseconds, the unit
    /// every latency column is in.
    pub fn parse(text: &str) -> Result<LatencyThreshold> {
        let fail = |reason: &str| ThresholdError::LatencyThreshold {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (value, unit) = split_number(text).ok_or_else(|| fail("it does not start with a number"))?;
        if !(value.is_finite() && value > 0.0) {
            return Err(fail("it must be a positive number"));
        }
        let micros_per_unit = match unit.to_ascii_lowercase().as_str() {
            "" | "us" | "µs" | "usec" => 1.0,
            "ns" | "nsec" => 1e-3,
            "ms" | "msec" => 1e3,
            _ => return Err(fail(&format!("unknown unit {unit:?}"))),
        };
        Ok(LatencyThreshold { max_us: value * micros_per_unit })
    }

    /// This threshold applied to one statistic of the latency rows.
    pub fn on(self, statistic: LatencyStatistic) -> LatencyLimit {
        LatencyLimit { max_us: self.max_us, statistic }
    }
}

impl FromStr for LatencyThreshold {
    type Err = ThresholdError;
    fn from_str(text: &str) -> Result<LatencyThreshold> {
        LatencyThreshold::parse(text)
    }
}

/// Which latency column a `--max-lat` applies to (`--lat-pct`). perftest's "typical" is the
/// median, and is the default because it is what perftest users compare against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatencyStatistic {
    Minimum,
    #[default]
    Typical,
    Average,
    P99,
    P99_9,
    P99_99,
    Maximum,
}

const STATISTIC_NAMES: &str = "typical (or 50, median), average (avg, mean), min, max (100), 99, 99.9, 99.99";

impl LatencyStatistic {
    /// Every statistic, in column order.
    pub const ALL: [LatencyStatistic; 7] = [
        LatencyStatistic::Minimum,
        LatencyStatistic::Typical,
        LatencyStatistic::Average,
        LatencyStatistic::P99,
        LatencyStatistic::P99_9,
        LatencyStatistic::P99_99,
        LatencyStatistic::Maximum,
    ];

    /// Parses `--lat-pct`: `typical`/`50`/`median`, `average`/`avg`/`mean`, `min`, `max`/`100`,
    /// `99`, `99.9`, `99.99` (with or without a `p` in front or a `%` after).
    pub fn parse(text: &str) -> Result<LatencyStatistic> {
        let lowered = text.trim().to_ascii_lowercase();
        let bare = lowered.trim_start_matches('p').trim_end_matches('%');
        Ok(match bare {
            "typical" | "50" | "median" => LatencyStatistic::Typical,
            "average" | "avg" | "mean" => LatencyStatistic::Average,
            "min" | "minimum" | "0" => LatencyStatistic::Minimum,
            "max" | "maximum" | "100" => LatencyStatistic::Maximum,
            "99" => LatencyStatistic::P99,
            "99.9" => LatencyStatistic::P99_9,
            "99.99" => LatencyStatistic::P99_99,
            _ => {
                return Err(ThresholdError::LatencyStatistic {
                    text: text.to_string(),
                    accepted: STATISTIC_NAMES,
                })
            }
        })
    }

    /// The result-row column that holds this statistic (a published CSV column name).
    pub fn column(self) -> ColumnName {
        match self {
            LatencyStatistic::Minimum => column::T_MIN_US,
            LatencyStatistic::Typical => column::T_TYPICAL_US,
            LatencyStatistic::Average => column::T_AVG_US,
            LatencyStatistic::P99 => column::P99_US,
            LatencyStatistic::P99_9 => column::P99_9_US,
            LatencyStatistic::P99_99 => column::P99_99_US,
            LatencyStatistic::Maximum => column::T_MAX_US,
        }
    }

    /// How FAIL lines and tables name it.
    pub fn label(self) -> &'static str {
        match self {
            LatencyStatistic::Minimum => "minimum",
            LatencyStatistic::Typical => "typical",
            LatencyStatistic::Average => "average",
            LatencyStatistic::P99 => "p99",
            LatencyStatistic::P99_9 => "p99.9",
            LatencyStatistic::P99_99 => "p99.99",
            LatencyStatistic::Maximum => "maximum",
        }
    }
}

impl FromStr for LatencyStatistic {
    type Err = ThresholdError;
    fn from_str(text: &str) -> Result<LatencyStatistic> {
        LatencyStatistic::parse(text)
    }
}

/// A latency threshold on a statistic: what a latency row is held against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyLimit {
    pub max_us: f64,
    pub statistic: LatencyStatistic,
}

impl fmt::Display for LatencyLimit {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{} {} us", self.statistic.label(), number(self.max_us))
    }
}

/// `--tolerance`: how much worse a value may get before `compare` calls it a regression.
/// Parses `5%`, `0.5%` or a bare `5` (percent); stored as a fraction (0.05).
pub fn parse_tolerance(text: &str) -> Result<f64> {
    let fail =
        |reason: &str| ThresholdError::Tolerance { text: text.to_string(), reason: reason.to_string() };
    let (value, unit) = split_number(text).ok_or_else(|| fail("it does not start with a number"))?;
    if !unit.is_empty() && unit != "%" {
        return Err(fail(&format!("unknown unit {unit:?}")));
    }
    if !(value.is_finite() && value >= 0.0) {
        return Err(fail("it must be zero or more"));
    }
    Ok(value / 100.0)
}

/// Splits "90 Gb/s" into (90.0, "Gb/s"): the leading decimal number and the trimmed rest.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
        .map(|(index, _)| index)
        .unwrap_or(text.len());
    // An exponent letter directly before the unit would swallow it ("5e" of "5ebps"): back off
    // to the longest prefix that parses.
    (1..=end).rev().find_map(|cut| text[..cut].parse::<f64>().ok().map(|value| (value, text[cut..].trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_thresholds_parse_in_every_spelling() {
        assert_eq!(BandwidthThreshold::parse("90Gb/s").unwrap(), BandwidthThreshold::GigabitsPerSecond(90.0));
        assert_eq!(
            BandwidthThreshold::parse(" 90 gbps ").unwrap(),
            BandwidthThreshold::GigabitsPerSecond(90.0)
        );
        assert_eq!(
            BandwidthThreshold::parse("11000MiB/s").unwrap(),
            BandwidthThreshold::MebibytesPerSecond(11000.0)
        );
        assert_eq!(BandwidthThreshold::parse("80%").unwrap(), BandwidthThreshold::PercentOfPort(80.0));
        assert_eq!(
            BandwidthThreshold::parse("2.5e1Gb/s").unwrap(),
            BandwidthThreshold::GigabitsPerSecond(25.0)
        );
    }

    #[test]
    fn bad_bandwidth_thresholds_say_why() {
        for (text, reason) in [
            ("90", "no unit"),
            ("fast", "does not start with a number"),
            ("0Gb/s", "positive"),
            ("-5Gb/s", "positive"),
            ("120%", "cannot exceed 100%"),
            ("90MB/s", "ambiguous"),
            ("90furlongs", "unknown unit"),
        ] {
            let message = BandwidthThreshold::parse(text).unwrap_err().to_string();
            assert!(
                message.contains(reason) && message.contains("90Gb/s, 11000MiB/s or 80%"),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn percent_resolves_against_the_port_rate() {
        let threshold = BandwidthThreshold::parse("80%").unwrap();
        let limit = threshold.resolve(Some("100 Gb/sec (4X EDR)"), false).unwrap();
        assert_eq!(limit.gbit_s, 80.0);
        assert_eq!(limit.to_string(), "80 Gb/s (80% of the 100 Gb/s port)");
        assert_eq!(threshold.resolve(Some("400 Gb/sec (4X NDR)"), true).unwrap().gbit_s, 640.0);
        let error = threshold.resolve(None, false).unwrap_err().to_string();
        assert!(error.contains("did not report one") && error.contains("absolute value"), "{error}");
        let error = threshold.resolve(Some("0 Gb/sec (1X SDR)"), false).unwrap_err().to_string();
        assert!(error.contains("\"0 Gb/sec (1X SDR)\""), "{error}");
    }

    #[test]
    fn absolute_thresholds_ignore_the_port_and_keep_their_unit() {
        let limit = BandwidthThreshold::parse("11000MiB/s").unwrap().resolve(None, true).unwrap();
        assert!((limit.gbit_s - 92.274688).abs() < 1e-9, "{}", limit.gbit_s);
        assert_eq!(limit.to_string(), "11000 MiB/s");
    }

    #[test]
    fn port_rates_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_port_rate("100 Gb/sec (4X EDR)"), Some(100.0));
        assert_eq!(parse_port_rate("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(parse_port_rate("400 Gb/sec (4X NDR)\n"), Some(400.0));
        assert_eq!(parse_port_rate("0 Gb/sec"), None);
        assert_eq!(parse_port_rate("unknown"), None);
        assert_eq!(parse_port_rate("100 Mb/sec"), None);
    }

    #[test]
    fn latency_thresholds_parse_to_microseconds() {
        assert_eq!(LatencyThreshold::parse("5us").unwrap().max_us, 5.0);
        assert_eq!(LatencyThreshold::parse("5").unwrap().max_us, 5.0);
        assert_eq!(LatencyThreshold::parse("4.5 µs").unwrap().max_us, 4.5);
        assert_eq!(LatencyThreshold::parse("800ns").unwrap().max_us, 0.8);
        assert_eq!(LatencyThreshold::parse("0.01ms").unwrap().max_us, 10.0);
        assert!(LatencyThreshold::parse("5s").unwrap_err().to_string().contains("unknown unit \"s\""));
        assert!(LatencyThreshold::parse("0us").unwrap_err().to_string().contains("positive"));
    }

    #[test]
    fn latency_statistics_name_their_columns() {
        assert_eq!(LatencyStatistic::parse("99").unwrap().column().name(), "p99_us");
        assert_eq!(LatencyStatistic::parse("p99.9").unwrap().column().name(), "p99_9_us");
        assert_eq!(LatencyStatistic::parse("99.99%").unwrap().column().name(), "p99_99_us");
        assert_eq!(LatencyStatistic::parse("typical").unwrap(), LatencyStatistic::default());
        assert_eq!(LatencyStatistic::parse("avg").unwrap().column().name(), "t_avg_us");
        assert_eq!(LatencyStatistic::parse("max").unwrap().column().name(), "t_max_us");
        assert!(LatencyStatistic::parse("95").unwrap_err().to_string().contains("99.99"));
    }

    #[test]
    fn tolerance_is_a_fraction() {
        assert_eq!(parse_tolerance("5%").unwrap(), 0.05);
        assert_eq!(parse_tolerance("5").unwrap(), 0.05);
        assert_eq!(parse_tolerance("0").unwrap(), 0.0);
        assert!(parse_tolerance("-1%").is_err());
        assert!(parse_tolerance("5x").is_err());
    }
}
