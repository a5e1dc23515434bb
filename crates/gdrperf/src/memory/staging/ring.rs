//! Staged memory's side of the engines' memory trait (`memory::queue_memory`'s
//! `QueueMemory`): [`Staged`], a payload the NIC does not reach, copied through a registered
//! bounce buffer, as an application without GPUDirect must do. The bounce buffer is a **ring of
//! slots** ([`Ring`]), one message long each, so no two messages in flight share bytes: message
//! `m` of a size goes out from (or lands in) slot `m % slots`, and its payload bytes are the same
//! slot of the payload, so each message has bytes of its own from end to end.
//!
//! One copy-ahead rule for every engine: **a copy out of message `m` starts once its slot is
//! free, that is once message `m - slots` (the slot's previous user) has completed**, and never
//! for a message the phase will not send. So at most `slots` copies run ahead of the posts (not
//! all `-n` messages before the first post), and a timed run (`-D`) stops copying when its time
//! is up; the few copies started ahead and never sent are dropped from the copy time
//! (`QueueMemory::finish`). Since slots are freed by send completions, a staged sender signals
//! at least once per half ring (`signal_every`: 8 MiB messages have 8 slots, so every 4th,
//! where `-Q` of a `-t 16` queue is 16). On the receiving side a slot is given back to the NIC (its
//! receive reposted, or its credit returned) only after its copy in has finished.
//!
//! With `--validate`, every staged message carries its index (`buffers::stamp`): the sender writes
//! the index into the message's first and last 8 bytes before copying it out, and the receiver
//! checks each message as its copy in finishes. A message overwritten by a later one, or
//! delivered into another message's slot, fails with both indices named.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

use crate::error::Result;
use crate::memory::buffers::{BenchBuffer, MessageCheck};
use crate::memory::pattern::{
    fill_pattern, find_message_mismatch, find_mismatch, message_stamps, MessageMismatch,
};
use crate::memory::queue_memory::QueueMemory;
use crate::memory::spin::spin_until;
use crate::memory::staging::{CopyId, Stager};
use crate::verbs::LocalSlice;

/// The most bytes a staged ring may take per QP (payload and bounce buffer each): a deep queue
/// of large messages gets fewer slots instead (8 MiB messages: 8 slots, 64 MiB).
pub const RING_BYTES: usize = 64 << 20;

/// Slots start on a cache line, so two messages never share one.
const SLOT_ALIGNMENT: usize = 64;

/// Bytes of a staged buffer (payload and bounce ring alike) for messages up to `largest` with
/// `depth` messages in flight: `depth` slots of the largest message, capped at [`RING_BYTES`]
/// (never below one message).
pub fn staged_len(largest: usize, depth: u32) -> usize {
    let slot = largest.max(1).next_multiple_of(SLOT_ALIGNMENT);
    slot.saturating_mul(depth.max(1) as usize).min(RING_BYTES.max(slot)).max(largest)
}

/// The slots of one size in a staged ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ring {
    pub slots: u64,
    pub stride: usize,
}

impl Ring {
    /// Slots of `size`-byte messages in `len` bytes: as many as fit, at most `depth`.
    pub fn new(len: usize, depth: u32, size: usize) -> Ring {
        let stride = size.max(1).next_multiple_of(SLOT_ALIGNMENT);
        let fit = (len / stride).max(1) as u64;
        Ring { slots: u64::from(depth.max(1)).min(fit), stride }
    }

    /// The bytes of message `message` (of `size` bytes).
    #[inline]
    pub fn range(&self, message: u64, size: usize) -> Range<usize> {
        let start = (message % self.slots) as usize * self.stride;
        start..start + size
    }
}

/// What a staged QP writes and checks with `--validate`: the pattern seed of its messages, and
/// whether each carries its index. Only a staged sender can stamp each message (memory the NIC
/// reads directly sends every message from the same bytes), so messages are stamped where both
/// sides are staged; a staged receiver of another memory checks each message's plain pattern.
#[derive(Debug, Clone, Copy)]
pub struct Stamps {
    pub seed: u64,
    pub stamped: bool,
}

