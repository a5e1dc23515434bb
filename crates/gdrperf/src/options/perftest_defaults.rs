//! perftest's defaults that depend on more than one flag, as pure functions: the effective CQ
//! moderation and the `-D` margin. Each names its source in perftest (`perftest_parameters.c`,
//! `perftest_parameters.h`) so that "the same as perftest" can be checked line by line; the
//! table in docs/methodology.md lists them all and the unit test
//! `the_defaults_table_holds_for_gdrperf` pins gdrperf's side of it.

use crate::error::{ConfigError, Result};

/// Per-test defaults, as perftest sets them for each test.
#[derive(Debug, Clone, Copy)]
pub struct TestDefaults {
    pub size: u64,
    pub iterations: u64,
    pub tx_depth: u32,
    pub warmup: u64,
}

/// gdr-write-bw's defaults: ib_write_bw's 65536 B (`DEF_SIZE_BW`), 5000 iterations
/// (`DEF_ITERS_WB`), TX depth 128 (`DEF_TX_BW`); 16 untimed warm-up messages per QP (perftest has
/// none by default: `--warmup 0` compares like with like).
pub const WRITE_BW_DEFAULTS: TestDefaults =
    TestDefaults { size: 65536, iterations: 5000, tx_depth: 128, warmup: 16 };
/// gdr-send-bw's defaults: as ib_send_bw, whose iterations are `DEF_ITERS` (1000), not
/// `DEF_ITERS_WB`, which only WRITE bandwidth tests use.
pub const SEND_BW_DEFAULTS: TestDefaults = TestDefaults { iterations: 1000, ..WRITE_BW_DEFAULTS };
/// perftest's defaults for its latency tests: 2-byte messages, 1000 iterations, one outstanding.
pub const LATENCY_DEFAULTS: TestDefaults =
    TestDefaults { size: 2, iterations: 1000, tx_depth: 1, warmup: 16 };
/// ib_atomic_lat's: as the other latency tests, but 8 bytes (`DEF_SIZE_ATOMIC`), the only size
/// an atomic has.
pub const ATOMIC_LATENCY_DEFAULTS: TestDefaults = TestDefaults { size: 8, ..LATENCY_DEFAULTS };
/// ib_atomic_bw's: as ib_send_bw's and ib_read_bw's (`DEF_ITERS`, 1000; TX depth 128), but 8
/// bytes (`DEF_SIZE_ATOMIC`).
pub const ATOMIC_BW_DEFAULTS: TestDefaults = TestDefaults { size: 8, ..SEND_BW_DEFAULTS };

/// perftest's CQ moderation: one signalled request in 100 (`DEF_CQ_MOD`).
pub const DEFAULT_CQ_MODERATION: u32 = 100;
/// Above this message size perftest signals every request unless `-Q` is given
/// (`MSG_SIZE_CQ_MOD_LIMIT`, 8192 B).
pub const CQ_MODERATION_SIZE_LIMIT: usize = 8192;

/// The CQ moderation a bandwidth run uses, and why (for the run header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqModeration {
    pub value: u32,
    pub reason: CqReason,
}

/// How the CQ moderation came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqReason {
    /// perftest's default or the `-Q` given, as is.
    AsGiven,
    /// One size above [`CQ_MODERATION_SIZE_LIMIT`] without `-Q`: every request signalled.
    LargeMessages,
    /// `-Q` above 1 with one size above the limit: kept, with perftest's warning.
    LargeMessagesModerated,
    /// The value asked for (or the default) was above `-t`, and lowered to it.
    LoweredToTxDepth { asked: u32 },
    /// The value asked for (or the default) was above `-n` (and `-n` below `-t`): perftest
    /// lowers its tx depth to `-n` first, then clamps the moderation to it.
    LoweredToIterations { asked: u32 },
    /// `-l N` without `-Q`: perftest signals the last request of every list ("Post List
    /// requested - CQ moderation will be the size of the post list").
    PostList,
}

