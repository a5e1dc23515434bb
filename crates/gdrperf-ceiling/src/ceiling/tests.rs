use super::*;
use crate::facts::PcieFacts;

fn link(name: &str, speed: f64, width: u32, max_width: u32) -> PcieFacts {
    PcieFacts {
        name: name.into(),
        address: "0000:18:00.0".into(),
        speed_gts: Some(speed),
        width: Some(width),
        max_speed_gts: Some(speed),
        max_width: Some(max_width),
        max_payload_bytes: Some(256),
        max_read_request_bytes: Some(4096),
        relaxed_ordering: Some(true),
        aer: None,
    }
}

fn ndr_end(nic_link: PcieFacts) -> EndFacts {
    EndFacts {
        nic: "mlx5_0".into(),
        port: 1,
        software_device: None,
        link_layer: Some(LinkLayer::InfiniBand),
        port_rate: Some("400 Gb/sec (4X NDR)".into()),
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        nic_pcie: Some(nic_link),
        gpu_pcie: None,
        memory: MemoryPath::Host,
        gpu_nic_relation: None,
        acs_redirecting: Vec::new(),
        path_findings: Vec::new(),
        iommu_translating: Vec::new(),
        nic_numa_node: Some(0),
        thread_numa_node: Some(0),
        staged_copy: None,
        relaxed_ordering_asked: None,
    }
}

const WRITE_64K: Transfer = Transfer { message_bytes: 65536, with_reth: true, bidirectional: false };

#[test]
fn an_ndr_port_behind_a_gen4_x16_link_is_bounded_by_the_link() {
    // The worked example of docs/methodology.md. Wire: 400 x 65536 / (65536 + 16 x 26 + 16)
    // = 397.38 Gb/s. Server NIC at 16 GT/s x16 writing: 16 x 16 x 128/130 = 252.06 Gb/s raw;
    // 256 TLPs of 256 B + 24 B each: x 65536 / (65536 + 256 x 24) = 230.46 Gb/s.
    let client = ndr_end(link("mlx5_0", 32.0, 16, 16));
    let server = ndr_end(link("mlx5_0", 16.0, 16, 16));
    let got = ceiling(
        End { role: "client", facts: &client, copy_gbps: None },
        End { role: "server", facts: &server, copy_gbps: None },
        WRITE_64K,
    );
    let by_hand = 16.0 * 16.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 256.0 * 24.0);
    assert!((got.gbps().unwrap() - by_hand).abs() < 1e-9, "{got:?}");
    assert_eq!(got.limited_by(), "server NIC PCIe 16 GT/s x16");
    let Ceiling::Hardware { limits, .. } = &got else { panic!() };
    let wire = limits.iter().find(|limit| limit.label.starts_with("wire")).unwrap();
    assert!((wire.gbps - 400.0 * 65536.0 / 65968.0).abs() < 1e-9);
    assert_eq!(wire.label, "wire 400 Gb/sec (4X NDR) InfiniBand at MTU 4096");
    assert!((got.percent_of(by_hand / 2.0).unwrap() - 50.0).abs() < 1e-9);
}

#[test]
fn gen5_x16_links_leave_the_wire_as_the_limit_and_bidirectional_doubles_it() {
    let end = ndr_end(link("mlx5_0", 32.0, 16, 16));
    let client = End { role: "client", facts: &end, copy_gbps: None };
    let server = End { role: "server", facts: &end, copy_gbps: None };
    let one_way = ceiling(client, server, WRITE_64K);
    assert_eq!(one_way.limited_by(), "wire 400 Gb/sec (4X NDR) InfiniBand at MTU 4096");
    let both = ceiling(client, server, Transfer { bidirectional: true, ..WRITE_64K });
    assert!((both.gbps().unwrap() - 2.0 * one_way.gbps().unwrap()).abs() < 1e-9);
    assert_eq!(both.limited_by(), one_way.limited_by());
}

#[test]
fn the_slower_port_and_the_smaller_mtu_bound_the_wire() {
    let fast = ndr_end(link("mlx5_0", 32.0, 16, 16));
    let mut slow = fast.clone();
    slow.port_rate = Some("200 Gb/sec (4X HDR)".into());
    slow.active_mtu = Some(2048);
    let got = ceiling(
        End { role: "client", facts: &fast, copy_gbps: None },
        End { role: "server", facts: &slow, copy_gbps: None },
        WRITE_64K,
    );
    // 32 packets of 2048: 200 x 65536 / (65536 + 32 x 26 + 16).
    assert!((got.gbps().unwrap() - 200.0 * 65536.0 / 66384.0).abs() < 1e-9);
    assert_eq!(got.limited_by(), "server port 200 Gb/sec (4X HDR) InfiniBand at MTU 2048");
}

