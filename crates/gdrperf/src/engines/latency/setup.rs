//! What a latency run asks of the harness before it connects ([`ping_pong_setup`],
//! [`one_sided_setup`], the header's
//! memory line), the plan of each size made from the run's settings ([`LatencyPlan::new`]), and
//! what a ping-pong side does around each size: receives posted, the polled byte reset, and with
//! `--validate` the pattern sent and checked.

use crate::error::Result;
use crate::harness::benchmark::Setup;
use crate::harness::session::Session;
use crate::memory::buffers::{check_received_at, pattern_seed};
use crate::memory::check_failure::CheckFailure;
use crate::options::config::BenchConfig;
use crate::options::perftest_defaults::InlineRequest;
use crate::verbs::{QueuePairSizes, RemoteAccess};

use super::plan::LatencyPlan;
use super::transport::{
    landing_offset, ping_pong_buffer_len, PingPong, PING_PONG_RECEIVES, RECEIVE_ID, RESET_MARKER,
};
use super::wire::{landing_half, PollByte};

impl LatencyPlan {
    /// The plan of one size from the run's settings; `inline` says whether this size is posted
    /// inline (see [`crate::options::latency::LatencyConfig::inline`]).
    pub fn new(common: &BenchConfig, size: usize, inline: bool) -> LatencyPlan {
        LatencyPlan {
            size,
            stop: common.stop,
            warmup: common.warmup,
            inline,
            stall_timeout: common.timeout,
            span: common.latency_span.unwrap_or_default(),
        }
    }
}

impl PingPong {
    /// [`PingPong::for_write`] of a connected session.
    pub fn for_write_session(session: &Session, write_with_imm: bool) -> PingPong {
        PingPong::for_write(session.memory(), session.peer_memory(), write_with_imm)
    }
}

/// What a ping-pong side (gdr-send-lat, gdr-write-lat) asks of the harness: `PING_PONG_RECEIVES` (8)
/// receives kept posted, inline sends up to `inline.size` bytes (the QP's limit; what a run uses
/// is perftest's rule on its device, `perftest_defaults::inline_size`), the
/// two-halved buffer, and its header lines (`lines`, then the memory lines of `ping_pong`).
pub fn ping_pong_setup(
    common: &BenchConfig,
    inline: InlineRequest,
    ping_pong: PingPong,
    parameters: serde_json::Value,
    lines: Vec<(String, String)>,
) -> Setup {
    let mut header = lines;
    header.extend(memory_header(common, Some(ping_pong)));
    Setup {
        queue_sizes: QueuePairSizes {
            send_depth: common.tx_depth,
            recv_depth: PING_PONG_RECEIVES,
            max_inline: inline.size,
        },
        inline: Some(inline),
        buffer_len: ping_pong_buffer_len(common.max_size()),
        // Each side writes into the other's landing half; a SEND ping-pong reaches no buffer.
        remote_access: match ping_pong {
            PingPong::WriteWithImmediate | PingPong::WritePollLastByte => RemoteAccess::Write,
            PingPong::Send => RemoteAccess::None,
        },
        parameters,
        header,
        bandwidth: None,
    }
}

/// What a one-sided side (gdr-read-lat, gdr-atomic-lat) asks of the harness: one request in
/// flight posted from the client, one receive (none is used), no inline data, a buffer as large
/// as the largest size, the peer's buffer open to `remote_access` (the request's need), and its
/// header lines (`lines`, then the memory lines of a reader).
pub fn one_sided_setup(
    common: &BenchConfig,
    remote_access: RemoteAccess,
    parameters: serde_json::Value,
    lines: Vec<(String, String)>,
) -> Setup {
    let mut header = lines;
    if matches!(remote_access, RemoteAccess::Read | RemoteAccess::Atomic) {
        // `-o/--outs`: the QP's bound on outstanding READs and atomics (one is in flight at a
        // time here, as in perftest's latency tests; the bound is the QP's, as perftest sets it).
        header.push(("Outstanding reads".into(), common.read_depth.describe()));
    }
    header.extend(memory_header(common, None));
    Setup {
        queue_sizes: QueuePairSizes { send_depth: common.tx_depth, recv_depth: 1, max_inline: 0 },
        buffer_len: common.max_size(),
        remote_access,
        inline: None,
        parameters,
        header,
        bandwidth: None,
    }
}

/// Gets a side ready for a ping-pong size: receives posted (once per connection: they are
/// reposted as consumed, so the count stays constant), and for the last-byte poll, the byte this
/// size polls reset, so that a value left by an earlier size is never taken for an arrival. Runs
/// before the server says Ready, so the client's first message finds everything in place.
pub fn prepare_ping_pong(session: &mut Session, transport: PingPong, size: usize) -> Result<()> {
    if transport.uses_receives() {
        post_receives_once(session)?;
    }
    if transport == PingPong::WritePollLastByte {
        PollByte::landing(session, size)?.set(RESET_MARKER);
    }
    Ok(())
}

/// `--validate` of a ping-pong, before a size: both sides send the pattern of the size from their
/// first half, and clear their landing half, so a message that never landed fails the check.
pub fn prepare_ping_pong_check(session: &mut Session, size: usize) -> Result<()> {
    let buffer = &mut session.local.buffers[0];
    let landing_at = landing_offset(buffer.region().len());
    buffer.fill_pattern_at(0..size, pattern_seed(size, 0))?;
    buffer.clear_at(landing_at..landing_at + size)
}

/// `--validate` of a ping-pong, after a size: the first `len` bytes of the landing half hold the
/// peer's pattern (`len` leaves out the last byte where the last-byte poll's markers travel).
pub fn check_ping_pong(session: &mut Session, size: usize, len: usize) -> Result<Option<CheckFailure>> {
    let landing_at = landing_offset(session.local.buffers[0].region().len());
    check_received_at(&mut session.local.buffers[..1], size, landing_at..landing_at + len)
}

/// Posts a ping-pong's receives once per connection: receives outlive a size (they cannot be
/// taken back), and go with the QPs when a new memory placement replaces them, as the
/// session's connection state does.
fn post_receives_once(session: &mut Session) -> Result<()> {
    if session.connection.state::<PingPongReceives>().0 {
        return Ok(());
    }
    let landing = landing_half(session);
    for _ in 0..PING_PONG_RECEIVES {
        session.local.queue_pairs[0].post_receive(RECEIVE_ID, landing)?;
    }
    session.connection.state::<PingPongReceives>().0 = true;
    Ok(())
}

/// A ping-pong's receives are posted (once per connection).
#[derive(Default)]
struct PingPongReceives(bool);

/// What a latency run's header says of its memory: where either side's is staged, when the
/// copies happen (`None` where nothing is copied).
pub fn memory_header(config: &BenchConfig, shape: Option<PingPong>) -> Option<(String, String)> {
    if !config.memory.kinds.iter().any(|kind| kind.is_staged()) {
        return None;
    }
    let text = match shape {
        None => {
            "the reader copies in after each READ, inside the sample; the server copies out once per size"
        }
        Some(PingPong::Send) => {
            "copy out before each SEND, copy in after each receive, inside the round trip"
        }
        Some(_) => "copy out before each write, copy in after each arrival, inside the round trip",
    };
    Some(("Staging".into(), text.into()))
}
