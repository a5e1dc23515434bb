//! What the judge says: the kinds of part it names, each finding, each class's summary, and the
//! verdict as a whole (named parts, parts to watch, pairs to retest, the transient rows): plain
//! data, for the report, the JSON and the simulator's score.

use serde::Serialize;

/// What a finding names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartKind {
    Node,
    Group,
    NodeWithoutRows,
    NodeRowsStop,
    PortWithoutRows,
    Rail,
    NicPort,
    NicPortSending,
    NicPortReceiving,
    NicPortIntermittent,
    Gpu,
    NicPortOrGpu,
    Link,
    ClassBelowCeiling,
}

impl PartKind {
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Node => "node",
            PartKind::Group => "group of nodes, slow towards the rest",
            PartKind::NodeWithoutRows => "node without rows",
            PartKind::NodeRowsStop => "node whose rows stop",
            PartKind::PortWithoutRows => "NIC port without rows",
            PartKind::Rail => "rail",
            PartKind::NicPort => "NIC port",
            PartKind::NicPortSending => "NIC port, when sending",
            PartKind::NicPortReceiving => "NIC port, when receiving",
            PartKind::NicPortIntermittent => "NIC port, intermittent",
            PartKind::Gpu => "GPU",
            PartKind::NicPortOrGpu => "NIC port or its GPU",
            PartKind::Link => "link",
            PartKind::ClassBelowCeiling => "class below its ceiling",
        }
    }
}

/// Where a group of nodes came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupOrigin {
    /// A switch of the map the user gave (`--topology`).
    #[default]
    TopologyFile,
    /// A group the rows' node names give ([`crate::node_names`]).
    NodeNames,
    /// Joined from the pair matrix among the nodes named ([`crate::shared`]).
    PairMatrix,
}

impl GroupOrigin {
    /// The words of the report: "grouped by ...".
    pub fn words(self) -> &'static str {
        match self {
            GroupOrigin::TopologyFile => "the topology file",
            GroupOrigin::NodeNames => "the node names",
            GroupOrigin::PairMatrix => "the pair matrix (inferred among the nodes named)",
        }
    }
}

/// One named part (or one to watch, or a pair to retest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: PartKind,
    pub node: String,
    pub device: Option<String>,
    pub gpu_bus_id: Option<String>,
    /// The other end of a link.
    pub peer_node: Option<String>,
    pub peer_device: Option<String>,
    pub class: String,
    /// How far below the class (or its ceiling), in percent; for an intermittent port, the mean
    /// deficit of its low rows.
    pub below_pct: f64,
    pub pairs: u64,
    pub peers: u64,
    /// z of the deficit (more negative: surer) and the Bonferroni-adjusted p (None where the
    /// finding is not statistical: a node without rows, a class below its ceiling).
    pub z: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// Rows more than `min_deficit` below what their ends explain (links, intermittent ports,
    /// retests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_rows: Option<u64>,
    /// A retest: rows more of the pair, all low, that would name it a link (None: more than
    /// [`crate::transient::MOST_RETESTS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreeing_rows_needed: Option<u64>,
    /// A rail's nodes (each with a port of the rail's device), or a group's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// A group's: where the group came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_from: Option<GroupOrigin>,
}

impl Finding {
    pub(crate) fn new(kind: PartKind, node: &str, class: &str) -> Finding {
        Finding {
            kind,
            node: node.to_string(),
            device: None,
            gpu_bus_id: None,
            peer_node: None,
            peer_device: None,
            class: class.to_string(),
            below_pct: 0.0,
            pairs: 0,
            peers: 0,
            z: None,
            p_adjusted: None,
            low_rows: None,
            agreeing_rows_needed: None,
            members: Vec::new(),
            group_from: None,
        }
    }
}

/// A class's level and noise, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub rows: u64,
    pub level_gbps: f64,
    pub noise_pct: f64,
    pub ceiling_gbps: Option<f64>,
    /// Nodes with rows in the class.
    pub nodes: u64,
    /// The share of the class's rows (of ports not named) more than `min_deficit` below what their
    /// ends explain: the transient rate links and intermittent ports are tested against.
    pub transient_pct: f64,
    /// What the class's rows cannot tell apart, where their shape rules a part out (two nodes:
    /// every row has the same two ends); `None` where every kind of part can be named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_tell: Option<String>,
}

/// Why a class of `nodes` nodes cannot name a part, if it cannot: a part is named from two or
/// more peers, and with two nodes each port meets one at most, so a slow node, a slow port and
/// a slow link between the two give the same rows.
pub(crate) fn cannot_tell(nodes: u64, ceiling: bool) -> Option<String> {
    let judged = match ceiling {
        true => "the class against its ceiling",
        false => "nothing within the job (the rows carry no ceiling)",
    };
    match nodes {
        0..=2 => Some(format!(
            "{nodes} node(s): every row joins the same two ends, so a slow node, a slow NIC port and a slow \
             link between them give the same rows and none can be named (a part needs rows with two or \
             more peers: three or more nodes); judged here: {judged}, a lane slower than the pair's \
             other lanes (as a link, with three or more lanes), and against an earlier job (--base) \
             the class or a port that moved"
        )),
        _ => None,
    }
}

/// The judgement of a fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub classes: Vec<ClassSummary>,
    /// Named parts: any makes the exit code 1.
    pub findings: Vec<Finding>,
    /// Parts surely slower than their class but by less than `min_deficit`: not named.
    pub watch: Vec<Finding>,
    /// Pairs whose rows are mostly low but too few to name a link: run them again.
    pub retest: Vec<Finding>,
    /// Low rows not in a named part: counted as transient (a moment of congestion).
    pub transient_rows: u64,
    /// Median-polish sweeps the fit ran before its effects settled: how the judge spent its
    /// time, for the simulator's table; not a finding, so not in the JSON.
    #[serde(skip)]
    pub sweeps: usize,
}

impl Verdict {
    /// The exit-code contract's word for the judgement alone: a named part is a miss ("fail"); no
    /// named part but a pair to test again is "undecided" (more rows would decide it); else
    /// "pass". `gdrperf fleet judge --base` also fails on a part that moved since the earlier job.
    pub fn contract(&self) -> gdrperf_command_line::Verdict {
        if !self.findings.is_empty() {
            gdrperf_command_line::Verdict::Fail
        } else if !self.retest.is_empty() {
            gdrperf_command_line::Verdict::Undecided
        } else {
            gdrperf_command_line::Verdict::Pass
        }
    }
}
