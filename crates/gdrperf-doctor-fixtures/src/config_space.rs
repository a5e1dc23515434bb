//! The bytes of a PCI config space, generated from a description: the ACS register the doctor
//! judges and the PCI Express capability whose Device Control register it reads.

use gdrperf_topology::pci::{ACS_CAPABILITY_ID, ACS_CONTROL_OFFSET, EXTENDED_CONFIG_START};

use crate::machine::AcsFixture;

/// A PCI config space whose extended capability list holds AER, then (for
/// `Control`) ACS with that control register.
pub fn config_space(acs: AcsFixture) -> Vec<u8> {
    const ADVANCED_ERROR_REPORTING: u32 = 0x0001;
    const ACS_AT: usize = 0x148;
    match acs {
        AcsFixture::Unreadable => vec![0; 64],
        AcsFixture::Absent => vec![0; EXTENDED_CONFIG_START + 8],
        AcsFixture::Control(control) => {
            let mut config = vec![0; ACS_AT + 8];
            let aer_header = ADVANCED_ERROR_REPORTING | (1 << 16) | ((ACS_AT as u32) << 20);
            config[EXTENDED_CONFIG_START..EXTENDED_CONFIG_START + 4]
                .copy_from_slice(&aer_header.to_le_bytes());
            let acs_header = u32::from(ACS_CAPABILITY_ID) | (1 << 16);
            config[ACS_AT..ACS_AT + 4].copy_from_slice(&acs_header.to_le_bytes());
            config[ACS_AT + ACS_CONTROL_OFFSET..ACS_AT + ACS_CONTROL_OFFSET + 2]
                .copy_from_slice(&control.to_le_bytes());
            config
        }
    }
}

/// Adds to a config space from [`config_space`] a capability list (power management, then PCI
/// Express with this Device Control register), as far as the space reaches: a 64-byte space (what
/// non-root users read) keeps the header's pointer and loses the capability, as on a real system.
pub fn add_express_capability(config: &mut [u8], device_control: Option<u16>) {
    const POWER_MANAGEMENT_AT: usize = 0x40;
    const EXPRESS_AT: usize = 0x60;
    let Some(device_control) = device_control else { return };
    if config.len() < 0x40 {
        return;
    }
    config[0x06] |= 1 << 4;
    config[0x34] = POWER_MANAGEMENT_AT as u8;
    if config.len() < EXPRESS_AT + 0x10 {
        return;
    }
    config[POWER_MANAGEMENT_AT] = 0x01;
    config[POWER_MANAGEMENT_AT + 1] = EXPRESS_AT as u8;
    config[EXPRESS_AT] = gdrperf_topology::pcie::EXPRESS_CAPABILITY_ID;
    config[EXPRESS_AT + 1] = 0;
    let at = EXPRESS_AT + gdrperf_topology::pcie::DEVICE_CONTROL_OFFSET;
    config[at..at + 2].copy_from_slice(&device_control.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdrperf_topology::pci::{acs_from_config, AcsState};

    #[test]
    fn generated_config_space_reads_back() {
        assert_eq!(acs_from_config(&config_space(AcsFixture::Control(0x5d))), AcsState::Control(0x5d));
        assert_eq!(acs_from_config(&config_space(AcsFixture::Absent)), AcsState::NotPresent);
        assert_eq!(acs_from_config(&config_space(AcsFixture::Unreadable)), AcsState::Unreadable);
    }
}
