//! The doctor's verdict on the PCIe findings (`gdrperf_topology::findings`): every healthy machine shape
//! has none, and each one-fault machine (a NIC, a GPU or a bridge) has exactly its fault, named
//! with its device, and exits 1 (a warning) or 2 (a failure). The same faults' causes on a short
//! row are checked against these words in gdrperf-ceiling's tests/findings.rs.

use gdrperf_doctor::{diagnose, CudaFacts, CudaGpu, Level, Report};
use gdrperf_doctor_fixtures::{Fault, FixtureDir, Machine};
use gdrperf_topology::findings::{Check, Finding};

/// CUDA's view of every GPU in `machine`, all capable, so that a healthy node exits 0.
fn report_with_capable_gpus(machine: &Machine) -> Report {
    let directory = FixtureDir::with(machine).expect("writing the fixture");
    let not_queried = CudaFacts::NotQueried { reason: "fixture".into() };
    let first = diagnose(directory.path(), not_queried).expect("diagnosing the fixture");
    let gpus = first
        .gpus
        .iter()
        .enumerate()
        .map(|(ordinal, gpu)| CudaGpu {
            ordinal: ordinal as u32,
            name: "NVIDIA GPU".into(),
            pci_bus_id: gpu.bus_id.clone(),
            dma_buf_supported: Some(true),
            gpu_direct_rdma_supported: Some(true),
        })
        .collect();
    diagnose(directory.path(), CudaFacts::Available { driver_api_version: 12040, gpus }).expect("diagnosing")
}

#[test]
fn healthy_machine_shapes_have_no_finding() {
    for (name, machine, worst, expected) in [
        ("DGX H100-like", Machine::dgx_h100_like(), Level::Ok, &[][..]),
        ("PCIe switch tree", Machine::pcie_switch_tree(), Level::Ok, &[]),
        // GPU and NIC meet at the host bridge: the topology warns for each of its two GPUs.
        ("two sockets, root ports", Machine::two_socket_root_ports(), Level::Warn, &["topology", "topology"]),
    ] {
        let report = report_with_capable_gpus(&machine);
        let checks: Vec<&str> = report.findings.iter().map(|finding| finding.check.name()).collect();
        assert_eq!(checks, expected, "{name}");
        assert_eq!(report.worst_level(), worst, "{name}: {:#?}", report.verdicts);
        assert_eq!(report.exit_code, 0, "{name}: no FAIL, the node passes");
        let warnings: Vec<&str> =
            report.verdicts.iter().filter(|v| v.level != Level::Ok).map(|v| v.check).collect();
        assert!(warnings.iter().all(|check| *check == "topology"), "{name}: {warnings:?}");
    }
}

#[test]
fn each_fault_is_the_one_finding_named_with_its_device_and_sets_the_exit_code() {
    for fault in Fault::all() {
        let what = fault.what;
        let report = report_with_capable_gpus(&fault.machine);
        // The fault, and on the two-socket shape the topology finding it always has.
        let faults: Vec<&Finding> =
            report.findings.iter().filter(|finding| finding.check != Check::Topology).collect();
        let found: Vec<(&str, &str)> =
            faults.iter().map(|finding| (finding.check.name(), finding.device.as_str())).collect();
        assert_eq!(found, [(fault.check, fault.device.as_str())], "{what}");
        let finding = faults[0];
        let expected_level = if fault.fails { Level::Fail } else { Level::Warn };
        let verdict = report
            .verdicts
            .iter()
            .find(|verdict| verdict.check == fault.check && verdict.reason == finding.evidence)
            .unwrap_or_else(|| panic!("{what}: no verdict line for {finding:?}"));
        assert_eq!(verdict.level, expected_level, "{what}");
        assert!(verdict.reason.contains(&fault.device), "{what}: {}", verdict.reason);
        assert_eq!(verdict.fix.as_deref(), Some(finding.fix.as_str()), "{what}");
        assert_eq!(verdict.source.as_deref(), Some(finding.source.as_str()), "{what}");
        assert!(!finding.source.is_empty(), "{what}");
        // On the two healthy shapes that exit 0 this finding alone moves the exit code: a FAIL
        // to 1, a WARN to 1 only under --strict.
        let expected_exit = if fault.fails { 1 } else { 0 };
        assert_eq!(report.exit_code, expected_exit, "{what}: {:#?}", report.verdicts);
        assert_eq!(report.worst_level().strict_exit_code(), 1, "{what}");
        let text = report.to_string();
        assert!(
            text.contains(&format!("  {:<4}  {}: {}\n", verdict.level.word(), fault.check, finding.evidence)),
            "{what}: {text}"
        );
        assert!(text.contains(&format!("        source: {}\n", finding.source)), "{what}");
    }
}

#[test]
fn the_json_report_carries_each_finding_with_its_level_device_fix_and_source() {
    let fault = Fault::all().into_iter().find(|fault| fault.fails).expect("a failing fault");
    let report = report_with_capable_gpus(&fault.machine);
    let json = serde_json::to_value(&report).unwrap();
    let finding = &json["findings"][0];
    assert_eq!(finding["check"], "aer");
    assert_eq!(finding["level"], "fail");
    assert_eq!(finding["device"], fault.device);
    assert_eq!(finding["role"], "gpu");
    assert!(finding["fix"].as_str().unwrap().contains("lspci -vv -s 0000:15:00.0"));
    assert!(finding["source"].as_str().unwrap().contains("sysfs-bus-pci-devices-aer"));
    assert!(finding["evidence"].as_str().unwrap().ends_with("fatal 1 (DLP 1)"), "{finding}");
}
