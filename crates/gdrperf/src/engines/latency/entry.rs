//! The latency engines' entry points: each picks the host loop (`direct`) or the staged one
//! (`staged`) from the session's memory, once per size, so a bench never does and the host
//! loops' hot paths stay as tuned.

use crate::error::Result;
use crate::harness::session::Session;
use crate::options::latency::AtomicOperation;
use crate::verbs::Operation;

use super::atomic::{atomic_request, count_atomics};
use super::direct::{direct_one_sided_latency, direct_ping_pong_initiator, direct_ping_pong_responder};
use super::plan::{IntervalSink, LatencyPlan, LatencyRun};
use super::staged::{
    stage_out_once, staged_one_sided_latency, staged_ping_pong_initiator, staged_ping_pong_responder,
};
use super::transport::PingPong;

/// The client's side of a ping-pong: `warmup` untimed round trips, then samples of half a round
/// trip until the stop rule is met, then STOP. Staged memory copies inside the samples.
pub fn ping_pong_initiator(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    match session.memory().is_staged() {
        false => direct_ping_pong_initiator(session, transport, plan, sink),
        true => staged_ping_pong_initiator(session, transport, plan, sink),
    }
}

/// The server's side of a ping-pong: answer every message as soon as it lands (staged memory:
/// copied in, and the answer copied out), until STOP. Returns how many messages it answered.
pub fn ping_pong_responder(session: &mut Session, transport: PingPong, plan: &LatencyPlan) -> Result<u64> {
    match session.memory().is_staged() {
        false => direct_ping_pong_responder(session, transport, plan),
        true => staged_ping_pong_responder(session, transport, plan),
    }
}

/// The client's side of read_lat: one RDMA READ of the server's buffer at a time (staged memory:
/// each READ copied in inside the sample).
pub fn read_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let remote = session.remote_buffer(0);
    let read = |_| Operation::Read { remote_address: remote.address, rkey: remote.rkey };
    one_sided_latency(session, plan, read, sink).map(|(run, _)| run)
}

/// The client's side of atomic_lat: one 8-byte atomic on the server's counter at a time, each
/// advancing it by 1 ([`atomic_request`]). Staged memory copies each fetched value in inside the
/// sample, as a staged READ does. Keeps the count of atomics for the size's data check.
pub fn atomic_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    atomic: AtomicOperation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let request = atomic_request(atomic, session.remote_buffer(0));
    let (run, posted) = one_sided_latency(session, plan, request, sink)?;
    count_atomics(session, posted);
    Ok(run)
}

/// read_lat's and atomic_lat's loop: `request(n)` is the n-th request (from 0, warm-up
/// included). Returns the run and how many requests were posted.
fn one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    match session.memory().is_staged() {
        false => direct_one_sided_latency(session, plan, request, sink),
        true => staged_one_sided_latency(session, plan, request, sink),
    }
}

/// The passive side of read_lat, before a size: its buffer holds what the peer's READs fetch.
/// Staged memory copies its payload out to the bounce buffer here, once per size (its CPU takes
/// no part in a READ, so there is no moment to copy each one); other memory needs nothing.
pub fn prepare_read_source(session: &mut Session, size: usize) -> Result<()> {
    stage_out_once(session, size)
}
