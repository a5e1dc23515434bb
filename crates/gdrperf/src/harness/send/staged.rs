//! Staged memory in gdr-send-bw (`--mem cuda-staged`, and the hidden `host-staged`).
//!
//! The sender copies every message out of its payload into the bounce buffer before posting it,
//! with up to a send queue's worth of copies running ahead of the posts (as gdr-write-bw's
//! staged sender does), so that the copy of the next messages overlaps the wire time of the
//! previous ones. The receiver copies every message in from the bounce buffer as its receive
//! completes, and waits for that copy before it reposts the receive: a receive reposted earlier
//! could land the next message under the copy still reading the last one.
//!
//! Every message of a size carries the same pattern, so with `--validate` a staged receiver
//! checks its payload after the size (it holds the last message copied in), not each message in
//! a host ring: a ring would bypass the bounce buffer and the copy that staging measures.

use std::collections::VecDeque;
use std::time::Duration;

use crate::error::Result;
use crate::harness::staging::{wait_copy, CopyId, Stager};

/// The copies out of one QP's payload running ahead of its posts.
pub(super) struct OutPipeline {
    /// Started, not yet seen finished, oldest first. Never longer than the window it was made
    /// for, so pushing never reallocates inside the stream.
    pending: VecDeque<CopyId>,
    /// Finished and not yet posted.
    ready: u64,
    window: u64,
}

impl OutPipeline {
    /// A pipeline keeping up to `window` copies (the send queue's depth) ahead of the posts.
    pub(super) fn new(window: u32) -> OutPipeline {
        let window = u64::from(window.max(1));
        OutPipeline { pending: VecDeque::with_capacity(window as usize), ready: 0, window }
    }

    /// Starts copies until `window` (or `wanted`, the messages the phase still has to post, if
    /// fewer) are running or ready, retires the finished ones in order, and returns how many
    /// messages are ready to post.
    #[inline]
    pub(super) fn advance(&mut self, stager: &mut dyn Stager, size: usize, wanted: u64) -> Result<u64> {
        let target = self.window.min(wanted);
        while self.pending.len() as u64 + self.ready < target {
            self.pending.push_back(stager.begin_out(0..size)?);
        }
        while let Some(&copy) = self.pending.front() {
            if !stager.poll(copy)? {
                break;
            }
            self.pending.pop_front();
            self.ready += 1;
        }
        Ok(self.ready)
    }

    /// `count` ready messages were posted.
    #[inline]
    pub(super) fn posted(&mut self, count: u64) {
        self.ready -= count.min(self.ready);
    }
}

/// Copies a received `size`-byte message in from the bounce buffer and waits for it.
#[inline]
pub(super) fn copy_in(stager: &mut dyn Stager, size: usize, timeout: Duration) -> Result<()> {
    let copy = stager.begin_in(0..size)?;
    wait_copy(stager, copy, timeout, &|| {
        format!("copying a received {size}-byte message in from the bounce buffer")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::staging::HostStager;

    #[test]
    fn pipeline_keeps_a_window_of_copies_and_never_more_than_wanted() {
        let mut stager = HostStager::new(4096).unwrap();
        let mut pipeline = OutPipeline::new(8);
        // The host stager finishes each copy at once: a window's worth is ready.
        assert_eq!(pipeline.advance(&mut stager, 4096, u64::MAX).unwrap(), 8);
        pipeline.posted(3);
        assert_eq!(pipeline.advance(&mut stager, 4096, u64::MAX).unwrap(), 8, "refilled to the window");
        pipeline.posted(8);
        assert_eq!(
            pipeline.advance(&mut stager, 4096, 2).unwrap(),
            2,
            "no copies beyond the phase's messages"
        );
        pipeline.posted(2);
        assert_eq!(pipeline.advance(&mut stager, 4096, 0).unwrap(), 0);
    }

    #[test]
    fn copied_in_messages_reach_the_payload() {
        let mut stager = HostStager::new(64).unwrap();
        let (address, _) = stager.bounce();
        // SAFETY: the bounce buffer is alive and 64 bytes long; nothing else touches it here.
        unsafe { std::ptr::write_bytes(address as *mut u8, 0xab, 16) };
        copy_in(&mut stager, 16, Duration::from_secs(1)).unwrap();
        assert_eq!(stager.read_payload(17).unwrap(), [vec![0xab; 16], vec![0]].concat());
    }

    #[test]
    fn validation_sees_the_payload_so_a_missing_or_corrupted_copy_in_fails_it() {
        use crate::harness::buffers::{fill_pattern, find_mismatch, pattern_seed};
        let (size, seed) = (4096, pattern_seed(4096, 0));
        let mut stager = HostStager::new(size).unwrap();
        let bounce = stager.bounce().0 as *mut u8;
        let mut delivered = vec![0u8; size];
        fill_pattern(&mut delivered, seed);
        // SAFETY (every block below): the bounce buffer is alive and `size` bytes long, and the
        // stager touches it only inside `copy_in`, never while these writes run.
        unsafe { std::ptr::copy_nonoverlapping(delivered.as_ptr(), bounce, size) }; // what the NIC delivered
        assert!(find_mismatch(&stager.read_payload(size).unwrap(), seed).is_some(), "not copied in yet");
        unsafe { *bounce.add(100) ^= 0x40 }; // corrupted on the way in
        copy_in(&mut stager, size, Duration::from_secs(1)).unwrap();
        assert_eq!(
            find_mismatch(&stager.read_payload(size).unwrap(), seed).map(|mismatch| mismatch.offset),
            Some(100)
        );
        unsafe { *bounce.add(100) ^= 0x40 };
        copy_in(&mut stager, size, Duration::from_secs(1)).unwrap();
        assert_eq!(find_mismatch(&stager.read_payload(size).unwrap(), seed), None);
    }
}
