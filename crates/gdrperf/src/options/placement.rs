//! Where one side's buffers live, GPU by GPU and NIC by NIC, for a whole run.
//!
//! `--mem host,cuda,cuda-staged --gpu 0,1` asks for every combination in one run, so that
//! "GPUDirect vs staged vs host" is one command and one CSV. The checked configuration keeps the
//! request as the user wrote it ([`MemoryConfig`]); turning `--gpu all` into indices needs the
//! CUDA driver, so the list of [`Placement`]s is built at run time, once, by [`plan`].
//!
//! A run steps through the placements one after the other (a *round* each: the whole size sweep
//! on fresh QPs and buffers), or with `--concurrent` runs them at the same time, one *lane* (a
//! thread, a control connection, QPs and buffers) each. Each side plans its own list; the two
//! lists pair up in order, and a side with one placement uses it against every one of the
//! peer's ([`pair_count`]).

use crate::error::{ConfigError, Error, Result};
use crate::options::args::MemoryKind;
use crate::options::config::{BenchConfig, MemoryConfig};

/// One arrangement of this side's memory: the kind, the GPU it lives on, the NIC it goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub kind: MemoryKind,
    /// CUDA device index for the GPU kinds.
    pub gpu: Option<usize>,
    /// The RDMA device (`None`: the first one listed; `auto`: nearest to `near_gpu`).
    pub device: Option<String>,
    /// The GPU whose nearest NIC `-d auto` picks: the placement's own, or for host memory in a
    /// run with GPUs the first of them (the host baseline then crosses the same NIC).
    pub near_gpu: Option<usize>,
}

impl Placement {
    /// "host", "cuda:1", "cuda-staged:0", with "@mlx5_1" when a device was named.
    pub fn label(&self) -> String {
        let mut label = self.kind.label().to_string();
        if let Some(gpu) = self.gpu {
            label.push_str(&format!(":{gpu}"));
        }
        if let Some(device) = &self.device {
            label.push_str(&format!("@{device}"));
        }
        label
    }
}

/// The labels of `placements`, in order: what a side announces in its hello and headers.
pub fn labels(placements: &[Placement]) -> Vec<String> {
    placements.iter().map(Placement::label).collect()
}

/// This side's placements, in the order the run visits them: kinds in the order given; a GPU
/// kind once per selected GPU; host memory once per listed device (once when none is listed).
///
/// `-d` pairs with the GPUs in order when it lists as many devices as there are GPUs (one NIC
/// per GPU, as on a DGX-like node); a single device serves every placement.
pub fn placements(config: &BenchConfig) -> Result<Vec<Placement>> {
    let gpus = match config.memory.kinds.iter().any(|&kind| kind.is_on_gpu()) {
        true => gdrperf_cuda::Cuda::load()?.resolve(&config.memory.gpu)?,
        false => Vec::new(),
    };
    placements_with(&config.memory, &config.devices, &gpus)
}

/// [`placements`] once the GPU selection is resolved to `gpus` (CUDA device indices).
pub fn placements_with(memory: &MemoryConfig, devices: &[String], gpus: &[usize]) -> Result<Vec<Placement>> {
    let device_for_gpu = |position: usize| -> Result<Option<String>> {
        match devices.len() {
            0 => Ok(None),
            1 => Ok(Some(devices[0].clone())),
            count if count == gpus.len() => Ok(Some(devices[position].clone())),
            count => Err(ConfigError::conflict(
                "-d/--ib-dev",
                format!(
                    "lists {count} devices for {} GPUs: give one device, or one per GPU in the order of --gpu",
                    gpus.len()
                ),
            )
            .into()),
        }
    };
    let mut placements = Vec::new();
    for &kind in &memory.kinds {
        if kind.is_on_gpu() {
            for (position, &gpu) in gpus.iter().enumerate() {
                placements.push(Placement {
                    kind,
                    gpu: Some(gpu),
                    device: device_for_gpu(position)?,
                    near_gpu: Some(gpu),
                });
            }
        } else if devices.is_empty() {
            placements.push(Placement { kind, gpu: None, device: None, near_gpu: None });
        } else {
            for device in devices {
                let near_gpu = gpus.first().copied();
                if device == "auto" && near_gpu.is_none() {
                    // `BenchConfig::from_args` refuses `-d auto` without a GPU kind in --mem.
                    return Err(Error::Internal(crate::error::InternalError::AutoDeviceWithoutGpu {
                        memory: kind,
                    }));
                }
                placements.push(Placement { kind, gpu: None, device: Some(device.clone()), near_gpu });
            }
        }
    }
    if placements.is_empty() {
        return Err(Error::Internal(crate::error::InternalError::NothingToRun));
    }
    Ok(placements)
}

/// How many rounds (or lanes) a run with these two lists makes: as many as the longer list, when
/// the lists are equally long or one of them has a single placement (it then serves every one of
/// the other's). Anything else cannot pair up, and both sides say so in the same words.
/// The most rounds (or lanes) a peer may ask of this side beyond its own list. No source: a
/// chosen bound, 4x the 16 GPUs and 16 NICs of the largest nodes we know (8-GPU HGX boards and
/// 16-GPU systems), so a real run never meets it while a hostile client claiming 10^5 placements
/// cannot make the server build 10^5 contexts, QPs and registered buffers.
pub const MAX_PAIRS: usize = 64;

