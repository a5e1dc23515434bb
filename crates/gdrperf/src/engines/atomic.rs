//! The atomic tests' counter (gdr-atomic-lat, gdr-atomic-bw): ib_atomic_lat's and
//! ib_atomic_bw's 8-byte atomics, each advancing the peer's counter by exactly one, and the data
//! check that it did. Apart from the loops that post them (`latency/read.rs`, `bandwidth.rs`), so
//! that the check needs nothing of either.

use crate::error::Result;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::latency::{AtomicOperation, ATOMIC_SIZE};
use crate::verbs::{Operation, RemoteBuffer};

/// atomic_lat's n-th request on the counter at `remote` ([`atomic_operation`]).
pub(crate) fn atomic_request(atomic: AtomicOperation, remote: RemoteBuffer) -> impl Fn(u64) -> Operation {
    move |sequence: u64| atomic_operation(atomic, remote.address, remote.rkey, sequence)
}

/// The `sequence`-th atomic of a size (from 0, warm-up included) on the counter at
/// `remote_address`: each advances it by 1, as ib_atomic_lat's and ib_atomic_bw's fetch-and-add
/// does; the compare-and-swap swaps in the next value where the counter holds the count of the
/// atomics before it (perftest swaps 0 for 0: the same work for the NIC, and a counter that shows
/// no swap).
#[inline]
pub(crate) fn atomic_operation(
    atomic: AtomicOperation,
    remote_address: u64,
    rkey: u32,
    sequence: u64,
) -> Operation {
    match atomic {
        AtomicOperation::FetchAndAdd => Operation::FetchAndAdd { remote_address, rkey, add: 1 },
        AtomicOperation::CompareAndSwap => {
            Operation::CompareAndSwap { remote_address, rkey, compare: sequence, swap: sequence + 1 }
        }
    }
}

/// One QP's atomics of the last size: how many it posted (warm-up included), and where in its
/// buffer (the payload, for staged memory) the last one's fetched value landed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LastFetch {
    pub posted: u64,
    pub at: usize,
}

/// Keeps each QP's [`LastFetch`] of a size for [`check_atomic_counter`].
pub(crate) fn count_atomics(session: &mut Session, last: Vec<LastFetch>) {
    session.connection.state::<AtomicsPosted>().0 = last;
}

/// The atomics of the last size, per QP: each advanced its counter by 1.
#[derive(Default)]
struct AtomicsPosted(Vec<LastFetch>);

/// `--validate` of the atomic tests, on the side that posted them, after a size whose counters
/// were cleared before it: the value each QP's last atomic fetched is the count of the atomics
/// before it, so the peer's counter advanced by exactly one per atomic, none lost and none
/// applied twice (a QP's atomics are executed in order).
pub(crate) fn check_atomic_counter(session: &mut Session) -> Result<Option<CheckFailure>> {
    let last = session.connection.state::<AtomicsPosted>().0.clone();
    for (buffer, LastFetch { posted, at }) in session.local.buffers.iter_mut().zip(last) {
        let bytes = buffer.read_at(at..at + ATOMIC_SIZE)?;
        let fetched = u64::from_ne_bytes(bytes.try_into().unwrap_or_default());
        if let Some(problem) = counter_problem(fetched, posted) {
            return Ok(Some(problem));
        }
    }
    Ok(None)
}

/// What is wrong when the last of `posted` atomics fetched `fetched` (nothing: `posted - 1`).
fn counter_problem(fetched: u64, posted: u64) -> Option<CheckFailure> {
    let expected = posted.checked_sub(1)?;
    (fetched != expected).then_some(CheckFailure::AtomicCounter { fetched, posted, expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_atomic_counter_check_fails_when_an_atomic_was_lost_or_doubled() {
        assert_eq!(counter_problem(1016, 1017), None, "each of 1017 atomics advanced it by 1");
        assert_eq!(counter_problem(0, 0), None, "no atomic, nothing to check");
        for wrong in [1015, 1017, 0] {
            let problem = counter_problem(wrong, 1017).expect("a wrong counter is reported").to_string();
            assert!(
                problem.contains(&format!("held {wrong} before the last of 1017 atomics, not 1016")),
                "{problem}"
            );
        }
    }
}
