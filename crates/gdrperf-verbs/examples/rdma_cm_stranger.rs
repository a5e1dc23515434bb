//! A fabric stranger for `-R` servers: sends rdma_cm connection requests to ADDRESS:PORT
//! without the run's secret, one after another while process PID (the server) lives, at most
//! two minutes, and says how each ended. A server
//! that accepts only its admitted client rejects every one; one that takes the first requester
//! accepts it (issue 44). Used by the VM test family 24-rdma-cm.
//!
//!   cargo run --example rdma_cm_stranger -- ADDRESS PORT PID
//!
//! Prints one line a request ("request N: rejected by gdrperf: ...", "request N: rejected,
//! status S (no listener)", ...) and a summary; exits 0 if no request was accepted, 3 if one was,
//! 2 on bad arguments or a failed call.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use gdrperf_verbs::rdma_cm::{CmEventKind, EventChannel};

/// How long one request may take to be answered.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a stranger knocks, whatever PID does.
const LONGEST: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match arguments.as_slice() {
        [address, port, pid] => address
            .parse::<IpAddr>()
            .ok()
            .zip(port.parse::<u16>().ok())
            .zip(pid.parse::<u32>().ok())
            .map(|((address, port), pid)| (SocketAddr::new(address, port), pid)),
        _ => None,
    };
    let Some((server, pid)) = parsed else {
        eprintln!("usage: rdma_cm_stranger ADDRESS PORT PID");
        return ExitCode::from(2);
    };
    match knock(server, pid) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(error) => {
            eprintln!("rdma_cm_stranger: {error}");
            ExitCode::from(2)
        }
    }
}

/// Sends requests while process `pid` lives; returns how many were accepted.
fn knock(server: SocketAddr, pid: u32) -> std::io::Result<usize> {
    let channel = EventChannel::new()?;
    let end = Instant::now() + LONGEST;
    let alive = std::path::PathBuf::from(format!("/proc/{pid}"));
    let (mut sent, mut by_gdrperf, mut accepted) = (0usize, 0usize, 0usize);
    while Instant::now() < end && alive.exists() {
        sent += 1;
        let id = channel.create_id()?;
        let outcome = (|| {
            id.resolve_address(server, ANSWER_TIMEOUT)?;
            wait(&channel, CmEventKind::AddressResolved)?;
            id.resolve_route(ANSWER_TIMEOUT)?;
            wait(&channel, CmEventKind::RouteResolved)?;
            // Any QP number will do: the server's check comes before anything uses it.
            id.connect(0x1234, b"not the run's secret")?;
            next(&channel)
        })();
        let line = match outcome {
            Ok(event) if event.kind == CmEventKind::ConnectResponse => {
                accepted += 1;
                "ACCEPTED: the server took a stranger's request".to_string()
            }
            Ok(event)
                if event.kind == CmEventKind::Rejected && event.private_data.starts_with(b"gdrperf: ") =>
            {
                by_gdrperf += 1;
                let reason = event.private_data.split(|byte| *byte == 0).next().unwrap_or_default();
                format!("rejected by gdrperf: {}", String::from_utf8_lossy(reason))
            }
            Ok(event) => format!("{:?}, status {} (no listener, or not yet)", event.kind, event.status),
            Err(error) => format!("failed: {error}"),
        };
        println!("request {sent}: {line}");
        drop(id);
        std::thread::sleep(Duration::from_millis(5));
    }
    println!("stranger: {sent} requests, {by_gdrperf} rejected by gdrperf, {accepted} accepted");
    Ok(accepted)
}

fn next(channel: &std::sync::Arc<EventChannel>) -> std::io::Result<gdrperf_verbs::rdma_cm::CmEvent> {
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        if let Some(event) = channel.next_event()? {
            return Ok(event);
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no rdma_cm event"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn wait(channel: &std::sync::Arc<EventChannel>, wanted: CmEventKind) -> std::io::Result<()> {
    let event = next(channel)?;
    match event.kind == wanted {
        true => Ok(()),
        false => Err(std::io::Error::other(format!(
            "{:?} (status {}) instead of {wanted:?}",
            event.kind, event.status
        ))),
    }
}
