//! Ceilings and first causes on fixture trees of real machine shapes (gdrperf-doctor-fixtures):
//! a DGX H100-like server (8 H100 SXM, 8 ConnectX-7 NDR, each pair under its own PCIe Gen5
//! switch), the same with one fault each, and a PCIe server whose GPU's only NIC sits on the
//! other socket. The client end is the local side of the row and the data source (a WRITE);
//! the server is its peer. Every ceiling below is computed by hand from the formulas of
//! docs/methodology.md ("Path ceilings").

use gdrperf_ceiling::{
    ceiling, judge, Ceiling, End, EndFacts, EndQuery, Judgement, MemoryPath, RowEvidence, Transfer,
};
use gdrperf_doctor_fixtures::{Dgx, FixtureDir, Machine};
use gdrperf_topology::Relation;

const MESSAGE: u64 = 65536;
const WRITE: Transfer = Transfer { message_bytes: MESSAGE, with_reth: true, bidirectional: false };
/// A row this far below its ceiling is short at any level.
const MEASURED_SHARE: f64 = 0.4;

/// 400 Gb/s less 16 packets x 26 bytes and one RETH per 64 KiB message.
fn ndr_wire_64k() -> f64 {
    400.0 * 65536.0 / (65536.0 + 16.0 * 26.0 + 16.0)
}

fn gpudirect_facts(machine: &Machine, pair: usize, thread_numa_node: u32) -> EndFacts {
    let directory = FixtureDir::with(machine).expect("writing the fixture");
    let nic = Dgx::nic_name(pair);
    let gpu = Dgx::gpu(pair);
    let query = EndQuery {
        nic: &nic,
        port: 1,
        gpu_bus_id: Some(&gpu),
        memory: MemoryPath::GpuDirect,
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        thread_numa_node: Some(thread_numa_node),
    };
    EndFacts::read(directory.path(), &query)
}

/// The row of a client (this side, `client`) writing to `server`, measured at 40 % of its
/// ceiling, judged at the default level.
fn short_row(client: &EndFacts, server: &EndFacts) -> (Ceiling, Judgement) {
    let local = End { role: "client", facts: client, copy_gbps: None };
    let peer = End { role: "server", facts: server, copy_gbps: None };
    let ceiling = ceiling(local, peer, WRITE);
    let measured = MEASURED_SHARE * ceiling.gbps().expect("a hardware ceiling");
    let judgement = judge(
        &ceiling,
        measured,
        gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT,
        false,
        local,
        Some(peer),
        &RowEvidence::default(),
    );
    (ceiling, judgement)
}

fn assert_close(got: Option<f64>, by_hand: f64) {
    let got = got.expect("a figure");
    assert!((got - by_hand).abs() < 1e-9, "got {got}, by hand {by_hand}");
}

#[test]
fn the_healthy_dgx_is_bounded_by_the_wire_and_names_no_cause() {
    let healthy = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    assert_eq!(healthy.gpu_nic_relation, Some(Relation::PIX));
    let nic = healthy.nic_pcie.as_ref().unwrap();
    assert_eq!((nic.speed_gts, nic.width, nic.max_payload_bytes), (Some(32.0), Some(16), Some(256)));
    assert_eq!((nic.max_read_request_bytes, nic.relaxed_ordering), (Some(4096), Some(true)));
    assert!(healthy.acs_redirecting.is_empty() && healthy.iommu_translating.is_empty());
    let (ceiling, judgement) = short_row(&healthy, &healthy);
    // Gen5 x16 at MPS 256 carries 504.12 x 65536 / 71680 = 460.9 Gb/s of writes: the wire binds.
    assert_close(ceiling.gbps(), ndr_wire_64k());
    assert_eq!(judgement.ceiling_limited_by, "wire 400 Gb/sec (4X NDR) InfiniBand at MTU 4096");
    assert_close(judgement.pct_of_ceiling, 40.0);
    assert!(judgement.short);
    assert_eq!(judgement.causes, Vec::new(), "a healthy path names no cause");
}

#[test]
fn a_server_nic_trained_at_x8_bounds_the_row_and_is_named_as_the_peers() {
    let client = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    let server = gpudirect_facts(&Machine::dgx_h100_nic_at_x8(0), 0, 0);
    let (ceiling, judgement) = short_row(&client, &server);
    // 32 GT/s x 8 x 128/130 = 252.06 Gb/s; 256 writes of 256 B, 24 B each: x 65536 / 71680.
    assert_close(ceiling.gbps(), 32.0 * 8.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 256.0 * 24.0));
    assert_eq!(ceiling.limited_by(), "server NIC PCIe 32 GT/s x8");
    let first = &judgement.causes[0];
    assert_eq!((first.check.as_str(), first.side.as_str(), first.peer), ("pcie-link", "server", true));
    assert_eq!(first.evidence, "mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16");
    assert!(first.line().starts_with("server (peer): mlx5_0"), "{}", first.line());
}

/// The same x8 server, now staging through host memory (asked for, not a fallback) and copying
/// in at 150 Gb/s: the copies bind (150 < the x8 link's 230.46 Gb/s), so the link does not
/// bound this row and comes after the client's thread on the other socket (NUMA node 1, its
/// NIC on node 0), whose cost no limit counts.
#[test]
fn a_link_trained_at_x8_above_binding_staged_copies_comes_after_the_rest() {
    let client = gpudirect_facts(&Machine::dgx_h100_like(), 0, 1);
    let mut server = gpudirect_facts(&Machine::dgx_h100_nic_at_x8(0), 0, 0);
    server.memory = MemoryPath::Staged { fallback: false };
    let local = End { role: "client", facts: &client, copy_gbps: None };
    let peer = End { role: "server", facts: &server, copy_gbps: Some(150.0) };
    let ceiling = ceiling(local, peer, WRITE);
    assert_eq!(ceiling.gbps(), Some(150.0));
    assert_eq!(ceiling.limited_by(), "server staged copies 150.0 Gb/s");
    let shortfall = gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT;
    let judgement =
        judge(&ceiling, MEASURED_SHARE * 150.0, shortfall, false, local, Some(peer), &RowEvidence::default());
    let checks: Vec<(&str, &str)> =
        judgement.causes.iter().map(|cause| (cause.check.as_str(), cause.side.as_str())).collect();
    assert_eq!(checks, [("numa", "client"), ("pcie-link", "server")]);
}

