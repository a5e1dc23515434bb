//! The choice on sysfs fixture trees: a two-socket node, a VM, a cpuset-restricted job.

use super::*;
use crate::error::ConfigError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A throw-away sysfs tree; removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new() -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "gdrperf-cpu-placement-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Tree(path)
    }

    fn file(&self, relative: &str, text: &str) -> &Tree {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    /// Two sockets of 16 CPUs with hyper-threads (0-7,16-23 and 8-15,24-31), a CPU-less node 2
    /// (GPU memory), mlx5_0 on node 0, mlx5_1 on node 1, and rxe0 (software, no device/).
    fn two_sockets() -> Tree {
        let tree = Tree::new();
        tree.file("sys/devices/system/node/node0/cpulist", "0-7,16-23\n")
            .file("sys/devices/system/node/node1/cpulist", "8-15,24-31\n")
            .file("sys/devices/system/node/node2/cpulist", "\n")
            .file("sys/devices/system/node/possible", "0-2\n")
            .file("sys/class/infiniband/mlx5_0/device/numa_node", "0\n")
            .file("sys/class/infiniband/mlx5_1/device/numa_node", "1\n")
            .file("sys/class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
        tree
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn all_cpus() -> Vec<usize> {
    (0..32).collect()
}

fn pick(
    tree: &Tree,
    request: &CpuRequest,
    device: &str,
    allowed: Vec<usize>,
) -> Result<CpuPlacement, CpuPlacementError> {
    choose(request, device, &NumaFacts::read(&tree.0, device, allowed))
}

#[test]
fn cpu_lists_parse_and_print_as_the_kernel_writes_them() {
    assert_eq!(parse_cpu_list("0-3,8-11"), Ok(vec![0, 1, 2, 3, 8, 9, 10, 11]));
    assert_eq!(parse_cpu_list("5"), Ok(vec![5]));
    assert_eq!(parse_cpu_list(""), Ok(vec![]));
    assert_eq!(parse_cpu_list("3,1,1"), Ok(vec![1, 3]));
    assert!(parse_cpu_list("3-1").unwrap_err().contains("backwards"));
    assert!(parse_cpu_list("x").is_err());
    assert!(parse_cpu_list("0-7:2").is_err(), "strides are refused, not misread");
    assert!(parse_cpu_list(",").is_err());
    assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    assert_eq!(format_cpu_list(&[]), "");
}

#[test]
fn by_default_the_nics_node_is_chosen() {
    let tree = Tree::two_sockets();
    let near = pick(&tree, &CpuRequest::NearNic, "mlx5_1", all_cpus()).unwrap();
    assert_eq!(format_cpu_list(&near.cpus), "8-15,24-31");
    assert_eq!(near.numa_node, Some(1));
    assert_eq!(near.describe(), "CPUs 8-15,24-31 (NUMA node 1 of mlx5_1)");
    assert_eq!(near.cpu_column(), "8-15,24-31");
    let near = pick(&tree, &CpuRequest::NearNic, "mlx5_0", all_cpus()).unwrap();
    assert_eq!((format_cpu_list(&near.cpus).as_str(), near.numa_node), ("0-7,16-23", Some(0)));
}

#[test]
fn a_device_without_numa_information_runs_unpinned_and_says_so() {
    let tree = Tree::two_sockets();
    let software = pick(&tree, &CpuRequest::NearNic, "rxe0", all_cpus()).unwrap();
    assert!(software.cpus.is_empty() && software.numa_node.is_none());
    assert_eq!(software.cpu_column(), "none");
    assert!(
        software.describe().contains("rxe0 has no NUMA node (device/numa_node: missing)"),
        "{software:?}"
    );
    // A VM or single-socket machine: the file says -1.
    tree.file("sys/class/infiniband/mlx5_0/device/numa_node", "-1\n");
    let vm = pick(&tree, &CpuRequest::NearNic, "mlx5_0", all_cpus()).unwrap();
    assert!(vm.cpus.is_empty());
    assert!(
        vm.describe().starts_with("not pinned (mlx5_0 has no NUMA node (device/numa_node: -1)"),
        "{vm:?}"
    );
}

#[test]
fn the_process_cpu_set_is_respected() {
    let tree = Tree::two_sockets();
    // A Slurm job given CPUs 4-11: the NIC's node 1 contributes 8-11.
    let job: Vec<usize> = (4..12).collect();
    let near = pick(&tree, &CpuRequest::NearNic, "mlx5_1", job.clone()).unwrap();
    assert_eq!(format_cpu_list(&near.cpus), "8-11");
    // Given only node 0's CPUs, a NIC on node 1 cannot be followed: unpinned, with the reason.
    let far = pick(&tree, &CpuRequest::NearNic, "mlx5_1", (0..8).collect()).unwrap();
    assert!(far.cpus.is_empty());
    assert!(far.reason.contains("none of which this process may use"), "{far:?}");
    let refused = pick(&tree, &CpuRequest::Cpus(vec![2, 9]), "mlx5_1", job.clone()).unwrap_err();
    assert_eq!(refused.to_string(), "--cpu 2,9: CPU 2 not available to this process (it may use 4-11)");
    let refused = pick(&tree, &CpuRequest::Node(0), "mlx5_1", (8..16).collect()).unwrap_err();
    assert!(refused.to_string().contains("--numa-node 0: none of its CPUs (0-7,16-23)"), "{refused}");
}

#[test]
fn flags_override_the_nic() {
    let tree = Tree::two_sockets();
    let node = pick(&tree, &CpuRequest::Node(0), "mlx5_1", all_cpus()).unwrap();
    assert_eq!((format_cpu_list(&node.cpus).as_str(), node.numa_node), ("0-7,16-23", Some(0)));
    assert_eq!(node.reason, "--numa-node 0");
    let one = pick(&tree, &CpuRequest::Cpus(vec![9]), "mlx5_0", all_cpus()).unwrap();
    assert_eq!(one.describe(), "CPU 9 (--cpu 9)");
    assert_eq!(one.numa_node, Some(1), "the node of the CPUs given, not of the NIC");
    let spread = pick(&tree, &CpuRequest::Cpus(vec![7, 8]), "mlx5_0", all_cpus()).unwrap();
    assert_eq!(spread.numa_node, None, "CPUs of two nodes are on none");
    let none = pick(&tree, &CpuRequest::Unpinned, "mlx5_0", all_cpus()).unwrap();
    assert_eq!(none.describe(), "not pinned (--cpu none)");
    let missing = pick(&tree, &CpuRequest::Node(5), "mlx5_0", all_cpus()).unwrap_err();
    assert!(matches!(missing, CpuPlacementError::NoSuchNode { node: 5, .. }), "{missing:?}");
    assert_eq!(missing.to_string(), "--numa-node 5: no such NUMA node (this machine has 0, 1, 2)");
    let cpuless = pick(&tree, &CpuRequest::Node(2), "mlx5_0", all_cpus()).unwrap_err();
    assert!(cpuless.to_string().contains("none of its CPUs"), "{cpuless}");
}

#[test]
fn requests_come_from_the_flags() {
    assert_eq!(CpuRequest::from_flags(None, None), Ok(CpuRequest::NearNic));
    assert_eq!(CpuRequest::from_flags(Some("none"), None), Ok(CpuRequest::Unpinned));
    assert_eq!(CpuRequest::from_flags(Some("0-2,5"), None), Ok(CpuRequest::Cpus(vec![0, 1, 2, 5])));
    assert_eq!(CpuRequest::from_flags(None, Some(1)), Ok(CpuRequest::Node(1)));
    let error = CpuRequest::from_flags(Some("two"), None).unwrap_err();
    assert!(
        matches!(&error, ConfigError::Malformed { flag: "--cpu", value, .. } if value == "two"),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("--cpu two: 'two' is not a CPU"), "{error}");
    assert!(CpuRequest::from_flags(Some("1"), Some(1)).is_err());
}

/// The one test that touches the real machine: pinning this thread to one CPU it may use shows in
/// its affinity, and an empty placement restores the process's set.
#[test]
fn pinning_the_current_thread_changes_its_affinity() {
    std::thread::spawn(|| {
        let cpus = process_cpus().to_vec();
        let last = *cpus.last().expect("a process runs on some CPU");
        let placement = CpuPlacement { cpus: vec![last], numa_node: None, reason: "test".into() };
        pin_current_thread(&placement).unwrap();
        assert_eq!(current_thread_cpus(), vec![last]);
        pin_current_thread(&CpuPlacement::default()).unwrap();
        assert_eq!(current_thread_cpus(), cpus);
    })
    .join()
    .unwrap();
}

fn current_thread_cpus() -> Vec<usize> {
    // SAFETY: as in process_cpus.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }, 0);
    cpus_in(&set)
}
