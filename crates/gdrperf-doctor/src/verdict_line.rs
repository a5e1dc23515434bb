//! One verdict line and its level: the types a [`crate::Report`] holds. What each line says is
//! decided in [`crate::verdict`], which reads the report; this module only says what a line is.

use serde::Serialize;

/// How bad a finding is; ordered so that `max` is the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }

    /// The process exit code for a report whose worst verdict is this, by the contract every
    /// gdrperf tool keeps (0 pass, 1 a miss, 2 could not run): a WARN still passes (GPUDirect
    /// RDMA can work, at some cost), a FAIL is the node's miss. A doctor that could not examine
    /// the node at all never gets here: it exits 2 with its error.
    pub fn exit_code(self) -> u8 {
        match self {
            Level::Ok | Level::Warn => 0,
            Level::Fail => 1,
        }
    }

    /// [`Level::exit_code`] under `gdrperf doctor --strict`, where a WARN is a miss too.
    pub fn strict_exit_code(self) -> u8 {
        match self {
            Level::Ok => 0,
            Level::Warn | Level::Fail => 1,
        }
    }
}

/// One verdict line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub level: Level,
    /// Short name of the check (`rdma-devices`, `topology`), stable for scripts.
    pub check: &'static str,
    pub reason: String,
    /// What to do about it; absent for OK.
    pub fix: Option<String>,
    /// Where the judgement comes from (a PCIe finding's [`gdrperf_topology::findings::Check::source`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