/// perftest's rule (`perftest_parameters.c`, after "we disable cq_mod for large message size"):
/// a single size above 8192 B signals every request (`DISABLED_CQ_MOD_VALUE`, 1) unless `-Q`
/// asked otherwise (then perftest warns that it "can lead to inaccurate results"); a sweep (`-a`,
/// `RUN_ALL`) keeps the moderation, since it cannot change from size to size. Then the value is
/// clamped to `-t` (`if (cq_mod > tx_depth) cq_mod = tx_depth`), which gdrperf says rather than
/// does silently. In a run of `-n` iterations (`iterations`; `None` for `-D`) perftest first lowers
/// its tx depth to `-n` (`force_dependecies`), so the moderation is clamped to the smaller of the
/// two: `-n 50` at the default 100 signals every 50th request, and a run is never one completion.
/// gdrperf keeps its tx depth (the queue is sized once for a sweep) and clamps only the moderation.
pub fn cq_moderation(
    requested: Option<u32>,
    sizes: &[usize],
    tx_depth: u32,
    iterations: Option<u64>,
) -> Result<CqModeration> {
    if requested == Some(0) {
        return Err(ConfigError::out_of_range("-Q/--cq-mod", 0, "at least 1").into());
    }
    let large_single = matches!(sizes, [size] if *size > CQ_MODERATION_SIZE_LIMIT);
    let (value, reason) = match requested {
        None if large_single => (1, CqReason::LargeMessages),
        None => (DEFAULT_CQ_MODERATION, CqReason::AsGiven),
        Some(asked) if large_single && asked > 1 => (asked, CqReason::LargeMessagesModerated),
        Some(asked) => (asked, CqReason::AsGiven),
    };
    let iterations = iterations.map(|n| u32::try_from(n).unwrap_or(u32::MAX).max(1));
    match iterations {
        Some(iterations) if iterations < tx_depth && value > iterations => {
            Ok(CqModeration { value: iterations, reason: CqReason::LoweredToIterations { asked: value } })
        }
        _ if value > tx_depth => {
            Ok(CqModeration { value: tx_depth, reason: CqReason::LoweredToTxDepth { asked: value } })
        }
        _ => Ok(CqModeration { value, reason }),
    }
}

impl CqModeration {
    /// The header's "CQ moderation" value: the number, and how it came about when not as given.
    pub fn describe(&self) -> String {
        let limit = CQ_MODERATION_SIZE_LIMIT;
        match self.reason {
            CqReason::AsGiven => self.value.to_string(),
            CqReason::LargeMessages => {
                format!(
                    "{} (every request signalled above {limit} B, as perftest; -Q N to moderate)",
                    self.value
                )
            }
            CqReason::LargeMessagesModerated => format!(
                "{} (-Q above {limit} B: perftest warns this can lead to inaccurate results)",
                self.value
            ),
            CqReason::LoweredToTxDepth { asked } => {
                format!("{} ({asked} lowered to -t/--tx-depth {}, as perftest)", self.value, self.value)
            }
            CqReason::LoweredToIterations { asked } => format!(
                "{} ({asked} lowered to -n/--iters {}, as perftest, whose tx depth follows -n)",
                self.value, self.value
            ),
            CqReason::PostList => format!("{} (the post list's size, as perftest)", self.value),
        }
    }
}

/// perftest's `-D` margin, in whole seconds: `-f/--margin` when given, else `duration / 4` in
/// integer arithmetic (`perftest_parameters.c`: `margin = duration / 4` when the margin is still
/// `DEF_INIT_MARGIN`), and the run is refused unless `duration > 2 * margin` ("the test duration
/// must be longer than 2 * margin"). So `-D 5` measures from 1 s to 4 s, and `-D 1` to `-D 3`
/// have no margin at all.
pub fn duration_margin(duration_seconds: u64, margin_seconds: Option<u64>) -> Result<u64> {
    let margin = margin_seconds.unwrap_or(duration_seconds / 4);
    if duration_seconds <= margin.saturating_mul(2) {
        return Err(ConfigError::conflict(
            "-D/--duration",
            format!("{duration_seconds} must be longer than twice the margin (-f/--margin {margin}), as perftest requires"),
        )
        .into());
    }
    Ok(margin)
}

/// The `-D` measurement window in nanoseconds since the first post: from the end of the ramp-up
/// margin to the start of the equal drain margin (`catch_alarm` in `perftest_resources.c`).
pub fn measurement_window(duration_seconds: u64, margin_seconds: u64) -> (u64, u64) {
    const NANOS: u64 = 1_000_000_000;
    let end = duration_seconds.saturating_sub(margin_seconds).saturating_mul(NANOS);
    (margin_seconds.saturating_mul(NANOS).min(end), end)
}

