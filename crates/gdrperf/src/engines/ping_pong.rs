//! What the two ping-pong benches (gdr-write-lat, gdr-send-lat) do alike: one size measured on
//! either side, and the row made of both sides' reports. They differ only in their transport
//! ([`PingPong`]), so each step is written once, here.

use crate::engines::latency::measure_size;
use crate::engines::latency::{ping_pong_initiator, ping_pong_responder, LatencyPlan, PingPong};
use crate::error::Result;
use crate::harness::session::Session;
use crate::options::config::BenchConfig;
use crate::options::latency::LatencyConfig;
use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use crate::output::RowContext;

/// One size of a ping-pong over `transport`. The server takes no samples, but its copies are
/// inside the client's round trips, so it reports those alone; the client samples (logging to
/// `files`, if any) and says how much it inlined.
pub fn measure_ping_pong(
    session: &mut Session,
    transport: PingPong,
    common: &BenchConfig,
    latency: &LatencyConfig,
    files: Option<&LatencyFiles>,
    size: usize,
) -> Result<Option<LatencyFigures>> {
    let plan = LatencyPlan::new(
        common,
        size,
        latency.inline(size, session.perftest_knows_inline(), session.cpu_visible()),
    );
    session.take_copy_seconds();
    if !session.is_client() {
        ping_pong_responder(session, transport, &plan)?;
        return Ok(Some(LatencyFigures::copies_only(size, session.take_copy_seconds())));
    }
    let mut figures = measure_size(files, size, |sink| ping_pong_initiator(session, transport, &plan, sink))?;
    figures.copy_seconds = session.take_copy_seconds();
    figures.inline_size = latency.inline_size_for(session.perftest_knows_inline(), session.cpu_visible()).0;
    Ok(Some(figures))
}

/// A ping-pong's row, on the client only: its figures, with the server's copy time added to its
/// own (both sides' copies lie inside the round trips it timed).
pub fn ping_pong_row(
    context: &RowContext,
    arrival: &'static str,
    ours: Option<LatencyFigures>,
    peer: Option<LatencyFigures>,
    validation: &str,
) -> Option<LatencyRow> {
    let settings = LatencySettings { arrival, inline_size: ours.as_ref()?.inline_size };
    let mut row = LatencyRow::new(context, settings, &ours?, validation);
    row.copy_time_s += peer.map_or(0.0, |peer| peer.copy_seconds);
    Some(row)
}
