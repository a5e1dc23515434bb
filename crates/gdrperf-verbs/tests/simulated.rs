//! The simulated NIC through this crate's public API alone: what it must honour as a NIC does
//! (keys, access, bounds, receive-not-ready, queue depth, a vanished peer) and the completions it
//! gives, the same statuses `gdrperf`'s `completion_errors` test expects of a real device.

use std::time::Duration;

use gdrperf_verbs::{Inline, Operation, RemoteAccess, SendRequest, VerbsError};

mod common;

use common::{message, next, pair, request, Pair};

#[test]
fn a_write_with_the_right_key_lands_and_a_foreign_key_is_a_remote_access_error() {
    let mut pair = pair(RemoteAccess::Write, 4);
    let remote = pair.target_region.remote();
    let write = Operation::Write { remote_address: remote.address + 64, rkey: remote.rkey };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 100), write)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "RDMA WRITE", 100), "success");
    assert_eq!(&pair.target.as_slice()[64..164], &pair.source.as_slice()[..100]);

    let foreign = Operation::Write { remote_address: remote.address, rkey: remote.rkey ^ 0x00ff_ff00 };
    pair.sender.post_send([request(2, pair.source_region.slice(0, 64), foreign)]).unwrap();
    let failed = message(&next(&mut pair.sender_completions), "RDMA WRITE", 64);
    assert!(
        failed.contains("remote access error") && failed.contains("rkey/address did not match"),
        "{failed}"
    );
    // The QP is in error: what follows is flushed, as on a real device.
    pair.sender.post_send([request(3, pair.source_region.slice(0, 64), write)]).unwrap();
    let flushed = message(&next(&mut pair.sender_completions), "RDMA WRITE", 64);
    assert!(flushed.to_lowercase().contains("flush"), "{flushed}");
}

#[test]
fn a_read_past_the_region_and_a_write_into_read_only_memory_are_refused() {
    let mut pair = pair(RemoteAccess::Read, 4);
    let remote = pair.target_region.remote();
    let past = Operation::Read { remote_address: remote.address + 4096 - 256, rkey: remote.rkey };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 512), past)]).unwrap();
    let failed = message(&next(&mut pair.sender_completions), "RDMA READ", 512);
    assert!(failed.contains("remote access error"), "{failed}");

    let mut pair = self::pair(RemoteAccess::Read, 4);
    let remote = pair.target_region.remote();
    let write = Operation::Write { remote_address: remote.address, rkey: remote.rkey };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 64), write)]).unwrap();
    let failed = message(&next(&mut pair.sender_completions), "RDMA WRITE", 64);
    assert!(failed.contains("remote access error"), "{failed}");
    // The control: the READ this memory is opened for succeeds.
    let mut pair = self::pair(RemoteAccess::Read, 4);
    let remote = pair.target_region.remote();
    let read = Operation::Read { remote_address: remote.address, rkey: remote.rkey };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 64), read)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "RDMA READ", 64), "success");
}

#[test]
fn a_send_without_a_receive_waits_for_one_and_carries_its_immediate() {
    let mut pair = pair(RemoteAccess::None, 4);
    let send = Operation::SendWithImmediate { immediate: 0xabcd };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 32), send)]).unwrap();
    // Receiver not ready: nothing completes while no receive is posted (the NIC retries). An
    // absence has no condition to wait for: 5 ms of looking can miss a wrong completion on a
    // loaded host, never fail a right NIC.
    std::thread::sleep(Duration::from_millis(5));
    let early = pair.sender_completions.poll(|_| -> Result<(), VerbsError> { Ok(()) }).unwrap();
    assert_eq!(early, 0, "a SEND completed with no receive posted");
    pair.receiver.post_receive(9, pair.target_region.slice(0, 64)).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "SEND", 32), "success");
    let received = next(&mut pair.receiver_completions);
    assert_eq!((received.wr_id, received.byte_len, received.immediate), (9, 32, Some(0xabcd)));
    assert_eq!(&pair.target.as_slice()[..32], &pair.source.as_slice()[..32]);
}

