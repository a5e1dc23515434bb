//! perftest's defaults that depend on more than one flag, as pure functions: the effective CQ
//! moderation and the `-D` margin. Each names its source in perftest (`perftest_parameters.c`,
//! `perftest_parameters.h`) so that "the same as perftest" can be checked line by line; the
//! table in docs/methodology.md lists them all and the unit test
//! `the_defaults_table_holds_for_gdrperf` pins gdrperf's side of it.

use crate::error::{Error, Result};

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
}

/// perftest's rule (`perftest_parameters.c`, after "we disable cq_mod for large message size"):
/// a single size above 8192 B signals every request (`DISABLED_CQ_MOD_VALUE`, 1) unless `-Q`
/// asked otherwise (then perftest warns that it "can lead to inaccurate results"); a sweep (`-a`,
/// `RUN_ALL`) keeps the moderation, since it cannot change from size to size. Then the value is
/// clamped to `-t` (`if (cq_mod > tx_depth) cq_mod = tx_depth`), which gdrperf says rather than
/// does silently.
pub fn cq_moderation(requested: Option<u32>, sizes: &[usize], tx_depth: u32) -> Result<CqModeration> {
    if requested == Some(0) {
        return Err(Error::Config("-Q/--cq-mod must be at least 1".into()));
    }
    let large_single = matches!(sizes, [size] if *size > CQ_MODERATION_SIZE_LIMIT);
    let (value, reason) = match requested {
        None if large_single => (1, CqReason::LargeMessages),
        None => (DEFAULT_CQ_MODERATION, CqReason::AsGiven),
        Some(asked) if large_single && asked > 1 => (asked, CqReason::LargeMessagesModerated),
        Some(asked) => (asked, CqReason::AsGiven),
    };
    if value > tx_depth {
        return Ok(CqModeration { value: tx_depth, reason: CqReason::LoweredToTxDepth { asked: value } });
    }
    Ok(CqModeration { value, reason })
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
        return Err(Error::Config(format!(
            "-D/--duration {duration_seconds} must be longer than twice the margin (-f/--margin {margin}), as perftest requires"
        )));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cq_moderation_follows_perftest() {
        let value =
            |requested, sizes: &[usize], tx_depth| cq_moderation(requested, sizes, tx_depth).unwrap().value;
        // Default 100 up to 8192 B, 1 above it for a single size, 100 for a sweep (-a).
        assert_eq!(value(None, &[8192], 128), 100);
        assert_eq!(value(None, &[8193], 128), 1);
        assert_eq!(value(None, &[65536], 128), 1);
        assert_eq!(value(None, &[2, 4, 8_388_608], 128), 100);
        // -Q is kept above the limit, with perftest's warning in the note.
        let asked = cq_moderation(Some(8), &[65536], 128).unwrap();
        assert_eq!(asked.value, 8);
        assert!(asked.describe().contains("inaccurate"), "{}", asked.describe());
        assert_eq!(cq_moderation(Some(1), &[65536], 128).unwrap().reason, CqReason::AsGiven);
        // Clamped to the tx depth, default or asked, and said.
        assert_eq!(value(None, &[64], 64), 64);
        let clamped = cq_moderation(Some(16), &[4096], 8).unwrap();
        assert_eq!(
            (clamped.value, clamped.describe().as_str()),
            (8, "8 (16 lowered to -t/--tx-depth 8, as perftest)")
        );
        assert!(cq_moderation(Some(0), &[2], 8).is_err());
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

    /// gdrperf's column of the defaults table in docs/methodology.md: change one only with the
    /// table.
    #[test]
    fn the_defaults_table_holds_for_gdrperf() {
        let row = |d: TestDefaults| (d.size, d.iterations, d.tx_depth, d.warmup);
        assert_eq!(row(WRITE_BW_DEFAULTS), (65536, 5000, 128, 16));
        assert_eq!(row(SEND_BW_DEFAULTS), (65536, 1000, 128, 16));
        assert_eq!(row(LATENCY_DEFAULTS), (2, 1000, 1, 16));
        assert_eq!((DEFAULT_CQ_MODERATION, CQ_MODERATION_SIZE_LIMIT), (100, 8192));
        assert_eq!(duration_margin(8, None).unwrap(), 2);
    }
}
