//! One fault on one device of an otherwise healthy machine, each the way it appears on real
//! nodes, with the device it is on: what the doctor's verdict and a short row's causes must
//! both name, in the same words. The list is [`Fault::all`]; the tests of both iterate it.

use crate::machine::Machine;
use crate::machines::CONNECTX_DEVICE_CONTROL;
use crate::variants::Dgx;

/// Names and addresses in [`Machine::pcie_switch_tree`], socket 0 (socket 1 adds 0x80 to each
/// bus): root port 10:01.0, switch A (upstream 11:00.0, downstream 12:00.0 to switch B and
/// 12:01.0 to the NIC), switch B (upstream 13:00.0, downstream 14:00.0 and 14:01.0), GPUs 15:00.0
/// and 16:00.0, NIC `mlx5_0` at 17:00.0.
pub struct SwitchTree;

impl SwitchTree {
    pub const GPU: &'static str = "0000:15:00.0";
    pub const NIC: &'static str = "0000:17:00.0";
    pub const NIC_NAME: &'static str = "mlx5_0";
    /// Switch A's downstream port above switch B.
    pub const A_TO_B_PORT: &'static str = "0000:12:00.0";
    /// Switch A's downstream port above the NIC.
    pub const A_TO_NIC_PORT: &'static str = "0000:12:01.0";
    /// Switch B's upstream port: its uplink to switch A is on every GPU-NIC path.
    pub const B_UPSTREAM: &'static str = "0000:13:00.0";
}

/// Names and addresses in [`Machine::two_socket_root_ports`], socket 0: root ports 17:01.0
/// (GPU at 18:00.0) and 17:02.0 (NIC `mlx5_0` at 19:00.0).
pub struct TwoSocket;

impl TwoSocket {
    pub const GPU: &'static str = "0000:18:00.0";
    pub const NIC_NAME: &'static str = "mlx5_0";
    pub const NIC_ROOT_PORT: &'static str = "0000:17:02.0";
}

/// A machine with one fault, and where it is.
#[derive(Debug, Clone)]
pub struct Fault {
    /// What is wrong, in words, for test messages.
    pub what: &'static str,
    pub machine: Machine,
    /// The pair whose path carries the fault: the GPU's bus id and its recommended NIC.
    pub gpu: String,
    pub nic: String,
    /// The NUMA node of the pair (a row's thread is pinned there).
    pub numa_node: u32,
    /// The finding's check (`gdrperf_topology::findings`' `Check::name`) and device as findings name it.
    pub check: &'static str,
    pub device: String,
    /// Whether the finding fails the node (a fatal AER count) rather than warning.
    pub fails: bool,
}

/// `name (address)`, how findings name a device.
fn label(name: &str, address: &str) -> String {
    format!("{name} ({address})")
}

