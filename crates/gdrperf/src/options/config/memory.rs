//! Where a side's buffers live (`--mem`, `--gpu`, `--gpu-bus-id`, `--gdr`,
//! `--disable_pcie_relaxed`), checked before anything is opened.

use crate::error::ConfigError;
use crate::options::args::{CommonArgs, GdrPath, MemoryKind};
use gdrperf_cuda::GpuSelection;

/// Where this side's buffers live; each side chooses its own. A list of kinds and GPUs is a
/// sweep: [`crate::options::placement::placements`] turns it into placements once CUDA is loaded.
#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// `--mem`, in the order given.
    pub kinds: Vec<MemoryKind>,
    /// The GPUs for the cuda kinds (parsed, checked against the machine when CUDA is loaded).
    pub gpu: GpuSelection,
    pub gdr: GdrPath,
    /// Whether registrations ask for PCIe relaxed ordering (`--disable_pcie_relaxed` says no).
    pub relaxed_ordering: crate::verbs::RelaxedOrdering,
}

impl MemoryConfig {
    pub(super) fn from_args(args: &CommonArgs) -> Result<MemoryConfig, ConfigError> {
        let gpu = match (&args.gpu, &args.gpu_bus_id) {
            // A GPU may repeat (lanes on one GPU); `check_repeated_gpus` asks a NIC per repeat.
            (Some(text), _) => GpuSelection::parse_lanes(text)
                .map_err(|error| ConfigError::malformed("--gpu", text, error))?,
            (None, Some(text)) => GpuSelection::parse_bus_id(text)
                .map_err(|error| ConfigError::malformed("--gpu-bus-id", text, error))?,
            (None, None) => GpuSelection::Indices(vec![0]),
        };
        let kinds = args.mem.clone();
        if kinds.is_empty() {
            return Err(ConfigError::conflict("--mem", "needs a kind: host, cuda or cuda-staged"));
        }
        if let Some(twice) =
            kinds.iter().enumerate().find(|(at, kind)| kinds[..*at].contains(kind)).map(|(_, kind)| kind)
        {
            return Err(ConfigError::conflict("--mem", format!("lists {} twice", twice.label())));
        }
        let gpu_given = args.gpu.is_some() || args.gpu_bus_id.is_some();
        let any_gpu = kinds.iter().any(|&kind| kind.is_on_gpu());
        if !any_gpu && (gpu_given || args.gdr != GdrPath::Auto) {
            return Err(ConfigError::conflict(
                "--gpu, --gpu-bus-id and --gdr",
                "apply to GPU memory: add --mem cuda",
            ));
        }
        if !kinds.contains(&MemoryKind::Cuda) && args.gdr != GdrPath::Auto {
            return Err(ConfigError::conflict(
                "--gdr",
                "does not apply to cuda-staged: the NIC only touches pinned host memory there",
            ));
        }
        let relaxed_ordering = if args.disable_pcie_relaxed {
            crate::verbs::RelaxedOrdering::Off
        } else {
            crate::verbs::RelaxedOrdering::Asked
        };
        Ok(MemoryConfig { kinds, gpu, gdr: args.gdr, relaxed_ordering })
    }
}
