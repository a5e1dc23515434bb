//! What a bench binary implements ([`Benchmark`]) and says of itself before it connects
//! ([`Setup`]), and the shape every engine has ([`Engine`]): the one seam between a test and the
//! harness that runs it.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Result;
use crate::harness::session::Session;
use crate::options::bandwidth::{BandwidthConfig, StagedRules};
use crate::options::config::BenchConfig;
use crate::output::{Row, RowContext};
use crate::verbs::QueuePairSizes;

/// What a bench binary implements: its descriptor, its set-up and the engine that measures it.
/// All methods take `&self`: in `--loopback` both ends run the same benchmark value on two
/// threads.
///
/// The per-size work is the engine's ([`Engine`]), so two benches on one engine (gdr-write-bw
/// and gdr-read-bw on the one-sided stream) differ only in what they say of themselves here.
pub trait Benchmark: Sync {
    /// The bench's descriptor (its names, title and defaults), an entry of
    /// [`BENCHES`](crate::bench::BENCHES).
    const BENCH: crate::bench::Bench;
    /// What measures each size.
    type Engine: Engine;

    /// The engine, configured for this run.
    fn engine(&self) -> &Self::Engine;
    /// The run's validated configuration (given once: [`run`](crate::harness::roles::run) takes it
    /// from here): the engine's.
    fn config(&self) -> &BenchConfig {
        self.engine().config()
    }
    /// What each side needs and what the test says of itself (see [`Setup`]).
    fn setup(&self) -> Setup;
    /// What staged memory cannot do in this run (refused before connecting; none by default).
    fn staged_rules(&self) -> StagedRules {
        StagedRules::default()
    }
}

/// One engine's shape, whatever it measures (a one-sided stream, a SEND stream, a latency
/// loop): what one side does for each size over its connected session, and the row made of
/// both sides' reports. The harness calls these in order for every size, on both sides.
pub trait Engine: Sync {
    /// What one side measures for one size (sent to the peer as JSON).
    type Report: Serialize + DeserializeOwned + Send;
    /// The result row.
    type Row: Row + Send + 'static;

    /// The run's validated configuration the engine was made with.
    fn config(&self) -> &BenchConfig;
    /// Before a size starts: fill sources, clear destinations, post receives.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()>;
    /// Runs one size on this side; `None` for a passive side.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<Self::Report>>;
    /// After both sides finished: checks this side's received data, `Some(failure)` if wrong
    /// (its text is what the row's side reports and what a server sends its client).
    fn check(
        &self,
        session: &mut Session,
        size: usize,
    ) -> Result<Option<crate::memory::check_failure::CheckFailure>>;
    /// The row of one size from both sides' reports.
    fn row(
        &self,
        context: &RowContext,
        ours: Option<Self::Report>,
        peer: Option<Self::Report>,
        validation: &str,
    ) -> Option<Self::Row>;
}

/// What a bench's engine reports of one size.
pub(crate) type ReportOf<B> = <<B as Benchmark>::Engine as Engine>::Report;
/// The row a bench's engine makes of one size.
pub(crate) type RowOf<B> = <<B as Benchmark>::Engine as Engine>::Row;

/// What a test needs of each side's resources and says of itself, before it connects.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Queue sizes of each QP.
    pub queue_sizes: QueuePairSizes,
    /// Bytes of each QP's buffer: the sweep's largest message, or more (a ping-pong's halves).
    pub buffer_len: usize,
    /// What the peer may do to the buffers (and through the QPs): the least the test needs.
    pub remote_access: crate::verbs::RemoteAccess,
    /// Test-specific settings that both sides must share (merged into the common ones).
    pub parameters: serde_json::Value,
    /// Extra header lines ("CQ moderation", "100").
    pub header: Vec<(String, String)>,
    /// A latency ping-pong's `-I` (or its default): the header says what perftest's rule makes
    /// of it on this side's device and memory (`None`: nothing is sent inline).
    pub inline: Option<crate::options::perftest_defaults::InlineRequest>,
    /// A bandwidth test's settings: with `-b` a row sums both directions (a threshold in % of
    /// the port then means that share of both together); `--concurrent` runs every placement
    /// at once, one lane each, with an aggregate row ([`Row::aggregate`]).
    pub bandwidth: Option<BandwidthConfig>,
}

/// `--concurrent`: every placement at once, one lane each.
pub(crate) fn concurrent<B: Benchmark>(benchmark: &B) -> bool {
    benchmark.setup().bandwidth.is_some_and(|bandwidth| bandwidth.concurrent)
}

/// Whether a row sums both directions.
pub(crate) fn sums_both_directions<B: Benchmark>(benchmark: &B) -> bool {
    benchmark.setup().bandwidth.is_some_and(|bandwidth| bandwidth.bidirectional)
}
