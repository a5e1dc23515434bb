//! Units in which gdrperf reports rates and times.
//!
//! Two bandwidth units are always available side by side, because the two communities that read
//! gdrperf's output disagree on what "MB" means:
//!
//! * **MiB/s** (2^20 bytes per second). perftest labels this column `MB/sec`, and its numbers are
//!   what cluster acceptance sheets quote, so gdrperf reproduces it exactly (and spells it MiB/s so
//!   nobody has to remember the discrepancy).
//! * **Gb/s** (10^9 bits per second). Link speeds (HDR 200 Gb/s, NDR 400 Gb/s) are quoted in
//!   decimal bits, so this is the unit for "how close to line rate are we". perftest's
//!   `--report_gbits` uses the same definition.
//!
//! Host-GPU copies (`gdrperf copy-bw`) are quoted in GB/s (10^9 bytes per second), as CUDA's
//! bandwidthTest and PCIe speeds are.
//!
//! Times are recorded as integer nanoseconds (exact, cheap to add) and converted to floating-point
//! microseconds only for display, because µs is the unit latency tables are read in.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Bytes in one MiB: the divisor behind perftest's `MB/sec` column.
pub const BYTES_PER_MIB: f64 = 1_048_576.0;

/// Bits in one Gb (decimal, as link speeds are quoted).
pub const BITS_PER_GBIT: f64 = 1.0e9;

/// Bytes in one GB (decimal), the unit host-GPU copy rates are quoted in.
pub const BYTES_PER_GBYTE: f64 = 1.0e9;

/// Nanoseconds in one second.
pub const NANOS_PER_SECOND: f64 = 1.0e9;

/// Nanoseconds in one microsecond.
pub const NANOS_PER_MICROSECOND: f64 = 1.0e3;

/// Converts integer nanoseconds to floating-point microseconds for display.
///
/// Kept as a function rather than an inline `/ 1000.0` so that every table and JSON field uses the
/// same conversion.
pub fn nanos_to_micros(nanos: f64) -> f64 {
    nanos / NANOS_PER_MICROSECOND
}

/// A data rate. Stored in bytes per second, the unit-neutral form, and converted on demand so
/// that both of gdrperf's display units are always available from the same measurement.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Bandwidth {
    bytes_per_second: f64,
}

impl Bandwidth {
    /// Builds a rate from a byte count and the nanoseconds it took.
    ///
    /// Returns a zero rate when `nanos` is zero rather than infinity: callers check for a zero
    /// duration themselves and report it as an error, and a stray `inf` in a JSON file breaks
    /// plotting tools.
    pub fn from_bytes_and_nanos(bytes: u64, nanos: u64) -> Self {
        if nanos == 0 {
            return Self::default();
        }
        Self { bytes_per_second: bytes as f64 * NANOS_PER_SECOND / nanos as f64 }
    }

    /// Builds a rate from bytes per second.
    pub fn from_bytes_per_second(bytes_per_second: f64) -> Self {
        Self { bytes_per_second }
    }

    /// The rate in bytes per second.
    pub fn bytes_per_second(&self) -> f64 {
        self.bytes_per_second
    }

    /// The rate in MiB/s (2^20 B/s), perftest's default `MB/sec` column.
    pub fn mib_per_second(&self) -> f64 {
        self.bytes_per_second / BYTES_PER_MIB
    }

    /// The rate in Gb/s (10^9 bit/s), comparable with the link speed.
    pub fn gbit_per_second(&self) -> f64 {
        self.bytes_per_second * 8.0 / BITS_PER_GBIT
    }

    /// The rate in GB/s (10^9 byte/s): host-GPU copies, as CUDA's bandwidthTest and PCIe
    /// speeds quote them (`gdrperf copy-bw`).
    pub fn gbyte_per_second(&self) -> f64 {
        self.bytes_per_second / BYTES_PER_GBYTE
    }
}

/// Serialized with every unit spelled out, so a JSON consumer never has to guess which "MB" it got.
impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("Bandwidth", 3)?;
        fields.serialize_field("bytes_per_second", &self.bytes_per_second())?;
        fields.serialize_field("mib_per_second", &self.mib_per_second())?;
        fields.serialize_field("gbit_per_second", &self.gbit_per_second())?;
        fields.end()
    }
}

/// A message rate. perftest reports it in millions of messages per second (`Mpps`), which for
/// small messages is the number that matters more than bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct MessageRate {
    messages_per_second: f64,
}

impl MessageRate {
    /// Builds a rate from a message count and the nanoseconds it took (zero rate for zero time,
    /// for the same reason as [`Bandwidth::from_bytes_and_nanos`]).
    pub fn from_messages_and_nanos(messages: u64, nanos: u64) -> Self {
        if nanos == 0 {
            return Self::default();
        }
        Self { messages_per_second: messages as f64 * NANOS_PER_SECOND / nanos as f64 }
    }

    /// The rate in messages per second.
    pub fn messages_per_second(&self) -> f64 {
        self.messages_per_second
    }

    /// The rate in millions of messages per second (perftest's `MsgRate[Mpps]`).
    pub fn mpps(&self) -> f64 {
        self.messages_per_second / 1.0e6
    }
}

impl Serialize for MessageRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("MessageRate", 2)?;
        fields.serialize_field("messages_per_second", &self.messages_per_second())?;
        fields.serialize_field("mpps", &self.mpps())?;
        fields.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mib_in_one_second_is_one_mib_per_second_and_8_388_608_bits() {
        let rate = Bandwidth::from_bytes_and_nanos(1 << 20, 1_000_000_000);
        assert_eq!(rate.mib_per_second(), 1.0);
        assert_eq!(rate.gbit_per_second(), 8.388_608e-3);
    }

    #[test]
    fn line_rate_of_a_200_gbit_link_is_25e9_bytes_per_second() {
        let rate = Bandwidth::from_bytes_per_second(25.0e9);
        assert_eq!(rate.gbit_per_second(), 200.0);
        assert!((rate.mib_per_second() - 23_841.857_910_156_25).abs() < 1e-9);
    }

    #[test]
    fn zero_duration_gives_zero_rates_not_infinity() {
        assert_eq!(Bandwidth::from_bytes_and_nanos(100, 0).bytes_per_second(), 0.0);
        assert_eq!(MessageRate::from_messages_and_nanos(100, 0).mpps(), 0.0);
    }

    #[test]
    fn three_million_messages_in_half_a_second_is_6_mpps() {
        assert_eq!(MessageRate::from_messages_and_nanos(3_000_000, 500_000_000).mpps(), 6.0);
    }

    #[test]
    fn nanos_to_micros_divides_by_one_thousand() {
        assert_eq!(nanos_to_micros(1500.0), 1.5);
    }
}