impl Fault {
    /// Every fault: on a NIC, a GPU and a bridge, on the three healthy shapes with a GPU-NIC pair.
    pub fn all() -> Vec<Fault> {
        let dgx = |what, machine, check, device| Fault {
            what,
            machine,
            gpu: Dgx::gpu(0),
            nic: Dgx::nic_name(0),
            numa_node: 0,
            check,
            device,
            fails: false,
        };
        let tree = |what, change: &dyn Fn(&mut Machine), check, device, fails| {
            let mut machine = Machine::pcie_switch_tree();
            change(&mut machine);
            Fault {
                what,
                machine,
                gpu: SwitchTree::GPU.into(),
                nic: SwitchTree::NIC_NAME.into(),
                numa_node: 0,
                check,
                device,
                fails,
            }
        };
        let nic = label(&Dgx::nic_name(0), &Dgx::nic(0));
        vec![
            dgx("NIC trained at x8", Machine::dgx_h100_nic_at_x8(0), "pcie-link", nic.clone()),
            dgx(
                "NIC with relaxed ordering off",
                Machine::dgx_h100_relaxed_ordering_off(0),
                "relaxed-ordering",
                nic.clone(),
            ),
            dgx(
                "NIC with a 512 B Max Read Request",
                Machine::dgx_h100_small_read_request(0),
                "max-read-request",
                nic,
            ),
            dgx("GPU trained at x8", Machine::dgx_h100_gpu_at_x8(0), "pcie-link", label("GPU", &Dgx::gpu(0))),
            dgx(
                "ACS redirect on the GPU's switch port",
                Machine::dgx_h100_acs_redirect(0),
                "acs",
                label("switch downstream port", &Dgx::gpu_switch_port(0)),
            ),
            tree(
                "switch B's uplink trained at x8",
                &|machine| {
                    // Both ends of the link report it: A's downstream port and B's upstream port.
                    for port in [SwitchTree::A_TO_B_PORT, SwitchTree::B_UPSTREAM] {
                        machine.find_mut(port).expect("a switch port").link_width = (8, 16);
                    }
                },
                "bridge-link",
                label("switch upstream port", SwitchTree::B_UPSTREAM),
                false,
            ),
            tree(
                "switch A's port above the NIC at MPS 128 B",
                &|machine| {
                    machine.find_mut(SwitchTree::A_TO_NIC_PORT).expect("a switch port").device_control =
                        Some(0x2910)
                },
                "max-payload",
                label("switch downstream port", SwitchTree::A_TO_NIC_PORT),
                false,
            ),
            tree(
                "correctable AER errors on switch B's uplink",
                &|machine| {
                    machine.find_mut(SwitchTree::B_UPSTREAM).expect("a switch port").aer = Some([12, 0, 0])
                },
                "aer",
                label("switch upstream port", SwitchTree::B_UPSTREAM),
                false,
            ),
            tree(
                "a nonfatal AER error on the NIC",
                &|machine| machine.find_mut(SwitchTree::NIC).expect("the NIC").aer = Some([0, 1, 0]),
                "aer",
                label(SwitchTree::NIC_NAME, SwitchTree::NIC),
                false,
            ),
            tree(
                "a fatal AER error on the GPU",
                &|machine| machine.find_mut(SwitchTree::GPU).expect("the GPU").aer = Some([0, 0, 1]),
                "aer",
                label("GPU", SwitchTree::GPU),
                true,
            ),
            Fault {
                what: "the NIC's root port at MPS 128 B",
                machine: {
                    let mut machine = Machine::two_socket_root_ports();
                    machine.find_mut(TwoSocket::NIC_ROOT_PORT).expect("a root port").device_control =
                        Some(0x2910);
                    machine
                },
                gpu: TwoSocket::GPU.into(),
                nic: TwoSocket::NIC_NAME.into(),
                numa_node: 0,
                check: "max-payload",
                device: label("root port", TwoSocket::NIC_ROOT_PORT),
                fails: false,
            },
        ]
    }
}

impl Machine {
    /// Pair `index`'s NIC with Max Read Request 512 B (the BIOS or kernel default on many boards).
    pub fn dgx_h100_small_read_request(index: usize) -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.find_mut(&Dgx::nic(index)).expect("the pair's NIC").device_control =
            Some((CONNECTX_DEVICE_CONTROL & !0x7000) | 0x2000);
        machine
    }

    /// Pair `index`'s GPU trained at x8 of x16 (a riser fault).
    pub fn dgx_h100_gpu_at_x8(index: usize) -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.find_mut(&Dgx::gpu(index)).expect("the pair's GPU").link_width = (8, 16);
        machine
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AcsFixture;

    #[test]
    fn acs_fixture_of_the_healthy_switch_tree_is_off_on_switch_ports() {
        let mut machine = Machine::pcie_switch_tree();
        assert_eq!(machine.find_mut(SwitchTree::A_TO_NIC_PORT).unwrap().acs, AcsFixture::Control(0));
        assert_eq!(machine.find_mut("0000:14:01.0").unwrap().acs, AcsFixture::Control(0));
        assert_eq!(machine.find_mut(SwitchTree::GPU).unwrap().link_speed, (16.0, 16.0));
    }
}
