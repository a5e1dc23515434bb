//! The two ways a NIC can be given GPU memory, and which one `--gdr auto` takes.
//!
//! * **dma-buf**: CUDA exports the allocation as a dma-buf file descriptor and
//!   `ibv_reg_dmabuf_mr` registers it. Upstream since Linux 5.12, no extra
//!   module, but only the *open* NVIDIA kernel module can export, and CUDA
//!   says whether the GPU can through `DMA_BUF_SUPPORTED`.
//! * **nvidia-peermem**: a kernel module that lets `ib_core` pin GPU memory
//!   behind a plain `ibv_reg_mr`. Works with either NVIDIA kernel module, but
//!   must be loaded (`modprobe nvidia-peermem`).
//!
//! `--gdr auto` prefers dma-buf, the mechanism the kernel and NVIDIA now
//! recommend, and falls back to nvidia-peermem.
//!
//! One condition sysfs cannot show: the NIC's driver must implement dma-buf
//! registration (mlx5 does since Linux 5.12). The first `ibv_reg_dmabuf_mr`
//! is the real test.

use serde::Serialize;

use crate::gpu::{CudaFacts, Gpu, NvidiaDriver};

/// A way to register GPU memory with the NIC, spelled as the benches'
/// `--gdr` values (`dmabuf`, `peermem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GdrPath {
    #[serde(rename = "dmabuf")]
    DmaBuf,
    #[serde(rename = "peermem")]
    NvidiaPeermem,
    /// Neither path works: GPU memory cannot be registered.
    #[serde(rename = "none")]
    None,
}

impl GdrPath {
    /// The `--gdr` value that selects this path.
    pub fn name(self) -> &'static str {
        match self {
            GdrPath::DmaBuf => "dmabuf",
            GdrPath::NvidiaPeermem => "peermem",
            GdrPath::None => "none",
        }
    }
}

/// The first Linux release with dma-buf memory registration in the RDMA core.
const DMA_BUF_MINIMUM_KERNEL: (u32, u32) = (5, 12);

/// What the node offers for GPUDirect RDMA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuDirect {
    pub peermem_loaded: bool,
    /// `Some(true)`: every condition for dma-buf is confirmed; `Some(false)`:
    /// one fails (see `dma_buf_blockers`); `None`: could not be confirmed.
    pub dma_buf_usable: Option<bool>,
    /// Why dma-buf is not usable, or what could not be confirmed.
    pub dma_buf_blockers: Vec<String>,
    /// What `--gdr auto` would take.
    pub auto: GdrPath,
}

/// The rule `--gdr auto` follows: dma-buf when usable or possibly usable
/// and nothing else is loaded, else nvidia-peermem when loaded, else none.
pub fn auto_path(dma_buf_usable: Option<bool>, peermem_loaded: bool) -> GdrPath {
    match (dma_buf_usable, peermem_loaded) {
        (Some(true), _) => GdrPath::DmaBuf,
        (_, true) => GdrPath::NvidiaPeermem,
        (None, false) => GdrPath::DmaBuf,
        (Some(false), false) => GdrPath::None,
    }
}

impl GpuDirect {
    pub fn assess(
        driver: &NvidiaDriver,
        gpus: &[Gpu],
        cuda: &CudaFacts,
        kernel_release: Option<&str>,
    ) -> Self {
        let mut failures = Vec::new();
        let mut unconfirmed = Vec::new();
        if !driver.loaded {
            failures.push("the nvidia kernel module is not loaded".to_string());
        }
        match driver.open_kernel_module {
            Some(true) => {}
            Some(false) => failures.push(
                "the proprietary NVIDIA kernel module cannot export dma-buf (the open one can)".to_string(),
            ),
            None if driver.loaded => {
                unconfirmed.push(
                    "NVIDIA kernel module flavour unknown (/proc/driver/nvidia/version unreadable)"
                        .to_string(),
                );
            }
            None => {}
        }
        match kernel_release.and_then(kernel_version) {
            Some(version) if version < DMA_BUF_MINIMUM_KERNEL => {
                failures
                    .push(format!("Linux {}.{} predates dma-buf registration (5.12)", version.0, version.1));
            }
            Some(_) => {}
            None => unconfirmed.push("kernel release unknown".to_string()),
        }
        if matches!(cuda, CudaFacts::Available { .. }) {
            for gpu in gpus.iter().filter(|gpu| gpu.cuda_ordinal.is_some()) {
                match gpu.dma_buf_supported {
                    Some(true) => {}
                    Some(false) => failures.push(format!("{} reports DMA_BUF_SUPPORTED = 0", gpu.label)),
                    None => unconfirmed.push(format!("{}: DMA_BUF_SUPPORTED query failed", gpu.label)),
                }
            }
        } else {
            unconfirmed.push("DMA_BUF_SUPPORTED unknown without CUDA".to_string());
        }
        let dma_buf_usable = if !failures.is_empty() {
            Some(false)
        } else if !unconfirmed.is_empty() {
            None
        } else {
            Some(true)
        };
        let dma_buf_blockers = if failures.is_empty() { unconfirmed } else { failures };
        GpuDirect {
            peermem_loaded: driver.any_peermem_loaded(),
            auto: auto_path(dma_buf_usable, driver.any_peermem_loaded()),
            dma_buf_usable,
            dma_buf_blockers,
        }
    }
}

/// `6.1.0-18-amd64` -> `(6, 1)`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut numbers = release.split(|c: char| !c.is_ascii_digit());
    Some((numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_prefers_dma_buf_then_peermem() {
        assert_eq!(auto_path(Some(true), true), GdrPath::DmaBuf);
        assert_eq!(auto_path(Some(false), true), GdrPath::NvidiaPeermem);
        assert_eq!(auto_path(None, true), GdrPath::NvidiaPeermem);
        assert_eq!(auto_path(None, false), GdrPath::DmaBuf);
        assert_eq!(auto_path(Some(false), false), GdrPath::None);
    }

    #[test]
    fn kernel_releases_parse() {
        assert_eq!(kernel_version("6.1.0-18-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("5.4.0"), Some((5, 4)));
        assert!(kernel_version("5.4.0").unwrap() < DMA_BUF_MINIMUM_KERNEL);
        assert_eq!(kernel_version("unknown"), None);
    }

    fn open_driver() -> NvidiaDriver {
        NvidiaDriver {
            loaded: true,
            version: Some("550.54.15".into()),
            open_kernel_module: Some(true),
            ..Default::default()
        }
    }

    #[test]
    fn proprietary_module_blocks_dma_buf_and_falls_back_to_peermem() {
        let driver = NvidiaDriver { open_kernel_module: Some(false), peermem_loaded: true, ..open_driver() };
        let cuda = CudaFacts::NotQueried { reason: "test".into() };
        let assessment = GpuDirect::assess(&driver, &[], &cuda, Some("6.8.0"));
        assert_eq!(assessment.dma_buf_usable, Some(false));
        assert_eq!(assessment.auto, GdrPath::NvidiaPeermem);
        assert!(assessment.dma_buf_blockers[0].contains("proprietary"), "{:?}", assessment.dma_buf_blockers);
    }

    #[test]
    fn open_module_without_cuda_is_unconfirmed() {
        let cuda = CudaFacts::Unavailable { reason: "libcuda.so not found".into() };
        let assessment = GpuDirect::assess(&open_driver(), &[], &cuda, Some("6.8.0"));
        assert_eq!(assessment.dma_buf_usable, None);
        assert_eq!(assessment.auto, GdrPath::DmaBuf);
    }
}
