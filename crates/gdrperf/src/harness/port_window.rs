//! The NIC counter window of a size, as the client reads it: around the size for a client alone
//! on its port ([`OwnPort`]), once for the port where `--concurrent` lanes share one
//! ([`SharedPorts`]): each lane reading its port would count every lane's traffic once per lane,
//! and the aggregate row, which adds the lanes, would count it again.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use crate::harness::barrier::LaneBarrier;
use crate::node::nic_counters::CounterSnapshot;

/// What a client does around a size besides the exchange: lanes wait for each other before
/// measuring, and the NIC counters of a port are read once for the port, however many lanes
/// share it (each lane reading them would count every lane's traffic once per lane).
pub(crate) trait SizeWindow {
    /// Before the size starts, before the server prepares.
    fn open(&self, device: &str, port: u8);
    /// Both sides ready: the measurement may start.
    fn before_measure(&self);
    /// The size is done on both sides: the counters that moved, for this row (empty where
    /// another lane's row carries the port's).
    fn close(&self, device: &str, port: u8) -> BTreeMap<String, u64>;
}

/// A client alone on its port: its window is the size's.
#[derive(Default)]
pub(crate) struct OwnPort(RefCell<CounterSnapshot>);

impl SizeWindow for OwnPort {
    fn open(&self, device: &str, port: u8) {
        *self.0.borrow_mut() = CounterSnapshot::read(Path::new("/"), device, port);
    }

    fn before_measure(&self) {}

    fn close(&self, device: &str, port: u8) -> BTreeMap<String, u64> {
        CounterSnapshot::read(Path::new("/"), device, port).moved_since(&self.0.borrow())
    }
}

/// The ports of a `--concurrent` run's lanes, each read once per size: the last lane to reach
/// the barrier before measuring reads every port, and the last to finish the size reads them
/// again; the first lane on each port carries the port's deltas in its row, the others none.
pub(crate) struct SharedPorts {
    /// Per lane: its port's index in `ports`.
    lane_port: Vec<usize>,
    ports: Vec<(String, u8)>,
    before: Mutex<Vec<CounterSnapshot>>,
    moved: Mutex<Vec<BTreeMap<String, u64>>>,
}

impl SharedPorts {
    /// `lanes`: each lane's device and port, in lane order.
    pub(crate) fn new(lanes: &[(String, u8)]) -> SharedPorts {
        let mut ports: Vec<(String, u8)> = Vec::new();
        let lane_port = lanes
            .iter()
            .map(|lane| match ports.iter().position(|port| port == lane) {
                Some(index) => index,
                None => {
                    ports.push(lane.clone());
                    ports.len() - 1
                }
            })
            .collect();
        let count = ports.len();
        SharedPorts {
            lane_port,
            ports,
            before: Mutex::new(vec![CounterSnapshot::default(); count]),
            moved: Mutex::new(vec![BTreeMap::new(); count]),
        }
    }

    /// Lane `lane`'s window, through `barrier`.
    pub(crate) fn lane<'a>(&'a self, lane: usize, barrier: &'a LaneBarrier) -> LanePort<'a> {
        LanePort { shared: self, lane, barrier, own: OwnPort::default() }
    }

    /// Whether `lane` is the first on its port (its row carries the port's counters).
    pub(crate) fn carries(&self, lane: usize) -> bool {
        self.lane_port.iter().position(|&port| port == self.lane_port[lane]) == Some(lane)
    }

    fn read_all(&self) -> Vec<CounterSnapshot> {
        self.ports.iter().map(|(device, port)| CounterSnapshot::read(Path::new("/"), device, *port)).collect()
    }
}

/// One lane's view of [`SharedPorts`]. Once a lane has stopped the lanes no longer meet at the
/// barrier: each then reads its own port, as a client alone would.
pub(crate) struct LanePort<'a> {
    shared: &'a SharedPorts,
    lane: usize,
    barrier: &'a LaneBarrier,
    own: OwnPort,
}

impl SizeWindow for LanePort<'_> {
    fn open(&self, device: &str, port: u8) {
        self.own.open(device, port);
    }

    fn before_measure(&self) {
        let shared = self.shared;
        self.barrier.wait_then(|| *lock(&shared.before) = shared.read_all());
    }

    fn close(&self, device: &str, port: u8) -> BTreeMap<String, u64> {
        let shared = self.shared;
        let met = self.barrier.wait_then(|| {
            let before = lock(&shared.before);
            let after = shared.read_all();
            *lock(&shared.moved) =
                after.iter().zip(before.iter()).map(|(after, before)| after.moved_since(before)).collect();
        });
        match (met, shared.carries(self.lane)) {
            (false, _) => self.own.close(device, port),
            (true, true) => lock(&shared.moved)[shared.lane_port[self.lane]].clone(),
            (true, false) => BTreeMap::new(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_on_one_port_share_it_and_the_first_carries_its_counters() {
        let lanes = [("rxe0".to_string(), 1), ("rxe0".to_string(), 1), ("mlx5_1".to_string(), 1)];
        let shared = SharedPorts::new(&lanes);
        assert_eq!(shared.ports.len(), 2);
        assert_eq!(shared.lane_port, vec![0, 0, 1]);
        assert!(shared.carries(0) && !shared.carries(1) && shared.carries(2));
    }
}
