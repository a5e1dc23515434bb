//! What one simulation is asked for: the fleet's size, the schedule, the noise, the faults to
//! plant (each described in the parent module), and where each was planted.

use gdrperf_cluster::schedule::Schedule;

use super::Naming;

/// A fault to plant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    SlowPort,
    BadLink,
    GpuX8,
    DeadNode,
    SlowSending,
    SlowRail,
    NearMiss,
    Intermittent,
    SlowGroup,
    SlowHalf,
}

impl Fault {
    pub const ALL: [Fault; 9] = [
        Fault::SlowPort,
        Fault::BadLink,
        Fault::GpuX8,
        Fault::DeadNode,
        Fault::SlowSending,
        Fault::SlowRail,
        Fault::NearMiss,
        Fault::Intermittent,
        Fault::SlowGroup,
    ];
    /// The five of the first simulation (issue 32).
    pub const FIRST: [Fault; 5] =
        [Fault::SlowPort, Fault::BadLink, Fault::GpuX8, Fault::DeadNode, Fault::SlowSending];

    pub fn name(self) -> &'static str {
        match self {
            Fault::SlowPort => "slow-port",
            Fault::BadLink => "bad-link",
            Fault::GpuX8 => "gpu-x8",
            Fault::DeadNode => "dead-node",
            Fault::SlowSending => "slow-sending",
            Fault::SlowRail => "slow-rail",
            Fault::NearMiss => "near-miss",
            Fault::Intermittent => "intermittent",
            Fault::SlowGroup => "slow-group",
            Fault::SlowHalf => "slow-half",
        }
    }

    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().chain([Fault::SlowHalf]).find(|fault| fault.name() == name)
    }
}

/// How the simulated job chooses its pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Fixed(Schedule),
    /// A ring over a seeded shuffle ([`gdrperf_cluster::locate::first_pass`]), then the
    /// locate rounds.
    Locate,
}

/// One simulation.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub nodes: usize,
    pub lanes: usize,
    pub plan: Plan,
    pub noise: f64,
    /// Student-t noise of this many degrees of freedom (more than 2), None for normal.
    pub tails: Option<f64>,
    /// The share of pair runs dipped to 50-70 % on every lane.
    pub dips: f64,
    /// Run the pairs the judge lists to retest again, until it lists none.
    pub retest: bool,
    pub faults: Vec<Fault>,
    pub seed: u64,
    /// Give the judge the simulated fabric's switches ([`fabric`](super::fabric)).
    pub switch_map: bool,
    /// Name the nodes by the simulated fabric ([`Naming`]).
    pub rack_names: bool,
}

impl SimConfig {
    /// A plain simulation: normal noise, no dips, no retests.
    pub fn new(
        nodes: usize,
        lanes: usize,
        plan: Plan,
        noise: f64,
        faults: Vec<Fault>,
        seed: u64,
    ) -> SimConfig {
        SimConfig {
            nodes,
            lanes,
            plan,
            noise,
            tails: None,
            dips: 0.0,
            retest: false,
            faults,
            seed,
            switch_map: false,
            rack_names: false,
        }
    }

    /// How this simulation names its nodes.
    pub fn naming(&self) -> Naming {
        Naming { racks: self.rack_names, nodes: self.nodes }
    }
}

/// A planted fault and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    pub fault: Fault,
    pub node: usize,
    pub lane: usize,
    /// The other node of a bad link.
    pub peer: Option<usize>,
    /// The nodes of a slow group (empty for the other faults).
    pub members: Vec<usize>,
}
