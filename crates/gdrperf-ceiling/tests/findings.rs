//! A short row's causes on each one-fault machine (gdrperf-doctor-fixtures' `Fault::all`: a NIC,
//! a GPU or a bridge) name the doctor's finding in the doctor's words: the same check, evidence,
//! fix and source, because both take them from `gdrperf_topology::findings`. The healthy shapes name none.

use gdrperf_ceiling::{ceiling, judge, Cause, End, EndFacts, EndQuery, MemoryPath, RowEvidence, Transfer};
use gdrperf_doctor::{diagnose, CudaFacts};
use gdrperf_doctor_fixtures::{Dgx, Fault, FixtureDir, Machine, SwitchTree, TwoSocket};
use gdrperf_topology::Relation;

const WRITE: Transfer = Transfer { message_bytes: 65536, with_reth: true, bidirectional: false };

/// This end's facts for a GPUDirect run of the pair (`gpu`, `nic`), the thread on `numa_node`.
fn gpudirect_facts(machine: &Machine, gpu: &str, nic: &str, numa_node: u32) -> EndFacts {
    let directory = FixtureDir::with(machine).expect("writing the fixture");
    let query = EndQuery {
        nic,
        port: 1,
        gpu_bus_id: Some(gpu),
        memory: MemoryPath::GpuDirect,
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        thread_numa_node: Some(numa_node),
    };
    EndFacts::read(directory.path(), &query)
}

/// The causes of a row this end (the client) wrote at 40 % of its ceiling to a healthy DGX peer.
fn short_row_causes(client: &EndFacts) -> Vec<Cause> {
    let server = gpudirect_facts(&Machine::dgx_h100_like(), &Dgx::gpu(0), &Dgx::nic_name(0), 0);
    let local = End { role: "client", facts: client, copy_gbps: None };
    let peer = End { role: "server", facts: &server, copy_gbps: None };
    let ceiling = ceiling(local, peer, WRITE);
    let measured = 0.4 * ceiling.gbps().expect("a hardware ceiling");
    let judgement = judge(&ceiling, measured, 10.0, false, local, Some(peer), &RowEvidence::default());
    assert!(judgement.short);
    judgement.causes
}

#[test]
fn healthy_machine_shapes_name_no_cause_on_a_short_row() {
    for (name, machine, gpu, nic) in [
        ("DGX H100-like", Machine::dgx_h100_like(), Dgx::gpu(0), Dgx::nic_name(0)),
        (
            "PCIe switch tree",
            Machine::pcie_switch_tree(),
            SwitchTree::GPU.to_string(),
            SwitchTree::NIC_NAME.to_string(),
        ),
    ] {
        let facts = gpudirect_facts(&machine, &gpu, &nic, 0);
        assert!(facts.gpu_nic_relation.is_some_and(Relation::stays_below_root_complex), "{name}");
        assert_eq!(short_row_causes(&facts), Vec::new(), "{name}");
    }
    // GPU and NIC on separate root ports: the path through the CPU is the only cause.
    let facts = gpudirect_facts(&Machine::two_socket_root_ports(), TwoSocket::GPU, TwoSocket::NIC_NAME, 0);
    let checks: Vec<String> = short_row_causes(&facts).into_iter().map(|cause| cause.check).collect();
    assert_eq!(checks, ["topology"]);
}

#[test]
fn each_faults_cause_is_the_doctors_finding_in_the_same_words() {
    for fault in Fault::all() {
        let what = fault.what;
        let directory = FixtureDir::with(&fault.machine).expect("writing the fixture");
        let report = diagnose(directory.path(), CudaFacts::NotQueried { reason: "fixture".into() }).unwrap();
        // The fault; on the two-socket shape the topology finding is there too (checked below).
        let faults: Vec<_> =
            report.findings.iter().filter(|finding| finding.check.name() != "topology").collect();
        let [finding] = faults.as_slice() else { panic!("{what}: {:#?}", report.findings) };
        let facts = gpudirect_facts(&fault.machine, &fault.gpu, &fault.nic, fault.numa_node);
        let causes = short_row_causes(&facts);
        let same: Vec<&Cause> = causes
            .iter()
            .filter(|cause| cause.check == fault.check && cause.evidence == finding.evidence)
            .collect();
        let [cause] = same.as_slice() else { panic!("{what}: {finding:#?} not once in {causes:#?}") };
        assert_eq!((cause.side.as_str(), cause.peer), ("client", false), "{what}");
        assert_eq!(cause.fix, finding.fix, "{what}");
        assert_eq!(cause.source, finding.source, "{what}");
        assert!(cause.evidence.contains(&fault.device), "{what}");
        // Below the root complex nothing else is wrong; through it, the path comes first.
        let others: Vec<&str> =
            causes.iter().filter(|other| other != cause).map(|other| other.check.as_str()).collect();
        if facts.gpu_nic_relation.is_some_and(Relation::stays_below_root_complex) {
            assert_eq!(others, Vec::<&str>::new(), "{what}");
        } else {
            assert_eq!(others, ["topology"], "{what}");
        }
    }
}
