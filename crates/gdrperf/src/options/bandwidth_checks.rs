//! `-Q`, `-b`, `--concurrent` (and an atomic stream's one size) checked against the common settings: how a
//! [`BandwidthConfig`] is made. Apart from the type, which the harness reads without the checks.

use crate::bench::Operation;
use crate::error::{ConfigError, Result};
use crate::options::args::BandwidthArgs;
use crate::options::bandwidth::{refuse_staged, BandwidthConfig, StagedRules};
use crate::options::config::{BenchConfig, Role, StopRule};
use crate::options::latency::check_atomic_size;
use crate::options::perftest_defaults::cq_moderation;

impl BandwidthConfig {
    /// `-Q`, `-b` and `--concurrent` of a bench whose stream is `operation`, checked against the
    /// common settings; the staged rules derived once, and applied here to a loopback run.
    pub fn from_args(
        args: &BandwidthArgs,
        common: &BenchConfig,
        operation: Operation,
    ) -> Result<BandwidthConfig> {
        let iterations = match common.stop {
            StopRule::Iterations(iterations) => Some(iterations),
            StopRule::Duration(_) => None,
        };
        let cq_moderation = cq_moderation(args.cq_mod, &common.sizes, common.tx_depth, iterations)?;
        if args.concurrent && common.memory.kinds.len() > 1 {
            return Err(ConfigError::conflict(
                "--concurrent",
                "runs the GPUs (or devices) of one --mem kind at once: give one kind",
            )
            .into());
        }
        // A WRITE stream's staged receiver counts the messages it copies in.
        let staged = StagedRules {
            bidirectional: args.bidirectional,
            receiver_counts_messages: operation == Operation::Write
                && matches!(common.stop, StopRule::Duration(_)),
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
        if operation == Operation::Atomic {
            check_atomic_size(&common.sizes, crate::bench::ATOMIC_BW.binary)?;
        }
        Ok(BandwidthConfig {
            cq_mod: cq_moderation.value,
            cq_moderation,
            bidirectional: args.bidirectional,
            concurrent: args.concurrent,
            staged,
        })
    }
}
