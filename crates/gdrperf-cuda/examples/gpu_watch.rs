//! What a soak's GPU watch sees, on every GPU of this host, while the GPUs copy both ways:
//!
//!   cargo run --release --example gpu_watch                (3 intervals of 2 s)
//!   cargo run --release --example gpu_watch -- 5 10        (5 intervals of 10 s)
//!
//! The GPUs are found through CUDA (bus id, UUID) and then through NVML by the same bus id,
//! as `gdrperf accept --soak` finds a lane's GPU from the PCIe topology. Each interval: one
//! NVML reading, pinned copies host<->GPU both ways for the interval's length, another reading;
//! then the readings and what moved between them (`gpu_watch::changes`: XIDs, PCIe replays and
//! hardware slowdowns as errors; the power cap and thermal limits as "held back").
//! Without NVML it says why and exits 1; without libcuda, likewise.

use std::time::{Duration, Instant};

use gdrperf_cuda::gpu_watch::{changes, GpuReading, GpuWatch};
use gdrperf_cuda::{CopyBench, Cuda, HostMemory};

type AnyError = Box<dyn std::error::Error>;

const COPY_BYTES: usize = 64 << 20;

fn main() {
    if let Err(error) = run() {
        eprintln!("gpu_watch: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), AnyError> {
    let mut words = std::env::args().skip(1);
    let intervals: usize = words.next().map_or(Ok(3), |word| word.parse())?;
    let seconds: f64 = words.next().map_or(Ok(2.0), |word| word.parse())?;
    let cuda = Cuda::load()?;
    let gpus = cuda.gpus()?;
    if gpus.is_empty() {
        return Err("CUDA sees no GPU".into());
    }
    let bus_ids: Vec<String> = gpus.iter().map(|gpu| gpu.bus_id.to_string()).collect();
    for gpu in &gpus {
        println!(
            "GPU {} {} at {} uuid {}",
            gpu.index,
            gpu.name,
            gpu.bus_id,
            gpu.uuid.as_deref().unwrap_or("-")
        );
    }
    let watch = GpuWatch::open(&bus_ids.iter().map(String::as_str).collect::<Vec<_>>())?;
    println!("watch: {}", watch.description());
    let mut benches = Vec::new();
    for gpu in &gpus {
        benches.push(CopyBench::new(&cuda.open_gpu(gpu.index)?, COPY_BYTES)?);
    }
    let mut before = watch.read();
    for interval in 0..intervals {
        let started = Instant::now();
        let mut moved_bytes = 0u64;
        while started.elapsed() < Duration::from_secs_f64(seconds) {
            for bench in &mut benches {
                moved_bytes += bench.bidirectional_bandwidth(HostMemory::Pinned, COPY_BYTES, 8)?.bytes;
            }
        }
        let rate = moved_bytes as f64 / started.elapsed().as_secs_f64() / 1e9;
        let after = watch.read();
        println!("interval {interval}: {rate:.1} GB/s copied (all GPUs, both ways)");
        for (bus_id, reading) in &after {
            let old = before.get(bus_id).cloned().unwrap_or_default();
            let moved = changes(&old, reading);
            println!("  {bus_id}: {}", describe(reading));
            println!("  {bus_id}: errors {:?}; held back {:?}", moved.errors, moved.held_back);
        }
        before = after;
    }
    Ok(())
}

/// The raw reading on one line: what a soak's interval judgement starts from.
fn describe(reading: &GpuReading) -> String {
    let number = |value: Option<u64>| value.map_or("-".to_string(), |value| value.to_string());
    format!(
        "throttle reasons {}, power violation {} ns, thermal violation {} ns, PCIe replays {}, XIDs {:?}, unread {:?}",
        reading.throttle_reasons.map_or("-".to_string(), |bits| format!("{bits:#x}")),
        number(reading.power_violation_ns),
        number(reading.thermal_violation_ns),
        number(reading.pcie_replays),
        reading.xids,
        reading.unread
    )
}
