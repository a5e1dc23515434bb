//! Credits: a sender whose messages consume the peer's receives (a SEND, or an RDMA WRITE with
//! immediate into a staged receiver) sends only while it holds a credit for a posted receive.
//! A message that finds no receive is refused (receiver-not-ready, RNR) and retried after the
//! RNR timer, 0.64 ms a time on a real NIC at gdrperf's `min_rnr_timer`: hundreds of times a
//! small message's wire time, so a figure that includes RNR waits measures the timer, not the
//! path. A real program holds a credit per posted receive; so does gdrperf.
//!
//! The receiver returns credits as it reposts, in batches (one zero-byte SEND with immediate per
//! batch, the immediate saying how many receives it reposted). Those SENDs consume receives of
//! their own at the sender, which keeps [`CREDIT_RECEIVES`] posted: [`credit_batch`] sizes the
//! batches so that the credits in flight never outnumber them.
//!
//! With `-b` (gdr-send-bw) both directions share each QP's receive queue, so a credit lands in
//! whatever receive is next: each side keeps [`CREDIT_RECEIVES`] receives beyond those it grants,
//! and sends at most that many credits at once.
//!
//! This is the bookkeeping only, apart from the verbs calls, so that a benchmark
//! (`benches/stream_loop.rs`) can time it against a stand-in queue.

/// Receives a sender keeps posted per QP for the receiver's credits.
pub const CREDIT_RECEIVES: u32 = 16;

/// Messages per credit SEND, so that a sender keeping `credit_receives` receives for credits
/// never meets a credit with none posted.
///
/// The messages the receiver has credited but the sender has not yet taken in are at most the
/// `depth` it may have outstanding. Each credit carries `batch` messages or more, except one that
/// ends a phase (after which the sender waits for it before sending on), so at most
/// `(depth - 1) / batch + 1` credits are in flight: with `batch = ceil(depth / credit_receives)`
/// that is at most `credit_receives`.
pub fn credit_batch(depth: u64, credit_receives: u64) -> u64 {
    depth.max(1).div_ceil(credit_receives.max(1))
}

/// The sender's side: credits held per QP, and the receiver's depth once its first grant came.
#[derive(Debug, Clone)]
pub struct SenderCredits {
    available: Vec<u64>,
    /// The receiver's first grant on QP 0: all the receives it keeps posted.
    peer_depth: Option<u64>,
}

impl SenderCredits {
    /// No credit yet: the receiver's first grant gives its whole depth.
    pub fn new(queue_count: usize) -> SenderCredits {
        SenderCredits { available: vec![0; queue_count], peer_depth: None }
    }

    /// Credits QP `index` holds now.
    #[inline]
    pub fn available(&self, index: usize) -> u64 {
        self.available[index]
    }

    /// QP `index` posted `count` messages, each consuming a credit.
    #[inline]
    pub fn spend(&mut self, index: usize, count: u64) {
        self.available[index] -= count;
    }

    /// A credit SEND arrived on QP `index` for `count` reposted receives. `None` when the QP
    /// does not exist.
    #[inline]
    pub fn grant(&mut self, index: usize, count: u64) -> Option<()> {
        let available = self.available.get_mut(index)?;
        *available += count;
        self.peer_depth.get_or_insert(count);
        Some(())
    }

    /// The largest group of messages a timed run may wait to post at once: all credits return
    /// but a batch's remainder, so a group larger than that would never be posted. `None`
    /// before the first grant.
    pub fn largest_group(&self) -> Option<u64> {
        let depth = self.peer_depth?;
        Some(depth + 1 - credit_batch(depth, u64::from(CREDIT_RECEIVES)))
    }
}

/// The receiver's side: receives reposted but not yet credited, and credit SENDs in flight.
#[derive(Debug, Clone)]
pub struct ReceiverCredits {
    owed: Vec<u64>,
    in_flight: u64,
    batch: u64,
    send_depth: u64,
}

impl ReceiverCredits {
    /// `depth` receives posted per QP (owed to the sender: the first grant), credits sent in
    /// batches for a sender with [`CREDIT_RECEIVES`], at most `send_depth` credit SENDs at once.
    pub fn new(queue_count: usize, depth: u64, send_depth: u32) -> ReceiverCredits {
        ReceiverCredits {
            owed: vec![depth; queue_count],
            in_flight: 0,
            batch: credit_batch(depth, u64::from(CREDIT_RECEIVES)),
            send_depth: u64::from(send_depth.max(1)),
        }
    }

    /// A receive of QP `index` was reposted.
    #[inline]
    pub fn reposted(&mut self, index: usize) {
        self.owed[index] += 1;
    }

    /// The credit QP `index` should send now, counted as sent: a whole batch or more, when the
    /// send queue has room.
    #[inline]
    pub fn due(&mut self, index: usize) -> Option<u32> {
        let owed = self.owed[index];
        if owed < self.batch || self.in_flight >= self.send_depth {
            return None;
        }
        let credit = u32::try_from(owed).unwrap_or(u32::MAX);
        self.owed[index] -= u64::from(credit);
        self.in_flight += 1;
        Some(credit)
    }

    /// A credit SEND completed.
    #[inline]
    pub fn completed(&mut self) -> Option<()> {
        self.in_flight = self.in_flight.checked_sub(1)?;
        Some(())
    }

