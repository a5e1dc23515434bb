//! The human report: facts grouped by subject, verdicts last, so the answer
//! is at the bottom of the terminal when the command returns.

use std::fmt::{self, Write};

use crate::gpu::{format_cuda_version, CudaFacts};
use crate::iommu::IommuMode;
use crate::pci::PcieLink;
use crate::rdma::{Backing, PortMtu};
use crate::report::Report;
use crate::topology::Relation;
use crate::verdict_line::Level;

impl fmt::Display for Report {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            out,
            "gdrperf doctor: sysfs root {}, kernel {}",
            self.sysfs_root,
            or_unknown(&self.kernel_release)
        )?;
        render_rdma(self, out)?;
        render_gpus(self, out)?;
        render_gpudirect(self, out)?;
        render_topology(self, out)?;
        render_pcie(self, out)?;
        writeln!(out, "\nVerdict")?;
        for verdict in &self.verdicts {
            writeln!(out, "  {:<4}  {}: {}", verdict.level.word(), verdict.check, verdict.reason)?;
            if let Some(fix) = &verdict.fix {
                writeln!(out, "        fix: {fix}")?;
            }
            if let Some(source) = &verdict.source {
                writeln!(out, "        source: {source}")?;
            }
        }
        let meaning = match self.worst_level() {
            Level::Ok => "GPUDirect RDMA can work here",
            Level::Warn if self.exit_code == 0 => "GPUDirect RDMA can work, with warnings",
            Level::Warn => "GPUDirect RDMA can work, with warnings (counted as a miss by --strict)",
            Level::Fail => "GPUDirect RDMA cannot work as found",
        };
        writeln!(out, "exit code {}: {meaning}", self.exit_code)
    }
}

fn or_unknown(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("unknown")
}

fn numa(node: Option<u32>) -> String {
    node.map(|node| node.to_string()).unwrap_or_else(|| "-".to_string())
}

fn link(link: &PcieLink) -> String {
    match (&link.current_speed, link.current_width) {
        (Some(speed), Some(width)) => format!(", link {speed} x{width}"),
        _ => String::new(),
    }
}

fn render_rdma(report: &Report, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "\nRDMA devices")?;
    if report.rdma_devices.is_empty() {
        writeln!(out, "  none (/sys/class/infiniband is empty or absent)")?;
    }
    for device in &report.rdma_devices {
        let place = match &device.backing {
            Backing::Hardware { pci } => format!(
                "PCI {}, NUMA {}, driver {}{}",
                pci.address,
                numa(pci.numa_node),
                or_unknown(&pci.driver),
                link(&pci.link)
            ),
            Backing::Software { driver, netdev } => {
                format!("software ({driver} on {})", netdev.as_deref().unwrap_or("unknown netdev"))
            }
        };
        let firmware = device.firmware.as_deref().map_or_else(
            || ", no firmware version (fw_ver empty)".to_string(),
            |fw| format!(", firmware {fw}"),
        );
        writeln!(out, "  {}: {place}{firmware}", device.name)?;
        for port in &device.ports {
            let mtu = match &port.mtu {
                PortMtu::NotInSysfs => "MTU not in sysfs for InfiniBand (see ibv_devinfo)".to_string(),
                PortMtu::FromNetdev { netdev, netdev_mtu, active_mtu } => {
                    format!("MTU {active_mtu} ({netdev} MTU {netdev_mtu})")
                }
                PortMtu::Unknown => "MTU unknown (netdev not found)".to_string(),
            };
            writeln!(
                out,
                "    port {}: {} ({}), {}, {}, {mtu}",
                port.number,
                or_unknown(&port.state),
                or_unknown(&port.physical_state),
                or_unknown(&port.link_layer),
                or_unknown(&port.rate),
            )?;
            for gid in &port.gids {
                let mut line = format!("      GID {:>3}  {:<40}", gid.index, gid.gid);
                let kind = [gid.gid_type.as_deref(), gid.ip_family.as_deref(), gid.netdev.as_deref()];
                line.push_str(&kind.iter().flatten().copied().collect::<Vec<_>>().join("  "));
                writeln!(out, "{}", line.trim_end())?;
            }
        }
    }
    for controller in &report.network_controllers_without_rdma {
        writeln!(
            out,
            "  (PCI {} is an RDMA-capable network controller, driver {}, with no RDMA device)",
            controller.address,
            or_unknown(&controller.driver)
        )?;
    }
    Ok(())
}

