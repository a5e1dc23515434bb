//! Verdicts: OK / WARN / FAIL lines, each with its reason and what to fix,
//! and the exit code scripts act on.
//!
//! The question every verdict answers is "can GPUDirect RDMA work here, and
//! at full speed?":
//!
//! * **FAIL** (exit 2): it cannot work as found: no GPU, no hardware RDMA
//!   NIC, no active port, no NVIDIA driver, a GPU without GPUDirect support,
//!   or no way to register GPU memory. A node with GPUs but no NIC fails.
//! * **WARN** (exit 1): it can work but something costs speed or could not be
//!   confirmed: a PCIe finding at warn level, CUDA could not be asked.
//! * **OK** (exit 0 when everything is).
//!
//! The findings on every GPU, NIC and bridge of each recommended pair (links, Max Payload Size
//! along the path, Max Read Request, relaxed ordering, ACS, AER counters, a pair through the
//! root complex) and on the IOMMU come from `gdrperf_topology::findings`, the judgement a short row's
//! causes use too: a finding's level becomes the verdict's (fail: FAIL, warn: WARN, info: OK),
//! with its fix and source.

use gdrperf_topology::findings::{Check, Finding, Level as FindingLevel};

use crate::gpu::{format_cuda_version, CudaFacts};
use crate::gpudirect::GdrPath;
use crate::iommu::IommuMode;
use crate::rdma::{Backing, RdmaDevice};
use crate::report::Report;
use crate::verdict_line::{Level, Verdict};

fn verdict(level: Level, check: &'static str, reason: String, fix: Option<&str>) -> Verdict {
    Verdict { level, check, reason, fix: fix.map(str::to_string), source: None }
}

/// A finding as a verdict line: the same words, its level mapped to the doctor's.
fn from_finding(finding: &Finding) -> Verdict {
    let level = match finding.level {
        FindingLevel::Fail => Level::Fail,
        FindingLevel::Warn => Level::Warn,
        FindingLevel::Info => Level::Ok,
    };
    Verdict {
        level,
        check: finding.check.name(),
        reason: finding.evidence.clone(),
        fix: Some(finding.fix.clone()),
        source: Some(finding.source.clone()),
    }
}

/// Judges a report whose facts are gathered.
pub fn judge(report: &Report) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    judge_rdma_devices(report, &mut verdicts);
    judge_ports(report, &mut verdicts);
    judge_gpus(report, &mut verdicts);
    if !report.gpus.is_empty() {
        judge_gpudirect_path(report, &mut verdicts);
    }
    judge_topology(report, &mut verdicts);
    judge_iommu(report, &mut verdicts);
    judge_findings(report, &mut verdicts);
    verdicts
}

fn is_hardware(device: &RdmaDevice) -> bool {
    matches!(device.backing, Backing::Hardware { .. })
}

fn judge_rdma_devices(report: &Report, verdicts: &mut Vec<Verdict>) {
    let hardware: Vec<&str> =
        report.rdma_devices.iter().filter(|d| is_hardware(d)).map(|d| d.name.as_str()).collect();
    let software: Vec<&str> =
        report.rdma_devices.iter().filter(|d| !is_hardware(d)).map(|d| d.name.as_str()).collect();
    for controller in &report.network_controllers_without_rdma {
        let driver = controller.driver.as_deref().unwrap_or("no driver");
        verdicts.push(verdict(
            Level::Warn,
            "rdma-devices",
            format!("PCI network controller {} ({driver}) has no RDMA device", controller.address),
            Some("load its RDMA driver (for ConnectX: modprobe mlx5_ib) and check `rdma link`"),
        ));
    }
    if !hardware.is_empty() {
        verdicts.push(verdict(
            Level::Ok,
            "rdma-devices",
            format!("hardware RDMA devices: {}", hardware.join(", ")),
            None,
        ));
    } else if !software.is_empty() {
        verdicts.push(verdict(
            Level::Fail,
            "rdma-devices",
            format!("only software RDMA devices ({}): they copy with the CPU and cannot reach GPU memory", software.join(", ")),
            Some("GPUDirect RDMA needs a PCIe RDMA NIC (ConnectX or similar); host-memory benches still run on the software device"),
        ));
    } else {
        verdicts.push(verdict(
            Level::Fail,
            "rdma-devices",
            "no RDMA device in /sys/class/infiniband".to_string(),
            Some("install an RDMA NIC and load its driver (rdma-core, mlx5_ib); without one, Soft-RoCE runs the host-memory benches: `rdma link add rxe0 type rxe netdev <interface>`"),
        ));
    }
}