/// Whether perftest knows inline for this device (`ib_dev_name` in `perftest_parameters.c`,
/// by `vendor_part_id`, for vendors other than the few it matches by vendor first): gdrperf
/// knows NVIDIA's (Mellanox) ConnectX and BlueField parts, where perftest's latency tests inline
/// 220 B (WRITE) or 236 B (SEND). perftest also knows some other vendors' parts, with sizes of
/// their own (Broadcom 96 B, Intel 48 or 101 B, ...); gdrperf uses 0 on those unless `-I` is
/// given (docs/methodology.md, the defaults table). Software devices (rxe: vendor 0xffffff,
/// part 0) are unknown to both.
pub fn perftest_knows_inline(vendor_id: u32, vendor_part_id: u32) -> bool {
    // Vendors perftest matches by vendor id before the part id (Chelsio, Intel, and others).
    const MATCHED_BY_VENDOR: [u32; 6] = [5157, 0x8086, 0x209b, 0x1f67, 0x1f0f, 0x1dd8];
    !MATCHED_BY_VENDOR.contains(&vendor_id)
        && matches!(
            vendor_part_id,
            4099 | 4100 | 4103 | 4104 | 4113 | 4115
                ..=4127 | 4129 | 4131 | 4133 | 4135 // ConnectX-3 .. ConnectX-10
                | 41682 | 41683 | 41686 | 41692 | 41695 // BlueField 1 to 4
                | 26418 | 26428 | 26438 | 26448 | 26458 | 26468 | 26478 // ConnectX-2
                | 25408 | 25418 | 25428 | 25448 // ConnectX
        )
}

/// What a latency test's `-I` said: a size given, or the test's default (220 B for WRITE, 236 B
/// for SEND, 0 for READ), which perftest applies only where `inline_size` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineRequest {
    pub size: u32,
    pub asked: bool,
}

/// Why a run inlines what it does (for the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineReason {
    /// `-I` as given.
    Asked,
    /// perftest's default on a device it knows.
    Default,
    /// The default, on a device perftest does not know: 0, as `ctx_set_max_inline`.
    UnknownDevice,
    /// GPU memory: the CPU cannot copy the payload into a work request (perftest sets 0 with
    /// CUDA memory too, and prints so).
    GpuMemory,
}

/// perftest's `ctx_set_max_inline` for the latency tests: the default only on a device it
/// knows, 0 on others and with GPU memory; bandwidth tests inline nothing unless `-I`
/// (gdr-send-bw's default 0). One difference: perftest disables even an explicit `-I` on a
/// device it does not know ("Device not recognized to implement inline feature"); gdrperf
/// keeps what was asked (rxe accepts it), since a flag given should do what it says.
pub fn inline_size(request: InlineRequest, known_device: bool, cpu_visible: bool) -> (u32, InlineReason) {
    match (request.asked, known_device, cpu_visible) {
        (_, _, false) => (0, InlineReason::GpuMemory),
        (true, _, true) => (request.size, InlineReason::Asked),
        (false, true, true) => (request.size, InlineReason::Default),
        (false, false, true) => (0, InlineReason::UnknownDevice),
    }
}

