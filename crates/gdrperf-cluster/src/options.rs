//! How a task runs its rounds and how `locate` decides its later ones: the settings a rank is
//! started with, apart from the code that follows them, so that the task and `locate`'s
//! coordination both read them without reading each other.

use std::time::Duration;

use crate::layout::OutputDir;
use crate::plan::PairBy;

/// How a task runs its rounds.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    pub out: OutputDir,
    /// The host name a client connects to, `{node}` standing for the server's Slurm node name
    /// (`{node}-ib` where the RDMA network has its own names).
    pub peer_host: String,
    /// How long to wait for a peer to finish its previous round.
    pub round_timeout: Duration,
    /// Kill a bench running longer than this.
    pub pair_timeout: Duration,
    /// How long rank 0 waits for the other ranks before gathering; `None`: rank 0 does not gather.
    pub gather_timeout: Option<Duration>,
    /// `locate`: after the plan's rounds (the first pass), rank 0 decides further rounds.
    pub locate: Option<LocateOptions>,
}

/// What `locate` needs besides the plan of its first pass.
#[derive(Debug, Clone, Copy)]
pub struct LocateOptions {
    pub pair_by: PairBy,
    pub base_port: u16,
    pub seed: u64,
}
