//! `GDRPERF_SIMULATED_NIC=rnr_retry=0`: a SEND that finds no receive posted fails at once with
//! "RNR retry counter exceeded", where the default (7, for ever) waits for one. The benches'
//! credit tests run under it, so this is the check that it really turns a receiver-not-ready into
//! an error. A test binary of its own: the NIC reads its settings once per process.

use gdrperf_verbs::{Operation, RemoteAccess};

mod common;

use common::{message, next, pair, request};

#[test]
fn under_rnr_retry_0_a_send_without_a_receive_fails_and_one_with_a_receive_lands() {
    // SAFETY (set_var): the first thing this process does, before any thread reads the
    // environment; this binary has no other test.
    std::env::set_var("GDRPERF_SIMULATED_NIC", "rnr_retry=0");
    let mut pair = pair(RemoteAccess::None, 4);
    pair.receiver.post_receive(1, pair.target_region.slice(0, 64)).unwrap();
    pair.sender.post_send([request(1, pair.source_region.slice(0, 32), Operation::Send)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "SEND", 32), "success");
    assert_eq!(next(&mut pair.receiver_completions).byte_len, 32);
    // The receive is used up: the next SEND finds none.
    pair.sender.post_send([request(2, pair.source_region.slice(0, 32), Operation::Send)]).unwrap();
    let failed = message(&next(&mut pair.sender_completions), "SEND", 32);
    assert!(failed.contains("RNR retry"), "{failed}");
    assert!(failed.contains("the peer had no receive posted"), "{failed}");
}
