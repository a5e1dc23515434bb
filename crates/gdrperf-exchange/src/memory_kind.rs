//! Where a side's benchmark buffers live, as one typed value: parsed from `--mem` (by the
//! options, from [`MemoryKind::ALL`] and the labels), carried in the hello (serde, kebab-case:
//! "host", "cuda", "cuda-staged", "host-staged"), and asked by the harness, never compared as
//! text.

/// Where a side's benchmark buffers live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    #[default]
    Host,
    Cuda,
    CudaStaged,
    /// Host payload staged through a second host buffer: the staged code path without a GPU,
    /// for tests (accepted by `--mem`, not listed in its help).
    HostStaged,
}

impl MemoryKind {
    /// Every kind, in the order `--mem`'s help lists them.
    pub const ALL: [MemoryKind; 4] =
        [MemoryKind::Host, MemoryKind::Cuda, MemoryKind::CudaStaged, MemoryKind::HostStaged];

    /// The kind whose [`label`](Self::label) is `label`.
    pub fn from_label(label: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|kind| kind.label() == label)
    }

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
        for kind in MemoryKind::ALL {
            assert_eq!(MemoryKind::from_label(kind.label()), Some(kind));
        }
        assert_eq!(MemoryKind::from_label("gpu-staged"), None);
    }
}
