//! A GPU listed more than once in `--gpu`: several lanes (or rounds) on one GPU, each with a NIC
//! of its own. Checked with the rest of the configuration, before CUDA is loaded, since it needs
//! only `--gpu` and `-d`; [`crate::options::placement`] then pairs each entry with its NIC.

use crate::error::ConfigError;
use gdrperf_cuda::GpuSelection;

/// Refuses a GPU listed more than once in `--gpu` unless each of its entries has a NIC of its
/// own in `-d`, as lanes on one GPU need.
///
/// Real nodes pair two NIC ports with one GPU (two rails per GPU, or a dual-port NIC behind the
/// GPU's PCIe switch), so `-d mlx5_0,mlx5_1 --gpu 0,0` is a configuration worth measuring: two
/// lanes (or rounds), each with its own NIC, buffers and streams on the shared GPU. A repeated GPU
/// without a NIC per entry would be the same lane twice, which measures nothing new; so are `-d
/// auto` (one NIC, the nearest, for every entry) and a (GPU, NIC) pair listed twice.
pub(crate) fn check_repeated_gpus(
    gpu: &GpuSelection,
    devices: &[String],
) -> std::result::Result<(), ConfigError> {
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

/// The benches' rule for a GPU listed twice, on a bench command line that another program starts (`gdrperf slurm
/// -- BENCH ARGS`), checked there once before anything starts, so that a job is refused at once
/// rather than pair by pair on every node. Reads `--gpu` and `-d/--ib-dev` from `arguments` in
/// the forms the bench's parser takes (`--gpu 0,0`, `--gpu=0,0`, `-d a,b`, `-da,b`, `-d=a,b`,
/// `--ib-dev a`, repeated `-d` appending). A value holding a `{placeholder}` is only known once
/// each task fills it in, and a `--gpu` the bench would refuse as malformed gets the bench's own
/// message: both are left to the bench.
pub fn check_bench_arguments(arguments: &[String]) -> std::result::Result<(), ConfigError> {
    let mut gpu: Option<&str> = None;
    let mut devices: Vec<&str> = Vec::new();
    let mut rest = arguments.iter().map(String::as_str);
    while let Some(argument) = rest.next() {
        if argument == "--" {
            break;
        }
        let (flag, attached) = match argument.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") || flag == "-d" => (flag, Some(value)),
            _ if argument.starts_with("-d") && argument.len() > 2 => ("-d", Some(&argument[2..])),
            _ => (argument, None),
        };
        if !matches!(flag, "--gpu" | "-d" | "--ib-dev") {
            continue;
        }
        let Some(value) = attached.or_else(|| rest.next()) else { break };
        if value.contains('{') {
            return Ok(());
        }
        match flag {
            "--gpu" => gpu = Some(value),
            _ => devices.extend(value.split(',')),
        }
    }
    let Some(Ok(selection)) = gpu.map(GpuSelection::parse_lanes) else { return Ok(()) };
    if devices.iter().any(|device| device.trim().is_empty()) {
        return Ok(());
    }
    let devices: Vec<String> = devices.iter().map(|device| device.trim().to_string()).collect();
    check_repeated_gpus(&selection, &devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bench_command_line_is_read_as_the_bench_reads_it() {
        let check = |line: &str| {
            let arguments: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            check_bench_arguments(&arguments).map_err(|error| error.to_string())
        };
        for accepted in [
            "--mem cuda --gpu 0,0 -d mlx5_0,mlx5_1",
            "--mem cuda --gpu=0,0 --ib-dev=mlx5_0 -dmlx5_1",
            "--mem cuda --gpu 0,0 -d mlx5_0 --ib-dev mlx5_1",
            "--mem cuda --gpu 0,1 -d auto",
            "--mem cuda --gpu 0,0 -d {nic},{nic}",
            "--mem cuda --gpu {local},{local} -d mlx5_0",
            "--mem cuda --gpu-bus-id 0000:17:00.0 -d mlx5_0",
            "--mem cuda --gpu 0,x -d mlx5_0",
            "-a --validate",
        ] {
            assert_eq!(check(accepted), Ok(()), "{accepted}");
        }
        for (refused, expected) in [
            ("--mem cuda --gpu 0,0", "lists GPU 0 twice"),
            ("--mem cuda --gpu=0,0 -d=mlx5_0", "-d lists 1"),
            ("--concurrent --mem cuda --gpu 0,0 -d mlx5_0 -d mlx5_0", "pairs mlx5_0 with GPU 0 twice"),
            ("--mem cuda -d auto,mlx5_1 --gpu 0,0", "auto picks the one NIC nearest GPU 0"),
        ] {
            let error = check(refused).unwrap_err();
            assert!(error.contains(expected), "{refused}: {error}");
        }
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
    }
}
