//! What the simulated-NIC tests share: two connected QPs with their regions, and waiting for a
//! completion.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use gdrperf_verbs::{
    CompletionQueue, Device, HostBuffer, Inline, MemoryRegion, Operation, PathSettings, QueuePairSizes,
    RcQueuePair, RelaxedOrdering, RemoteAccess, SendRequest, VerbsError, WorkCompletion,
};

/// Two connected QPs of the simulated NIC, their regions and CQs (dropped in reverse order).
pub struct Pair {
    pub sender: RcQueuePair,
    pub receiver: RcQueuePair,
    pub sender_completions: CompletionQueue,
    pub receiver_completions: CompletionQueue,
    pub source_region: MemoryRegion,
    pub target_region: MemoryRegion,
    pub source: HostBuffer,
    pub target: HostBuffer,
}

/// A pair whose target region and QP grant `access`, send depth `send_depth`.
pub fn pair(access: RemoteAccess, send_depth: u32) -> Pair {
    let device = Device::open(Some("simulated0")).expect("the simulated NIC opens without hardware");
    assert!(device.is_simulated());
    let port = device.active_port(1).unwrap();
    let protection_domain = device.alloc_pd().unwrap();
    let (mut source, target) = (HostBuffer::new(4096).unwrap(), HostBuffer::new(4096).unwrap());
    source.as_mut_slice().iter_mut().enumerate().for_each(|(index, byte)| *byte = index as u8);
    // SAFETY: both buffers live in the returned Pair, dropped after their regions.
    let source_region = unsafe {
        MemoryRegion::register(
            &protection_domain,
            source.address(),
            source.len(),
            "source",
            RemoteAccess::None,
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
            access,
            RelaxedOrdering::Asked,
        )
    }
    .unwrap();
    let sizes = QueuePairSizes { send_depth, recv_depth: 4, max_inline: 64 };
    let sender_completions = CompletionQueue::new(&device, 16).unwrap();
    let receiver_completions = CompletionQueue::new(&device, 16).unwrap();
    let mut sender = RcQueuePair::new(&protection_domain, &sender_completions, sizes, 1, access).unwrap();
    let mut receiver = RcQueuePair::new(&protection_domain, &receiver_completions, sizes, 1, access).unwrap();
    let gid = device.choose_gid(&port, None).unwrap();
    let path = PathSettings {
        port: 1,
        mtu: port.active_mtu,
        local_gid: gid,
        read_depth: 1,
        service_level: 0,
        traffic_class: 0,
    };
    let (sender_end, receiver_end) = (sender.endpoint(port.lid, gid), receiver.endpoint(port.lid, gid));
    sender.connect(&receiver_end, &path).unwrap();
    receiver.connect(&sender_end, &path).unwrap();
    Pair {
        sender,
        receiver,
        sender_completions,
        receiver_completions,
        source_region,
        target_region,
        source,
        target,
    }
}

pub fn request(wr_id: u64, local: gdrperf_verbs::LocalSlice, operation: Operation) -> SendRequest {
    SendRequest { wr_id, signaled: true, local, operation, inline: Inline::NO }
}

/// The next completion of `queue`, waited for (at most 10 s: a condition, not a fixed sleep).
pub fn next(queue: &mut CompletionQueue) -> WorkCompletion {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut found = None;
        queue
            .poll(|completion| -> Result<(), VerbsError> {
                found.get_or_insert(completion);
                Ok(())
            })
            .unwrap();
        if let Some(completion) = found {
            return completion;
        }
        assert!(Instant::now() < deadline, "no completion within 10 s");
        std::thread::yield_now();
    }
}

pub fn message(completion: &WorkCompletion, operation: &'static str, bytes: usize) -> String {
    if completion.is_success() {
        "success".to_string()
    } else {
        completion.error(operation, bytes).to_string()
    }
}