fn render_gpus(report: &Report, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "\nGPUs")?;
    let driver = &report.nvidia_driver;
    let flavour = match driver.open_kernel_module {
        Some(true) => "open kernel module",
        Some(false) => "proprietary kernel module",
        None => "flavour unknown",
    };
    if driver.loaded {
        writeln!(out, "  NVIDIA driver {} ({flavour})", or_unknown(&driver.version))?;
    } else {
        writeln!(out, "  NVIDIA kernel module not loaded")?;
    }
    match &report.cuda {
        CudaFacts::Available { driver_api_version, .. } => {
            writeln!(out, "  CUDA driver API {}", format_cuda_version(*driver_api_version))?;
        }
        CudaFacts::Unavailable { reason } => writeln!(out, "  CUDA unavailable: {reason}")?,
        CudaFacts::NotQueried { reason } => writeln!(out, "  CUDA not queried: {reason}")?,
    }
    if report.gpus.is_empty() {
        writeln!(out, "  no NVIDIA GPU on the PCI bus")?;
        return Ok(());
    }
    if !matches!(report.cuda, CudaFacts::Available { .. }) {
        writeln!(
            out,
            "  (GPU numbers follow PCI order; CUDA's order is fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID)"
        )?;
    }
    let yes_no = |value: Option<bool>| match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    };
    for gpu in &report.gpus {
        let (numa_node, driver_name, pcie) = match &gpu.pci {
            Some(pci) => (numa(pci.numa_node), or_unknown(&pci.driver).to_string(), link(&pci.link)),
            None => ("-".to_string(), "not in sysfs".to_string(), String::new()),
        };
        writeln!(
            out,
            "  {}: {}, PCI {}, NUMA {numa_node}, driver {driver_name}{pcie}",
            gpu.label,
            or_unknown(&gpu.name),
            gpu.bus_id
        )?;
        writeln!(
            out,
            "    DMA_BUF_SUPPORTED {}, GPU_DIRECT_RDMA_SUPPORTED {}",
            yes_no(gpu.dma_buf_supported),
            yes_no(gpu.gpu_direct_rdma_supported)
        )?;
    }
    Ok(())
}

fn render_gpudirect(report: &Report, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let gpudirect = &report.gpudirect;
    writeln!(out, "\nGPUDirect paths")?;
    let peermem = if report.nvidia_driver.peermem_loaded {
        "loaded"
    } else if report.nvidia_driver.legacy_nv_peer_mem_loaded {
        "not loaded (the older nv_peer_mem is)"
    } else {
        "not loaded"
    };
    writeln!(out, "  nvidia-peermem: {peermem}")?;
    let dma_buf = match gpudirect.dma_buf_usable {
        Some(true) => "usable".to_string(),
        Some(false) => format!("not usable: {}", gpudirect.dma_buf_blockers.join("; ")),
        None => format!("unconfirmed: {}", gpudirect.dma_buf_blockers.join("; ")),
    };
    writeln!(out, "  dma-buf: {dma_buf}")?;
    if report.gpus.is_empty() {
        writeln!(out, "  --gdr auto: no GPU, nothing to register")?;
    } else {
        writeln!(out, "  --gdr auto would take: {}", gpudirect.auto.name())?;
    }
    let iommu = &report.iommu;
    let mode = match iommu.mode {
        IommuMode::Off => "off",
        IommuMode::Passthrough => "pass-through",
        IommuMode::Translated => "translating DMA",
        IommuMode::Unknown => "enabled, mode unknown",
    };
    let mut line = format!("  IOMMU: {mode}");
    if !iommu.units.is_empty() {
        let _ = write!(line, "; units {}", iommu.units.join(", "));
    }
    let _ = write!(line, "; {} groups", iommu.group_count);
    if !iommu.cmdline_options.is_empty() {
        let _ = write!(line, "; cmdline {}", iommu.cmdline_options.join(" "));
    }
    writeln!(out, "{line}")
}

