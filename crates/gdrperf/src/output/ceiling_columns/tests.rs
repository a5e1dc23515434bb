use std::sync::Arc;

use gdrperf_ceiling::{EndQuery, MemoryPath};
use gdrperf_doctor_fixtures::{FixtureDir, Machine};

use super::*;
use crate::node::nic_counters::NicColumns;

fn host_facts(machine: &Machine, nic: &str) -> EndFacts {
    let directory = FixtureDir::with(machine).unwrap();
    let query = EndQuery {
        nic,
        port: 1,
        gpu_bus_id: None,
        memory: MemoryPath::Host,
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        thread_numa_node: Some(0),
    };
    EndFacts::read(directory.path(), &query)
}

fn context(test: &str, path: Arc<RowPath>) -> RowContext {
    RowContext { test: test.into(), path: Some(path), ..RowContext::default() }
}

#[test]
fn the_clients_row_names_the_servers_x8_link_and_a_read_turns_the_direction_round() {
    let client = host_facts(&Machine::dgx_h100_like(), "mlx5_0");
    let server = host_facts(&Machine::dgx_h100_nic_at_x8(0), "mlx5_0");
    let path = RowPath::new(true, client, Some(server));
    let x8_writes = 32.0 * 8.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 256.0 * 24.0);
    let write = CeilingColumns::for_row(&context("write_bw", path.clone()), 65536, false, 100.0);
    assert!((write.ceiling_gbps.unwrap() - x8_writes).abs() < 1e-9, "{write:?}");
    assert_eq!(write.ceiling_limited_by, "server NIC PCIe 32 GT/s x8");
    assert!((write.pct_of_ceiling.unwrap() - 100.0 * 100.0 / x8_writes).abs() < 1e-9);
    assert!(write
        .ceiling_causes
        .starts_with("server (peer): mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8"));
    // A READ's data leaves the server: its NIC carries completions (20 bytes per 256).
    let read = CeilingColumns::for_row(&context("read_bw", path), 65536, false, 100.0);
    let x8_completions = 32.0 * 8.0 * 128.0 / 130.0 * 65536.0 / (65536.0 + 256.0 * 20.0);
    assert!((read.ceiling_gbps.unwrap() - x8_completions).abs() < 1e-9, "{read:?}");
    assert!(read.console_note().contains("\n     cause: server (peer)"), "{}", read.console_note());
}

#[test]
fn a_row_near_its_ceiling_lists_no_cause_and_moved_counters_are_named() {
    let healthy = host_facts(&Machine::dgx_h100_like(), "mlx5_0");
    let path = RowPath::new(false, healthy.clone(), Some(healthy));
    let near = CeilingColumns::for_row(&context("send_bw", path.clone()), 65536, false, 380.0);
    assert_eq!(near.ceiling_causes, "");
    let mut short = context("send_bw", path);
    short.nic =
        NicColumns { nic_errors: 3, nic_counters: "rnr_nak_retry_err=3".into(), ..NicColumns::default() };
    let columns = CeilingColumns::for_row(&short, 65536, false, 100.0);
    assert!(columns.ceiling_causes.starts_with("server: mlx5_0 error counters moved"), "{columns:?}");
}

/// A row that misses --min-bw lists its causes although it is near its ceiling (or has none):
/// the verdict FAIL comes with its evidence, as `gdrperf accept`'s does.
#[test]
fn a_row_missing_a_threshold_lists_causes_short_of_its_ceiling_or_not() {
    let healthy = host_facts(&Machine::dgx_h100_like(), "mlx5_0");
    let mut near = context("send_bw", RowPath::new(false, healthy.clone(), Some(healthy)));
    near.nic = NicColumns { nic_errors: 2, nic_counters: "link_downed=2".into(), ..NicColumns::default() };
    let columns = CeilingColumns::for_row(&near, 65536, false, 380.0);
    assert_eq!(columns.ceiling_causes, "", "near its ceiling: no cause unless it fails");
    assert!(columns.causes_if_failed.starts_with("server: mlx5_0 error counters moved"), "{columns:?}");
    let mut failed = columns.clone();
    let causes = failed.threshold_missed();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(failed.ceiling_causes, causes[0]);
    // A software device: no ceiling, yet the moved counters are named on a FAIL.
    let rxe = host_facts(&Machine::rxe_only(), "rxe0");
    let mut soft = context("write_bw", RowPath::new(true, rxe.clone(), Some(rxe)));
    soft.nic = near.nic.clone();
    let columns = CeilingColumns::for_row(&soft, 65536, false, 1.0);
    assert_eq!((columns.ceiling_gbps, columns.ceiling_causes.as_str()), (None, ""));
    assert!(columns.causes_if_failed.contains("error counters moved"), "{columns:?}");
}

