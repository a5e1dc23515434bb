//! `--base`: hand-built gathered files of two jobs, compared part by part.
//!
//! Eight nodes, two lanes, every ordered pair, rows a fixed +-1 % around their level (odd index
//! sums +1 %, even -1 %), as in hand_built.rs: the noise the fit estimates is about 1.5 %, and
//! every change below is 15 or more of its standard errors, so no decision can flip by chance.

use std::path::PathBuf;

use gdrperf_fleet::base::{compare, BaseComparison, MoveKind};
use gdrperf_fleet::judge::JudgeConfig;
use gdrperf_fleet::read::read_gathered;

const NODES: usize = 8;
const LANES: usize = 2;

/// One job: `gbps(server, client, lane, mem)`, the NIC's GUID and the GPU's UUID of a node's
/// lane (None: the column is left out of the file, as in files from before it).
struct Job<'a> {
    memories: &'a [&'a str],
    gbps: &'a dyn Fn(usize, usize, usize, &str) -> f64,
    guid: Option<&'a dyn Fn(usize, usize) -> String>,
    uuid: Option<&'a dyn Fn(usize, usize) -> String>,
}

fn guid(node: usize, lane: usize) -> String {
    format!("0x{node:02x}{lane:02x}000000000000")
}

fn uuid(node: usize, lane: usize) -> String {
    format!("GPU-0000{node:02x}{lane:02x}-0000-4000-8000-000000000000")
}

fn healthy(_: usize, _: usize, _: usize, _: &str) -> f64 {
    100.0
}

impl Job<'_> {
    fn csv(&self) -> String {
        let mut text = String::from("test,bytes,bidirectional,qps,mem_local,mem_remote,device,peer_device,gpu_local_bus_id,lane,bw_avg_gbit_s");
        text += if self.guid.is_some() { ",nic_node_guid" } else { "" };
        text += if self.uuid.is_some() { ",gpu_local_uuid" } else { "" };
        text += ",round,server_rank,client_rank,server_node,client_node\n";
        for mem in self.memories {
            for server in 0..NODES {
                for client in (0..NODES).filter(|&client| client != server) {
                    for lane in 0..LANES {
                        let wobble = if (server + client + lane) % 2 == 1 { 1.01 } else { 0.99 };
                        let gbps = (self.gbps)(server, client, lane, mem) * wobble;
                        let bus = if *mem == "cuda" {
                            format!("0000:{:02x}:00.0", 0x18 + lane)
                        } else {
                            String::new()
                        };
                        text += &format!("write_bw,1048576,false,1,{mem},{mem},mlx5_{lane},mlx5_{lane},{bus},{lane},{gbps:.3}");
                        if let Some(guid) = self.guid {
                            text += &format!(",{}", guid(client, lane));
                        }
                        if let Some(uuid) = self.uuid {
                            text += &format!(
                                ",{}",
                                if *mem == "cuda" { uuid(client, lane) } else { String::new() }
                            );
                        }
                        text += &format!(",0,{server},{client},n{server},n{client}\n");
                    }
                }
            }
        }
        text
    }
}