/// The header's "Inline" value.
pub fn describe_inline(size: u32, reason: InlineReason) -> String {
    match reason {
        InlineReason::Asked => format!("up to {size} bytes (-I)"),
        InlineReason::Default => format!("up to {size} bytes (perftest's default on this device)"),
        InlineReason::UnknownDevice => {
            "0 (perftest's default on a device it does not know, such as rxe; -I N to inline)".into()
        }
        InlineReason::GpuMemory => "0 (GPU memory: the CPU cannot copy it into a work request)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cq_moderation_follows_perftest() {
        let value = |requested, sizes: &[usize], tx_depth| {
            cq_moderation(requested, sizes, tx_depth, None).unwrap().value
        };
        let value_n = |requested, sizes: &[usize], tx_depth, iterations| {
            cq_moderation(requested, sizes, tx_depth, Some(iterations)).unwrap().value
        };
        // Default 100 up to 8192 B, 1 above it for a single size, 100 for a sweep (-a).
        assert_eq!(value(None, &[8192], 128), 100);
        assert_eq!(value(None, &[8193], 128), 1);
        assert_eq!(value(None, &[65536], 128), 1);
        assert_eq!(value(None, &[2, 4, 8_388_608], 128), 100);
        // -Q is kept above the limit, with perftest's warning in the note.
        let asked = cq_moderation(Some(8), &[65536], 128, None).unwrap();
        assert_eq!(asked.value, 8);
        assert!(asked.describe().contains("inaccurate"), "{}", asked.describe());
        assert_eq!(cq_moderation(Some(1), &[65536], 128, None).unwrap().reason, CqReason::AsGiven);
        // Clamped to the tx depth, default or asked, and said.
        assert_eq!(value(None, &[64], 64), 64);
        // perftest lowers its tx depth to -n first (-n 50 -t 128: tx depth 50), then clamps the
        // moderation to it: the default 100 becomes 50, and so does an asked 64.
        let by_iterations = cq_moderation(None, &[2, 4], 128, Some(50)).unwrap();
        assert_eq!(
            (by_iterations.value, by_iterations.describe().as_str()),
            (50, "50 (100 lowered to -n/--iters 50, as perftest, whose tx depth follows -n)")
        );
        assert_eq!(value_n(Some(64), &[4096], 128, 50), 50);
        // -n at or above -t changes nothing; -D runs (no -n) clamp to -t alone.
        assert_eq!(value_n(None, &[4096], 128, 5000), 100);
        assert_eq!(value_n(Some(8), &[4096], 128, 50), 8);
        let clamped = cq_moderation(Some(16), &[4096], 8, None).unwrap();
        assert_eq!(
            (clamped.value, clamped.describe().as_str()),
            (8, "8 (16 lowered to -t/--tx-depth 8, as perftest)")
        );
        assert!(cq_moderation(Some(0), &[2], 8, None).is_err());
    }

    #[test]
    fn duration_margins_are_whole_seconds_as_perftest() {
        let margin = |duration, asked| duration_margin(duration, asked).unwrap();
        assert_eq!(
            [1, 2, 3, 4, 5, 7, 8, 10].map(|duration| margin(duration, None)),
            [0, 0, 0, 1, 1, 1, 2, 2]
        );
        assert_eq!(margin(10, Some(4)), 4);
        assert_eq!(margin(10, Some(0)), 0);
        let refused = duration_margin(4, Some(2)).unwrap_err().to_string();
        assert!(refused.contains("longer than twice the margin (-f/--margin 2)"), "{refused}");
        assert_eq!(measurement_window(5, 1), (1_000_000_000, 4_000_000_000));
        assert_eq!(measurement_window(3, 0), (0, 3_000_000_000));
    }

    #[test]
    fn inline_follows_ctx_set_max_inline() {
        // ConnectX-7 (4129) and BlueField-3 (41692) are known, rxe (0xffffff, 0) is not, nor is
        // a Chelsio part whose id collides with a ConnectX-6 (perftest matches Chelsio first).
        assert!(perftest_knows_inline(0x02c9, 4129) && perftest_knows_inline(0x02c9, 41692));
        assert!(!perftest_knows_inline(0xffffff, 0));
        assert!(!perftest_knows_inline(5157, 4123));
        let default = InlineRequest { size: 220, asked: false };
        assert_eq!(inline_size(default, true, true), (220, InlineReason::Default));
        assert_eq!(inline_size(default, false, true), (0, InlineReason::UnknownDevice));
        assert_eq!(inline_size(default, true, false), (0, InlineReason::GpuMemory));
        let asked = InlineRequest { size: 64, asked: true };
        assert_eq!(inline_size(asked, false, true), (64, InlineReason::Asked), "-I holds on rxe");
        assert_eq!(inline_size(asked, true, false), (0, InlineReason::GpuMemory));
        assert!(describe_inline(0, InlineReason::UnknownDevice).contains("rxe"));
    }

    /// gdrperf's column of the defaults table in docs/methodology.md: change one only with the
    /// table.
    #[test]
    fn the_defaults_table_holds_for_gdrperf() {
        let row = |d: TestDefaults| (d.size, d.iterations, d.tx_depth, d.warmup);
        assert_eq!(row(WRITE_BW_DEFAULTS), (65536, 5000, 128, 16));
        assert_eq!(row(SEND_BW_DEFAULTS), (65536, 1000, 128, 16));
        assert_eq!(row(LATENCY_DEFAULTS), (2, 1000, 1, 16));
        assert_eq!(row(ATOMIC_BW_DEFAULTS), (8, 1000, 128, 16), "ib_atomic_bw: DEF_ITERS, 8 B");
        assert_eq!((DEFAULT_CQ_MODERATION, CQ_MODERATION_SIZE_LIMIT), (100, 8192));
        assert_eq!(crate::engines::stream_book::SIGNAL_EVERY_BYTES, 64 << 20, "the signalling row");
        assert_eq!(duration_margin(8, None).unwrap(), 2);
        assert_eq!(duration_margin(8, Some(3)).unwrap(), 3, "-f");
        assert!(duration_margin(6, Some(3)).is_err());
        // Inline: 220 / 236 / none on a known device, 0 on rxe and with GPU memory.
        use crate::options::latency::LatencyTest;
        let defaults =
            [LatencyTest::Write, LatencyTest::Send, LatencyTest::Read].map(LatencyTest::default_inline_size);
        assert_eq!(defaults, [Some(220), Some(236), None]);
        let default = InlineRequest { size: 220, asked: false };
        assert_eq!(
            [(true, true), (false, true), (true, false)]
                .map(|(known, host)| inline_size(default, known, host).0),
            [220, 0, 0]
        );
        // -H's listing leaves perftest's tail out.
        assert_eq!(gdrperf_stats::hdr_output::PERFTEST_MEASURE_TAIL, 2);
    }
}
