//! PCIe Advanced Error Reporting counters, as the kernel shows them since 4.19: the files
//! `aer_dev_correctable`, `aer_dev_nonfatal` and `aer_dev_fatal` of an AER-capable function, one
//! `name count` line per error type and a `TOTAL_ERR_*` line last (kernel
//! Documentation/ABI/testing/sysfs-bus-pci-devices-aer). The counts run since boot, and an error
//! may be counted at the link partner rather than at the device that caused it, so a path's
//! every device is read, not only its ends.

use serde::{Deserialize, Serialize};

use crate::sysfs::SysRoot;

/// The `NAME COUNT` lines of an AER file, in its order (`RxErr 3`, `TOTAL_ERR_COR 3`); a line
/// that is not a name and a count is skipped. The one reading of the file's lines: the
/// doctor's description ([`AerFile`]) and the soak's re-reads (`pcie_health`) both use it.
pub fn counter_lines(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(|line| {
        let (name, count) = line.trim().rsplit_once(char::is_whitespace)?;
        Some((name.trim(), count.parse().ok()?))
    })
}

/// One AER file: its total and the error types with a count above zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AerFile {
    /// The `TOTAL_ERR_*` line (one message may report several errors, so it may differ from the
    /// sum of the lines).
    pub total: u64,
    /// `("Receiver Error", 2)`: the lines above zero, in the file's order.
    pub nonzero: Vec<(String, u64)>,
}

impl AerFile {
    /// Parses the file's text; `None` when it has no `TOTAL_ERR_` line (not an AER file).
    pub fn parse(text: &str) -> Option<AerFile> {
        let mut file = AerFile::default();
        let mut has_total = false;
        for (name, count) in counter_lines(text) {
            if name.starts_with("TOTAL_ERR_") {
                file.total = count;
                has_total = true;
            } else if count > 0 {
                file.nonzero.push((name.to_string(), count));
            }
        }
        has_total.then_some(file)
    }

    /// "3 (Receiver Error 2, Bad TLP 1)", or "0".
    pub fn describe(&self) -> String {
        if self.nonzero.is_empty() {
            return self.total.to_string();
        }
        let lines: Vec<String> = self.nonzero.iter().map(|(name, count)| format!("{name} {count}")).collect();
        format!("{} ({})", self.total, lines.join(", "))
    }
}

/// The three AER files of one function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AerCounts {
    pub correctable: AerFile,
    pub nonfatal: AerFile,
    pub fatal: AerFile,
}

impl AerCounts {
    /// Reads the function at `address`; `None` when the kernel exposes no AER counters for it
    /// (no AER capability, a kernel before 4.19, or AER handled by the firmware).
    pub fn read(sys: &SysRoot, address: &str) -> Option<AerCounts> {
        let file = |name: &str| {
            sys.read_text(format!("sys/bus/pci/devices/{address}/aer_dev_{name}"))
                .and_then(|text| AerFile::parse(&text))
        };
        Some(AerCounts {
            correctable: file("correctable")?,
            nonfatal: file("nonfatal")?,
            fatal: file("fatal")?,
        })
    }

    /// Whether any counter is above zero.
    pub fn any(&self) -> bool {
        self.correctable.total + self.nonfatal.total + self.fatal.total > 0
    }

    /// "correctable 2 (Receiver Error 2), nonfatal 0, fatal 0".
    pub fn describe(&self) -> String {
        format!(
            "correctable {}, nonfatal {}, fatal {}",
            self.correctable.describe(),
            self.nonfatal.describe(),
            self.fatal.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel documentation's sample output.
    const CORRECTABLE: &str = "Receiver Error 2\nBad TLP 0\nBad DLLP 0\nRELAY_NUM Rollover 0\nReplay Timer Timeout 0\nAdvisory Non-Fatal 0\nCorrected Internal Error 0\nHeader Log Overflow 0\nTOTAL_ERR_COR 2\n";

    #[test]
    fn the_kernels_sample_parses_to_its_total_and_nonzero_lines() {
        let file = AerFile::parse(CORRECTABLE).unwrap();
        assert_eq!(file.total, 2);
        assert_eq!(file.nonzero, [("Receiver Error".to_string(), 2)]);
        assert_eq!(file.describe(), "2 (Receiver Error 2)");
        assert_eq!(AerFile::parse("Undefined 0\nTOTAL_ERR_FATAL 0\n").unwrap().describe(), "0");
        assert_eq!(AerFile::parse("no counters here\n"), None);
    }
}
