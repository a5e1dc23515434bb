//! `-Q`, `-b`, `--concurrent` (and an atomic stream's one size) checked against the common settings: how a
//! [`BandwidthConfig`] is made. Apart from the type, which the harness reads without the checks.

use crate::bench::Verb;
use crate::error::PostListRule;
use crate::error::{ConfigError, Result};
use crate::options::args::{BandwidthArgs, WriteImmediateArgs};
use crate::options::bandwidth::{refuse_staged, BandwidthConfig, StagedRules};
use crate::options::config::{BenchConfig, Role, StopRule};
use crate::options::latency::check_atomic_size;
use crate::options::perftest_defaults::{cq_moderation, CqModeration, CqReason};

impl BandwidthConfig {
    /// `-Q`, `-b` and `--concurrent` of a bench whose stream is `verb`, checked against the
    /// common settings; the staged rules derived once, and applied here to a loopback run.
    pub fn from_args(args: &BandwidthArgs, common: &BenchConfig, verb: Verb) -> Result<BandwidthConfig> {
        let iterations = match common.stop {
            StopRule::Iterations(iterations) => Some(iterations),
            StopRule::Duration(_) => None,
        };
        if args.post_list == Some(0) {
            return Err(ConfigError::out_of_range("-l/--post_list", 0, "at least 1").into());
        }
        let post_list = args.post_list.unwrap_or(1);
        let mut cq_moderation = cq_moderation(args.cq_mod, &common.sizes, common.tx_depth, iterations)?;
        if post_list > 1 {
            cq_moderation = check_post_list(post_list, args.cq_mod, common.tx_depth, iterations)?;
        }
        if args.concurrent && common.memory.kinds.len() > 1 {
            return Err(ConfigError::conflict(
                "--concurrent",
                "runs the GPUs (or devices) of one --mem kind at once: give one kind",
            )
            .into());
        }
        if common.run_infinitely && (args.concurrent || common.memory.kinds.len() > 1) {
            return Err(ConfigError::conflict(
                "--run-infinitely",
                "runs one placement for ever: give one --mem kind, without --concurrent",
            )
            .into());
        }
        // A WRITE stream's staged receiver counts the messages it copies in.
        let staged = StagedRules {
            bidirectional: args.bidirectional,
            receiver_counts_messages: verb == Verb::Write && matches!(common.stop, StopRule::Duration(_)),
            // The SEND stream posts its staged messages in lists too (`engines::send`).
            post_list: post_list > 1 && verb != Verb::Send,
        };
        // Two processes refuse these once both memories are known, right after the hellos and
        // on both sides in the same words ([`refuse_staged`]): refused here, a server or client
        // would leave its peer waiting for it. A loopback run has no peer to tell, and both its
        // ends use each kind: refused here, before any device is opened.
        if common.role == Role::Loopback {
            for &kind in &common.memory.kinds {
                refuse_staged(staged, kind, kind)?;
            }
        }
        if common.acceptance.max_lat.is_some() {
            return Err(ConfigError::conflict(
                "--max-lat",
                "applies to latency results: a bandwidth test is held to --min-bw",
            )
            .into());
        }
        if verb == Verb::Atomic {
            check_atomic_size(&common.sizes, crate::bench::ATOMIC_BW.binary)?;
        }
        Ok(BandwidthConfig {
            cq_mod: cq_moderation.value,
            cq_moderation,
            bidirectional: args.bidirectional,
            report_both: args.report_both,
            post_list,
            run_infinitely: common.run_infinitely,
            concurrent: args.concurrent,
            staged,
        })
    }
}

impl WriteImmediateArgs {
    /// `--write-with-imm`, checked against the run: the server counts the writes it receives,
    /// so a count is needed (`-n`, not `-D`), and one direction (perftest's `-b` then runs its own
    /// loop, `run_iter_bi`, which gdrperf has not).
    pub fn checked(&self, common: &BenchConfig, bandwidth: &BandwidthConfig) -> Result<bool> {
        if !self.write_with_imm {
            return Ok(false);
        }
        if matches!(common.stop, StopRule::Duration(_)) {
            return Err(ConfigError::conflict(
                "--write-with-imm",
                "makes the server count the writes it receives: use -n/--iters, not -D/--duration (or --run_infinitely)",
            )
            .into());
        }
        if bandwidth.bidirectional {
            return Err(ConfigError::conflict(
                "--write-with-imm",
                "runs one direction: drop -b/--bidirectional",
            )
            .into());
        }
        Ok(true)
    }
}

/// perftest's checks of `-l N` above 1 (`perftest_parameters.c`, "post_list > 1"), made once
/// before connecting, and the CQ moderation they leave: `N` itself without `-Q` (the last request
/// of every list signalled), else the `-Q` given, which must divide `N`. `-n` must be a multiple
/// of `N`; a list longer than `-t` would never fit the send queue (perftest waits for room that
/// never comes), so gdrperf refuses it too.
pub(crate) fn check_post_list(
    post_list: u32,
    requested_cq_mod: Option<u32>,
    tx_depth: u32,
    iterations: Option<u64>,
) -> Result<CqModeration> {
    let refuse = |rule| ConfigError::PostList { post_list, rule };
    if post_list > tx_depth {
        return Err(refuse(PostListRule::AboveTxDepth { tx_depth }).into());
    }
    if let Some(iterations) = iterations.filter(|iterations| !iterations.is_multiple_of(u64::from(post_list)))
    {
        return Err(refuse(PostListRule::IterationsNotMultiple { iterations }).into());
    }
    match requested_cq_mod {
        None => Ok(CqModeration { value: post_list, reason: CqReason::PostList }),
        Some(cq_mod) if !post_list.is_multiple_of(cq_mod) => {
            Err(refuse(PostListRule::NotMultipleOfCqMod { cq_mod }).into())
        }
        Some(cq_mod) => Ok(CqModeration { value: cq_mod, reason: CqReason::AsGiven }),
    }
}
