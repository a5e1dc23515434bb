//! `gdrperf doctor`: can this node do GPUDirect RDMA, and which NIC goes with which GPU?
//!
//! The work is in the `gdrperf-doctor` library (sysfs topology, verdicts,
//! rendering); this module only turns flags into a sysfs root, asks CUDA for
//! the facts only CUDA knows, and prints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gdrperf_command_line::Verdict;
use gdrperf_doctor::{CudaFacts, CudaGpu};

const EXIT_CODES: &str = "\
Exit codes of gdrperf doctor:
  0  no FAIL: GPUDirect RDMA can work here; WARN lines (if any) say what costs speed or could
     not be confirmed (GPU and NIC not under one PCIe switch, IOMMU translating, CUDA not
     available to confirm GPU support, or a PCIe finding: a link or bridge trained below its
     ends, Max Payload Size differing along a path, Max Read Request below 4096 B, relaxed
     ordering off, ACS redirect, AER counts; see docs/findings.md)
  1  at least one FAIL (no GPU, no hardware RDMA NIC, no active port, no NVIDIA driver, GPU
     without GPUDirect support, no way to register GPU memory, a fatal AER count); with
     --strict, a WARN too
  2  the doctor could not examine the node (a --sysfs-root without sys/, say): no report
--json's top-level \"verdict\" spells the code as every gdrperf tool does: \"pass\" (0) or
\"fail\" (1); each line's \"level\" (OK, WARN, FAIL) is the finer word.";

/// Flags of `gdrperf doctor`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    /// Directory holding the sys/ and proc/ trees to examine: / for this machine,
    /// a fixture tree in tests. CUDA is asked only when this is /.
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
    /// Print one JSON document (the whole report) instead of the human report.
    #[arg(long)]
    json: bool,
    /// Do not load libcuda: GPU facts from sysfs alone.
    #[arg(long)]
    no_cuda: bool,
    /// Count a WARN as a miss (exit 1), for a gate that accepts only a node without findings.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut report = examine(&args.sysfs_root, args.no_cuda)?;
    if args.strict {
        report.exit_code = report.worst_level().strict_exit_code();
    }
    if args.json {
        let mut json = serde_json::to_value(&report).context("serializing the report")?;
        let verdict = if report.exit_code == 0 { Verdict::Pass } else { Verdict::Fail };
        if let Some(fields) = json.as_object_mut() {
            fields
                .insert("verdict".into(), serde_json::to_value(verdict).context("serializing the verdict")?);
        }
        println!("{}", serde_json::to_string_pretty(&json).context("serializing the report")?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::from(report.exit_code))
}

/// The doctor's report on the node under `sysfs_root`: what `gdrperf doctor` prints and what
/// `gdrperf accept` plans its runs from (the NICs, the GPUs, the NIC recommended for each).
pub fn examine(sysfs_root: &Path, no_cuda: bool) -> anyhow::Result<gdrperf_doctor::Report> {
    Ok(gdrperf_doctor::diagnose(sysfs_root, cuda_facts(sysfs_root, no_cuda))?)
}

/// What CUDA says about this machine's GPUs, or why it was not asked: CUDA
/// describes the running machine, so a fixture root must not be mixed with it.
fn cuda_facts(sysfs_root: &Path, no_cuda: bool) -> CudaFacts {
    if no_cuda {
        return CudaFacts::NotQueried { reason: "--no-cuda".to_string() };
    }
    let is_this_machine = std::fs::canonicalize(sysfs_root).is_ok_and(|root| root == Path::new("/"));
    if !is_this_machine {
        return CudaFacts::NotQueried {
            reason: format!("--sysfs-root {} is not this machine's /", sysfs_root.display()),
        };
    }
    let cuda = match gdrperf_cuda::Cuda::load() {
        Ok(cuda) => cuda,
        Err(error) => return CudaFacts::Unavailable { reason: error.to_string() },
    };
    match cuda.gpus() {
        Ok(gpus) => {
            let version = cuda.driver_version();
            CudaFacts::Available {
                driver_api_version: (version.major * 1000 + version.minor * 10) as i32,
                gpus: gpus
                    .into_iter()
                    .map(|gpu| CudaGpu {
                        ordinal: gpu.index as u32,
                        name: gpu.name,
                        pci_bus_id: gpu.bus_id.to_string(),
                        dma_buf_supported: gpu.gpudirect.dma_buf,
                        gpu_direct_rdma_supported: gpu.gpudirect.rdma,
                    })
                    .collect(),
            }
        }
        Err(error) => CudaFacts::Unavailable { reason: error.to_string() },
    }
}
