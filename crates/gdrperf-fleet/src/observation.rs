//! What the judge reads: one compact observation per pair row, and the names behind the indices.
//!
//! A gathered job can hold millions of rows; the judge keeps none of their text. Each row becomes
//! a class index, a sender and a receiver port index, whether it says which end sent, and the
//! log of its bandwidth (20 bytes with padding); the [`Catalog`] holds each name once. A
//! [`Source`] can be visited several times (the fit makes a few passes): [`Stored`] keeps the
//! observations of files read once; the simulator keeps one `f32` a row (the log of its
//! bandwidth, NaN where nothing was measured) and rebuilds each observation from its pair list
//! on every pass.

use std::collections::HashMap;

use serde::Serialize;

/// One pair row, reduced to what the fit needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    pub class: u32,
    /// The port that sent the payload (for a bidirectional row: the client's).
    pub sender: u32,
    /// The port that received it (for a bidirectional row: the server's).
    pub receiver: u32,
    /// Whether the row says which end sent (false for bidirectional rows and unknown tests).
    pub directed: bool,
    /// Natural log of `bw_avg_gbit_s`.
    pub log_gbps: f32,
}

// The 20 bytes this module's and read.rs's docs (and the judge's memory limit) count on.
const _: () = assert!(std::mem::size_of::<Observation>() == 20);

/// Rows that may be compared with each other.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassInfo {
    /// `test bytes mem_local/mem_remote` and the other keys, readable.
    pub label: String,
    /// Some end's payload is in GPU memory (cuda, cuda-staged).
    pub gpu_memory: bool,
    /// Both ends' payloads are in host memory: a GPU does not take part.
    pub host_memory: bool,
    /// The median of the rows' `ceiling_gbps`, where rows carry one.
    pub ceiling_gbps: Option<f64>,
}

/// A NIC port: a node and its RDMA device (one lane when lanes ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub node: u32,
    pub device: String,
    /// The PCI bus id of the GPU this port's rows used, where a row of its side says it.
    pub gpu_bus_id: Option<String>,
    /// The NIC's identity (`nic_node_guid`) and the GPU's (`gpu_local_uuid`), where a row of its
    /// side carries them: what tells a replaced part from a changed one against an earlier job
    /// ([`crate::base`]).
    pub nic_guid: Option<String>,
    pub gpu_uuid: Option<String>,
}

/// The names behind the indices of the observations.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub classes: Vec<ClassInfo>,
    pub ports: Vec<PortInfo>,
    pub nodes: Vec<String>,
    /// Nodes the job was to measure (from its plan), so that a node with no rows is named.
    pub expected_nodes: Vec<String>,
    /// Nodes of a fixed schedule whose rows stop before the job's last round: (node, its last
    /// round, the job's last round).
    pub stopped: Vec<(String, u64, u64)>,
    class_index: HashMap<String, u32>,
    node_index: HashMap<String, u32>,
    port_index: HashMap<(u32, String), u32>,
}

impl Catalog {
    /// The index of the class keyed `key`, added with `info` when new.
    pub fn class(&mut self, key: &str, info: impl FnOnce() -> ClassInfo) -> u32 {
        if let Some(&index) = self.class_index.get(key) {
            return index;
        }
        let index = self.classes.len() as u32;
        self.classes.push(info());
        self.class_index.insert(key.to_string(), index);
        index
    }

    pub fn node(&mut self, name: &str) -> u32 {
        if let Some(&index) = self.node_index.get(name) {
            return index;
        }
        let index = self.nodes.len() as u32;
        self.nodes.push(name.to_string());
        self.node_index.insert(name.to_string(), index);
        index
    }

    /// The port `device` of node `node` (by name), added when new.
    pub fn port(&mut self, node: &str, device: &str) -> u32 {
        let node = self.node(node);
        if let Some(&index) = self.port_index.get(&(node, device.to_string())) {
            return index;
        }
        let index = self.ports.len() as u32;
        self.ports.push(PortInfo {
            node,
            device: device.to_string(),
            gpu_bus_id: None,
            nic_guid: None,
            gpu_uuid: None,
        });
        self.port_index.insert((node, device.to_string()), index);
        index
    }

    pub fn node_of(&self, port: u32) -> &str {
        &self.nodes[self.ports[port as usize].node as usize]
    }
}

/// Observations that can be visited in the same order as often as the fit needs.
pub trait Source {
    fn catalog(&self) -> &Catalog;
    /// Calls `visit` on every observation, always in the same order.
    fn visit(&self, visit: &mut dyn FnMut(&Observation));
    /// The rows of [`Source::visit`], in its order, a slice at a time: one `dyn` call a slice
    /// rather than a row, so that a pass's loop over a slice is compiled with its body inlined
    /// ([`each_row`]). By default the rows of `visit`, gathered [`SLICE_ROWS`] at a time.
    fn visit_slices(&self, visit: &mut dyn FnMut(&[Observation])) {
        let mut buffer: Vec<Observation> = Vec::with_capacity(SLICE_ROWS);
        self.visit(&mut |row| {
            buffer.push(*row);
            if buffer.len() == SLICE_ROWS {
                visit(&buffer);
                buffer.clear();
            }
        });
        if !buffer.is_empty() {
            visit(&buffer);
        }
    }
}

/// Rows a slice of [`Source::visit_slices`] holds at most where a source builds its rows (16
/// bytes a row: 8 KiB, in the first-level cache).
pub const SLICE_ROWS: usize = 512;

/// Calls `visit` on every row of `source`, in [`Source::visit`]'s order, through
/// [`Source::visit_slices`]: the loop over each slice is compiled for this `visit`.
#[inline]
pub fn each_row<F: FnMut(&Observation)>(source: &dyn Source, mut visit: F) {
    source.visit_slices(&mut |rows| {
        for row in rows {
            visit(row);
        }
    });
}

/// Observations kept in memory (20 bytes a row), with their catalog.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub catalog: Catalog,
    pub rows: Vec<Observation>,
    /// What reading the files counted (rows kept and dropped; empty when built by hand).
    pub input: InputCount,
    /// Per node (by index), the last round it has rows in, where rows carry a round.
    pub last_round: Vec<Option<u64>>,
}

impl Source for Stored {
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn visit(&self, visit: &mut dyn FnMut(&Observation)) {
        self.rows.iter().for_each(visit);
    }

    fn visit_slices(&self, visit: &mut dyn FnMut(&[Observation])) {
        if !self.rows.is_empty() {
            visit(&self.rows);
        }
    }
}

/// What reading gathered files found and what became of each row: every row counted once
/// ([`crate::read`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InputCount {
    pub files: u64,
    /// Files identical to one given before them, skipped (their paths).
    pub files_repeated: Vec<String>,
    /// Data rows read (comment lines and headers apart), in the files not skipped.
    pub rows_read: u64,
    pub rows_kept: u64,
    pub lane_all: u64,
    pub no_bandwidth: u64,
    pub not_a_number: u64,
    pub not_finite: u64,
    pub not_positive: u64,
    pub above_ceiling: u64,
    pub implausible: u64,
    pub short_rows: u64,
    pub truncated_last_lines: u64,
    pub duplicates: u64,
}

impl InputCount {
    /// Rows dropped as wrong (not the rows that are simply not bandwidth rows of a port).
    pub fn dropped(&self) -> u64 {
        self.not_a_number
            + self.not_finite
            + self.not_positive
            + self.above_ceiling
            + self.implausible
            + self.short_rows
            + self.truncated_last_lines
            + self.duplicates
    }
}