/// One QP's staged memory for one size: its stager, its ring, its copies in flight.
pub struct Staged<'a> {
    stager: &'a mut dyn Stager,
    /// The whole registered bounce ring.
    bounce: LocalSlice,
    check: &'a mut MessageCheck,
    ring: Ring,
    size: usize,
    stamps: Option<Stamps>,
    /// Copies out started and not yet seen finished (oldest first), and the count of each.
    outs: VecDeque<CopyId>,
    /// The copy out of message `m` is `out_ids[m % slots]` (to drop the unsent ones' time).
    out_ids: Vec<CopyId>,
    out_started: u64,
    out_done: u64,
    /// Copies in likewise, each with its ring position.
    ins: VecDeque<(CopyId, u64)>,
    in_started: u64,
    in_done: u64,
    /// `--validate`: the plain pattern of a message, built once per size: written into each
    /// payload slot the first time it is used (then only the stamps change), and what a
    /// received message's body is compared with.
    pattern: Vec<u8>,
}

impl<'a> Staged<'a> {
    /// The staged memory of `buffer` for `size`-byte messages laid out as `ring`; `None` where
    /// the buffer is not staged.
    pub fn new(
        buffer: &'a mut BenchBuffer,
        ring: Ring,
        size: usize,
        stamps: Option<Stamps>,
    ) -> Option<Staged<'a>> {
        let (stager, region, check) = buffer.staged_parts()?;
        Some(Staged::from_parts(stager, region.slice(0, region.len()), check, ring, size, stamps))
    }

    /// A staged queue from its parts: the stager, its registered bounce ring, where its checks
    /// go. [`Staged::new`] takes them from a staged buffer; tests make them up.
    pub(crate) fn from_parts(
        stager: &'a mut dyn Stager,
        bounce: LocalSlice,
        check: &'a mut MessageCheck,
        ring: Ring,
        size: usize,
        stamps: Option<Stamps>,
    ) -> Staged<'a> {
        *check = MessageCheck::default();
        let capacity = ring.slots as usize;
        Staged {
            stager,
            bounce,
            check,
            ring,
            size,
            stamps,
            outs: VecDeque::with_capacity(capacity),
            out_ids: vec![CopyId::NONE; capacity],
            out_started: 0,
            out_done: 0,
            ins: VecDeque::with_capacity(capacity),
            in_started: 0,
            in_done: 0,
            pattern: match stamps {
                Some(stamps) => {
                    let mut pattern = vec![0u8; size];
                    fill_pattern(&mut pattern, stamps.seed);
                    pattern
                }
                None => Vec::new(),
            },
        }
    }

    /// The quick check of a received message: the body against the pattern built once, the
    /// stamps against the message's (memcmp speed; the slow per-byte search runs only to
    /// describe a failure).
    fn intact(&self, bytes: &[u8], stamps: Stamps, message: u64) -> bool {
        if !stamps.stamped {
            return bytes == self.pattern.as_slice();
        }
        let len = bytes.len();
        // The body lies between the stamps (see `message_stamps`).
        let body = len.min(8)..if len >= 16 { len - 8 } else { len };
        message_stamps(stamps.seed, message, len)
            .iter()
            .all(|(offset, stamp)| bytes[*offset..*offset + stamp.len()] == stamp[..])
            && bytes[body.clone()] == self.pattern[body]
    }

    /// Checks message `message` in its payload slot (ring position `position`), once its copy
    /// in finished.
    fn check_message(&mut self, message: u64, position: u64) -> Result<()> {
        let Some(stamps) = self.stamps else { return Ok(()) };
        let range = self.ring.range(position, self.size);
        let bytes = self.stager.read_payload_range(range)?;
        self.check.checked += 1;
        if self.check.failure.is_none() && !self.intact(&bytes, stamps, message) {
            let mismatch = match stamps.stamped {
                true => find_message_mismatch(&bytes, stamps.seed, message),
                false => find_mismatch(&bytes, stamps.seed).map(MessageMismatch::Byte),
            };
            if let Some(mismatch) = mismatch {
                self.check.failure =
                    Some(mismatch.describe(message, position % self.ring.slots, self.ring.slots));
            }
        }
        Ok(())
    }
}