/// Writes both jobs' files and compares them with the default thresholds.
fn compared(name: &str, then: &Job, now: &Job) -> BaseComparison {
    let dir = std::env::temp_dir().join(format!("gdrperf-fleet-base-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |file: &str, job: &Job| -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, job.csv()).unwrap();
        path
    };
    let (then_path, now_path) = (write("then.csv", then), write("now.csv", now));
    let (then, now) = (read_gathered(&[then_path]).unwrap(), read_gathered(&[now_path]).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    compare(&then, &now, &JudgeConfig::default())
}

fn moved(comparison: &BaseComparison) -> Vec<(MoveKind, String, Option<String>)> {
    comparison.movements.iter().map(|m| (m.kind, m.node.clone(), m.device.clone())).collect()
}

fn port(node: &str, device: &str) -> (String, Option<String>) {
    (node.to_string(), Some(device.to_string()))
}

#[test]
fn identical_jobs_move_nothing() {
    let job = Job { memories: &["host", "cuda"], gbps: &healthy, guid: Some(&guid), uuid: Some(&uuid) };
    let comparison = compared("same", &job, &job);
    assert!(comparison.movements.is_empty(), "{:?}", comparison.movements);
    assert_eq!(comparison.classes_compared, 2);
    assert_eq!(comparison.ports_compared, 2 * (NODES * LANES) as u64);
    assert_eq!((comparison.ports_only_then, comparison.ports_only_now), (0, 0));
}

#[test]
fn a_port_slower_than_in_the_base_is_named_with_its_change() {
    // n2's lane 1 at 70 % with every peer now: its 14 rows each way at ln 0.7 while its peers'
    // medians stay at the class (2 low rows of 14): its effect moves by ln 0.7, -30 %.
    let then = Job { memories: &["host"], gbps: &healthy, guid: Some(&guid), uuid: None };
    let slow = |server: usize, client: usize, lane: usize, _: &str| {
        if (server == 2 || client == 2) && lane == 1 {
            70.0
        } else {
            100.0
        }
    };
    let now = Job { gbps: &slow, ..then };
    let comparison = compared("slower", &then, &now);
    let (node, device) = port("n2", "mlx5_1");
    assert_eq!(moved(&comparison), [(MoveKind::Slower, node, device)]);
    let change = comparison.movements[0].change_pct.unwrap();
    assert!((-35.0..-25.0).contains(&change), "{change}");
    assert_eq!(comparison.movements[0].peers, (NODES - 1) as u64);
    // And back: the same part, faster by 1/0.7 - 1 = 43 %.
    let back = compared("faster", &now, &then);
    assert_eq!(moved(&back).len(), 1);
    assert_eq!(back.movements[0].kind, MoveKind::Faster);
}

#[test]
fn a_nic_whose_guid_changed_is_replaced_not_slower() {
    // The same slow lane as above, but the card in n2's lane 1 is another one (a new GUID): its
    // speed is the judge's to name among its peers, not a regression of the old card.
    let then = Job { memories: &["host"], gbps: &healthy, guid: Some(&guid), uuid: None };
    let slow = |server: usize, client: usize, lane: usize, _: &str| {
        if (server == 2 || client == 2) && lane == 1 {
            70.0
        } else {
            100.0
        }
    };
    let swapped = |node: usize, lane: usize| {
        if (node, lane) == (2, 1) {
            "0xfeed".to_string()
        } else {
            guid(node, lane)
        }
    };
    let now = Job { gbps: &slow, guid: Some(&swapped), ..then };
    let comparison = compared("replaced", &then, &now);
    let (node, device) = port("n2", "mlx5_1");
    assert_eq!(moved(&comparison), [(MoveKind::NicReplaced, node, device)]);
    assert_eq!(comparison.movements[0].then.as_deref(), Some(guid(2, 1).as_str()));
    assert_eq!(comparison.movements[0].now.as_deref(), Some("0xfeed"));
    // Files without nic_node_guid cannot tell: the same swap reads as the lane's slowdown.
    let then = Job { guid: None, ..then };
    let now = Job { guid: None, ..now };
    let (node, device) = port("n2", "mlx5_1");
    assert_eq!(moved(&compared("unkeyed", &then, &now)), [(MoveKind::Slower, node, device)]);
}

#[test]
fn a_gpu_whose_uuid_changed_is_replaced_and_its_host_rows_still_compared() {
    // n4's lane 0 has another GPU (a new UUID), 60 % in GPU memory; its host-memory rows are at
    // 75 % too, which is the NIC's (or the node's) and still compared.
    let then = Job { memories: &["host", "cuda"], gbps: &healthy, guid: Some(&guid), uuid: Some(&uuid) };
    let slow = |server: usize, client: usize, lane: usize, mem: &str| match (
        server == 4 || client == 4,
        lane,
        mem,
    ) {
        (true, 0, "cuda") => 60.0,
        (true, 0, _) => 75.0,
        _ => 100.0,
    };
    let swapped = |node: usize, lane: usize| {
        if (node, lane) == (4, 0) {
            "GPU-new".to_string()
        } else {
            uuid(node, lane)
        }
    };
    let now = Job { gbps: &slow, uuid: Some(&swapped), ..then };
    let comparison = compared("gpu", &then, &now);
    let (node, device) = port("n4", "mlx5_0");
    assert_eq!(
        moved(&comparison),
        [(MoveKind::GpuReplaced, node.clone(), device.clone()), (MoveKind::Slower, node, device)]
    );
    assert!(comparison.movements[1].class.contains("host->host"), "{:?}", comparison.movements[1]);
}

#[test]
fn a_fleet_slower_as_a_whole_is_its_class_not_every_port() {
    let then = Job { memories: &["host"], gbps: &healthy, guid: Some(&guid), uuid: None };
    let now = Job { gbps: &|_, _, _, _| 80.0, ..then };
    let comparison = compared("class", &then, &now);
    assert_eq!(moved(&comparison), [(MoveKind::ClassSlower, "all".to_string(), None)]);
    let change = comparison.movements[0].change_pct.unwrap();
    assert!((-21.0..-19.0).contains(&change), "{change}");
}
