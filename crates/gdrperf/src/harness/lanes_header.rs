//! How a `--concurrent` run describes its lanes in the run header and files: the same words on
//! the server and the client, so that either side's output says which lanes share a GPU.

use crate::harness::session::Session;
use crate::options::placement::{placement_for, Placement};
use crate::output::{HeaderLine, RunStart};

/// The lanes in a run's header and files, the same on both sides: the first header line,
/// `Lanes`, lists each lane's devices and memory and then the GPUs several lanes share; the
/// metadata's `lanes` holds each lane's particulars.
pub(crate) fn describe_lanes(run: &mut RunStart, sessions: &[Session], placements: &[Placement]) {
    run.metadata["lanes"] = serde_json::Value::Array(sessions.iter().map(lane_metadata).collect());
    let descriptions: Vec<String> = sessions.iter().map(lane_description).collect();
    let gpus: Vec<Option<usize>> =
        (0..sessions.len()).map(|lane| placement_for(placements, lane).gpu).collect();
    run.header.insert(0, lanes_line(&descriptions, &gpus));
}

/// The `Lanes` header line of lanes described by `descriptions`, on `gpus` (one per lane).
fn lanes_line(descriptions: &[String], gpus: &[Option<usize>]) -> HeaderLine {
    let mut parts = descriptions.to_vec();
    parts.extend(shared_gpus(gpus));
    HeaderLine::new("Lanes", format!("{} at once: {}", descriptions.len(), parts.join("; ")))
}

fn lane_description(session: &Session) -> String {
    let local = session
        .local
        .buffers
        .first()
        .and_then(|buffer| buffer.gpu_description())
        .unwrap_or_else(|| "host".into());
    format!(
        "{} {} <-> {} {}",
        session.local.device.name(),
        local,
        session.peer.side.device,
        session.peer.side.memory
    )
}

/// "lanes 0+1 share GPU 0 (its PCIe link counted once in the all row's ceiling)" for each GPU
/// that several lanes use (each with a NIC of its own, as `--gpu 0,0 -d a,b` plans them): their
/// figures are not those of lanes with a GPU each, and the header says so.
fn shared_gpus(gpus: &[Option<usize>]) -> Vec<String> {
    let mut seen: Vec<usize> = Vec::new();
    let mut lines = Vec::new();
    for gpu in gpus.iter().flatten() {
        if seen.contains(gpu) {
            continue;
        }
        seen.push(*gpu);
        let lanes: Vec<String> = gpus
            .iter()
            .enumerate()
            .filter(|(_, other)| **other == Some(*gpu))
            .map(|(lane, _)| lane.to_string())
            .collect();
        if lanes.len() > 1 {
            lines.push(format!(
                "lanes {} share GPU {gpu} (its PCIe link counted once in the all row's ceiling)",
                lanes.join("+")
            ));
        }
    }
    lines
}

fn lane_metadata(session: &Session) -> serde_json::Value {
    serde_json::json!({
        "device": session.local.device.name(),
        "memory": session.memory(),
        "gpu": session.local.buffers.first().and_then(|buffer| buffer.gpu_description()),
        "peer": session.peer.side,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_sharing_a_gpu_are_named_once_per_gpu() {
        assert_eq!(
            shared_gpus(&[Some(0), Some(0)]),
            ["lanes 0+1 share GPU 0 (its PCIe link counted once in the all row's ceiling)"]
        );
        let mixed = shared_gpus(&[Some(1), Some(0), Some(1), Some(0), Some(2)]);
        assert_eq!(mixed.len(), 2, "{mixed:?}");
        assert!(
            mixed[0].starts_with("lanes 0+2 share GPU 1") && mixed[1].starts_with("lanes 1+3 share GPU 0"),
            "{mixed:?}"
        );
        assert!(shared_gpus(&[Some(0), Some(1)]).is_empty(), "a GPU each: nothing shared");
        assert!(shared_gpus(&[None, None]).is_empty(), "host memory: no GPU to share");
    }

    #[test]
    fn the_lanes_line_names_the_shared_gpu_after_the_lanes() {
        let descriptions =
            ["mlx5_0 cuda:0 <-> mlx5_0 host".to_string(), "mlx5_1 cuda:0 <-> mlx5_1 host".to_string()];
        let line = lanes_line(&descriptions, &[Some(0), Some(0)]);
        assert_eq!(line.name, "Lanes");
        assert_eq!(
            line.value,
            "2 at once: mlx5_0 cuda:0 <-> mlx5_0 host; mlx5_1 cuda:0 <-> mlx5_1 host; \
             lanes 0+1 share GPU 0 (its PCIe link counted once in the all row's ceiling)"
        );
        let apart = lanes_line(&descriptions, &[Some(0), Some(1)]);
        assert!(!apart.value.contains("share"), "{}", apart.value);
    }
}
