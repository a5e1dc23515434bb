//! Soak re-reads of AER counters and links (`gdrperf_topology::pcie_health`) on a fixture tree
//! whose files change between two reads, the way a flaky riser or a retrain shows in sysfs.

use std::fs;

use gdrperf_doctor_fixtures::{Dgx, FixtureDir, Machine};
use gdrperf_topology::pcie_health::{changes, watched_functions, HealthEvent, HealthSnapshot};
use gdrperf_topology::SysRoot;

fn device_file(fixture: &FixtureDir, address: &str, name: &str) -> std::path::PathBuf {
    fs::canonicalize(fixture.path().join(format!("sys/bus/pci/devices/{address}"))).unwrap().join(name)
}

#[test]
fn the_gpu_the_nic_and_every_bridge_above_them_are_watched() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let sys = SysRoot::open(fixture.path()).unwrap();
    let watched = watched_functions(&sys, &[&Dgx::gpu(0), &Dgx::nic(0)]);
    // Root port, switch upstream port, the GPU's downstream port and GPU, then the NIC's.
    assert_eq!(
        watched,
        ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:1b:00.0", "0000:17:00.0", "0000:18:00.0"]
    );
}

#[test]
fn a_quiet_interval_has_no_events() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let sys = SysRoot::open(fixture.path()).unwrap();
    let watched = watched_functions(&sys, &[&Dgx::gpu(0), &Dgx::nic(0)]);
    let first = HealthSnapshot::read(&sys, &watched);
    assert!(first.functions.iter().all(|function| function.present && function.aer.len() == 3));
    assert_eq!(changes(&first, &HealthSnapshot::read(&sys, &watched)), []);
}

#[test]
fn counters_that_move_and_a_link_that_retrains_between_reads_are_events() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let sys = SysRoot::open(fixture.path()).unwrap();
    let watched = watched_functions(&sys, &[&Dgx::gpu(0), &Dgx::nic(0)]);
    let before = HealthSnapshot::read(&sys, &watched);
    // A bad lane on the NIC's switch port: receiver errors, then the NIC retrains at x8.
    let port = Dgx::nic(0).replace(":18:00.0", ":17:00.0");
    let correctable = device_file(&fixture, &port, "aer_dev_correctable");
    let text = fs::read_to_string(&correctable).unwrap();
    fs::write(
        &correctable,
        text.replace("RxErr 0", "RxErr 12").replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 12"),
    )
    .unwrap();
    fs::write(device_file(&fixture, &Dgx::nic(0), "current_link_width"), "8\n").unwrap();
    let fatal = device_file(&fixture, &Dgx::gpu(0), "aer_dev_fatal");
    let text = fs::read_to_string(&fatal).unwrap();
    fs::write(&fatal, text.replace("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL 1")).unwrap();
    let after = HealthSnapshot::read(&sys, &watched);
    let events = changes(&before, &after);
    assert_eq!(
        events,
        [
            HealthEvent::AerCounter {
                address: Dgx::gpu(0),
                severity: "fatal".into(),
                counter: "TOTAL_ERR_FATAL".into(),
                before: 0,
                after: 1
            },
            HealthEvent::AerCounter {
                address: port.clone(),
                severity: "correctable".into(),
                counter: "RxErr".into(),
                before: 0,
                after: 12
            },
            HealthEvent::LinkChanged {
                address: Dgx::nic(0),
                before: "32.0 GT/s PCIe x16".into(),
                after: "32.0 GT/s PCIe x8".into()
            },
        ]
    );
    assert_eq!(events[1].to_string(), "0000:17:00.0: AER correctable RxErr 0 -> 12");
    // The next interval, with nothing new, is quiet again: events are deltas, not levels.
    assert_eq!(changes(&after, &HealthSnapshot::read(&sys, &watched)), []);
}

#[test]
fn a_function_that_leaves_the_bus_is_an_event_and_missing_aer_files_are_not() {
    let fixture = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let sys = SysRoot::open(fixture.path()).unwrap();
    let watched = watched_functions(&sys, &[&Dgx::gpu(0), &Dgx::nic(0)]);
    fs::remove_file(device_file(&fixture, &Dgx::gpu(0), "aer_dev_correctable")).unwrap();
    let before = HealthSnapshot::read(&sys, &watched);
    fs::remove_file(fixture.path().join(format!("sys/bus/pci/devices/{}", Dgx::nic(0)))).unwrap();
    let events = changes(&before, &HealthSnapshot::read(&sys, &watched));
    assert_eq!(events, [HealthEvent::Vanished { address: Dgx::nic(0) }]);
}