#[test]
fn a_software_device_has_no_figure_and_the_header_says_why() {
    let rxe = host_facts(&Machine::rxe_only(), "rxe0");
    let path = RowPath::new(true, rxe.clone(), Some(rxe.clone()));
    let columns = CeilingColumns::for_row(&context("write_bw", path), 65536, false, 1.0);
    assert_eq!((columns.ceiling_gbps, columns.pct_of_ceiling), (None, None));
    assert_eq!(columns.ceiling_limited_by, "no hardware ceiling (software device)");
    assert_eq!(columns.console_note(), "");
    assert_eq!(
        header(&rxe, None),
        "no hardware ceiling (software device): rxe0 (rxe); rows carry no percentage"
    );
}

#[test]
fn lanes_ceilings_add_and_their_limits_are_listed_once() {
    let lane = CeilingColumns {
        ceiling_gbps: Some(100.0),
        ceiling_limited_by: "wire".into(),
        pct_of_ceiling: Some(50.0),
        ceiling_causes: "client: x; fix: setpci ECAP_ACS+0x6.w=0000".into(),
        causes_if_failed: String::new(),
        links: Vec::new(),
    };
    let all = CeilingColumns::aggregate([lane.clone(), lane].into_iter(), 150.0);
    assert_eq!(all.ceiling_gbps, Some(200.0));
    assert_eq!(all.pct_of_ceiling, Some(75.0));
    assert_eq!(all.ceiling_limited_by, "wire");
    assert_eq!(all.ceiling_causes, "client: x; fix: setpci ECAP_ACS+0x6.w=0000");
}

fn gpu_facts(nic: &str, gpu_bus_id: &str) -> EndFacts {
    let directory = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let query = EndQuery {
        nic,
        port: 1,
        gpu_bus_id: Some(gpu_bus_id),
        memory: MemoryPath::GpuDirect,
        active_mtu: Some(4096),
        max_mtu: Some(4096),
        thread_numa_node: Some(0),
    };
    EndFacts::read(directory.path(), &query)
}

/// A lane of a loopback `--concurrent` write_bw on `nic` and the GPU at `gpu_bus_id` (both ends).
fn gpu_lane(nic: &str, gpu_bus_id: &str) -> CeilingColumns {
    let facts = gpu_facts(nic, gpu_bus_id);
    CeilingColumns::for_row(
        &context("write_bw", RowPath::new(true, facts.clone(), Some(facts))),
        1 << 20,
        false,
        100.0,
    )
}

/// Two 400G rails (mlx5_0, mlx5_1) on one H100: each lane alone is bound by its wire, but both
/// cross the GPU's one x16 link, which carries less than two wires: the aggregate counts it once.
/// The same two rails on two GPUs add up as before.
#[test]
fn lanes_on_one_gpu_share_its_link_in_the_aggregate() {
    let (first, second) = (gpu_lane("mlx5_0", "0000:1b:00.0"), gpu_lane("mlx5_1", "0000:1b:00.0"));
    let (alone, sum) =
        (first.ceiling_gbps.unwrap(), first.ceiling_gbps.unwrap() + second.ceiling_gbps.unwrap());
    assert!(first.ceiling_limited_by.starts_with("wire"), "{first:?}");
    let gpu_link = first
        .links
        .iter()
        .find(|link| link.name == "server GPU 0000:1b:00.0 PCIe link")
        .expect("the GPU link");
    assert!(
        gpu_link.gbps > alone && gpu_link.gbps < sum,
        "the case needs a link above one wire and below two: {first:?}"
    );
    let all = CeilingColumns::aggregate([first.clone(), second].into_iter(), 300.0);
    assert_eq!(all.ceiling_gbps, Some(gpu_link.gbps), "{all:?}");
    assert_eq!(all.ceiling_limited_by, "server GPU 0000:1b:00.0 PCIe link shared by lanes 0+1, counted once");
    assert_eq!(all.pct_of_ceiling, Some(100.0 * 300.0 / gpu_link.gbps));
    let apart = CeilingColumns::aggregate([first, gpu_lane("mlx5_1", "0000:43:00.0")].into_iter(), 300.0);
    assert_eq!(apart.ceiling_gbps, Some(sum), "{apart:?}");
    assert!(apart.ceiling_limited_by.starts_with("wire"), "{apart:?}");
}
