//! The error texts users read, pinned: each shape's message and its chain of sources.

use std::error::Error as _;

use super::*;
use gdrperf_verbs::VerbsError;

#[test]
fn a_lane_error_keeps_its_type_and_its_chain() {
    let cause = Error::from(VerbsError::PortDown { device: "rxe0".into(), port: 1, state: "DOWN".into() });
    let error = Error::Lane { lane: 2, source: Box::new(cause) };
    assert!(error.to_string().starts_with("lane 2: port 1 of rxe0 is DOWN, not ACTIVE"), "{error}");
    // thiserror hands out the Box itself as the source.
    let source = error.source().and_then(|source| source.downcast_ref::<Box<Error>>());
    assert!(
        matches!(source.map(|boxed| &**boxed), Some(Error::Verbs(VerbsError::PortDown { port: 1, .. }))),
        "{source:?}"
    );
}

#[test]
fn a_figure_error_chains_the_statistics_error() {
    let error = Error::Figure {
        what: "no bandwidth measured at 4096 bytes".into(),
        source: gdrperf_stats::StatsError::NoCompletions,
    };
    assert!(error.to_string().starts_with("no bandwidth measured at 4096 bytes: no completions"), "{error}");
    let source = error.source().and_then(|source| source.downcast_ref::<gdrperf_stats::StatsError>());
    assert!(matches!(source, Some(gdrperf_stats::StatsError::NoCompletions)));
}

#[test]
fn a_protocol_error_reads_as_the_peer_out_of_step() {
    let error = Error::from(ProtocolError::SizeOutsideSweep { size: 4096 });
    assert_eq!(
        error.to_string(),
        "the peer is out of step with this side: client asked for size 4096, not in the agreed sweep"
    );
    let error = Error::from(ProtocolError::WrongImmediate { sequence: 3, immediate: None, expected: 4 });
    assert_eq!(
        error.to_string(),
        "the peer is out of step with this side: ping-pong out of step: message 3 arrived with immediate \
         None, expected 4"
    );
}

#[test]
fn each_shape_names_the_flag_the_value_and_what_is_allowed() {
    let range = ConfigError::OutOfRange { flag: "-q/--qp", value: "0".into(), allowed: "between 1 and 1024" };
    assert_eq!(range.to_string(), "-q/--qp must be between 1 and 1024, not 0");
    let limit = ConfigError::AboveLimit { flag: "-I/--inline-size", value: 5000, limit: "1024 bytes".into() };
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
