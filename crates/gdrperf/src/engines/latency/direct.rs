//! The latency loops over memory the NIC reaches directly (host and GPU memory): a ping-pong's
//! two sides and the one-sided round trip. Each sample runs from just before the post to the
//! moment the arrival is seen; recording, reposting and reaping happen outside it.

use gdrperf_stats::{SampleClock, Stamp};

use crate::error::{Error, Result};
use crate::harness::session::Session;
use crate::node::cpu_placement::tsc_pin::pin_for_tsc;
use crate::options::config::LatencySpan;
use crate::verbs::Operation;

use super::plan::{expect_all_messages, IntervalSink, LatencyPlan, LatencyRun};
use super::samples::{Continue, RoundTrip, Samples};
use super::transport::{client_marker, landing, server_marker, PingPong, STOP_MARKER};
use super::wire::{Arrival, MarkerBytes, Wire};

pub(super) fn direct_ping_pong_initiator(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let bytes = marker_bytes_for(session, transport, plan.size)?;
    let landing_byte = bytes.map(|bytes| bytes.landing);
    let remote = landing(session.remote_buffer(0));
    let clock = SampleClock::new();
    let mut samples = Samples::new(plan, sink)?.spanning(plan.span).deferring(clock, RoundTrip::Halved);
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let _pin = pin_for_tsc(&clock);
    let mut sequence = 0u64;
    // Iteration span: the start of the sample still open, closed by the next post's stamp.
    let mut open: Option<Stamp> = None;
    loop {
        wire.make_room()?;
        if let Some(bytes) = bytes {
            bytes.outgoing.set(client_marker(sequence));
        }
        let Some(start) = start_sample(&mut samples, &clock, &wire, &mut open, RoundTrip::Halved)? else {
            break;
        };
        wire.post(transport.message(sequence, remote))?;
        match wire.wait_arrival(transport, landing_byte, sequence, server_marker(sequence))? {
            Arrival::Message => {}
            Arrival::Stop => return Err(Error::Protocol(crate::error::ProtocolError::ServerSentStop)),
        }
        let end = (plan.span == LatencySpan::Arrival).then(|| clock.stamp());
        if transport.uses_receives() {
            wire.repost()?;
        }
        sequence += 1;
        match end {
            None => open = Some(start),
            Some(end) => {
                if samples.record_stamps(&clock, start, end, RoundTrip::Halved)? == Continue::Stop
                    || wire.stop_requested()
                {
                    break;
                }
            }
        }
    }
    // STOP even after Ctrl-C, so that the server leaves its loop at once.
    wire.make_room()?;
    if let Some(bytes) = bytes {
        bytes.outgoing.set(STOP_MARKER);
    }
    wire.post(transport.stop(remote))?;
    wire.drain()?;
    wire.interrupted()?;
    samples.finish()
}

pub(super) fn direct_ping_pong_responder(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
) -> Result<u64> {
    let bytes = marker_bytes_for(session, transport, plan.size)?;
    let landing_byte = bytes.map(|bytes| bytes.landing);
    let remote = landing(session.remote_buffer(0));
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let mut sequence = 0u64;
    while wire.wait_arrival(transport, landing_byte, sequence, client_marker(sequence))? == Arrival::Message {
        wire.make_room()?;
        if let Some(bytes) = bytes {
            bytes.outgoing.set(server_marker(sequence));
        }
        wire.post(transport.message(sequence, remote))?;
        if transport.uses_receives() {
            wire.repost()?;
        }
        sequence += 1;
    }
    if transport.uses_receives() {
        wire.repost()?; // the one STOP consumed
    }
    wire.drain()?;
    expect_all_messages(plan, sequence)
}

pub(super) fn direct_one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    mut request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    let clock = SampleClock::new();
    let mut samples = Samples::new(plan, sink)?.spanning(plan.span).deferring(clock, RoundTrip::Whole);
    let mut wire = Wire::new(session, plan, request(0).name());
    let mut posted = 0u64;
    let _pin = pin_for_tsc(&clock);
    // Iteration span: the start of the sample still open, closed by the next post's stamp.
    let mut open: Option<Stamp> = None;
    loop {
        wire.make_room()?;
        let Some(start) = start_sample(&mut samples, &clock, &wire, &mut open, RoundTrip::Whole)? else {
            break;
        };
        wire.post(request(posted))?;
        posted += 1;
        wire.drain()?;
        match plan.span {
            LatencySpan::Iteration => open = Some(start),
            LatencySpan::Arrival => {
                let end = clock.stamp();
                if samples.record_stamps(&clock, start, end, RoundTrip::Whole)? == Continue::Stop
                    || wire.stop_requested()
                {
                    break;
                }
            }
        }
    }
    wire.interrupted()?;
    Ok((samples.finish()?, posted))
}

/// Stamps the start of the next sample, which with the iteration span also ends the sample
/// still `open` (its end is this same stamp): that one is recorded first. `None` when the stop
/// rule is met or a stop was asked for. When recording wrote an `--hlog` interval, the start is
/// stamped again, so that the write is in no sample.
#[inline(always)]
fn start_sample(
    samples: &mut Samples,
    clock: &SampleClock,
    wire: &Wire,
    open: &mut Option<Stamp>,
    round_trip: RoundTrip,
) -> Result<Option<Stamp>> {
    let start = clock.stamp();
    let Some(previous) = open.take() else { return Ok(Some(start)) };
    if samples.record_stamps(clock, previous, start, round_trip)? == Continue::Stop || wire.stop_requested() {
        return Ok(None);
    }
    match samples.take_interval_written() {
        true => Ok(Some(clock.stamp())),
        false => Ok(Some(start)),
    }
}

fn marker_bytes_for(session: &Session, transport: PingPong, size: usize) -> Result<Option<MarkerBytes>> {
    match transport {
        PingPong::WritePollLastByte => MarkerBytes::of(session, size).map(Some),
        _ => Ok(None),
    }
}
