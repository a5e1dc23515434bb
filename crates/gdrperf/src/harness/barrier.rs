//! The lanes' meeting point: a barrier that lets the lanes of `--concurrent` start each size's
//! measurement together, and that a lane which stops can open for good. Its own module, below
//! both the lanes and the port window that waits on it.

use std::sync::{Condvar, Mutex};

/// Lets the lanes start each size's measurement together. Unlike `std::sync::Barrier` it can be
/// opened for good: a lane that stops must never leave the others waiting for it.
pub struct LaneBarrier {
    lanes: usize,
    state: Mutex<BarrierState>,
    turn: Condvar,
}

#[derive(Default)]
struct BarrierState {
    arrived: usize,
    generation: u64,
    open: bool,
}

impl LaneBarrier {
    pub fn new(lanes: usize) -> LaneBarrier {
        LaneBarrier { lanes, state: Mutex::new(BarrierState::default()), turn: Condvar::new() }
    }

    /// Waits until every lane arrived, or returns at once when the barrier is open for good.
    #[cfg(test)]
    pub fn wait(&self) {
        self.wait_then(|| ());
    }

    /// [`LaneBarrier::wait`], where the last lane to arrive runs `last` before any lane goes on.
    /// Returns whether the lanes met (`false` once the barrier is open for good: `last` did not
    /// run, or not for every lane).
    pub fn wait_then(&self, last: impl FnOnce()) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.open {
            return false;
        }
        state.arrived += 1;
        if state.arrived == self.lanes {
            last();
            state.arrived = 0;
            state.generation += 1;
            self.turn.notify_all();
            return true;
        }
        let generation = state.generation;
        while state.generation == generation && !state.open {
            state = self.turn.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.generation != generation
    }

    /// From now on nobody waits: called by every lane as it ends.
    pub fn open_for_good(&self) {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).open = true;
        self.turn.notify_all();
    }

    pub fn is_open_for_good(&self) -> bool {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn lanes_pass_together_size_after_size() {
        let barrier = LaneBarrier::new(3);
        let passed = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for round in 0..50 {
                        barrier.wait();
                        passed.fetch_add(1, Ordering::SeqCst);
                        // Nobody is a whole round ahead: all passed this round before the next.
                        barrier.wait();
                        assert!(passed.load(Ordering::SeqCst) >= 3 * (round + 1));
                    }
                });
            }
        });
        assert_eq!(passed.load(Ordering::SeqCst), 150);
    }

    #[test]
    fn a_lane_that_stops_frees_the_others() {
        let barrier = LaneBarrier::new(2);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| barrier.wait());
            std::thread::sleep(Duration::from_millis(50));
            barrier.open_for_good();
            waiting.join().unwrap();
        });
        barrier.wait(); // and nobody waits later either
        assert!(barrier.is_open_for_good());
    }
}
