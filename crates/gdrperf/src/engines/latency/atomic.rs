//! What atomic_lat adds to read_lat's one-sided loop (`read.rs`): ib_atomic_lat's 8-byte
//! atomics on the server's counter, and the data check that the counter advanced by exactly one
//! per atomic. Apart from the loop, so that the check needs nothing of it.

use crate::error::Result;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::latency::{AtomicOperation, ATOMIC_SIZE};
use crate::verbs::{Operation, RemoteBuffer};

/// atomic_lat's n-th request on the counter at `remote`: each advances it by 1, as
/// ib_atomic_lat's do (fetch-and-add of 1; compare-and-swap of the value the counter holds for
/// the next one, where perftest swaps 0 for 0: the same work for the NIC, and a counter that
/// shows every swap).
pub(super) fn atomic_request(atomic: AtomicOperation, remote: RemoteBuffer) -> impl Fn(u64) -> Operation {
    let RemoteBuffer { address: remote_address, rkey, .. } = remote;
    move |sequence: u64| match atomic {
        AtomicOperation::FetchAndAdd => Operation::FetchAndAdd { remote_address, rkey, add: 1 },
        AtomicOperation::CompareAndSwap => {
            Operation::CompareAndSwap { remote_address, rkey, compare: sequence, swap: sequence + 1 }
        }
    }
}

/// Keeps the count of a size's atomics (warm-up included) for [`check_atomic_counter`].
pub(super) fn count_atomics(session: &mut Session, posted: u64) {
    session.connection.state::<AtomicsPosted>().0 = posted;
}

/// The atomics of the last atomic_lat size (warm-up included): each advanced the counter by 1.
#[derive(Default)]
struct AtomicsPosted(u64);

/// `--validate` of atomic_lat, on the client after a size whose counter both sides cleared
/// before it: the value the last atomic fetched is the count of the atomics before it, so the
/// server's counter advanced by exactly one per atomic, none lost and none applied twice.
pub fn check_atomic_counter(session: &mut Session) -> Result<Option<CheckFailure>> {
    let posted = session.connection.state::<AtomicsPosted>().0;
    let bytes = session.local.buffers[0].read_at(0..ATOMIC_SIZE)?;
    let fetched = u64::from_ne_bytes(bytes.try_into().unwrap_or_default());
    Ok(counter_problem(fetched, posted))
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