pub fn pair_count(ours: &[String], theirs: &[String]) -> std::result::Result<usize, ConfigError> {
    // A peer that sent no list runs one placement.
    let (our_count, their_count) = (ours.len().max(1), theirs.len().max(1));
    if their_count > our_count.max(MAX_PAIRS) {
        return Err(ConfigError::TooManyPlacements {
            ours: our_count,
            theirs: their_count,
            limit: MAX_PAIRS,
        });
    }
    if our_count == their_count || our_count == 1 || their_count == 1 {
        return Ok(our_count.max(their_count));
    }
    Err(ConfigError::Placements { ours: ours.to_vec(), theirs: theirs.to_vec() })
}

/// The placement a side uses in round (or lane) `index`: its own in order, or its only one.
pub fn placement_for(placements: &[Placement], index: usize) -> &Placement {
    if placements.len() == 1 {
        &placements[0]
    } else {
        &placements[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::args::GdrPath;
    use gdrperf_cuda::GpuSelection;

    fn memory(kinds: &[MemoryKind]) -> MemoryConfig {
        MemoryConfig {
            kinds: kinds.to_vec(),
            gpu: GpuSelection::Indices(vec![0]),
            gdr: GdrPath::Auto,
            relaxed_ordering: crate::verbs::RelaxedOrdering::Asked,
        }
    }

    #[test]
    fn every_kind_meets_every_gpu_and_host_memory_appears_once() {
        let all = memory(&[MemoryKind::Host, MemoryKind::Cuda, MemoryKind::CudaStaged]);
        let placements = placements_with(&all, &[], &[0, 1]).unwrap();
        assert_eq!(labels(&placements), ["host", "cuda:0", "cuda:1", "cuda-staged:0", "cuda-staged:1"]);
    }

    #[test]
    fn devices_pair_with_gpus_in_order_or_serve_all() {
        let cuda = memory(&[MemoryKind::Cuda]);
        let paired = placements_with(&cuda, &["mlx5_0".into(), "mlx5_1".into()], &[2, 3]).unwrap();
        assert_eq!(labels(&paired), ["cuda:2@mlx5_0", "cuda:3@mlx5_1"]);
        let one = placements_with(&cuda, &["mlx5_4".into()], &[0, 1]).unwrap();
        assert_eq!(labels(&one), ["cuda:0@mlx5_4", "cuda:1@mlx5_4"]);
        let error =
            placements_with(&cuda, &["a".into(), "b".into(), "c".into()], &[0, 1]).unwrap_err().to_string();
        assert!(error.contains("3 devices for 2 GPUs"), "{error}");
    }

    #[test]
    fn host_memory_runs_once_per_listed_device_and_refuses_auto() {
        let host = memory(&[MemoryKind::Host]);
        assert_eq!(
            labels(&placements_with(&host, &["rxe0".into(), "rxe1".into()], &[]).unwrap()),
            ["host@rxe0", "host@rxe1"]
        );
        // The configuration refuses -d auto without GPU memory (config::tests); a plan that
        // got one anyway says so instead of guessing a device.
        let error = placements_with(&host, &["auto".into()], &[]).unwrap_err();
        assert!(
            matches!(error, Error::Internal(crate::error::InternalError::AutoDeviceWithoutGpu { .. })),
            "{error}"
        );
        // Beside GPU kinds, host memory takes the NIC nearest to the first GPU.
        let modes =
            placements_with(&memory(&[MemoryKind::Host, MemoryKind::Cuda]), &["auto".into()], &[3, 1])
                .unwrap();
        assert_eq!(labels(&modes), ["host@auto", "cuda:3@auto", "cuda:1@auto"]);
        let near: Vec<Option<usize>> = modes.iter().map(|placement| placement.near_gpu).collect();
        assert_eq!(near, [Some(3), Some(3), Some(1)]);
    }

    #[test]
    fn lists_pair_when_equal_or_when_one_side_has_one() {
        let list = |n: usize| (0..n).map(|i| format!("cuda:{i}")).collect::<Vec<_>>();
        assert_eq!(pair_count(&list(3), &list(3)), Ok(3));
        assert_eq!(pair_count(&list(1), &list(5)), Ok(5));
        assert_eq!(pair_count(&list(4), &[]), Ok(4), "a peer without a list runs one placement");
        assert_eq!(pair_count(&list(1), &list(MAX_PAIRS)), Ok(MAX_PAIRS));
        let refused = pair_count(&list(1), &list(100_000)).unwrap_err().to_string();
        assert!(
            refused.starts_with("the peer lists 100000 memory placements and this side 1; at most 64"),
            "{refused}"
        );
        assert!(!refused.contains("  "), "one line, no gap of spaces: {refused}");
        let error = pair_count(&list(2), &list(3)).unwrap_err();
        assert!(matches!(&error, ConfigError::Placements { ours, .. } if ours.len() == 2), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("list 2 and 3") && message.contains("[cuda:0, cuda:1]"), "{message}");
        let single = [Placement { kind: MemoryKind::Host, gpu: None, device: None, near_gpu: None }];
        assert_eq!(placement_for(&single, 4).label(), "host");
    }

    #[test]
    fn each_lane_on_one_gpu_goes_through_its_own_nic() {
        // `repeated_gpus` checked that each entry has a NIC of its own; the plan pairs them.
        let cuda = memory(&[MemoryKind::Cuda]);
        let planned = placements_with(&cuda, &["simulated0".into(), "simulated1".into()], &[0, 0]).unwrap();
        assert_eq!(labels(&planned), ["cuda:0@simulated0", "cuda:0@simulated1"]);
    }
}
