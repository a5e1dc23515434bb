//! The description of a server: its host bridges and their PCIe trees, its software RDMA
//! devices, the NVIDIA driver and the IOMMU, as plain data a test can build and change.

use std::net::Ipv4Addr;

/// A server, described.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `proc/sys/kernel/osrelease`.
    pub kernel_release: String,
    /// `proc/cmdline`.
    pub cmdline: String,
    pub host_bridges: Vec<HostBridge>,
    pub software_rdma: Vec<SoftwareRdma>,
    /// `None`: the nvidia module is not loaded.
    pub nvidia: Option<NvidiaModule>,
    pub iommu: IommuFixture,
}

/// A PCIe root complex (`pci0000:15`) and what hangs below it.
#[derive(Debug, Clone)]
pub struct HostBridge {
    /// `0000:15` for `pci0000:15`.
    pub domain_bus: String,
    /// `None` writes `-1`, as single-node machines and many VMs do.
    pub numa_node: Option<u32>,
    pub devices: Vec<PciNode>,
}

/// One PCI function and the functions below it (for a bridge).
#[derive(Debug, Clone)]
pub struct PciNode {
    pub address: String,
    pub function: Function,
    pub acs: AcsFixture,
    /// `(current, max)` link width.
    pub link_width: (u32, u32),
    /// `(current, max)` link speed in GT/s (32.0: PCIe Gen5).
    pub link_speed: (f32, f32),
    /// The PCI Express capability's Device Control register (`None`: no such capability).
    pub device_control: Option<u16>,
    /// AER counters since boot `[correctable, nonfatal, fatal]`, written as the kernel's
    /// `aer_dev_*` files; `None`: the kernel shows none (no AER capability, a virtual device).
    pub aer: Option<[u64; 3]>,
    pub children: Vec<PciNode>,
}

/// What a PCI function is.
#[derive(Debug, Clone)]
pub enum Function {
    /// A root port or a PCIe switch port.
    Bridge,
    /// An NVIDIA GPU with this PCI device id (0x2330 H100 SXM, 0x2335 H200).
    Gpu { device_id: u32 },
    /// A ConnectX NIC.
    Nic(Nic),
    /// A plain Ethernet function (virtio-net, a LOM) with its netdev.
    Ethernet { netdev: Netdev },
    /// Anything else, by ids (NVSwitch: vendor 0x10de, class 0x068000).
    Other { vendor: u32, device: u32, class: u32, driver: String },
}

/// A ConnectX function.
#[derive(Debug, Clone)]
pub struct Nic {
    /// `None`: `mlx5_core` is bound but `mlx5_ib` is not loaded.
    pub rdma_name: Option<String>,
    pub link_layer: LinkLayer,
    pub state: PortState,
    /// Sysfs `rate` text, e.g. `400 Gb/sec (4X NDR)`.
    pub rate: String,
    /// RoCE NICs carry their traffic on this netdev.
    pub netdev: Option<Netdev>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    InfiniBand,
    Ethernet,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    Active,
    /// InfiniBand link up but no subnet manager has configured it.
    Init,
    Down,
}

/// An Ethernet netdev.
#[derive(Debug, Clone)]
pub struct Netdev {
    pub name: String,
    pub mtu: u32,
    pub ipv4: Option<Ipv4Addr>,
}

/// What a bridge's config space shows about ACS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcsFixture {
    /// 64 bytes, as non-root users see it.
    Unreadable,
    /// Readable, no ACS capability.
    Absent,
    /// An ACS capability (after an AER one) with this control register.
    Control(u16),
}

/// A Soft-RoCE device bound to a netdev described elsewhere in the machine.
#[derive(Debug, Clone)]
pub struct SoftwareRdma {
    pub name: String,
    pub netdev: String,
}

/// The loaded NVIDIA kernel driver.
#[derive(Debug, Clone)]
pub struct NvidiaModule {
    pub version: String,
    pub open: bool,
    pub peermem: bool,
}

/// IOMMU hardware units and the default domain type of every group.
#[derive(Debug, Clone, Default)]
pub struct IommuFixture {
    pub units: Vec<String>,
    /// `None`: no IOMMU groups; else `identity`, `DMA`, `DMA-FQ`.
    pub domain_type: Option<String>,
}

impl PciNode {
    pub(crate) fn new(address: &str, function: Function, children: Vec<PciNode>) -> Self {
        PciNode {
            address: address.to_string(),
            function,
            acs: AcsFixture::Absent,
            link_width: (16, 16),
            link_speed: (32.0, 32.0),
            // MPS 256 B, MRRS 512 B, relaxed ordering on: a common server setting.
            device_control: Some(0x2930),
            aer: None,
            children,
        }
    }

    /// A root port or switch port with these devices below.
    pub fn bridge(address: &str, children: Vec<PciNode>) -> Self {
        PciNode::new(address, Function::Bridge, children)
    }

