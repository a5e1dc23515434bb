//! How a task runs its rounds and how `locate` decides its later ones: the settings a rank is
//! started with, apart from the code that follows them, so that the task and `locate`'s
//! coordination both read them without reading each other.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

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
    /// `locate`, rank 0: once locating has settled, the pairs to run again before the job ends
    /// (the fleet judge's retests; `None`: none are run).
    pub retest: Option<Retests>,
}

/// What `locate` needs besides the plan of its first pass.
#[derive(Debug, Clone, Copy)]
pub struct LocateOptions {
    pub pair_by: PairBy,
    pub base_port: u16,
    pub seed: u64,
}

/// One pair of ports a judge lists to retest: a node and its RDMA device at each end (the
/// device `None` where the rows name none).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PortPair {
    pub node: String,
    pub device: Option<String>,
    pub peer_node: String,
    pub peer_device: Option<String>,
}

/// What judges the rows so far: given the job's `results.csv` (rank 0 gathers it just before,
/// with every round run so far), the port pairs to run again, or why it could not judge them.
pub type RetestJudge = dyn Fn(&Path) -> std::result::Result<Vec<PortPair>, String> + Send + Sync;

/// Rank 0's retest judge. This crate does not judge: `gdrperf slurm` gives the fleet judge's
/// RETEST list (gdrperf-fleet), with the thresholds and switch map of the judgement that ends
/// the job.
#[derive(Clone)]
pub struct Retests(pub Arc<RetestJudge>);

impl Retests {
    pub fn new(
        judge: impl Fn(&Path) -> std::result::Result<Vec<PortPair>, String> + Send + Sync + 'static,
    ) -> Retests {
        Retests(Arc::new(judge))
    }
}

impl std::fmt::Debug for Retests {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Retests(..)")
    }
}
