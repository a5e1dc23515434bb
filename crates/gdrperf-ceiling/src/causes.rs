//! Why a row is short of its ceiling: the evidence in both ends' facts, most likely first, each
//! with what to do about it (the doctor's kind of fix line) and where the judgement comes from.
//! The PCIe ones are `gdrperf_topology::findings`' findings, the doctor's own words; this module ranks them.
//!
//! The order is by how much each finding can cost *this row*, in three tiers:
//! 1. a finding that sets the rate of the part that binds the row's ceiling: a link trained
//!    below its maximum when that link binds, a fallback to staged copies when the copies bind.
//!    Fixing it lifts the ceiling itself, so it explains the most;
//! 2. findings whose cost the ceiling does not count, or whose part's limit is unknown (or the
//!    ceiling has no figure), in the order of their known cost: a fallback whose copy rate is
//!    unknown, a link whose rate is unknown; a GPU and NIC joined through the CPU, ACS
//!    redirection and a translating IOMMU send GPUDirect traffic through the root complex
//!    (NVIDIA's GPUDirect RDMA documentation, "Supported Systems" and "PCI Access Control
//!    Services"); error counters that moved mean resent data; the measuring thread on another
//!    NUMA node than the NIC crosses the socket interconnect on every doorbell and completion;
//!    a bridge trained below both ends, AER counts, relaxed ordering off, a small Max Read
//!    Request and a Max Payload Size that differs along the path cost an amount no public
//!    source quantifies (docs/findings.md); an MTU below the port's costs only its headers (a few percent), so it stays
//!    last here even when the wire binds;
//! 3. findings on a part whose limit is above the ceiling (a link trained below its maximum
//!    that still carries more than the binding part, staged copies faster than it, an MTU when
//!    the wire does not bind): true, but they do not bound this row.

use serde::{Deserialize, Serialize};

use crate::ceiling::{Ceiling, End, PathPart};
use crate::facts::MemoryPath;
use gdrperf_topology::findings::{Check, Role};

/// One piece of evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// Stable short name for scripts: `staged-fallback`, `nic-errors`,
    /// `numa`, `mtu`, and the PCIe findings' (`pcie-link`, `bridge-link`, `max-payload`,
    /// `max-read-request`, `relaxed-ordering`, `acs`, `aer`: [`Check::name`]).
    pub check: String,
    /// The role of the end it was found on ("client", "server").
    pub side: String,
    /// Whether that end is the peer of the side writing the row.
    pub peer: bool,
    pub evidence: String,
    pub fix: String,
    /// Where the judgement comes from, or that no public source gives its cost (a PCIe
    /// finding's is `gdrperf_topology::findings`' [`Check::source`]); empty in older stored results.
    #[serde(default)]
    pub source: String,
}

impl Cause {
    /// "server (peer): mlx5_3 trained at PCIe 32 GT/s x8 of 32 GT/s x16; fix: ...".
    pub fn line(&self) -> String {
        let side = if self.peer { format!("{} (peer)", self.side) } else { self.side.clone() };
        format!("{side}: {}; fix: {}", self.evidence, self.fix)
    }
}

/// What the row itself showed, beyond the ends' facts.
#[derive(Debug, Clone, Default)]
pub struct RowEvidence {
    /// Per role, the NIC error counters that moved during this size ("rnr_nak_retry_err=3").
    pub nic_errors_moved: Vec<(String, String)>,
}

/// Every counter whose movement is an error (gdrperf's `nic_counters` compact sets, and the rest). Not
/// `duplicate_request`: the responder counts every retransmitted packet it had already seen, so
/// one retry of a window counts dozens of times; the retry itself is counted once, in
/// gdrperf's `RETRANSMISSIONS`, and `duplicate_request` stays visible in `nic_counters`.
pub const ERROR_COUNTERS: &[&str] = &[
    "completer_retry_err",
    "local_ack_timeout_err",
    "roce_adp_retrans",
    "rcvd_seq_err",
    "out_of_seq_request",
    "packet_seq_err",
    "out_of_sequence",
    "implied_nak_seq_err",
    "rcvd_rnr_err",
    "send_rnr_err",
    "rnr_nak_retry_err",
    "out_of_buffer",
    "link_downed",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "send_err",
    "req_cqe_error",
    "resp_cqe_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "symbol_error",
    "link_error_recovery",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];

