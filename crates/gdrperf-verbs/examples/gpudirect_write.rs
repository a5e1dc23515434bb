//! GPU memory on one host written by the NIC straight into GPU memory on another.
//!
//!   server:  cargo run --release --example gpudirect_write              (GPU 0, waits on TCP 18601)
//!   client:  cargo run --release --example gpudirect_write -- SERVER    (GPU 0, writes into the server's GPU)
//!
//! This is `rdma_write.rs` with the buffers moved into GPU memory. Three things change:
//! 1. the buffer comes from `cuMemAlloc` (through gdrperf-cuda) instead of the heap;
//! 2. it is registered through dma-buf (`cuMemGetHandleForAddressRange` exports it, and
//!    `ibv_reg_dmabuf_mr` hands it to the NIC) or, where dma-buf is unavailable, through
//!    nvidia-peermem (plain `ibv_reg_mr` on the device pointer);
//! 3. the CPU cannot read GPU memory, so filling and checking go through CUDA copies.
//!
//! The verbs calls (QP, connect, post, poll) are exactly the same: the NIC does not care.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use gdrperf_cuda::{Cuda, GpuSelection};
use gdrperf_verbs::{
    CompletionQueue, Device, Endpoint, MemoryRegion, Operation, PathSettings, RelaxedOrdering,
};
use gdrperf_verbs::{
    DmaBufRange, Inline, QueuePairSizes, RcQueuePair, RemoteAccess, RemoteBuffer, SendRequest,
};

const MESSAGE: &[u8] = b"GPU to GPU, no host memory on the way";
const LEN: usize = 1 << 16;

#[derive(serde::Serialize, serde::Deserialize)]
struct Introduction {
    endpoint: Endpoint,
    buffer: RemoteBuffer,
}

fn main() -> std::process::ExitCode {
    // Print errors with their messages (Display), not as debug structures.
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // args_os, not args: a host that is not UTF-8 is an error here, not a panic.
    let server_host = std::env::args_os()
        .nth(1)
        .map(|argument| argument.into_string().map_err(|_| "the server host is not UTF-8"))
        .transpose()?;

    // GPU side: load libcuda (a clear error, not a crash, where there is none), take GPU 0.
    let cuda = Cuda::load()?;
    let gpu = cuda.open_gpu(cuda.resolve(&GpuSelection::Indices(vec![0]))?[0])?;
    let mut gpu_buffer = gpu.alloc(LEN)?;

    // NIC side, as in rdma_write.rs.
    let device = Device::open(None)?;
    let port = device.active_port(1)?;
    let gid = device.choose_gid(&port, None)?;
    let protection_domain = device.alloc_pd()?;

    // The one GPUDirect-specific step: register GPU memory. dma-buf first (no extra kernel
    // module, needs NVIDIA's open kernel driver), nvidia-peermem as the fallback.
    let dmabuf = gpu_buffer.export_dmabuf();
    // SAFETY: gpu_buffer (and the dma-buf) live until the end of main.
    let region = match &dmabuf {
        Ok(dmabuf) => unsafe {
            MemoryRegion::register_dmabuf(
                &protection_domain,
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
        Err(error) => {
            eprintln!("dma-buf export failed ({error}); trying nvidia-peermem");
            unsafe {
                MemoryRegion::register(
                    &protection_domain,
                    gpu_buffer.device_ptr(),
                    LEN,
                    "GPU memory via nvidia-peermem",
                    RemoteAccess::Write,
                    RelaxedOrdering::Asked,
                )?
            }
        }
    };

    let mut completion_queue = CompletionQueue::new(&device, 16)?;
    let sizes = QueuePairSizes { send_depth: 4, recv_depth: 1, max_inline: 0 };
    let mut queue_pair =
        RcQueuePair::new(&protection_domain, &completion_queue, sizes, port.number, RemoteAccess::Write)?;

    let stream = match &server_host {
        Some(host) => connect_with_retries(host, 18601)?,
        None => TcpListener::bind(("0.0.0.0", 18601))?.accept()?.0,
    };
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let ours = Introduction { endpoint: queue_pair.endpoint(port.lid, gid), buffer: region.remote() };
    writeln!(writer, "{}", serde_json::to_string(&ours)?)?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let theirs: Introduction = serde_json::from_str(&line)?;
    let path = PathSettings {
        port: port.number,
        mtu: port.active_mtu,
        local_gid: gid,
        read_depth: 1,
        service_level: 0,
        traffic_class: 0,
    };
    queue_pair.connect(&theirs.endpoint, &path)?;

    if server_host.is_some() {
        // Client: the message goes into our GPU memory with a CUDA copy; the NIC takes it from
        // there and writes it into the server's GPU memory.
        gpu_buffer.write(0, MESSAGE)?;
        let write = Operation::Write { remote_address: theirs.buffer.address, rkey: theirs.buffer.rkey };
        let request = SendRequest {
            wr_id: 1,
            signaled: true,
            local: region.slice(0, MESSAGE.len()),
            operation: write,
            inline: Inline::NO,
        };
        queue_pair.post_send([request])?;
        let mut done = false;
        while !done {
            completion_queue.poll(|completion| {
                if !completion.is_success() {
                    return Err(completion.error("RDMA WRITE", MESSAGE.len()));
                }
                done = true;
                Ok(())
            })?;
        }
        writeln!(writer, "done")?;
        println!("client: wrote {} bytes from GPU {} into the server's GPU", MESSAGE.len(), gpu.index());
    } else {
        // Server: after the client's word, copy our GPU memory down and look.
        line.clear();
        reader.read_line(&mut line)?;
        let received = gpu_buffer.read(0..MESSAGE.len())?;
        if received != MESSAGE {
            return Err(format!("server: GPU buffer holds {:?}", String::from_utf8_lossy(&received)).into());
        }
        println!("server: GPU {} holds \"{}\"", gpu.index(), String::from_utf8_lossy(&received));
    }
    Ok(())
}

/// The client may start before the server listens: retry for ten seconds, then give up.
fn connect_with_retries(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match TcpStream::connect((host, port)) {
            Err(error)
                if std::time::Instant::now() < deadline
                    && error.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            result => return result,
        }
    }
}
