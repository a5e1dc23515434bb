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
use gdrperf_cuda::GpuSelection;

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

/// Refuses a GPU listed more than once in `--gpu` unless each of its entries has a NIC of its
/// own in `-d`, as lanes on one GPU need.
///
/// Real nodes pair two NIC ports with one GPU (two rails per GPU, or a dual-port NIC behind the
/// GPU's PCIe switch), so `-d mlx5_0,mlx5_1 --gpu 0,0` is a configuration worth measuring: two
/// lanes (or rounds), each with its own NIC, buffers and streams on the shared GPU. A repeated GPU
/// without a NIC per entry would be the same lane twice, which measures nothing new; so are `-d
/// auto` (one NIC, the nearest, for every entry) and a (GPU, NIC) pair listed twice.
pub fn check_repeated_gpus(gpu: &GpuSelection, devices: &[String]) -> std::result::Result<(), ConfigError> {
    let GpuSelection::Indices(indices) = gpu else { return Ok(()) };
    let Some(repeated) = indices
        .iter()
        .enumerate()
        .find(|(at, index)| indices[..*at].contains(index))
        .map(|(_, &index)| index)
    else {
        return Ok(());
    };
    let example = "e.g. -d mlx5_0,mlx5_1 --gpu 0,0 for two lanes on GPU 0";
    if devices.len() != indices.len() {
        return Err(ConfigError::conflict(
            "--gpu",
            format!(
                "lists GPU {repeated} twice: several lanes on one GPU need a NIC each, so -d/--ib-dev must list one device per --gpu entry, in its order ({example}); -d lists {}",
                devices.len()
            ),
        ));
    }
    for (at, (index, device)) in indices.iter().zip(devices).enumerate() {
        if indices.iter().filter(|&other| other == index).count() < 2 {
            continue;
        }
        if device == "auto" {
            return Err(ConfigError::conflict(
                "-d/--ib-dev",
                format!("auto picks the one NIC nearest GPU {index} for each of its lanes: name each lane's NIC ({example})"),
            ));
        }
        if indices[..at]
            .iter()
            .zip(devices)
            .any(|(other_index, other_device)| other_index == index && other_device == device)
        {
            return Err(ConfigError::conflict(
                "-d/--ib-dev",
                format!("pairs {device} with GPU {index} twice: each lane on one GPU needs a NIC of its own ({example})"),
            ));
        }
    }
    Ok(())
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
    fn a_gpu_listed_twice_needs_a_nic_of_its_own_per_lane() {
        let lanes = |gpu: &str| GpuSelection::parse_lanes(gpu).unwrap();
        let devices = |list: &[&str]| list.iter().map(|device| device.to_string()).collect::<Vec<_>>();
        // Two rails on GPU 0, and a mix of shared and single GPUs: accepted.
        assert_eq!(check_repeated_gpus(&lanes("0,0"), &devices(&["simulated0", "simulated1"])), Ok(()));
        assert_eq!(check_repeated_gpus(&lanes("0,1,0"), &devices(&["a", "b", "c"])), Ok(()));
        // No repeat: nothing to check here (the device count is the planner's).
        assert_eq!(check_repeated_gpus(&lanes("0,1"), &devices(&["auto"])), Ok(()));
        assert_eq!(check_repeated_gpus(&GpuSelection::All, &[]), Ok(()));
        for (gpu, listed, expected) in [
            ("0,0", &[][..], "lists GPU 0 twice: several lanes on one GPU need a NIC each"),
            ("0,0", &["simulated0"][..], "-d lists 1"),
            ("1,0,1", &["a", "b"][..], "lists GPU 1 twice"),
            ("0,0", &["simulated0", "simulated0"][..], "pairs simulated0 with GPU 0 twice"),
            ("0,0", &["auto", "mlx5_1"][..], "auto picks the one NIC nearest GPU 0"),
        ] {
            let error = check_repeated_gpus(&lanes(gpu), &devices(listed)).unwrap_err().to_string();
            assert!(error.contains(expected), "--gpu {gpu} -d {listed:?}: {error}");
            assert!(error.contains("-d mlx5_0,mlx5_1 --gpu 0,0"), "the message shows how: {error}");
        }
        // Planned, each lane on GPU 0 goes through its own NIC.
        let cuda = memory(&[MemoryKind::Cuda]);
        let planned = placements_with(&cuda, &devices(&["simulated0", "simulated1"]), &[0, 0]).unwrap();
        assert_eq!(labels(&planned), ["cuda:0@simulated0", "cuda:0@simulated1"]);
    }
}
