//! Every GPU of this host at once, in one process, one thread each: no MPI, no launcher.
//!
//!   cargo run --release --example several_gpus                 (every GPU, each with its nearest NIC)
//!   cargo run --release --example several_gpus -- mlx5_0,mlx5_1  (GPU i uses the i-th NIC named)
//!   cargo run --release --example several_gpus -- --host 2 rxe0  (two lanes in host memory, no GPU)
//!
//! Each thread is a *lane* that owns everything it touches: its GPU's CUDA context (made current
//! on the thread), its NIC's device context and protection domain, a completion queue, two QPs
//! connected to each other through the NIC, and two buffers in its GPU's memory. The NIC then
//! copies one buffer into the other by RDMA WRITE (GPU memory -> NIC -> GPU memory, the path
//! GPUDirect RDMA takes between hosts) while the other lanes do the same on their GPUs. Nothing
//! is shared on the data path, which is the whole trick of driving several GPUs from one process:
//! the verbs and CUDA calls of one lane are exactly those of `gpudirect_write.rs`.

use std::sync::Arc;
use std::time::Instant;

use gdrperf_cuda::{Cuda, Gpu, GpuBuffer, GpuSelection};
use gdrperf_verbs::{
    CompletionQueue, Device, HostBuffer, MemoryRegion, Operation, PathSettings, ProtectionDomain,
};
use gdrperf_verbs::{
    DmaBufRange, Inline, QueuePairSizes, RcQueuePair, RelaxedOrdering, RemoteAccess, SendRequest,
};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

const LEN: usize = 1 << 20;
const WRITES: usize = 50;

/// Where a lane's two buffers live.
enum Memory {
    Gpu(Gpu),
    Host,
}

/// A buffer the NIC may read or write, and what it takes to fill and inspect it.
enum Buffer {
    Gpu(GpuBuffer),
    Host(HostBuffer),
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), AnyError> {
    // args_os, not args: an argument that is not UTF-8 is an error here, not a panic.
    let arguments: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|argument| argument.into_string().map_err(|_| "an argument is not UTF-8"))
        .collect::<Result<_, _>>()?;
    let (lanes, devices): (Vec<Memory>, Option<&String>) = match arguments.as_slice() {
        [flag, count, rest @ ..] if flag == "--host" => {
            ((0..count.parse::<usize>()?).map(|_| Memory::Host).collect(), rest.first())
        }
        rest => {
            // Loads libcuda at run time: a clear error, not a crash, where there is none.
            let cuda = Cuda::load()?;
            let gpus = cuda.resolve(&GpuSelection::All)?;
            (
                gpus.into_iter()
                    .map(|index| cuda.open_gpu(index).map(Memory::Gpu))
                    .collect::<Result<_, _>>()?,
                rest.first(),
            )
        }
    };
    let devices: Vec<&str> = devices.map(|list| list.split(',').collect()).unwrap_or_default();
    let started = Instant::now();
    // One scoped thread per lane; each returns its bandwidth or its error.
    let results: Vec<Result<f64, AnyError>> = std::thread::scope(|scope| {
        let threads: Vec<_> = lanes
            .into_iter()
            .enumerate()
            .map(|(index, memory)| {
                let device = devices.get(index).or(devices.first()).map(|name| name.to_string());
                scope.spawn(move || lane(index, memory, device))
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().unwrap_or_else(|_| Err("the lane panicked".into())))
            .collect()
    });
    let mut total = 0.0;
    for (index, result) in results.into_iter().enumerate() {
        total += result.map_err(|error| format!("lane {index}: {error}"))?;
    }
    println!("all lanes: {total:.2} GB/s together ({:.1} ms)", started.elapsed().as_secs_f64() * 1e3);
    Ok(())
}

