//! The DGX H100-like machine with one fault each: what the path-ceiling tests judge. Each is
//! the healthy [`Machine::dgx_h100_like`] changed in one place, the way such faults appear on
//! real nodes: a NIC reseated into a slot or riser that trains x8, a BIOS that leaves ACS
//! redirect on the switch's downstream ports, a kernel booted without `iommu=pt`, firmware or a
//! platform quirk that clears relaxed ordering.

use crate::machine::{AcsFixture, Machine};
use crate::machines::{CONNECTX_DEVICE_CONTROL, DGX_PAIRS};

/// Names and addresses in [`Machine::dgx_h100_like`], pair by pair (0 to 7).
pub struct Dgx;

impl Dgx {
    /// The RDMA name of pair `index`'s NIC: `mlx5_0`.
    pub fn nic_name(index: usize) -> String {
        format!("mlx5_{index}")
    }

    /// The NIC's PCI address: `0000:18:00.0`.
    pub fn nic(index: usize) -> String {
        format!("0000:{:02x}:00.0", DGX_PAIRS[index].0)
    }

    /// The GPU's PCI address: `0000:1b:00.0`.
    pub fn gpu(index: usize) -> String {
        format!("0000:{:02x}:00.0", DGX_PAIRS[index].1)
    }

    /// The switch downstream port above the GPU: `0000:17:01.0`.
    pub fn gpu_switch_port(index: usize) -> String {
        format!("0000:{:02x}:01.0", DGX_PAIRS[index].0 - 1)
    }

    /// The NUMA node of the pair: GPUs 0-3 on socket 0, 4-7 on socket 1.
    pub fn numa_node(index: usize) -> u32 {
        u32::from(index >= 4)
    }
}

impl Machine {
    /// Pair `index`'s NIC trained at 32 GT/s x8 of x16 (a riser or slot fault).
    pub fn dgx_h100_nic_at_x8(index: usize) -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.find_mut(&Dgx::nic(index)).expect("the pair's NIC").link_width = (8, 16);
        machine
    }

    /// ACS P2P request and completion redirect (0x000c) set on the switch port above pair
    /// `index`'s GPU: GPUDirect traffic goes up to the root complex and back.
    pub fn dgx_h100_acs_redirect(index: usize) -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.find_mut(&Dgx::gpu_switch_port(index)).expect("the GPU's switch port").acs =
            AcsFixture::Control(0x000c);
        machine
    }

    /// Booted with `intel_iommu=on` and without `iommu=pt`: every group's domain is `DMA-FQ`.
    pub fn dgx_h100_iommu_translating() -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.cmdline = machine.cmdline.replace(" iommu=pt", "");
        machine.iommu.domain_type = Some("DMA-FQ".into());
        machine
    }

    /// Pair `index`'s NIC with relaxed ordering (Device Control bit 4) off.
    pub fn dgx_h100_relaxed_ordering_off(index: usize) -> Machine {
        let mut machine = Machine::dgx_h100_like();
        machine.find_mut(&Dgx::nic(index)).expect("the pair's NIC").device_control =
            Some(CONNECTX_DEVICE_CONTROL & !(1 << 4));
        machine
    }
}