impl QueueMemory for Staged<'_> {
    const COPIES: bool = true;

    #[inline]
    fn local(&self, message: u64) -> LocalSlice {
        self.bounce.sub(self.ring.range(message, self.size).start, self.size)
    }

    fn window(&self) -> u64 {
        // Half a ring: one half is copied into while the other is on the wire.
        (self.ring.slots / 2).max(1)
    }

    #[inline]
    fn ready_to_post(&mut self, posted: u64, completed: u64, end: u64) -> Result<u64> {
        // The one rule: a slot is free once its previous message has completed.
        let limit = end.min(completed + self.ring.slots);
        while self.out_started < limit {
            let range = self.ring.range(self.out_started, self.size);
            if let Some(stamps) = self.stamps {
                // Each slot's payload holds the message it sends: the pattern once per slot and
                // size, then the message's stamps (--validate only; these writes are timed).
                if self.out_started < self.ring.slots {
                    self.stager.write_payload_at(range.start, &self.pattern)?;
                }
                if stamps.stamped {
                    for (offset, bytes) in message_stamps(stamps.seed, self.out_started, self.size) {
                        self.stager.write_payload_at(range.start + offset, bytes.as_slice())?;
                    }
                }
            }
            let copy = self.stager.begin_out(range)?;
            self.outs.push_back(copy);
            self.out_ids[(self.out_started % self.ring.slots) as usize] = copy;
            self.out_started += 1;
        }
        while let Some(&copy) = self.outs.front() {
            if !self.stager.poll(copy)? {
                break;
            }
            self.outs.pop_front();
            self.out_done += 1;
        }
        Ok(self.out_done.saturating_sub(posted))
    }

    #[inline]
    fn ready_to_land(&mut self, posted: u64) -> Result<u64> {
        Ok((self.copied_in()? + self.ring.slots).saturating_sub(posted))
    }

    #[inline]
    fn landed(&mut self, message: u64, position: u64) -> Result<()> {
        debug_assert_eq!(message, self.in_started, "messages land in order");
        let range = self.ring.range(position, self.size);
        self.ins.push_back((self.stager.begin_in(range)?, position));
        self.in_started += 1;
        Ok(())
    }

    fn wait_copied_in(&mut self, message: u64, timeout: Duration) -> Result<()> {
        let size = self.size;
        spin_until(timeout, &|| format!("copying a received {size}-byte message in"), || {
            Ok(self.copied_in()? > message)
        })
    }

    #[inline]
    fn copied_in(&mut self) -> Result<u64> {
        while let Some(&(copy, position)) = self.ins.front() {
            if !self.stager.poll(copy)? {
                break;
            }
            self.ins.pop_front();
            self.check_message(self.in_done, position)?;
            self.in_done += 1;
        }
        Ok(self.in_done)
    }

    fn finish(&mut self, posted: u64) -> Result<()> {
        self.stager.finish()?;
        // Started ahead, never sent: at most a ring's worth, the newest copies out.
        for message in posted..self.out_started {
            self.stager.log().forget(self.out_ids[(message % self.ring.slots) as usize]);
        }
        self.outs.clear();
        self.out_done = self.out_started;
        while let Some((_, position)) = self.ins.pop_front() {
            self.check_message(self.in_done, position)?;
            self.in_done += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::pattern::{fill_message, pattern_seed};
    use crate::memory::queue_memory::{signal_every, Direct};
    use crate::memory::staging::HostStager;

    /// A bounce "registration" for tests: the stager's bounce buffer, with a made-up key.
    fn bounce_of(stager: &HostStager) -> LocalSlice {
        let (address, len) = stager.bounce();
        LocalSlice::for_tests(address, len as u32)
    }

    /// What the NIC does: writes `bytes` into the bounce buffer at `offset`.
    fn land(bounce: LocalSlice, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= bounce.len() as usize);
        // SAFETY: inside the live bounce buffer; the stager does not touch it during this write.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (bounce.address() as *mut u8).add(offset),
                bytes.len(),
            )
        };
    }

    #[test]
    fn rings_hold_a_send_queue_of_messages_and_stay_under_the_cap() {
        assert_eq!(staged_len(65536, 128), 8 << 20, "128 slots of 64 KiB");
        assert_eq!(staged_len(8 << 20, 128), RING_BYTES, "8 MiB messages: capped");
        assert_eq!(Ring::new(staged_len(8 << 20, 128), 128, 8 << 20).slots, 8);
        assert_eq!(staged_len(100 << 20, 128), 100 << 20, "never below one message");
        assert_eq!(staged_len(4096, 1), 4096);
        // Small messages of a sweep whose largest is 8 MiB still get a full send queue of slots.
        let ring = Ring::new(staged_len(8 << 20, 128), 128, 4096);
        assert_eq!((ring.slots, ring.stride), (128, 4096));
        assert_eq!(ring.range(130, 100), 2 * 4096..2 * 4096 + 100);
        assert_eq!(Ring::new(4096, 16, 3).stride, 64, "slots start on a cache line");
    }

    #[test]
    fn a_sender_signals_at_least_once_per_half_ring() {
        let mut stager = HostStager::new(8 * 256).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let staged =
            Staged::from_parts(&mut stager, bounce, &mut check, Ring::new(2048, 128, 256), 256, None);
        assert_eq!(signal_every(16, std::slice::from_ref(&staged)), 4, "8 slots: every 4th message");
        assert_eq!(signal_every(2, std::slice::from_ref(&staged)), 2, "-Q below half the ring stays");
        let direct = Direct::for_slice(bounce);
        assert_eq!(signal_every(100, &[direct]), 100, "memory the NIC reaches: -Q as given");
    }

    #[test]
    fn copies_out_run_ahead_only_into_free_slots() {
        let mut stager = HostStager::new(4 * 256).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let ring = Ring::new(1024, 4, 256);
        let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, ring, 256, None);
        // 1000 messages to send: only the ring's 4 are copied before the first post.
        assert_eq!(staged.ready_to_post(0, 0, 1000).unwrap(), 4);
        assert_eq!(staged.out_started, 4);
        // Two posted, none completed: their slots are still the NIC's, nothing more is copied.
        assert_eq!(staged.ready_to_post(2, 0, 1000).unwrap(), 2);
        assert_eq!(staged.out_started, 4);
        // Two completed: two slots free, two more copies.
        assert_eq!(staged.ready_to_post(2, 2, 1000).unwrap(), 4);
        assert_eq!(staged.out_started, 6);
        // Each message goes out from its own slot.
        assert_eq!(staged.local(5).address(), bounce.address() + 256);
        assert_eq!(staged.local(5).len(), 256);
        // The phase ends at message 7: no copy beyond it.
        assert_eq!(staged.ready_to_post(6, 6, 7).unwrap(), 1);
        assert_eq!(staged.out_started, 7);
    }

    #[test]
    fn a_staged_sender_stamps_each_message_into_its_slot() {
        let (size, seed) = (256, pattern_seed(256, 3));
        let mut stager = HostStager::new(4 * size).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let ring = Ring::new(4 * size, 4, size);
        let stamps = Some(Stamps { seed, stamped: true });
        let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, ring, size, stamps);
        let in_slot = |slot: usize| {
            // SAFETY: inside the live bounce buffer, which nothing writes during this read.
            unsafe { std::slice::from_raw_parts((bounce.address() as *const u8).add(slot * size), size) }
                .to_vec()
        };
        let message = |index: u64| {
            let mut bytes = vec![0u8; size];
            fill_message(&mut bytes, seed, index);
            bytes
        };
        assert_eq!(staged.ready_to_post(0, 0, 100).unwrap(), 4);
        assert_eq!(in_slot(2), message(2));
        // Messages 0 and 1 completed: 4 and 5 reuse their slots, with their own stamps.
        staged.ready_to_post(4, 2, 100).unwrap();
        assert_eq!((in_slot(0), in_slot(1), in_slot(3)), (message(4), message(5), message(3)));
    }

    #[test]
    fn a_reader_lands_only_in_slots_already_copied_in() {
        let mut stager = HostStager::new(4 * 256).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let ring = Ring::new(1024, 4, 256);
        let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, ring, 256, None);
        // An empty ring: 4 READs may be posted, none more.
        assert_eq!(staged.ready_to_land(0).unwrap(), 4);
        assert_eq!(staged.ready_to_land(4).unwrap(), 0);
        // Two landed and copied in (host copies finish at once): their slots take two more.
        staged.landed(0, 0).unwrap();
        staged.landed(1, 1).unwrap();
        assert_eq!(staged.ready_to_land(4).unwrap(), 2);
        assert_eq!(staged.out_started, 0, "a reader copies nothing out");
    }

    #[test]
    fn copies_started_ahead_and_never_sent_are_not_copy_time() {
        let mut stager = HostStager::new(4 * 256).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let ring = Ring::new(1024, 4, 256);
        let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, ring, 256, None);
        // A timed phase: copies run ahead to the ring's end; time is up after 5 posts.
        staged.ready_to_post(0, 0, u64::MAX).unwrap();
        staged.ready_to_post(4, 3, u64::MAX).unwrap();
        assert_eq!(staged.out_started, 7);
        staged.finish(5).unwrap();
        assert_eq!(stager.log().copies(), 5, "the 2 copies started for unsent messages are dropped");
    }

    #[test]
    fn each_message_is_checked_in_its_own_slot_and_a_shared_buffer_fails() {
        let (size, seed) = (512, pattern_seed(512, 0));
        let stamps = Some(Stamps { seed, stamped: true });
        let message = |index: u64| {
            let mut bytes = vec![0u8; size];
            fill_message(&mut bytes, seed, index);
            bytes
        };
        // The ring: messages 0..6 land in slots 0..3 in turn, each copied in before its slot is
        // reused (the credit rule), and all pass.
        let mut stager = HostStager::new(4 * size).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let ring = Ring::new(4 * size, 4, size);
        {
            let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, ring, size, stamps);
            for index in 0..6u64 {
                land(bounce, ring.range(index, size).start, &message(index));
                staged.landed(index, index).unwrap();
                assert_eq!(staged.copied_in().unwrap(), index + 1);
            }
            staged.finish(0).unwrap();
        }
        assert_eq!((check.failure.as_deref(), check.checked), (None, 6));

        // The old shared bounce buffer: every message lands on the same bytes, and message 1
        // lands before message 0 was copied in. Message 0 is copied in holding message 1.
        let mut stager = HostStager::new(size).unwrap();
        let bounce = bounce_of(&stager);
        let mut check = MessageCheck::default();
        let shared = Ring { slots: 1, stride: size };
        {
            let mut staged = Staged::from_parts(&mut stager, bounce, &mut check, shared, size, stamps);
            land(bounce, 0, &message(0));
            land(bounce, 0, &message(1));
            staged.landed(0, 0).unwrap();
            staged.landed(1, 1).unwrap();
            assert_eq!(staged.copied_in().unwrap(), 2);
        }
        let failure = check.failure.expect("the overwritten message fails");
        assert!(failure.contains("message 0") && failure.contains("stamp of message 1"), "{failure}");
    }
}