    /// No credit SEND is in flight (a size may end: nothing is left to complete later).
    pub fn settled(&self) -> bool {
        self.in_flight == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_in_flight_never_outnumber_the_credit_receives() {
        assert_eq!(credit_batch(128, 16), 8);
        assert_eq!(credit_batch(17, 16), 2);
        assert_eq!(credit_batch(1, 16), 1);
        assert_eq!(credit_batch(0, 0), 1);
        for credit_receives in 1..=20u64 {
            for depth in 1..=600u64 {
                let batch = credit_batch(depth, credit_receives);
                // Full batches within the depth, plus one phase-end credit.
                assert!((depth - 1) / batch < credit_receives, "{depth} deep, {credit_receives} receives");
            }
        }
    }

    /// A sender and receiver exchanging credits through a stand-in link where messages and
    /// credits are delivered in random order and late: the receiver never has fewer receives
    /// posted than messages arrive, and the credits in flight never exceed the credit receives.
    #[test]
    fn a_sender_never_outruns_the_posted_receives() {
        let depth = 40u64;
        let mut sender = SenderCredits::new(1);
        let mut receiver = ReceiverCredits::new(1, depth, 128);
        let (mut posted_receives, mut to_repost, mut in_wire) = (depth, 0u64, 0u64);
        let mut credits_in_wire = Vec::<u64>::new();
        let mut seed = 12345u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % 8
        };
        let mut delivered = 0u64;
        while delivered < 10_000 {
            if let Some(credit) = receiver.due(0) {
                credits_in_wire.push(u64::from(credit));
                assert!(credits_in_wire.len() as u64 <= u64::from(CREDIT_RECEIVES));
            }
            let send = sender.available(0).min(random());
            sender.spend(0, send);
            in_wire += send;
            // Some messages land, each consuming a posted receive, reposted then or later.
            let land = in_wire.min(random());
            assert!(land <= posted_receives, "a message found no receive");
            (in_wire, posted_receives, to_repost) =
                (in_wire - land, posted_receives - land, to_repost + land);
            delivered += land;
            let repost = to_repost.min(random());
            (posted_receives, to_repost) = (posted_receives + repost, to_repost - repost);
            (0..repost).for_each(|_| receiver.reposted(0));
            if random() < 3 {
                if let Some(credit) = credits_in_wire.pop() {
                    sender.grant(0, credit).unwrap();
                    receiver.completed().unwrap();
                }
            }
        }
        assert_eq!(sender.largest_group(), Some(depth + 1 - 3));
    }

    /// What travels on one direction of a QP, in order (RC delivers in order).
    #[derive(Debug, Clone, Copy)]
    enum Wire {
        Data,
        Credit(u64),
    }

    /// One end of a `-b` QP: it sends data on its credits and returns the peer's credits as it
    /// reposts, and both the peer's data and the peer's credits consume its one receive pool:
    /// `depth` granted plus [`CREDIT_RECEIVES`] kept for credits (gdr-send-bw's `-b`).
    struct End {
        sender: SenderCredits,
        receiver: ReceiverCredits,
        /// Receives posted now.
        posted: u64,
        /// Landed and not yet polled: data (reposted and owed) or credits (reposted, granted).
        landed: std::collections::VecDeque<Wire>,
        /// What this end has sent, not yet landed at the peer.
        outgoing: std::collections::VecDeque<Wire>,
    }

    /// Both directions share each end's receives: with the reserve, neither data nor a credit
    /// ever finds the receive queue empty, whatever the order of posts, landings and polls.
    #[test]
    fn both_directions_sharing_one_receive_queue_never_find_it_empty() {
        for depth in [1u64, 7, 17, 128, 512] {
            let end = || End {
                sender: SenderCredits::new(1),
                receiver: ReceiverCredits::new(1, depth, CREDIT_RECEIVES),
                posted: depth + u64::from(CREDIT_RECEIVES),
                landed: Default::default(),
                outgoing: Default::default(),
            };
            let mut ends = [end(), end()];
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ depth;
            let mut random = move |below: u64| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % below
            };
            let mut delivered = [0u64; 2];
            for _ in 0..20_000 {
                let this = random(2) as usize;
                let peer = 1 - this;
                let end = &mut ends[this];
                match random(4) {
                    // Credits due and data on the credits held go out.
                    0 => {
                        while let Some(credit) = end.receiver.due(0) {
                            end.outgoing.push_back(Wire::Credit(u64::from(credit)));
                        }
                        let send = end.sender.available(0).min(random(2 * depth + 2));
                        end.sender.spend(0, send);
                        end.outgoing.extend(std::iter::repeat_n(Wire::Data, send as usize));
                    }
                    // Some of what this end sent lands at the peer, each in a posted receive.
                    1 => {
                        for _ in 0..random(2 * depth + 2) {
                            let Some(item) = ends[this].outgoing.pop_front() else { break };
                            if let Wire::Credit(_) = item {
                                // The credit SEND completes at its sender once it landed.
                                ends[this].receiver.completed().expect("a credit in flight");
                            } else {
                                delivered[peer] += 1;
                            }
                            let peer_end = &mut ends[peer];
                            assert!(peer_end.posted > 0, "{item:?} found no receive ({depth} deep)");
                            peer_end.posted -= 1;
                            peer_end.landed.push_back(item);
                        }
                    }
                    // Some landed messages are polled: each receive goes back at once.
                    _ => {
                        for _ in 0..random(depth + 2) {
                            let Some(item) = end.landed.pop_front() else { break };
                            end.posted += 1;
                            match item {
                                Wire::Data => end.receiver.reposted(0),
                                Wire::Credit(count) => end.sender.grant(0, count).expect("QP 0"),
                            }
                        }
                    }
                }
            }
            assert!(delivered.iter().all(|&count| count > 100), "{depth} deep: {delivered:?} delivered");
        }
    }
}
