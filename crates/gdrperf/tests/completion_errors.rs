//! Work completion errors on a real device: a WRITE or READ with a key or address the peer never
//! registered must come back as an error naming the status, the operation, the size and what to
//! check, not as a hang or a bare status number.
//!
//! Needs an RDMA device: scripts/vm-tests.d/40-faults.sh runs it in the Soft-RoCE VM (build it
//! with `cargo test --release -p gdrperf --test completion_errors --no-run`). Where the kernel
//! has no RDMA device it says so and checks nothing.

use std::time::{Duration, Instant};

use gdrperf::verbs::{
    CompletionQueue, Device, HostBuffer, MemoryRegion, Operation, PathSettings, QueuePairSizes,
};
use gdrperf::verbs::{Inline, RcQueuePair, RelaxedOrdering, RemoteAccess, SendRequest, VerbsError};

fn have_device() -> bool {
    let present = std::path::Path::new("/sys/class/infiniband").exists();
    if !present {
        eprintln!("skipped: no RDMA device (run in the Soft-RoCE VM: scripts/vm-tests.sh)");
    }
    present
}

/// Two QPs of one device connected to each other; one WRITE or READ of `len` bytes with
/// `corrupt` applied to the remote key and address. Returns the error's message.
fn failed_request(read: bool, len: usize, corrupt: impl Fn(u64, u32) -> (u64, u32)) -> String {
    let access = if read { RemoteAccess::Read } else { RemoteAccess::Write };
    request_into(read, len, (access, access), corrupt)
}

/// [`failed_request`] into a target whose QP and region grant the peer `access` (QP, region).
fn request_into(
    read: bool,
    len: usize,
    access: (RemoteAccess, RemoteAccess),
    corrupt: impl Fn(u64, u32) -> (u64, u32),
) -> String {
    let (queue_pair_access, region_access) = access;
    let device = Device::open(None).unwrap();
    let port = device.active_port(1).unwrap();
    let gid = device.choose_gid(&port, None).unwrap();
    let protection_domain = device.alloc_pd().unwrap();
    let (source, target) = (HostBuffer::new(4096).unwrap(), HostBuffer::new(4096).unwrap());
    // SAFETY: both buffers outlive their registrations (dropped in reverse order at the end).
    let source_region = unsafe {
        MemoryRegion::register(
            &protection_domain,
            source.address(),
            source.len(),
            "source",
            region_access,
            RelaxedOrdering::Asked,
        )
    }
    .unwrap();
    let target_region = unsafe {
        MemoryRegion::register(
            &protection_domain,
            target.address(),
            target.len(),
            "target",
            region_access,
            RelaxedOrdering::Asked,
        )
    }
    .unwrap();
    let mut completions = CompletionQueue::new(&device, 16).unwrap();
    let sizes = QueuePairSizes { send_depth: 4, recv_depth: 1, max_inline: 0 };
    let mut sender =
        RcQueuePair::new(&protection_domain, &completions, sizes, port.number, queue_pair_access).unwrap();
    let mut receiver =
        RcQueuePair::new(&protection_domain, &completions, sizes, port.number, queue_pair_access).unwrap();
    let path = PathSettings {
        port: port.number,
        mtu: port.active_mtu,
        local_gid: gid,
        read_depth: 1,
        service_level: 0,
        traffic_class: 0,
    };
    let (sender_endpoint, receiver_endpoint) =
        (sender.endpoint(port.lid, gid), receiver.endpoint(port.lid, gid));
    sender.connect(&receiver_endpoint, &path).unwrap();
    receiver.connect(&sender_endpoint, &path).unwrap();

    let remote = target_region.remote();
    let (remote_address, rkey) = corrupt(remote.address, remote.rkey);
    let (operation, name) = if read {
        (Operation::Read { remote_address, rkey }, "RDMA READ")
    } else {
        (Operation::Write { remote_address, rkey }, "RDMA WRITE")
    };
    let request = SendRequest {
        wr_id: 7,
        signaled: true,
        local: source_region.slice(0, len),
        operation,
        inline: Inline::NO,
    };
    sender.post_send([request]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut outcome = None;
    while outcome.is_none() {
        assert!(Instant::now() < deadline, "no completion within 30 s");
        completions
            .poll(|completion| -> Result<(), VerbsError> {
                outcome = Some(if completion.is_success() {
                    "success".to_string()
                } else {
                    completion.error(name, len).to_string()
                });
                Ok(())
            })
            .unwrap();
    }
    outcome.unwrap()
}

#[test]
fn a_foreign_rkey_is_a_remote_access_error_with_a_hint() {
    if !have_device() {
        return;
    }
    let message = failed_request(false, 64, |address, rkey| (address, rkey ^ 0x00ff_ff00));
    eprintln!("checked: {message}");
    assert!(message.contains("remote access error"), "{message}");
    assert!(message.contains("on RDMA WRITE of 64 bytes"), "{message}");
    assert!(message.contains("rkey/address did not match"), "{message}");
}

#[test]
fn a_read_past_the_registered_region_is_a_remote_access_error() {
    if !have_device() {
        return;
    }
    let message = failed_request(true, 512, |address, rkey| (address + 4096 - 256, rkey));
    eprintln!("checked: {message}");
    assert!(message.contains("remote access error"), "{message}");
    assert!(message.contains("on RDMA READ of 512 bytes"), "{message}");
}

#[test]
fn the_correct_key_succeeds() {
    // The control case: the same set-up with nothing corrupted completes, so the failures
    // above come from the keys, not from the test.
    if !have_device() {
        return;
    }
    assert_eq!(failed_request(false, 64, |address, rkey| (address, rkey)), "success");
}

#[test]
fn a_write_into_memory_opened_for_reads_only_is_refused() {
    // gdr-read-lat's server opens its buffer and QP to remote reads only (RemoteAccess::Read):
    // whoever learns its rkey can read the buffer, not write into it.
    if !have_device() {
        return;
    }
    let read_only = (RemoteAccess::Read, RemoteAccess::Read);
    let message = request_into(false, 64, read_only, |address, rkey| (address, rkey));
    eprintln!("checked: {message}");
    // The QP refuses first. Soft-RoCE's responder answers a WRITE its QP does not allow with
    // an "invalid request" NAK (rxe_resp.c, check_op_valid); ConnectX with a remote access error.
    assert!(
        message.contains("remote access error") || message.contains("remote invalid request"),
        "{message}"
    );
    assert!(message.contains("on RDMA WRITE of 64 bytes"), "{message}");
    // The region refuses too, on its own: a QP that allows writes, a region that does not.
    let region_only = (RemoteAccess::Write, RemoteAccess::Read);
    let message = request_into(false, 64, region_only, |address, rkey| (address, rkey));
    eprintln!("checked: {message}");
    assert!(message.contains("remote access error"), "{message}");
    // The control: the READ that test needs succeeds with the same access.
    assert_eq!(request_into(true, 64, read_only, |address, rkey| (address, rkey)), "success");
}

#[test]
fn memory_of_the_send_tests_takes_neither_reads_nor_writes() {
    if !have_device() {
        return;
    }
    let none = (RemoteAccess::None, RemoteAccess::None);
    for read in [false, true] {
        let message = request_into(read, 64, none, |address, rkey| (address, rkey));
        eprintln!("checked: {message}");
        assert!(
            message.contains("remote access error") || message.contains("remote invalid request"),
            "{message}"
        );
    }
}
