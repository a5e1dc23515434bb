//! `inventory.json` of an acceptance folder: what the run ran on. Sysfs and procfs
//! facts come from `gdrperf_topology::identity` (tested on fixture trees there); what only CUDA
//! knows comes from the doctor's report. CUDA absent is said in the file, not an error.

use std::path::Path;

use anyhow::Context;
use gdrperf_doctor::{CudaFacts, Report};
use gdrperf_topology::identity::NodeIdentity;
use gdrperf_topology::SysRoot;
use serde_json::{json, Value};

/// The file's name in the acceptance folder; `gdrperf compare` and the HTML report read it.
pub const FILE_NAME: &str = gdrperf_report::report_inventory::FILE_NAME;

/// Reads the node under `sysfs_root`, adds CUDA's facts from the doctor's report, and writes
/// `inventory.json` into `folder`.
pub fn write(folder: &Path, sysfs_root: &Path, doctor: &Report) -> anyhow::Result<Value> {
    let sys = SysRoot::open(sysfs_root)?;
    let identity = NodeIdentity::read(&sys);
    let inventory = json!({
        "node": identity,
        "cuda": cuda_summary(&doctor.cuda),
        "cuda_gpus": doctor.gpus.iter().map(|gpu| json!({
            "bus_id": gpu.bus_id,
            "label": gpu.label,
            "cuda_ordinal": gpu.cuda_ordinal,
            "name": gpu.name,
        })).collect::<Vec<_>>(),
        "sysfs_root": sysfs_root.display().to_string(),
        "gdrperf_version": env!("CARGO_PKG_VERSION"),
        "git_commit": gdrperf_provenance::GIT_COMMIT,
    });
    let path = folder.join(FILE_NAME);
    let text = serde_json::to_string_pretty(&inventory)? + "\n";
    gdrperf_files::write_file(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(inventory)
}

/// The CUDA driver's version (`12.8` from 12080) or why there is none.
fn cuda_summary(cuda: &CudaFacts) -> Value {
    match cuda {
        CudaFacts::Available { driver_api_version: version, .. } => {
            json!({"version": format!("{}.{}", version / 1000, (version % 1000) / 10), "absent": null})
        }
        CudaFacts::NotQueried { reason } | CudaFacts::Unavailable { reason } => {
            json!({"version": null, "absent": reason})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_version_is_spelled_as_nvidia_smi_does_or_its_absence_said() {
        let available = cuda_summary(&CudaFacts::Available { driver_api_version: 12080, gpus: Vec::new() });
        assert_eq!(available["version"], "12.8");
        let missing = cuda_summary(&CudaFacts::Unavailable { reason: "libcuda.so.1 not found".into() });
        assert_eq!(missing["version"], Value::Null);
        assert_eq!(missing["absent"], "libcuda.so.1 not found");
    }
}