/// One lane: its own NIC context, QPs and buffers; returns the GB/s it moved.
fn lane(index: usize, memory: Memory, device_name: Option<String>) -> Result<f64, AnyError> {
    // The NIC: the one named, else the one nearest to this lane's GPU on PCIe, else the first.
    let device_name = match (device_name, &memory) {
        (Some(name), _) => Some(name),
        (None, Memory::Gpu(gpu)) => {
            gdrperf_topology::recommend_nic(std::path::Path::new("/"), &gpu.info().bus_id.to_string())?
        }
        (None, Memory::Host) => None,
    };
    let device = Device::open(device_name.as_deref())?;
    let port = device.active_port(1)?;
    let gid = device.choose_gid(&port, None)?;
    let protection_domain = device.alloc_pd()?;

    // Two buffers, registered: in GPU memory through dma-buf (or nvidia-peermem), or on the host.
    let (mut source, destination) = (allocate(&memory, LEN)?, allocate(&memory, LEN)?);
    let source_region = register(&protection_domain, &source)?;
    let destination_region = register(&protection_domain, &destination)?;

    // Two QPs on the same port, connected to each other: the NIC is both ends.
    let mut completion_queue = CompletionQueue::new(&device, 16)?;
    let sizes = QueuePairSizes { send_depth: 4, recv_depth: 1, max_inline: 0 };
    let mut sender =
        RcQueuePair::new(&protection_domain, &completion_queue, sizes, port.number, RemoteAccess::Write)?;
    let mut receiver =
        RcQueuePair::new(&protection_domain, &completion_queue, sizes, port.number, RemoteAccess::Write)?;
    let path = PathSettings {
        port: port.number,
        mtu: port.active_mtu,
        local_gid: gid,
        read_depth: 1,
        service_level: 0,
        traffic_class: 0,
    };
    let (sender_end, receiver_end) = (sender.endpoint(port.lid, gid), receiver.endpoint(port.lid, gid));
    sender.connect(&receiver_end, &path)?;
    receiver.connect(&sender_end, &path)?;

    // A pattern that differs per lane, so a write landing in the wrong lane's memory shows.
    let pattern: Vec<u8> = (0..LEN).map(|byte| (byte * 7 + index * 13) as u8).collect();
    fill(&mut source, &pattern)?;
    let target = destination_region.remote();
    let write = Operation::Write { remote_address: target.address, rkey: target.rkey };
    let started = Instant::now();
    for number in 0..WRITES {
        let request = SendRequest {
            wr_id: number as u64,
            signaled: true,
            local: source_region.slice(0, LEN),
            operation: write,
            inline: Inline::NO,
        };
        sender.post_send([request])?;
        let mut done = false;
        while !done {
            completion_queue.poll(|completion| {
                if !completion.is_success() {
                    return Err(completion.error("RDMA WRITE", LEN));
                }
                done = true;
                Ok(())
            })?;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if contents(&destination)? != pattern {
        return Err("the destination buffer does not hold the source's pattern".into());
    }
    let rate = (WRITES * LEN) as f64 / seconds / 1e9;
    let place = match &memory {
        Memory::Gpu(gpu) => format!("GPU {} ({})", gpu.index(), gpu.info().bus_id),
        Memory::Host => "host memory".to_string(),
    };
    println!(
        "lane {index}: {place} via {}: {WRITES} x {LEN} B in {:.1} ms = {rate:.2} GB/s, data checked",
        device.name(),
        seconds * 1e3
    );
    Ok(rate)
}

fn allocate(memory: &Memory, len: usize) -> Result<Buffer, AnyError> {
    Ok(match memory {
        // Allocation makes the GPU's context current on this thread; later CUDA calls of the
        // buffer do the same, so each lane's thread works in its own GPU's context.
        Memory::Gpu(gpu) => Buffer::Gpu(gpu.alloc(len)?),
        Memory::Host => Buffer::Host(HostBuffer::new(len)?),
    })
}

/// Registers a buffer with the NIC: GPU memory through dma-buf, falling back to nvidia-peermem.
fn register(protection_domain: &Arc<ProtectionDomain>, buffer: &Buffer) -> Result<MemoryRegion, AnyError> {
    // SAFETY (all three): the buffer outlives its registration (both live until the lane ends,
    // and the region is declared after the buffer, so it is dropped first).
    Ok(match buffer {
        Buffer::Host(host) => unsafe {
            MemoryRegion::register(
                protection_domain,
                host.address(),
                host.len(),
                "host buffer",
                RemoteAccess::Write,
                RelaxedOrdering::Asked,
            )?
        },
        Buffer::Gpu(gpu) => match gpu.export_dmabuf() {
            Ok(dmabuf) => unsafe {
                MemoryRegion::register_dmabuf(
                    protection_domain,
                    DmaBufRange {
                        fd: dmabuf.raw_fd(),
                        offset: dmabuf.offset(),
                        address: dmabuf.iova(),
                        len: LEN,
                    },
                    "GPU memory via dma-buf",
                    RemoteAccess::Write,
                    RelaxedOrdering::Asked,
                )?
            },
            Err(_) => unsafe {
                MemoryRegion::register(
                    protection_domain,
                    gpu.device_ptr(),
                    LEN,
                    "GPU memory via nvidia-peermem",
                    RemoteAccess::Write,
                    RelaxedOrdering::Asked,
                )?
            },
        },
    })
}

fn fill(buffer: &mut Buffer, bytes: &[u8]) -> Result<(), AnyError> {
    match buffer {
        Buffer::Gpu(gpu) => gpu.write(0, bytes)?,
        Buffer::Host(host) => host.as_mut_slice()[..bytes.len()].copy_from_slice(bytes),
    }
    Ok(())
}

fn contents(buffer: &Buffer) -> Result<Vec<u8>, AnyError> {
    Ok(match buffer {
        Buffer::Gpu(gpu) => gpu.read(0..LEN)?,
        Buffer::Host(host) => host.as_slice()[..LEN].to_vec(),
    })
}