/// The `name=delta` entries of `moved` (a row's `nic_counters`: every counter that moved,
/// traffic included) that are [`ERROR_COUNTERS`], so that a cause quotes only those.
pub fn moved_error_counters(moved: &str) -> String {
    let is_error = |entry: &&str| entry.split('=').next().is_some_and(|name| ERROR_COUNTERS.contains(&name));
    moved.split(';').filter(is_error).collect::<Vec<_>>().join(";")
}

/// What a finding does to the row's ceiling, which places it among the others (module doc).
#[derive(Debug, Clone)]
enum Bearing {
    /// It sets the rate of this part of the path (a link's trained width, staged copies).
    SetsRate(PathPart),
    /// It adds headers to this part's rate (an MTU below the port's).
    AddsHeaders(PathPart),
    /// It costs a share that no limit counts.
    Uncounted,
}

impl Bearing {
    /// The tier of the module doc: 0 first, 2 last.
    fn tier(&self, ceiling: &Ceiling) -> u8 {
        match self {
            Bearing::SetsRate(part) | Bearing::AddsHeaders(part) if ceiling.binds(part) == Some(false) => 2,
            Bearing::SetsRate(part) if ceiling.binds(part) == Some(true) => 0,
            _ => 1,
        }
    }
}

/// Collects findings with their known-cost rank (within a tier) and bearing.
type Add<'a> = dyn FnMut(u8, Bearing, &str, String, String, String) + 'a;

/// The evidence on both ends, most likely first (the module doc's tiers, judged against
/// `ceiling`). `local` writes the row; `peer` is the other end (absent when its facts did not
/// come). An end that shows nothing adds nothing: a healthy path names no cause.
pub fn causes(ceiling: &Ceiling, local: End, peer: Option<End>, row: &RowEvidence) -> Vec<Cause> {
    let mut ranked: Vec<((u8, u8), Cause)> = Vec::new();
    for (end, is_peer) in [(Some(local), false), (peer, true)] {
        let Some(end) = end else { continue };
        let mut add = |rank: u8,
                       bearing: Bearing,
                       check: &str,
                       evidence: String,
                       fix: String,
                       source: String| {
            ranked.push((
                (bearing.tier(ceiling), rank),
                Cause { check: check.into(), side: end.role.into(), peer: is_peer, evidence, fix, source },
            ));
        };
        end_causes(end, &mut add);
        for (_, moved) in row.nic_errors_moved.iter().filter(|(role, _)| role == end.role) {
            add(
                5,
                Bearing::Uncounted,
                "nic-errors",
                format!("{} error counters moved during this size: {moved}", end.facts.nic),
                "look at the link (cable, switch port: `ibdiagnet`, `ethtool -S`) and rerun; a moving counter means data was resent".into(),
                "none public for the cost: the row's own counter deltas (nic_counters)".into(),
            );
        }
    }
    if let (Some(peer), Some(local_mtu), Some(peer_mtu)) =
        (peer, local.facts.active_mtu, peer.and_then(|peer| peer.facts.active_mtu))
    {
        if local_mtu != peer_mtu {
            ranked.push((
                (Bearing::AddsHeaders(PathPart::Wire).tier(ceiling), 9),
                Cause {
                    check: "mtu".into(),
                    side: local.role.into(),
                    peer: false,
                    evidence: format!(
                        "active MTU differs between ends: {} {local_mtu}, {} {peer_mtu} (the connection uses the smaller)",
                        local.role, peer.role
                    ),
                    fix: "set the same MTU on both ends (InfiniBand: the subnet manager's partition MTU; RoCE: the netdev MTU, 9000 for 4096)".into(),
                    source: "the wire's headers (docs/methodology.md, Path ceilings)".into(),
                },
            ));
        }
    }
    // Stable: within a tier and rank, this side before the peer.
    ranked.sort_by_key(|(key, _)| *key);
    ranked.into_iter().map(|(_, cause)| cause).collect()
}

