//! Writes a fixture machine's sysfs tree to a directory, for runs that read a machine other than
//! their own: `GDRPERF_PATH_SYSFS_ROOT=DIR gdr-write-bw ...` (the benches' path facts) or
//! `gdrperf doctor --sysfs-root DIR`. The Soft-RoCE VM tests use it to give each side of a run a
//! real server's shape.
//!
//! ```text
//! write_fixture MACHINE DIR [RDMA_NAME]
//! ```
//! MACHINE: dgx-h100, dgx-h100-nic-at-x8, dgx-h100-acs-redirect, dgx-h100-iommu-translating,
//! dgx-h100-relaxed-ordering-off (faults on GPU/NIC pair 0), pcie-switch-tree,
//! two-socket-root-ports, cross-socket, rxe-only.
//! RDMA_NAME renames pair 0's NIC (mlx5_0) so that the tree describes the device a run really
//! opens (rxe0 in the VM).

use std::path::PathBuf;
use std::process::ExitCode;

use gdrperf_doctor_fixtures::{Dgx, Function, Machine, SwitchTree};

fn machine(name: &str) -> Option<Machine> {
    Some(match name {
        "dgx-h100" => Machine::dgx_h100_like(),
        "dgx-h100-nic-at-x8" => Machine::dgx_h100_nic_at_x8(0),
        "dgx-h100-acs-redirect" => Machine::dgx_h100_acs_redirect(0),
        "dgx-h100-iommu-translating" => Machine::dgx_h100_iommu_translating(),
        "dgx-h100-relaxed-ordering-off" => Machine::dgx_h100_relaxed_ordering_off(0),
        "pcie-switch-tree" => Machine::pcie_switch_tree(),
        "two-socket-root-ports" => Machine::two_socket_root_ports(),
        "cross-socket" => Machine::cross_socket(),
        "rxe-only" => Machine::rxe_only(),
        _ => return None,
    })
}

fn main() -> ExitCode {
    // args_os, not args: an argument that is not UTF-8 is a usage error, not a panic.
    let Ok(args) =
        std::env::args_os().skip(1).map(|argument| argument.into_string()).collect::<Result<Vec<_>, _>>()
    else {
        eprintln!("write_fixture: an argument is not UTF-8");
        return ExitCode::from(2);
    };
    let (Some(name), Some(directory)) = (args.first(), args.get(1)) else {
        eprintln!("usage: write_fixture MACHINE DIR [RDMA_NAME]");
        return ExitCode::from(2);
    };
    let Some(mut machine) = machine(name) else {
        eprintln!("write_fixture: unknown machine {name:?}");
        return ExitCode::from(2);
    };
    if let Some(rdma_name) = args.get(2) {
        let address = match name.as_str() {
            "cross-socket" => "0000:99:00.0".to_string(),
            "pcie-switch-tree" => SwitchTree::NIC.to_string(),
            "two-socket-root-ports" => "0000:19:00.0".to_string(),
            _ => Dgx::nic(0),
        };
        match machine.find_mut(&address).map(|node| &mut node.function) {
            Some(Function::Nic(nic)) => nic.rdma_name = Some(rdma_name.clone()),
            _ => {
                eprintln!("write_fixture: {name} has no NIC at {address} to rename");
                return ExitCode::from(2);
            }
        }
    }
    let directory = PathBuf::from(directory);
    if let Err(error) = std::fs::create_dir_all(&directory).and_then(|()| machine.write(&directory)) {
        eprintln!("write_fixture: cannot write {}: {error}", directory.display());
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