#[test]
fn staged_copies_and_gpu_links_join_the_limits() {
    let client = ndr_end(link("mlx5_0", 32.0, 16, 16));
    let mut server = client.clone();
    server.memory = MemoryPath::Staged { fallback: false };
    server.gpu_pcie = Some(link("GPU", 32.0, 16, 16));
    let got = ceiling(
        End { role: "client", facts: &client, copy_gbps: None },
        End { role: "server", facts: &server, copy_gbps: Some(150.0) },
        WRITE_64K,
    );
    assert_eq!(got.gbps(), Some(150.0));
    assert_eq!(got.limited_by(), "server staged copies 150.0 Gb/s");
    // The same GPU in host memory mode is not in the path.
    server.memory = MemoryPath::Host;
    server.gpu_pcie = Some(link("GPU", 2.5, 1, 16));
    let host = ceiling(
        End { role: "client", facts: &client, copy_gbps: None },
        End { role: "server", facts: &server, copy_gbps: None },
        WRITE_64K,
    );
    assert!(host.limited_by().starts_with("wire"), "{host:?}");
}

#[test]
fn software_devices_have_no_hardware_ceiling_and_no_percentage() {
    let mut rxe = ndr_end(link("rxe0", 32.0, 16, 16));
    rxe.software_device = Some("rxe".into());
    rxe.nic_pcie = None;
    let hardware = ndr_end(link("mlx5_0", 32.0, 16, 16));
    let got = ceiling(
        End { role: "client", facts: &hardware, copy_gbps: None },
        End { role: "server", facts: &rxe, copy_gbps: None },
        WRITE_64K,
    );
    assert_eq!(got.limited_by(), "no hardware ceiling (software device)");
    assert_eq!(got.percent_of(1.0), None);
}

#[test]
fn unknown_mps_is_taken_at_its_largest_so_the_bound_stays_an_upper_bound() {
    let mut nic = link("mlx5_0", 16.0, 16, 16);
    nic.max_payload_bytes = None;
    let end = ndr_end(nic);
    let got = ceiling(
        End { role: "client", facts: &end, copy_gbps: None },
        End { role: "server", facts: &end, copy_gbps: None },
        WRITE_64K,
    );
    // 16 writes of 4096 B: 252.06 x 65536 / (65536 + 16 x 24).
    let by_hand = 16.0 * 16.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 16.0 * 24.0);
    assert!((got.gbps().unwrap() - by_hand).abs() < 1e-9);
    assert_eq!(got.limited_by(), "server NIC PCIe 16 GT/s x16 (MPS unknown)");
}

/// A row takes each staged end's rate measured at set-up in the row's direction: the source's
/// copies out, the sink's copies in; a bidirectional row the slower of each end's two (which can
/// only err low: staged memory refuses -b today).
#[test]
fn a_row_bounds_each_staged_end_by_its_copies_in_the_rows_direction() {
    use crate::facts::CopyRates;
    use crate::row::{judge_row, RowEnds, RowFigures};
    let mut client = ndr_end(link("mlx5_0", 32.0, 16, 16));
    client.memory = MemoryPath::Staged { fallback: false };
    client.staged_copy = Some(CopyRates { out_gbps: 120.0, in_gbps: 250.0, bytes: 64 << 20 });
    let mut server = client.clone();
    server.staged_copy = Some(CopyRates { out_gbps: 300.0, in_gbps: 95.0, bytes: 64 << 20 });
    let judge = |test, local_is_client: bool, bidirectional| {
        let (local, peer) = if local_is_client { (&client, &server) } else { (&server, &client) };
        let ends = RowEnds { local_is_client, local, peer: Some(peer) };
        let figures = RowFigures {
            test,
            message_bytes: 65536,
            bidirectional,
            measured_gbps: 50.0,
            nic_errors_moved: None,
        };
        let judgement = judge_row(ends, figures, 10.0, false);
        (judgement.ceiling_gbps, judgement.ceiling_limited_by)
    };
    // WRITE: the client copies out (120), the server copies in (95): the server's copies bind,
    // in either side's row.
    let server_copies = (Some(95.0), "server staged copies 95.0 Gb/s".to_string());
    assert_eq!(judge("write_bw", true, false), server_copies);
    assert_eq!(judge("write_bw", false, false), server_copies);
    // READ: the server is the source (copies out 300), the client the sink (copies in 250).
    assert_eq!(judge("read_bw", true, false), (Some(250.0), "client staged copies 250.0 Gb/s".into()));
    // Both ways: each end's slower direction (client 120, server 95) bounds both directions.
    assert_eq!(judge("send_bw", true, true).0, Some(95.0 + 95.0));
}