#[test]
fn a_post_beyond_the_send_depth_fails_until_a_completion_is_polled() {
    let mut pair = pair(RemoteAccess::Write, 2);
    let remote = pair.target_region.remote();
    let write = Operation::Write { remote_address: remote.address, rkey: remote.rkey };
    let unsignaled =
        |wr_id| SendRequest { signaled: false, ..request(wr_id, pair.source_region.slice(0, 8), write) };
    pair.sender.post_send([unsignaled(1), request(2, pair.source_region.slice(0, 8), write)]).unwrap();
    let full = pair.sender.post_send([request(3, pair.source_region.slice(0, 8), write)]);
    assert!(
        full.is_err_and(|error| error.to_string().contains("ibv_post_send")),
        "a third request fit a depth of 2"
    );
    // The signalled completion frees both slots (its own and the unsignalled one before it).
    assert_eq!(next(&mut pair.sender_completions).wr_id, 2);
    pair.sender.post_send([unsignaled(4), request(5, pair.source_region.slice(0, 8), write)]).unwrap();
    assert_eq!(next(&mut pair.sender_completions).wr_id, 5);
}

#[test]
fn an_inline_request_up_to_max_inline_lands_and_a_longer_one_is_refused_at_the_post() {
    let mut pair = pair(RemoteAccess::Write, 4);
    let remote = pair.target_region.remote();
    let write = Operation::Write { remote_address: remote.address, rkey: remote.rkey };
    // SAFETY: the slices name the pair's source buffer, alive until the pair is dropped.
    let inline = |wr_id, len| SendRequest {
        inline: unsafe { Inline::yes() },
        ..request(wr_id, pair.source_region.slice(0, len), write)
    };
    let longer = pair.sender.post_send([inline(1, 65)]);
    assert!(
        longer.is_err_and(|error| error.to_string().contains("ibv_post_send")),
        "65 inline bytes fit a max_inline_data of 64"
    );
    pair.sender.post_send([inline(2, 64)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "RDMA WRITE", 64), "success");
    assert_eq!(&pair.target.as_slice()[..64], &pair.source.as_slice()[..64]);
}

#[test]
fn a_vanished_peer_is_a_retry_exceeded_error() {
    let Pair { mut sender, receiver, mut sender_completions, source_region, target_region, .. } =
        pair(RemoteAccess::Write, 4);
    drop(receiver);
    let remote = target_region.remote();
    let write = Operation::Write { remote_address: remote.address, rkey: remote.rkey };
    sender.post_send([request(1, source_region.slice(0, 8), write)]).unwrap();
    let failed = message(&next(&mut sender_completions), "RDMA WRITE", 8);
    assert!(failed.contains("retry counter exceeded") && failed.contains("is it alive"), "{failed}");
}

#[test]
fn atomics_fetch_and_add_and_compare_and_swap_on_eight_bytes() {
    let mut pair = pair(RemoteAccess::Atomic, 4);
    let remote = pair.target_region.remote();
    let add = Operation::FetchAndAdd { remote_address: remote.address, rkey: remote.rkey, add: 5 };
    pair.sender.post_send([request(1, pair.source_region.slice(0, 8), add)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "atomic FETCH_AND_ADD", 8), "success");
    assert_eq!(u64::from_ne_bytes(pair.source.as_slice()[..8].try_into().unwrap()), 0);
    let swap =
        Operation::CompareAndSwap { remote_address: remote.address, rkey: remote.rkey, compare: 5, swap: 42 };
    pair.sender.post_send([request(2, pair.source_region.slice(0, 8), swap)]).unwrap();
    assert_eq!(message(&next(&mut pair.sender_completions), "atomic CMP_AND_SWAP", 8), "success");
    assert_eq!(u64::from_ne_bytes(pair.source.as_slice()[..8].try_into().unwrap()), 5);
    assert_eq!(u64::from_ne_bytes(pair.target.as_slice()[..8].try_into().unwrap()), 42);
}

#[test]
fn every_simulated_device_opens_by_its_own_name_and_a_ninth_does_not() {
    for name in ["simulated0", "simulated1", "simulated7"] {
        let device = gdrperf_verbs::Device::open(Some(name)).expect("a simulated device opens by its name");
        assert!(device.is_simulated(), "{name}");
        assert_eq!(
            device.name(),
            name,
            "the device keeps the name it was opened by (the rows' device column)"
        );
    }
    // simulated8 is past the simulated devices: it is looked up among the real ones and not found.
    assert!(gdrperf_verbs::Device::open(Some("simulated8")).is_err());
}