fn end_causes(end: End, add: &mut Add) {
    let facts = end.facts;
    if facts.software_device.is_some() {
        return;
    }
    let role = || end.role.to_string();
    if facts.memory == (MemoryPath::Staged { fallback: true }) {
        add(
            0,
            Bearing::SetsRate(PathPart::StagedCopies { role: role() }),
            "staged-fallback",
            "GPUDirect was asked but the payload was staged through host memory".into(),
            "`gdrperf doctor` says why GPU memory could not be registered (nvidia-peermem or dma-buf)".into(),
            "measured: the staged copies' rate, timed at set-up".into(),
        );
    }
    // The findings, in the doctor's words (`gdrperf_topology::findings`, through [`EndFacts::findings`]).
    let findings = facts.findings();
    let device_control_off = findings.iter().any(|finding| finding.check == Check::RelaxedOrdering);
    if facts.relaxed_ordering_asked == Some(false) && !device_control_off {
        add(
            7,
            Bearing::Uncounted,
            Check::RelaxedOrdering.name(),
            format!("{}'s memory was registered without relaxed ordering (--disable_pcie_relaxed); perftest asks for it by default", facts.nic),
            "drop --disable_pcie_relaxed, unless the CPU's root ports mishandle relaxed ordering (perftest warns on Intel Haswell-EP and Broadwell-EP root ports)".into(),
            Check::RelaxedOrdering.source().into(),
        );
    }
    for mut finding in findings {
        if finding.check == Check::RelaxedOrdering {
            finding.evidence.push_str(match facts.relaxed_ordering_asked {
                Some(true) => ": the registrations asked for relaxed ordering, the NIC cannot use it",
                Some(false) => ", and the registrations did not ask for it (--disable_pcie_relaxed)",
                None => "",
            });
        }
        let (rank, bearing) = match (finding.check, finding.role) {
            (Check::PcieLink, Role::Gpu) => (1, Bearing::SetsRate(PathPart::GpuLink { role: role() })),
            (Check::PcieLink, _) => (1, Bearing::SetsRate(PathPart::NicLink { role: role() })),
            (Check::BridgeLink, _) => (1, Bearing::Uncounted),
            (Check::Topology, _) => (2, Bearing::Uncounted),
            (Check::Acs, _) => (3, Bearing::Uncounted),
            (Check::Iommu, _) => (4, Bearing::Uncounted),
            (Check::Aer, _) => (5, Bearing::Uncounted),
            (Check::RelaxedOrdering, _) => (7, Bearing::Uncounted),
            (Check::MaxReadRequest | Check::MaxPayload, _) => (8, Bearing::Uncounted),
        };
        add(rank, bearing, finding.check.name(), finding.evidence, finding.fix, finding.source);
    }
    if let (Some(nic_node), Some(thread_node)) = (facts.nic_numa_node, facts.thread_numa_node) {
        if nic_node != thread_node {
            add(
                6,
                Bearing::Uncounted,
                "numa",
                format!("the measuring thread ran on NUMA node {thread_node}, {} is on node {nic_node}", facts.nic),
                format!("pin to the NIC's node: --cpu auto, or numactl --cpunodebind={nic_node} --membind={nic_node}"),
                "none public for the cost".into(),
            );
        }
    }
    if let (Some(active), Some(max)) = (facts.active_mtu, facts.max_mtu) {
        if active < max {
            add(
                9,
                Bearing::AddsHeaders(PathPart::Wire),
                "mtu",
                format!("{} port {} runs MTU {active} of {max}", facts.nic, facts.port),
                "raise the MTU (InfiniBand: the subnet manager's partition MTU; RoCE: netdev MTU 9000 gives 4096)".into(),
                "the wire's headers (docs/methodology.md, Path ceilings)".into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceiling::{ceiling, Transfer};
    use crate::facts::{EndFacts, PcieFacts};
    use crate::wire::LinkLayer;

    /// A ceiling without a figure: nobody can tell what binds, so the known-cost order stands.
    fn no_figure() -> Ceiling {
        Ceiling::None { reason: "unknown".into() }
    }

    fn bare(memory: MemoryPath) -> EndFacts {
        EndFacts {
            nic: "mlx5_0".into(),
            port: 1,
            software_device: None,
            link_layer: None,
            port_rate: None,
            active_mtu: Some(4096),
            max_mtu: Some(4096),
            nic_pcie: None,
            gpu_pcie: None,
            memory,
            gpu_nic_relation: None,
            acs_redirecting: Vec::new(),
            path_findings: Vec::new(),
            iommu_translating: Vec::new(),
            nic_numa_node: None,
            thread_numa_node: None,
            staged_copy: None,
            relaxed_ordering_asked: None,
        }
    }

    #[test]
    fn a_fallback_outranks_moved_counters_which_outrank_a_differing_mtu() {
        let client = bare(MemoryPath::Host);
        let mut server = bare(MemoryPath::Staged { fallback: true });
        server.active_mtu = Some(2048);
        let row = RowEvidence { nic_errors_moved: vec![("client".into(), "rnr_nak_retry_err=3".into())] };
        let found = causes(
            &no_figure(),
            End { role: "client", facts: &client, copy_gbps: None },
            Some(End { role: "server", facts: &server, copy_gbps: None }),
            &row,
        );
        let checks: Vec<(&str, &str)> = found.iter().map(|c| (c.check.as_str(), c.side.as_str())).collect();
        assert_eq!(
            checks,
            [("staged-fallback", "server"), ("nic-errors", "client"), ("mtu", "server"), ("mtu", "client")]
        );
        assert!(found[1].evidence.ends_with("rnr_nak_retry_err=3"));
        assert!(found[3].evidence.contains("client 4096, server 2048"), "{:?}", found[3]);
    }

    #[test]
    fn relaxed_ordering_not_asked_for_is_a_cause_and_a_device_control_finding_says_what_was_asked() {
        let mut client = bare(MemoryPath::GpuDirect);
        client.relaxed_ordering_asked = Some(false);
        let mut server = bare(MemoryPath::GpuDirect);
        server.relaxed_ordering_asked = Some(true);
        let found = causes(
            &no_figure(),
            End { role: "client", facts: &client, copy_gbps: None },
            Some(End { role: "server", facts: &server, copy_gbps: None }),
            &RowEvidence::default(),
        );
        let checks: Vec<(&str, &str)> = found.iter().map(|c| (c.check.as_str(), c.side.as_str())).collect();
        assert_eq!(checks, [("relaxed-ordering", "client")]);
        assert!(found[0].evidence.contains("--disable_pcie_relaxed"), "{:?}", found[0]);
        // With Device Control's bit off, the doctor's finding is the cause, saying what the run asked.
        let nic_off = |asked| {
            let mut end = bare(MemoryPath::Host);
            end.relaxed_ordering_asked = asked;
            end.nic_pcie = Some(PcieFacts { relaxed_ordering: Some(false), ..link(32.0, 16, 16) });
            end
        };
        for (asked, says) in [
            (Some(true), "the registrations asked for relaxed ordering, the NIC cannot use it"),
            (Some(false), "the registrations did not ask for it"),
        ] {
            let end = nic_off(asked);
            let found = causes(
                &no_figure(),
                End { role: "client", facts: &end, copy_gbps: None },
                None,
                &RowEvidence::default(),
            );
            let relaxed: Vec<&Cause> = found.iter().filter(|c| c.check == "relaxed-ordering").collect();
            assert_eq!(relaxed.len(), 1, "{found:?}");
            assert!(relaxed[0].evidence.contains(says), "{:?}", relaxed[0]);
        }
    }

    #[test]
    fn a_software_device_and_an_unknown_fact_name_nothing() {
        let mut rxe = bare(MemoryPath::Host);
        rxe.software_device = Some("rxe".into());
        rxe.thread_numa_node = Some(1);
        rxe.nic_numa_node = Some(0);
        let unknown = bare(MemoryPath::GpuDirect);
        let found = causes(
            &no_figure(),
            End { role: "client", facts: &rxe, copy_gbps: None },
            Some(End { role: "server", facts: &unknown, copy_gbps: None }),
            &RowEvidence::default(),
        );
        assert_eq!(found, Vec::new());
    }

    /// A cause quotes the error counters that moved, not the traffic counters beside them.
    #[test]
    fn the_nic_cause_quotes_only_error_counters() {
        let moved = "port_rcv_data=81920;completer_retry_err=1;port_xmit_packets=40;duplicate_request=30;rcvd_rnr_err=2";
        assert_eq!(moved_error_counters(moved), "completer_retry_err=1;rcvd_rnr_err=2");
        assert_eq!(moved_error_counters("port_rcv_data=81920"), "");
        assert_eq!(moved_error_counters(""), "");
    }

    fn link(speed_gts: f64, width: u32, max_width: u32) -> PcieFacts {
        PcieFacts {
            name: "mlx5_0".into(),
            address: "0000:18:00.0".into(),
            speed_gts: Some(speed_gts),
            width: Some(width),
            max_speed_gts: Some(speed_gts),
            max_width: Some(max_width),
            max_payload_bytes: Some(256),
            max_read_request_bytes: Some(4096),
            relaxed_ordering: Some(true),
            aer: None,
        }
    }

    fn ndr(memory: MemoryPath, nic_link: PcieFacts) -> EndFacts {
        EndFacts {
            link_layer: Some(LinkLayer::InfiniBand),
            port_rate: Some("400 Gb/sec (4X NDR)".into()),
            nic_pcie: Some(nic_link),
            ..bare(memory)
        }
    }

    /// The (check, side) pairs of a 64 KiB WRITE's causes, the client writing with `copy_gbps`
    /// as its staged copy rate.
    fn ranked(client: &EndFacts, server: &EndFacts, copy_gbps: f64) -> (Ceiling, Vec<(String, String)>) {
        let local = End { role: "client", facts: client, copy_gbps: Some(copy_gbps) };
        let peer = End { role: "server", facts: server, copy_gbps: None };
        let write = Transfer { message_bytes: 65536, with_reth: true, bidirectional: false };
        let row_ceiling = ceiling(local, peer, write);
        let found = causes(&row_ceiling, local, Some(peer), &RowEvidence::default());
        (row_ceiling, found.into_iter().map(|cause| (cause.check, cause.side)).collect())
    }

    /// A client that fell back to staged copies, whose NIC trained at PCIe 32 GT/s x8 of x16
    /// and whose IOMMU translates, writes 64 KiB to a healthy server. By hand (methodology.md,
    /// "Path ceilings"):
    /// - wire: 400 x 65536 / (65536 + 16 x 26 + 16) = 397.38 Gb/s;
    /// - client NIC (source: completions, 20 B per 256 B TLP): 32 x 8 x 128/130 = 252.06 raw,
    ///   x 65536 / (65536 + 256 x 20) = 233.79 Gb/s;
    /// - server NIC (sink: writes, 24 B per TLP) at x16: 504.12 x 65536 / 71680 = 460.91 Gb/s;
    /// - client staged copies: as measured, 100 or 300 Gb/s.
    ///
    /// At 100 Gb/s the copies bind: the fallback sets that part's rate (tier 1 of the module
    /// doc), the IOMMU's cost is not counted by any limit (tier 2), and the x8 link's 233.79
    /// Gb/s is above the ceiling, so it does not bound this row (tier 3): fallback, IOMMU,
    /// link. The known-cost order alone would have put the link second.
    ///
    /// At 300 Gb/s the x8 link binds at 233.79 and the copies do not: link, IOMMU, fallback.
    #[test]
    fn the_cause_that_sets_the_binding_limit_comes_first_and_one_above_the_ceiling_last() {
        let mut client = ndr(MemoryPath::Staged { fallback: true }, link(32.0, 8, 16));
        client.iommu_translating = vec!["0000:18:00.0 (DMA-FQ)".into()];
        let server = ndr(MemoryPath::Host, link(32.0, 16, 16));
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter().map(|(check, side)| (check.to_string(), side.to_string())).collect()
        };

        let (copies_bind, order) = ranked(&client, &server, 100.0);
        assert_eq!(copies_bind.gbps(), Some(100.0));
        assert_eq!(copies_bind.limited_by(), "client staged copies 100.0 Gb/s");
        assert_eq!(
            order,
            pairs(&[("staged-fallback", "client"), ("iommu", "client"), ("pcie-link", "client")])
        );

        let (link_binds, order) = ranked(&client, &server, 300.0);
        let by_hand = 32.0 * 8.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 256.0 * 20.0);
        assert!((link_binds.gbps().unwrap() - by_hand).abs() < 1e-9, "{link_binds:?}");
        assert_eq!(link_binds.limited_by(), "client NIC PCIe 32 GT/s x8");
        assert_eq!(
            order,
            pairs(&[("pcie-link", "client"), ("iommu", "client"), ("staged-fallback", "client")])
        );
    }

    /// An MTU below the port's lowers the wire's limit by its headers only: with the wire
    /// binding it keeps its last place after the costs no limit counts (here the peer's thread
    /// on another NUMA node, rank 6); with the client's x8 link binding instead (233.79 Gb/s
    /// against 400 x 65536 / (65536 + 32 x 26 + 16) = 398.9 Gb/s at MTU 2048), the wire does
    /// not bound the row and the MTU goes after everything else: the link, NUMA, then the MTU
    /// (this side's, then the ends' difference, which has no fix of its own to rank).
    #[test]
    fn an_mtu_below_the_ports_stays_after_the_costs_no_limit_counts() {
        let mut client = ndr(MemoryPath::Host, link(32.0, 16, 16));
        client.active_mtu = Some(2048);
        let mut server = ndr(MemoryPath::Host, link(32.0, 16, 16));
        server.nic_numa_node = Some(0);
        server.thread_numa_node = Some(1);
        let (wire_binds, order) = ranked(&client, &server, 1.0);
        assert!(wire_binds.limited_by().starts_with("wire"), "{wire_binds:?}");
        let checks: Vec<&str> = order.iter().map(|(check, _)| check.as_str()).collect();
        assert_eq!(checks, ["numa", "mtu", "mtu"]);
        client.nic_pcie = Some(link(32.0, 8, 16));
        let (link_binds, order) = ranked(&client, &server, 1.0);
        assert_eq!(link_binds.limited_by(), "client NIC PCIe 32 GT/s x8");
        let checks: Vec<&str> = order.iter().map(|(check, _)| check.as_str()).collect();
        assert_eq!(checks, ["pcie-link", "numa", "mtu", "mtu"]);
        assert_eq!(wire_binds.binds(&PathPart::Wire), Some(true));
        assert_eq!(wire_binds.binds(&PathPart::NicLink { role: "client".into() }), Some(false));
        assert_eq!(wire_binds.binds(&PathPart::StagedCopies { role: "client".into() }), None);
    }
}
