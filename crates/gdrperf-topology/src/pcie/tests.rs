//! PCIe facts from hand-built config spaces (the fixture-machine test is the doctor's:
//! crates/gdrperf-doctor/tests/machines.rs, where the fixtures are a dev-dependency).

use super::*;

/// A 256-byte config space with a capability list: power management at 0x40, MSI at 0x50, then
/// (when `device_control` is given) PCI Express at 0x70 with that Device Control register.
fn config_with_express(device_control: Option<u16>) -> Vec<u8> {
    let mut config = vec![0u8; 256];
    config[0x06] = 0x10; // status: capability list
    config[0x34] = 0x40;
    config[0x40] = 0x01;
    config[0x41] = 0x50;
    config[0x50] = 0x05;
    if let Some(register) = device_control {
        config[0x51] = 0x70;
        config[0x70] = 0x10;
        config[0x78..0x7a].copy_from_slice(&register.to_le_bytes());
    }
    config
}

#[test]
fn device_control_decodes_payload_read_request_and_relaxed_ordering() {
    // 0x2810: bits 5-7 = 0 (128 B), bits 12-14 = 2 (512 B), bit 4 set.
    assert_eq!(
        device_control_from_config(&config_with_express(Some(0x2810))),
        DeviceControl::Known {
            max_payload_bytes: 128,
            max_read_request_bytes: 512,
            relaxed_ordering: true,
            register: 0x2810
        }
    );
    // 0x5020: bits 5-7 = 1 (256 B), bits 12-14 = 5 (4096 B), bit 4 clear.
    let known = device_control_from_config(&config_with_express(Some(0x5020)));
    assert_eq!(known.describe(), "MPS 256 B, MRRS 4096 B, relaxed ordering off");
}

#[test]
fn what_a_non_root_reader_sees_is_unknown_not_guessed() {
    let full = config_with_express(Some(0x2810));
    let unprivileged = &full[..UNPRIVILEGED_CONFIG_BYTES];
    assert_eq!(device_control_from_config(unprivileged), DeviceControl::Unreadable);
    assert_eq!(DeviceControl::Unreadable.describe(), "MPS/MRRS/relaxed ordering unknown (needs root)");
    assert_eq!(device_control_from_config(&[]), DeviceControl::Unreadable);
}

#[test]
fn a_function_without_the_capability_or_with_a_looping_list_is_not_express() {
    assert_eq!(device_control_from_config(&config_with_express(None)), DeviceControl::NotExpress);
    assert_eq!(device_control_from_config(&[0u8; 256]), DeviceControl::NotExpress, "no capability list");
    let mut looping = config_with_express(None);
    looping[0x51] = 0x40; // MSI points back at power management
    assert_eq!(device_control_from_config(&looping), DeviceControl::NotExpress);
}

fn link(current: (&str, u32), max: (&str, u32)) -> PcieLink {
    PcieLink {
        current_speed: Some(current.0.into()),
        current_width: Some(current.1),
        max_speed: Some(max.0.into()),
        max_width: Some(max.1),
    }
}

fn facts(is_gpu: bool, link: &PcieLink) -> FunctionFacts {
    FunctionFacts {
        name: if is_gpu { "GPU0".into() } else { "mlx5_0".into() },
        address: "0000:19:00.0".into(),
        is_gpu,
        link: LinkTraining::from_link(link),
        device_control: DeviceControl::Unreadable,
    }
}

#[test]
fn a_link_below_its_maximum_is_marked_narrow_or_slow() {
    let full = link(("32.0 GT/s PCIe", 16), ("32.0 GT/s PCIe", 16));
    assert_eq!(facts(true, &full).link.describe(), "link 32 GT/s x16 (max 32 GT/s x16)");
    assert!(!facts(true, &full).link.narrow && !facts(true, &full).link.slow);
    let narrow = link(("32.0 GT/s PCIe", 8), ("32.0 GT/s PCIe", 16));
    assert_eq!(facts(true, &narrow).link.describe(), "link 32 GT/s x8 (max 32 GT/s x16)");
    assert!(facts(true, &narrow).link.narrow && !facts(true, &narrow).link.slow);
    let idle = link(("2.5 GT/s PCIe", 16), ("32.0 GT/s PCIe", 16));
    assert!(facts(false, &idle).link.slow && !facts(false, &idle).link.narrow);
    assert_eq!(parse_speed("8.0 GT/s PCIe"), Some(8.0));
    assert_eq!(parse_speed("Unknown"), None);
}

#[test]
fn acs_bits_are_named() {
    assert_eq!(acs_meaning(AcsState::Control(0x001d)), "control 0x001d: source validation, P2P request redirect, P2P completion redirect, upstream forwarding");
    assert_eq!(acs_meaning(AcsState::Control(0)), "control 0x0000: none set");
    assert_eq!(acs_meaning(AcsState::Unreadable), "unknown (needs root)");
    assert_eq!(acs_meaning(AcsState::NotPresent), "not present");
}