#[test]
fn a_gpu_whose_only_nic_is_on_the_other_socket_names_the_path_first() {
    let directory = FixtureDir::with(&Machine::cross_socket()).unwrap();
    let query = EndQuery {
        nic: "mlx5_0",
        port: 1,
        gpu_bus_id: Some("0000:18:00.0"),
        memory: MemoryPath::GpuDirect,
        // RoCE: the active MTU comes from the netdev (1500 -> 1024).
        active_mtu: None,
        max_mtu: Some(4096),
        thread_numa_node: Some(0),
    };
    let facts = EndFacts::read(directory.path(), &query);
    assert_eq!((facts.gpu_nic_relation, facts.active_mtu), (Some(Relation::SYS), Some(1024)));
    let (ceiling, judgement) = short_row(&facts, &facts);
    // 100 GbE, 64 frames of 1024 B x 82 B of headers, one RETH: 100 x 65536 / 70800.
    assert_close(ceiling.gbps(), 100.0 * 65536.0 / (65536.0 + 64.0 * 82.0 + 16.0));
    assert_eq!(ceiling.limited_by(), "wire 100 Gb/sec (4X EDR) RoCE v2 at MTU 1024");
    let checks: Vec<(&str, bool)> = judgement.causes.iter().map(|c| (c.check.as_str(), c.peer)).collect();
    assert_eq!(checks[0], ("topology", false));
    assert!(judgement.causes[0].evidence.contains("SYS apart"), "{:?}", judgement.causes[0]);
    // The thread on the GPU's socket, the NIC on the other; MTU 1024 of 4096; MRRS 512.
    assert!(checks.contains(&("numa", false)) && checks.contains(&("mtu", true)), "{checks:?}");
}

#[test]
fn acs_redirect_on_the_gpus_switch_port_is_the_first_cause_and_leaves_the_ceiling() {
    let client = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    let server = gpudirect_facts(&Machine::dgx_h100_acs_redirect(0), 0, 0);
    let (ceiling, judgement) = short_row(&client, &server);
    assert_close(ceiling.gbps(), ndr_wire_64k());
    let first = &judgement.causes[0];
    assert_eq!((first.check.as_str(), first.side.as_str(), first.peer), ("acs", "server", true));
    assert!(first.evidence.contains(&Dgx::gpu_switch_port(0)), "{first:?}");
    assert!(first.fix.contains("setpci -s 0000:17:01.0 ECAP_ACS+0x6.w=0000"), "{first:?}");
}

#[test]
fn a_translating_iommu_on_this_side_is_the_first_cause() {
    let client = gpudirect_facts(&Machine::dgx_h100_iommu_translating(), 0, 0);
    let server = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    let (ceiling, judgement) = short_row(&client, &server);
    assert_close(ceiling.gbps(), ndr_wire_64k());
    let first = &judgement.causes[0];
    assert_eq!((first.check.as_str(), first.side.as_str(), first.peer), ("iommu", "client", false));
    assert!(first.evidence.contains("0000:18:00.0 (DMA-FQ)"), "{first:?}");
    assert_eq!(judgement.causes.len(), 1);
}

#[test]
fn relaxed_ordering_off_on_the_nic_is_the_first_cause() {
    let client = gpudirect_facts(&Machine::dgx_h100_relaxed_ordering_off(0), 0, 0);
    let server = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    let (ceiling, judgement) = short_row(&client, &server);
    assert_close(ceiling.gbps(), ndr_wire_64k());
    assert_eq!(judgement.causes.len(), 1);
    assert_eq!(judgement.causes[0].check, "relaxed-ordering");
    assert_eq!(
        judgement.causes[0].evidence,
        "mlx5_0 (0000:18:00.0) has relaxed ordering off in Device Control"
    );
}

#[test]
fn a_row_within_its_level_lists_no_cause_even_on_a_faulty_path() {
    let client = gpudirect_facts(&Machine::dgx_h100_like(), 0, 0);
    let server = gpudirect_facts(&Machine::dgx_h100_nic_at_x8(0), 0, 0);
    let local = End { role: "client", facts: &client, copy_gbps: None };
    let peer = End { role: "server", facts: &server, copy_gbps: None };
    let ceiling = ceiling(local, peer, WRITE);
    let near = 0.95 * ceiling.gbps().unwrap();
    let judgement = judge(&ceiling, near, 10.0, false, local, Some(peer), &RowEvidence::default());
    assert!(!judgement.short && judgement.causes.is_empty());
    // A failed threshold lists them whatever the percentage.
    let failed = judge(&ceiling, near, 10.0, true, local, Some(peer), &RowEvidence::default());
    assert_eq!(failed.causes[0].check, "pcie-link");
}

#[test]
fn end_facts_cross_the_exchange_as_json_unchanged() {
    let facts = gpudirect_facts(&Machine::dgx_h100_acs_redirect(2), 2, 1);
    let text = serde_json::to_string(&facts).unwrap();
    assert_eq!(serde_json::from_str::<EndFacts>(&text).unwrap(), facts);
    assert_eq!(facts.nic_numa_node, Some(Dgx::numa_node(2)));
}
