//! Which GPU `--gpu N` means: CUDA's device order, as the environment sets it.
//!
//! `--gpu N` is a CUDA device index. CUDA numbers the GPUs it can see (`CUDA_VISIBLE_DEVICES`
//! hides the others and renumbers the rest from 0) in `CUDA_DEVICE_ORDER`: `FASTEST_FIRST`, the
//! default, which can differ from the PCI bus order that `nvidia-smi`, `lspci` and the NIC
//! topology use; `PCI_BUS_ID` makes the two the same. The CUDA driver reads both variables when it
//! initialises, so gdrperf honours them by leaving them alone, and says which order applied next
//! to every GPU index, with the bus id (domain included: `0000:19:00.0`).

/// The two variables as this process saw them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuOrder {
    pub device_order: Option<String>,
    pub visible_devices: Option<String>,
}

impl GpuOrder {
    /// From this process's environment.
    pub fn from_env() -> GpuOrder {
        GpuOrder::new(
            std::env::var("CUDA_DEVICE_ORDER").ok().as_deref(),
            std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
        )
    }

    pub fn new(device_order: Option<&str>, visible_devices: Option<&str>) -> GpuOrder {
        GpuOrder {
            device_order: device_order.map(str::to_string),
            visible_devices: visible_devices.map(str::to_string),
        }
    }

    /// Whether CUDA's indices follow the PCI bus order (among the visible GPUs).
    pub fn is_pci_bus_order(&self) -> bool {
        self.device_order.as_deref().is_some_and(|order| order.trim() == "PCI_BUS_ID")
    }

    /// For a run header: "CUDA order = PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID); all GPUs
    /// visible".
    pub fn describe(&self) -> String {
        let order = match self.device_order.as_deref().map(str::trim) {
            Some("PCI_BUS_ID") => "CUDA order = PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)".to_string(),
            Some("FASTEST_FIRST") => {
                "CUDA order, fastest first (CUDA_DEVICE_ORDER=FASTEST_FIRST; may differ from PCI bus order)"
                    .to_string()
            }
            None | Some("") => {
                "CUDA order, fastest first (CUDA_DEVICE_ORDER unset; may differ from PCI bus order: set PCI_BUS_ID to match nvidia-smi)".to_string()
            }
            Some(other) => format!(
                "CUDA order, fastest first (CUDA_DEVICE_ORDER={other} is not FASTEST_FIRST or PCI_BUS_ID; CUDA ignores it)"
            ),
        };
        let visible = match self.visible_devices.as_deref() {
            None => "all GPUs visible".to_string(),
            Some(list) => format!("CUDA_VISIBLE_DEVICES={list}: indices count the visible GPUs only"),
        };
        format!("{order}; {visible}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_named_as_the_environment_sets_it() {
        let unset = GpuOrder::new(None, None);
        assert!(!unset.is_pci_bus_order());
        assert!(unset.describe().starts_with("CUDA order, fastest first (CUDA_DEVICE_ORDER unset"));
        assert!(unset.describe().ends_with("; all GPUs visible"));
        let bus = GpuOrder::new(Some("PCI_BUS_ID"), Some("2,3"));
        assert!(bus.is_pci_bus_order());
        assert_eq!(
            bus.describe(),
            "CUDA order = PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID); CUDA_VISIBLE_DEVICES=2,3: indices count the visible GPUs only"
        );
        assert!(GpuOrder::new(Some("pci"), None).describe().contains("CUDA_DEVICE_ORDER=pci is not"));
        assert!(GpuOrder::new(Some("FASTEST_FIRST"), None).describe().contains("may differ"));
    }
}
