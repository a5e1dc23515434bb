//! The smallest complete RDMA WRITE between two processes.
//!
//!   server:  cargo run --example rdma_write                 (waits on TCP port 18600)
//!   client:  cargo run --example rdma_write -- 127.0.0.1    (writes into the server's memory)
//!
//! The client's NIC puts bytes straight into the server's buffer: the server's CPU takes no part
//! in the transfer, and learns it happened only because the client says so over TCP.
//! GPUDirect RDMA is this same program with the server's buffer in GPU memory.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use gdrperf_verbs::{
    CompletionQueue, Device, Endpoint, HostBuffer, MemoryRegion, Operation, PathSettings, RelaxedOrdering,
};
use gdrperf_verbs::{Inline, QueuePairSizes, RcQueuePair, RemoteAccess, RemoteBuffer, SendRequest};

const MESSAGE: &[u8] = b"written by the client's NIC, no server CPU involved";

/// What each side tells the other before RDMA can start: how to reach its QP and its memory.
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

    // 1. Open the device and pick the port and the GID (the address on RoCE; unused on IB).
    let device = Device::open(None)?;
    let port = device.active_port(1)?;
    let gid = device.choose_gid(&port, None)?;

    // 2. A protection domain ties QPs to the memory they may touch. Register a buffer in it:
    //    registration pins the pages and yields keys (lkey for us, rkey for the peer).
    let protection_domain = device.alloc_pd()?;
    let buffer = HostBuffer::new(4096)?;
    // SAFETY: `buffer` lives until the end of main, longer than the registration.
    let region = unsafe {
        MemoryRegion::register(
            &protection_domain,
            buffer.address(),
            buffer.len(),
            "example buffer",
            RemoteAccess::Write,
            RelaxedOrdering::Asked,
        )?
    };

    // 3. A completion queue, and a reliable-connected QP that reports into it.
    let mut completion_queue = CompletionQueue::new(&device, 16)?;
    let sizes = QueuePairSizes { send_depth: 4, recv_depth: 1, max_inline: 0 };
    let mut queue_pair =
        RcQueuePair::new(&protection_domain, &completion_queue, sizes, port.number, RemoteAccess::Write)?;

    // 4. Exchange introductions over TCP (one JSON line each way).
    let stream = match &server_host {
        Some(host) => connect_with_retries(host, 18600)?,
        None => TcpListener::bind(("0.0.0.0", 18600))?.accept()?.0,
    };
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let ours = Introduction { endpoint: queue_pair.endpoint(port.lid, gid), buffer: region.remote() };
    writeln!(writer, "{}", serde_json::to_string(&ours)?)?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let theirs: Introduction = serde_json::from_str(&line)?;

    // 5. Connect: INIT -> ready to receive -> ready to send, towards the peer's QP.
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
        // 6. Client: put the message in our buffer, WRITE it into the server's, wait for the
        //    completion that says the server's NIC acknowledged it.
        let mut buffer = buffer;
        buffer.as_mut_slice()[..MESSAGE.len()].copy_from_slice(MESSAGE);
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
        println!("client: wrote {} bytes into the server's memory", MESSAGE.len());
    } else {
        // 6. Server: wait for the client's word, then look at memory nobody on this host wrote.
        line.clear();
        reader.read_line(&mut line)?;
        let received = &buffer.as_slice()[..MESSAGE.len()];
        if received != MESSAGE {
            return Err(format!(
                "server: buffer holds {:?}, not the client's message",
                String::from_utf8_lossy(received)
            )
            .into());
        }
        println!("server: found \"{}\"", String::from_utf8_lossy(received));
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
