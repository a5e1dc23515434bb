//! Bad user input, typed: each variant names the flag as the user spells it (`-s/--size`), the
//! value given where there is one, and what the flag allows, so that a caller can match on the
//! flag and a user reads what to change.
//!
//! The harness checks the whole command line once, before any device is opened or socket bound
//! (`options::config`); the few variants that need the peer or the machine (placements that do
//! not pair up, a device list that does not fit the GPUs) are the only ones made later, as soon
//! as what they need is known. rdma_cm's route, known only once the verbs layer resolved it, is
//! that layer's `VerbsError::RdmaCmRoute`, which reads as the same kind of message.

/// A configuration this run cannot use; shown after "invalid configuration: ".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside the range the flag takes.
    #[error("{flag} must be {allowed}, not {value}")]
    OutOfRange { flag: &'static str, value: String, allowed: &'static str },

    /// A value above a limit of the hardware or of this program; `limit` says which and why.
    #[error("{flag} {value} is above {limit}")]
    AboveLimit { flag: &'static str, value: u64, limit: String },

    /// A value that is not what the flag takes; `problem` says what it should look like.
    #[error("{flag} {value}: {problem}")]
    Malformed { flag: &'static str, value: String, problem: String },

    /// A flag that the rest of the command line rules out (or that asks for nothing, like an
    /// empty token); `reason` names the other flag and what to do instead.
    #[error("{flag} {reason}")]
    Conflict { flag: &'static str, reason: String },

    /// `-b` with staged memory: a staged side has one bounce ring per QP, which both directions
    /// would share.
    #[error("staged memory runs one direction at a time: drop -b/--bidirectional")]
    StagedBidirectional,

    /// `-D` with a staged receiver of WRITEs: it counts the messages it copies in, and a timed
    /// run agrees on no count beforehand.
    #[error("a staged receiver counts the messages it copies: use -n/--iters, not -D/--duration")]
    StagedReceiverDuration,

    /// `--mem` (and `--gpu`) lists on the two sides that cannot pair up, round by round.
    #[error(
        "the two sides list {} and {} memory placements ([{}] here, [{}] there): \
         they pair up in order, so give both sides as many, or one side a single one",
        .ours.len().max(1), .theirs.len().max(1), .ours.join(", "), .theirs.join(", ")
    )]
    Placements { ours: Vec<String>, theirs: Vec<String> },

    /// The peer lists more placements (so rounds, or lanes) than any node has: each would cost
    /// this side a context, QPs and registered memory, so the count is refused before any is built.
    #[error(
        "the peer lists {theirs} memory placements and this side {ours}; at most {limit} pair up (each round or lane builds QPs and registers memory): give fewer --mem/--gpu entries"
    )]
    TooManyPlacements { ours: usize, theirs: usize, limit: usize },

    /// A server turned a connecting peer away (a `--concurrent` lane from another client or out
    /// of order, a wrong token): what it tells the peer and logs.
    #[error("{reason}")]
    PeerRefused { reason: String },
}

impl ConfigError {
    /// [`ConfigError::OutOfRange`]: `flag` was given `value`, and takes `allowed`.
    pub fn out_of_range(flag: &'static str, value: impl ToString, allowed: &'static str) -> ConfigError {
        ConfigError::OutOfRange { flag, value: value.to_string(), allowed }
    }

    /// [`ConfigError::Conflict`]: `flag` is ruled out for `reason`.
    pub fn conflict(flag: &'static str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Conflict { flag, reason: reason.into() }
    }

    /// [`ConfigError::Malformed`]: `value` of `flag` is not what it takes (`problem` says why).
    pub fn malformed(flag: &'static str, value: &str, problem: impl ToString) -> ConfigError {
        ConfigError::Malformed { flag, value: value.to_string(), problem: problem.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_names_the_flag_the_value_and_what_is_allowed() {
        let range =
            ConfigError::OutOfRange { flag: "-q/--qp", value: "0".into(), allowed: "between 1 and 1024" };
        assert_eq!(range.to_string(), "-q/--qp must be between 1 and 1024, not 0");
        let limit =
            ConfigError::AboveLimit { flag: "-I/--inline-size", value: 5000, limit: "1024 bytes".into() };
        assert_eq!(limit.to_string(), "-I/--inline-size 5000 is above 1024 bytes");
        let placements = ConfigError::Placements {
            ours: vec!["host".into(), "cuda:0".into()],
            theirs: vec!["host".into(), "cuda:0".into(), "cuda:1".into()],
        };
        assert!(placements
            .to_string()
            .starts_with("the two sides list 2 and 3 memory placements ([host, cuda:0] here"));
        let error = crate::Error::from(ConfigError::StagedBidirectional);
        assert_eq!(
            error.to_string(),
            "invalid configuration: staged memory runs one direction at a time: drop -b/--bidirectional"
        );
    }
}
