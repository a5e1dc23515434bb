//! Where a side's benchmark buffers live, as one typed value: parsed from `--mem`, carried in
//! the hello (serde, kebab-case: "host", "cuda", "cuda-staged", "host-staged"), and asked by the
//! harness, never compared as text.

/// Where a side's benchmark buffers live.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    #[default]
    Host,
    Cuda,
    CudaStaged,
    /// Host payload staged through a second host buffer: the staged code path without a GPU,
    /// for tests.
    #[value(hide = true)]
    HostStaged,
}

impl MemoryKind {
    /// Whether the payload lives in GPU memory (and so takes a GPU from `--gpu`).
    pub fn is_on_gpu(self) -> bool {
        matches!(self, MemoryKind::Cuda | MemoryKind::CudaStaged)
    }

    /// Whether the payload is reached through a bounce buffer (the engines copy every message).
    pub fn is_staged(self) -> bool {
        matches!(self, MemoryKind::CudaStaged | MemoryKind::HostStaged)
    }

    pub fn label(self) -> &'static str {
        match self {
            MemoryKind::Host => "host",
            MemoryKind::Cuda => "cuda",
            MemoryKind::CudaStaged => "cuda-staged",
            MemoryKind::HostStaged => "host-staged",
        }
    }
}

impl std::fmt::Display for MemoryKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crosses_the_exchange_as_its_label_and_refuses_unknown_kinds() {
        for kind in [MemoryKind::Host, MemoryKind::Cuda, MemoryKind::CudaStaged, MemoryKind::HostStaged] {
            let text = serde_json::to_string(&kind).unwrap();
            assert_eq!(text, format!("\"{}\"", kind.label()));
            assert_eq!(serde_json::from_str::<MemoryKind>(&text).unwrap(), kind);
        }
        assert!(serde_json::from_str::<MemoryKind>("\"gpu-staged\"").is_err());
    }
}