/// Each GPU's and PCI NIC's link and Device Control (see [`crate::pcie`]).
fn render_pcie(report: &Report, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    if report.pcie.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nPCIe links and Device Control")?;
    for facts in &report.pcie {
        writeln!(out, "  {}", facts.describe())?;
    }
    Ok(())
}

fn render_topology(report: &Report, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "\nTopology (nvidia-smi topo words, from sysfs)")?;
    if report.gpus.is_empty() || report.rdma_devices.is_empty() {
        writeln!(
            out,
            "  nothing to pair: {} GPUs, {} RDMA devices",
            report.gpus.len(),
            report.rdma_devices.len()
        )?;
        return Ok(());
    }
    let nics: Vec<&str> = report.rdma_devices.iter().map(|device| device.name.as_str()).collect();
    let width = nics.iter().map(|name| name.len()).max().unwrap_or(4).max(4) + 2;
    let label_width = report.gpus.iter().map(|gpu| gpu.label.len()).max().unwrap_or(4) + 2;
    let mut header = format!("  {:label_width$}", "");
    for nic in &nics {
        let _ = write!(header, "{nic:<width$}");
    }
    let _ = write!(header, "NUMA  recommended");
    writeln!(out, "{}", header.trim_end())?;
    for gpu in &report.gpus {
        let mut row = format!("  {:<label_width$}", gpu.label);
        for nic in &nics {
            let relation = report
                .pairs
                .iter()
                .find(|pair| pair.gpu_bus_id == gpu.bus_id && pair.nic == *nic)
                .map(|pair| format!("{:?}", pair.relation))
                .unwrap_or_else(|| "?".to_string());
            let _ = write!(row, "{relation:<width$}");
        }
        let recommended = report
            .recommendation_for(&gpu.bus_id)
            .map(|r| {
                let shared = if r.shared_with_earlier_gpus > 0 { ", shared" } else { "" };
                format!("{} ({:?}{shared})", r.nic, r.relation)
            })
            .unwrap_or_else(|| "-".to_string());
        let _ = write!(row, "{:<6}{recommended}", numa(gpu.numa_node()));
        writeln!(out, "{row}")?;
    }
    let used: Vec<Relation> = {
        let mut relations: Vec<Relation> = report.pairs.iter().map(|pair| pair.relation).collect();
        relations.sort();
        relations.dedup();
        relations
    };
    for relation in used {
        writeln!(out, "  {:<5} {}", format!("{relation:?}"), relation.meaning())?;
    }
    writeln!(out, "  `--ib-dev auto` takes the recommended NIC of the `--gpu` it runs on")?;
    let acs = &report.acs;
    let below_root_complex: usize = report
        .pairs
        .iter()
        .filter(|pair| pair.relation.stays_below_root_complex())
        .map(|pair| pair.acs_redirecting.len())
        .sum();
    let acs = if acs.checked == 0 {
        "no PCI bridges on the GPU-NIC paths".to_string()
    } else if acs.unreadable == acs.checked {
        format!(
            "not checked: config space of the {} bridges on GPU-NIC paths is unreadable (needs root)",
            acs.checked
        )
    } else {
        let mut text = format!("{} bridges on GPU-NIC paths checked", acs.checked);
        if acs.unreadable > 0 {
            let _ = write!(text, " ({} unreadable)", acs.unreadable);
        }
        if acs.redirecting.is_empty() {
            text.push_str("; none redirects peer-to-peer");
        } else {
            let shown: Vec<&str> = acs.redirecting.iter().take(4).map(String::as_str).collect();
            let more = if acs.redirecting.len() > 4 { ", ..." } else { "" };
            let _ = write!(text, "; redirect on {} ({}{more})", acs.redirecting.len(), shown.join(", "));
            let _ = write!(text, "; on PIX/PXB paths, where it costs speed: {below_root_complex}");
        }
        text
    };
    writeln!(out, "  ACS: {acs}")
}