fn judge_ports(report: &Report, verdicts: &mut Vec<Verdict>) {
    if report.rdma_devices.is_empty() {
        return;
    }
    let any_active = report.rdma_devices.iter().flat_map(|d| &d.ports).any(|port| port.is_active());
    if !any_active {
        let waiting_for_subnet_manager = report
            .rdma_devices
            .iter()
            .flat_map(|d| &d.ports)
            .any(|port| port.state.as_deref() == Some("INIT") && !port.is_ethernet());
        let fix = if waiting_for_subnet_manager {
            "InfiniBand ports in INIT wait for a subnet manager: start opensm on a node or enable the switch's"
        } else {
            "check cables and the switch port; `ibstat` / `ip link` show the physical state"
        };
        verdicts.push(verdict(Level::Fail, "ports", "no RDMA port is ACTIVE".to_string(), Some(fix)));
        return;
    }
    let recommended: Vec<&str> = report.recommendations.iter().map(|r| r.nic.as_str()).collect();
    for device in report.rdma_devices.iter().filter(|d| recommended.contains(&d.name.as_str())) {
        if !device.ports.iter().any(|port| port.is_active()) {
            verdicts.push(verdict(
                Level::Warn,
                "ports",
                format!("{} is recommended for a GPU but has no ACTIVE port", device.name),
                Some("bring its link up (cable, switch port, subnet manager) or pass --ib-dev explicitly"),
            ));
        }
        for port in device.ports.iter().filter(|port| port.is_active() && port.is_ethernet()) {
            if !port.gids.iter().any(|gid| gid.gid_type.as_deref() == Some("RoCE v2")) {
                verdicts.push(verdict(
                    Level::Warn,
                    "ports",
                    format!("{} port {} has no RoCE v2 GID", device.name, port.number),
                    Some("give its netdev an IP address (`ip addr add`); RoCE v2 GIDs follow the addresses"),
                ));
            }
        }
    }
    verdicts.push(verdict(Level::Ok, "ports", "at least one RDMA port is ACTIVE".to_string(), None));
}

fn judge_gpus(report: &Report, verdicts: &mut Vec<Verdict>) {
    if report.gpus.is_empty() {
        verdicts.push(verdict(
            Level::Fail,
            "gpus",
            "no NVIDIA GPU on the PCI bus".to_string(),
            Some("GPUDirect RDMA needs an NVIDIA GPU; host-memory benches still run"),
        ));
        return;
    }
    let driver = &report.nvidia_driver;
    if !driver.loaded {
        verdicts.push(verdict(
            Level::Fail,
            "nvidia-driver",
            "NVIDIA GPUs present but the nvidia kernel module is not loaded".to_string(),
            Some("install the driver (the open kernel module, nvidia-open, enables dma-buf) and `modprobe nvidia`"),
        ));
    } else {
        let flavour = match driver.open_kernel_module {
            Some(true) => "open kernel module",
            Some(false) => "proprietary kernel module",
            None => "kernel module flavour unknown",
        };
        let version = driver.version.as_deref().unwrap_or("version unknown");
        verdicts.push(verdict(Level::Ok, "nvidia-driver", format!("nvidia {version} ({flavour})"), None));
    }
    match &report.cuda {
        CudaFacts::Available { driver_api_version, .. } => {
            let unsupported: Vec<&str> = report
                .gpus
                .iter()
                .filter(|gpu| gpu.gpu_direct_rdma_supported == Some(false))
                .map(|gpu| gpu.label.as_str())
                .collect();
            if unsupported.is_empty() {
                let reason = format!(
                    "CUDA {}: GPU_DIRECT_RDMA_SUPPORTED on every GPU CUDA sees",
                    format_cuda_version(*driver_api_version)
                );
                verdicts.push(verdict(Level::Ok, "cuda", reason, None));
            } else {
                verdicts.push(verdict(
                    Level::Fail,
                    "cuda",
                    format!("GPU_DIRECT_RDMA_SUPPORTED = 0 on {}", unsupported.join(", ")),
                    Some("GPUDirect RDMA needs a data-center or professional GPU; use another GPU or host staging"),
                ));
            }
        }
        CudaFacts::Unavailable { reason } | CudaFacts::NotQueried { reason } => verdicts.push(verdict(
            Level::Warn,
            "cuda",
            format!("CUDA not asked ({reason}): GPU_DIRECT_RDMA_SUPPORTED and DMA_BUF_SUPPORTED unconfirmed"),
            Some("run `gdrperf doctor` on the node itself, with libcuda.so installed, and without --sysfs-root or --no-cuda"),
        )),
    }
}