    /// A PCIe switch: its upstream port and one downstream port per device,
    /// given as `(downstream port address, device)`.
    pub fn switch(upstream: &str, downstream: Vec<(&str, PciNode)>) -> Self {
        let ports =
            downstream.into_iter().map(|(address, device)| PciNode::bridge(address, vec![device])).collect();
        PciNode::bridge(upstream, ports)
    }

    pub fn gpu(address: &str, device_id: u32) -> Self {
        PciNode::new(address, Function::Gpu { device_id }, Vec::new())
    }

    /// An active InfiniBand ConnectX port.
    pub fn infiniband_nic(address: &str, rdma_name: &str, rate: &str) -> Self {
        let nic = Nic {
            rdma_name: Some(rdma_name.to_string()),
            link_layer: LinkLayer::InfiniBand,
            state: PortState::Active,
            rate: rate.to_string(),
            netdev: None,
        };
        PciNode::new(address, Function::Nic(nic), Vec::new())
    }

    /// An active RoCE ConnectX port on `netdev`.
    pub fn roce_nic(address: &str, rdma_name: &str, rate: &str, netdev: Netdev) -> Self {
        let nic = Nic {
            rdma_name: Some(rdma_name.to_string()),
            link_layer: LinkLayer::Ethernet,
            state: PortState::Active,
            rate: rate.to_string(),
            netdev: Some(netdev),
        };
        PciNode::new(address, Function::Nic(nic), Vec::new())
    }

    pub fn ethernet(address: &str, netdev: Netdev) -> Self {
        PciNode::new(address, Function::Ethernet { netdev }, Vec::new())
    }

    pub fn other(address: &str, vendor: u32, device: u32, class: u32, driver: &str) -> Self {
        let function = Function::Other { vendor, device, class, driver: driver.to_string() };
        PciNode::new(address, function, Vec::new())
    }

    /// Sets the link's `(current, max)` speed in GT/s and width.
    pub fn with_link(mut self, speed: (f32, f32), width: (u32, u32)) -> Self {
        self.link_speed = speed;
        self.link_width = width;
        self
    }

    pub fn with_device_control(mut self, device_control: u16) -> Self {
        self.device_control = Some(device_control);
        self
    }

    /// Sets the AER counters `[correctable, nonfatal, fatal]`.
    pub fn with_aer(mut self, counts: [u64; 3]) -> Self {
        self.aer = Some(counts);
        self
    }

    pub(crate) fn for_each_mut(&mut self, visit: &mut dyn FnMut(&mut PciNode)) {
        visit(self);
        for child in &mut self.children {
            child.for_each_mut(visit);
        }
    }

    pub fn with_acs(mut self, acs: AcsFixture) -> Self {
        self.acs = acs;
        self
    }

    pub(crate) fn find_mut(&mut self, address: &str) -> Option<&mut PciNode> {
        if self.address == address {
            return Some(self);
        }
        self.children.iter_mut().find_map(|child| child.find_mut(address))
    }

    pub(crate) fn for_each<'a>(&'a self, visit: &mut dyn FnMut(&'a PciNode)) {
        visit(self);
        for child in &self.children {
            child.for_each(visit);
        }
    }
}

impl Netdev {
    pub fn new(name: &str, mtu: u32, ipv4: Option<Ipv4Addr>) -> Self {
        Netdev { name: name.to_string(), mtu, ipv4 }
    }
}

impl Machine {
    /// The PCI function with this address, to change a ready-made machine in a test.
    pub fn find_mut(&mut self, address: &str) -> Option<&mut PciNode> {
        self.host_bridges
            .iter_mut()
            .flat_map(|bridge| bridge.devices.iter_mut())
            .find_map(|node| node.find_mut(address))
    }

    /// Every PCIe function shows AER counters at zero, as on a bare-metal server whose kernel
    /// handles AER (since 4.19) and that has seen no error since boot.
    pub fn with_aer_counters_at_zero(mut self) -> Machine {
        for node in self.host_bridges.iter_mut().flat_map(|bridge| bridge.devices.iter_mut()) {
            node.for_each_mut(&mut |node| node.aer = Some([0, 0, 0]));
        }
        self
    }

    /// The netdev with this name, wherever it is in the tree.
    pub(crate) fn netdev(&self, name: &str) -> Option<&Netdev> {
        let mut found = None;
        for node in self.host_bridges.iter().flat_map(|bridge| &bridge.devices) {
            node.for_each(&mut |node| {
                let netdev = match &node.function {
                    Function::Ethernet { netdev } => Some(netdev),
                    Function::Nic(nic) => nic.netdev.as_ref(),
                    _ => None,
                };
                if netdev.is_some_and(|netdev| netdev.name == name) {
                    found = netdev;
                }
            });
        }
        found
    }
}