fn judge_gpudirect_path(report: &Report, verdicts: &mut Vec<Verdict>) {
    let gpudirect = &report.gpudirect;
    let blockers = gpudirect.dma_buf_blockers.join("; ");
    match (gpudirect.auto, gpudirect.dma_buf_usable) {
        (GdrPath::DmaBuf, Some(true)) => verdicts.push(verdict(
            Level::Ok,
            "gpudirect",
            format!("--gdr auto takes dmabuf{}", if gpudirect.peermem_loaded { " (nvidia-peermem also loaded)" } else { "" }),
            None,
        )),
        (GdrPath::DmaBuf, _) => verdicts.push(verdict(
            Level::Warn,
            "gpudirect",
            format!("--gdr auto would try dmabuf, unconfirmed ({blockers}); nvidia-peermem is not loaded"),
            Some("confirm with CUDA on the node, or `modprobe nvidia-peermem` as a fallback"),
        )),
        (GdrPath::NvidiaPeermem, _) => verdicts.push(verdict(
            Level::Ok,
            "gpudirect",
            format!("--gdr auto takes peermem (dma-buf: {})", if blockers.is_empty() { "not needed" } else { &blockers }),
            None,
        )),
        (GdrPath::None, _) => verdicts.push(verdict(
            Level::Fail,
            "gpudirect",
            format!("no way to register GPU memory: nvidia-peermem not loaded and dma-buf unusable ({blockers})"),
            Some("`modprobe nvidia-peermem` (it ships with the driver), or use the open kernel module (nvidia-open, driver >= 515) on Linux >= 5.12 for dma-buf"),
        )),
    }
}

/// The topology's OK line, then its findings (a pair through the root complex) and ACS's, which
/// depends on it; both come from `gdrperf_topology::findings`, as a row's causes do.
fn judge_topology(report: &Report, verdicts: &mut Vec<Verdict>) {
    let close: Vec<String> = report
        .recommendations
        .iter()
        .filter(|r| r.relation.stays_below_root_complex())
        .map(|r| format!("{}->{} ({:?})", report.gpu_label(&r.gpu_bus_id), r.nic, r.relation))
        .collect();
    if !close.is_empty() {
        verdicts.push(verdict(
            Level::Ok,
            "topology",
            format!("GPU and NIC share a PCIe switch: {}", close.join(", ")),
            None,
        ));
    }
    let of = |check: Check| report.findings.iter().filter(move |finding| finding.check == check);
    verdicts.extend(of(Check::Topology).map(from_finding));
    verdicts.extend(of(Check::Acs).map(from_finding));
    let acs_warned = of(Check::Acs).next().is_some();
    let checked = report.acs.checked > report.acs.unreadable;
    if !acs_warned && checked && !close.is_empty() {
        verdicts.push(verdict(
            Level::Ok,
            "acs",
            "no ACS redirection between paired GPUs and NICs".to_string(),
            None,
        ));
    }
}

/// An OK line when the IOMMU is off or in pass-through; otherwise its finding.
fn judge_iommu(report: &Report, verdicts: &mut Vec<Verdict>) {
    match report.iommu.mode {
        IommuMode::Off => verdicts.push(verdict(Level::Ok, "iommu", "IOMMU off".to_string(), None)),
        IommuMode::Passthrough => {
            verdicts.push(verdict(Level::Ok, "iommu", "IOMMU in pass-through".to_string(), None))
        }
        IommuMode::Translated | IommuMode::Unknown => verdicts
            .extend(report.findings.iter().filter(|finding| finding.check == Check::Iommu).map(from_finding)),
    }
}

/// Every other finding (topology, ACS and the IOMMU have their places above), in the order found.
fn judge_findings(report: &Report, verdicts: &mut Vec<Verdict>) {
    let placed = [Check::Topology, Check::Acs, Check::Iommu];
    verdicts
        .extend(report.findings.iter().filter(|finding| !placed.contains(&finding.check)).map(from_finding));
}
