//! The names of the columns of gdrperf's result files (the benches' CSV and JSON rows,
//! `gdrperf accept`'s `summary.csv`, a Slurm job's gathered `results.csv` and `matrix.csv`,
//! `gdrperf copy-bw`'s rows), one constant each, and the published order of each table.
//!
//! Every crate that writes or reads a result column names it through these constants, so a
//! renamed column is a compile error in each reader instead of a silently empty lookup. The
//! spelling is a contract (columns are only appended, never renamed or moved); the row types'
//! headers are checked against these orders, and the written files against pinned copies, by
//! the tests of the `gdrperf` crate's column reference (`gdrperf::output::columns`), which
//! holds each column's unit, meaning and source (copy-bw's header by copy-bw's own tests: it is
//! a diagnostic of the host's copies, not a bench row, and has no entry in that reference).

use std::fmt;

/// The name of one result column. Only the constants of this module make one, so a lookup
/// by a misspelled or retired name does not compile; [`ColumnName::named`] finds one from
/// text a user typed (`gdrperf compare --metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColumnName(&'static str);

impl ColumnName {
    /// The name as it is spelled in the files.
    pub const fn name(self) -> &'static str {
        self.0
    }

    /// The column spelled `name`, if gdrperf writes one.
    pub fn named(name: &str) -> Option<ColumnName> {
        ALL.iter().copied().find(|column| column.0 == name)
    }
}

impl fmt::Display for ColumnName {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(self.0)
    }
}

impl AsRef<str> for ColumnName {
    fn as_ref(&self) -> &str {
        self.0
    }
}

pub const TEST: ColumnName = ColumnName("test");
pub const BYTES: ColumnName = ColumnName("bytes");
pub const QPS: ColumnName = ColumnName("qps");
pub const TX_DEPTH: ColumnName = ColumnName("tx_depth");
pub const CQ_MOD: ColumnName = ColumnName("cq_mod");
pub const BIDIRECTIONAL: ColumnName = ColumnName("bidirectional");
pub const MTU: ColumnName = ColumnName("mtu");
pub const VALIDATION: ColumnName = ColumnName("validation");
pub const INLINE_SIZE: ColumnName = ColumnName("inline_size");
pub const RX_DEPTH: ColumnName = ColumnName("rx_depth");
pub const HOST: ColumnName = ColumnName("host");
pub const PEER_HOST: ColumnName = ColumnName("peer_host");
pub const DEVICE: ColumnName = ColumnName("device");
pub const PEER_DEVICE: ColumnName = ColumnName("peer_device");
pub const MEM_LOCAL: ColumnName = ColumnName("mem_local");
pub const MEM_REMOTE: ColumnName = ColumnName("mem_remote");
pub const GPU_LOCAL: ColumnName = ColumnName("gpu_local");
pub const GPU_REMOTE: ColumnName = ColumnName("gpu_remote");
pub const GPU_LOCAL_BUS_ID: ColumnName = ColumnName("gpu_local_bus_id");
pub const NIC_NODE_GUID: ColumnName = ColumnName("nic_node_guid");
pub const GPU_LOCAL_UUID: ColumnName = ColumnName("gpu_local_uuid");
pub const RELAXED_ORDERING: ColumnName = ColumnName("relaxed_ordering");
pub const LANE: ColumnName = ColumnName("lane");
pub const CPU: ColumnName = ColumnName("cpu");
pub const NUMA_NODE: ColumnName = ColumnName("numa_node");
pub const ITERATIONS: ColumnName = ColumnName("iterations");
pub const BW_PEAK_MIB_S: ColumnName = ColumnName("bw_peak_mib_s");
pub const BW_AVG_MIB_S: ColumnName = ColumnName("bw_avg_mib_s");
pub const BW_PEAK_GBIT_S: ColumnName = ColumnName("bw_peak_gbit_s");
pub const BW_AVG_GBIT_S: ColumnName = ColumnName("bw_avg_gbit_s");
pub const MSG_RATE_MPPS: ColumnName = ColumnName("msg_rate_mpps");
pub const ELAPSED_S: ColumnName = ColumnName("elapsed_s");
pub const COPY_TIME_S: ColumnName = ColumnName("copy_time_s");
pub const PEAK_MESSAGES: ColumnName = ColumnName("peak_messages");
pub const PEAK_SPAN_S: ColumnName = ColumnName("peak_span_s");
pub const CEILING_GBPS: ColumnName = ColumnName("ceiling_gbps");
pub const CEILING_LIMITED_BY: ColumnName = ColumnName("ceiling_limited_by");
pub const PCT_OF_CEILING: ColumnName = ColumnName("pct_of_ceiling");
pub const CEILING_CAUSES: ColumnName = ColumnName("ceiling_causes");
pub const PEAK_EVENTS_NOT_STORED: ColumnName = ColumnName("peak_events_not_stored");
pub const RX_ITERATIONS: ColumnName = ColumnName("rx_iterations");
pub const RX_BW_PEAK_MIB_S: ColumnName = ColumnName("rx_bw_peak_mib_s");
pub const RX_BW_AVG_MIB_S: ColumnName = ColumnName("rx_bw_avg_mib_s");
pub const RX_BW_PEAK_GBIT_S: ColumnName = ColumnName("rx_bw_peak_gbit_s");
pub const RX_BW_AVG_GBIT_S: ColumnName = ColumnName("rx_bw_avg_gbit_s");
pub const RX_MSG_RATE_MPPS: ColumnName = ColumnName("rx_msg_rate_mpps");
pub const T_MIN_US: ColumnName = ColumnName("t_min_us");
pub const T_MAX_US: ColumnName = ColumnName("t_max_us");
pub const T_TYPICAL_US: ColumnName = ColumnName("t_typical_us");
pub const T_AVG_US: ColumnName = ColumnName("t_avg_us");
pub const T_STDEV_US: ColumnName = ColumnName("t_stdev_us");
pub const P99_US: ColumnName = ColumnName("p99_us");
pub const P99_9_US: ColumnName = ColumnName("p99_9_us");
pub const P99_99_US: ColumnName = ColumnName("p99_99_us");
pub const ARRIVAL: ColumnName = ColumnName("arrival");
pub const LATENCY_SPAN: ColumnName = ColumnName("latency_span");
pub const PERCENTILE_SOURCE: ColumnName = ColumnName("percentile_source");
pub const SATURATED_SAMPLES: ColumnName = ColumnName("saturated_samples");
pub const REFUSED_SAMPLES: ColumnName = ColumnName("refused_samples");
pub const TRAFFIC_CLASS: ColumnName = ColumnName("traffic_class");
pub const SERVICE_LEVEL: ColumnName = ColumnName("service_level");
pub const PEAK_NOTE: ColumnName = ColumnName("peak_note");
pub const NIC_RETRANSMISSIONS: ColumnName = ColumnName("nic_retransmissions");
pub const NIC_SEQ_ERRORS: ColumnName = ColumnName("nic_seq_errors");
pub const NIC_RNR_NAKS: ColumnName = ColumnName("nic_rnr_naks");
pub const NIC_OUT_OF_BUFFER: ColumnName = ColumnName("nic_out_of_buffer");
pub const NIC_LINK_DOWNED: ColumnName = ColumnName("nic_link_downed");
pub const NIC_ERRORS: ColumnName = ColumnName("nic_errors");
pub const NIC_COUNTERS: ColumnName = ColumnName("nic_counters");
pub const NIC: ColumnName = ColumnName("nic");
pub const PORT_RATE: ColumnName = ColumnName("port_rate");
pub const GPU: ColumnName = ColumnName("gpu");
pub const GPU_BUS_ID: ColumnName = ColumnName("gpu_bus_id");
pub const MEM: ColumnName = ColumnName("mem");
pub const METRIC: ColumnName = ColumnName("metric");
pub const VALUE: ColumnName = ColumnName("value");
pub const UNIT: ColumnName = ColumnName("unit");
pub const THRESHOLD: ColumnName = ColumnName("threshold");
pub const VERDICT: ColumnName = ColumnName("verdict");
pub const DETAIL: ColumnName = ColumnName("detail");
pub const THRESHOLD_SOURCE: ColumnName = ColumnName("threshold_source");
pub const RESULT_FILE: ColumnName = ColumnName("result_file");
pub const DEVIATION: ColumnName = ColumnName("deviation");
pub const ROUND: ColumnName = ColumnName("round");
pub const SERVER_RANK: ColumnName = ColumnName("server_rank");
pub const CLIENT_RANK: ColumnName = ColumnName("client_rank");
pub const SERVER_NODE: ColumnName = ColumnName("server_node");
pub const CLIENT_NODE: ColumnName = ColumnName("client_node");
pub const CLIENT_DEVICE: ColumnName = ColumnName("client_device");
pub const SERVER_DEVICE: ColumnName = ColumnName("server_device");
pub const BUS_ID: ColumnName = ColumnName("bus_id");
pub const GPU_NAME: ColumnName = ColumnName("gpu_name");
pub const KIND: ColumnName = ColumnName("kind");
pub const DIRECTION: ColumnName = ColumnName("direction");
pub const SIZE_BYTES: ColumnName = ColumnName("size_bytes");
pub const BYTES_MOVED: ColumnName = ColumnName("bytes_moved");
pub const BW_GBYTES_S: ColumnName = ColumnName("bw_gbytes_s");
pub const LAT_MEDIAN_US: ColumnName = ColumnName("lat_median_us");
pub const LAT_MIN_US: ColumnName = ColumnName("lat_min_us");
pub const ONE_BY_ONE_GBYTES_S: ColumnName = ColumnName("one_by_one_gbytes_s");

/// Every column name above, once.
pub const ALL: &[ColumnName] = &[
    TEST,
    BYTES,
    QPS,
    TX_DEPTH,
    CQ_MOD,
    BIDIRECTIONAL,
    MTU,
    VALIDATION,
    INLINE_SIZE,
    RX_DEPTH,
    HOST,
    PEER_HOST,
    DEVICE,
    PEER_DEVICE,
    MEM_LOCAL,
    MEM_REMOTE,
    GPU_LOCAL,
    GPU_REMOTE,
    GPU_LOCAL_BUS_ID,
    NIC_NODE_GUID,
    GPU_LOCAL_UUID,
    RELAXED_ORDERING,
    LANE,
    CPU,
    NUMA_NODE,
    ITERATIONS,
    BW_PEAK_MIB_S,
    BW_AVG_MIB_S,
    BW_PEAK_GBIT_S,
    BW_AVG_GBIT_S,
    MSG_RATE_MPPS,
    ELAPSED_S,
    COPY_TIME_S,
    PEAK_MESSAGES,
    PEAK_SPAN_S,
    CEILING_GBPS,
    CEILING_LIMITED_BY,
    PCT_OF_CEILING,
    CEILING_CAUSES,
    PEAK_EVENTS_NOT_STORED,
    RX_ITERATIONS,
    RX_BW_PEAK_MIB_S,
    RX_BW_AVG_MIB_S,
    RX_BW_PEAK_GBIT_S,
    RX_BW_AVG_GBIT_S,
    RX_MSG_RATE_MPPS,
    T_MIN_US,
    T_MAX_US,
    T_TYPICAL_US,
    T_AVG_US,
    T_STDEV_US,
    P99_US,
    P99_9_US,
    P99_99_US,
    ARRIVAL,
    LATENCY_SPAN,
    PERCENTILE_SOURCE,
    SATURATED_SAMPLES,
    REFUSED_SAMPLES,
    TRAFFIC_CLASS,
    SERVICE_LEVEL,
    PEAK_NOTE,
    NIC_RETRANSMISSIONS,
    NIC_SEQ_ERRORS,
    NIC_RNR_NAKS,
    NIC_OUT_OF_BUFFER,
    NIC_LINK_DOWNED,
    NIC_ERRORS,
    NIC_COUNTERS,
    NIC,
    PORT_RATE,
    GPU,
    GPU_BUS_ID,
    MEM,
    METRIC,
    VALUE,
    UNIT,
    THRESHOLD,
    VERDICT,
    DETAIL,
    THRESHOLD_SOURCE,
    RESULT_FILE,
    DEVIATION,
    ROUND,
    SERVER_RANK,
    CLIENT_RANK,
    SERVER_NODE,
    CLIENT_NODE,
    CLIENT_DEVICE,
    SERVER_DEVICE,
    BUS_ID,
    GPU_NAME,
    KIND,
    DIRECTION,
    SIZE_BYTES,
    BYTES_MOVED,
    BW_GBYTES_S,
    LAT_MEDIAN_US,
    LAT_MIN_US,
    ONE_BY_ONE_GBYTES_S,
];

// Each table's header written out in full, though they share long runs: these are the pins
// (what a reader of a file sees), so each is listed as it is published, not derived.

/// gdr-write-bw's, gdr-read-bw's and the other one-sided bandwidth benches' rows, in published order.
pub const BANDWIDTH_ORDER: &[ColumnName] = &[
    TEST,
    BYTES,
    ITERATIONS,
    BW_PEAK_MIB_S,
    BW_AVG_MIB_S,
    BW_PEAK_GBIT_S,
    BW_AVG_GBIT_S,
    MSG_RATE_MPPS,
    ELAPSED_S,
    QPS,
    TX_DEPTH,
    CQ_MOD,
    BIDIRECTIONAL,
    MTU,
    VALIDATION,
    HOST,
    PEER_HOST,
    DEVICE,
    PEER_DEVICE,
    MEM_LOCAL,
    MEM_REMOTE,
    GPU_LOCAL,
    GPU_REMOTE,
    COPY_TIME_S,
    LANE,
    CPU,
    NUMA_NODE,
    GPU_LOCAL_BUS_ID,
    NIC_RETRANSMISSIONS,
    NIC_SEQ_ERRORS,
    NIC_RNR_NAKS,
    NIC_OUT_OF_BUFFER,
    NIC_LINK_DOWNED,
    NIC_ERRORS,
    NIC_COUNTERS,
    PEAK_MESSAGES,
    PEAK_SPAN_S,
    CEILING_GBPS,
    CEILING_LIMITED_BY,
    PCT_OF_CEILING,
    CEILING_CAUSES,
    PEAK_EVENTS_NOT_STORED,
    TRAFFIC_CLASS,
    SERVICE_LEVEL,
    PEAK_NOTE,
    NIC_NODE_GUID,
    GPU_LOCAL_UUID,
    RELAXED_ORDERING,
];

/// gdr-send-bw's rows: the bandwidth columns plus the receiver's, in published order.
pub const SEND_BANDWIDTH_ORDER: &[ColumnName] = &[
    TEST,
    BYTES,
    ITERATIONS,
    BW_PEAK_MIB_S,
    BW_AVG_MIB_S,
    BW_PEAK_GBIT_S,
    BW_AVG_GBIT_S,
    MSG_RATE_MPPS,
    ELAPSED_S,
    QPS,
    TX_DEPTH,
    CQ_MOD,
    BIDIRECTIONAL,
    MTU,
    VALIDATION,
    HOST,
    PEER_HOST,
    DEVICE,
    PEER_DEVICE,
    MEM_LOCAL,
    MEM_REMOTE,
    GPU_LOCAL,
    GPU_REMOTE,
    COPY_TIME_S,
    RX_DEPTH,
    INLINE_SIZE,
    RX_ITERATIONS,
    RX_BW_PEAK_MIB_S,
    RX_BW_AVG_MIB_S,
    RX_BW_PEAK_GBIT_S,
    RX_BW_AVG_GBIT_S,
    RX_MSG_RATE_MPPS,
    LANE,
    CPU,
    NUMA_NODE,
    GPU_LOCAL_BUS_ID,
    NIC_RETRANSMISSIONS,
    NIC_SEQ_ERRORS,
    NIC_RNR_NAKS,
    NIC_OUT_OF_BUFFER,
    NIC_LINK_DOWNED,
    NIC_ERRORS,
    NIC_COUNTERS,
    PEAK_MESSAGES,
    PEAK_SPAN_S,
    CEILING_GBPS,
    CEILING_LIMITED_BY,
    PCT_OF_CEILING,
    CEILING_CAUSES,
    PEAK_EVENTS_NOT_STORED,
    TRAFFIC_CLASS,
    SERVICE_LEVEL,
    PEAK_NOTE,
    NIC_NODE_GUID,
    GPU_LOCAL_UUID,
    RELAXED_ORDERING,
];

/// The latency benches' rows, in published order.
pub const LATENCY_ORDER: &[ColumnName] = &[
    TEST,
    BYTES,
    ITERATIONS,
    T_MIN_US,
    T_MAX_US,
    T_TYPICAL_US,
    T_AVG_US,
    T_STDEV_US,
    P99_US,
    P99_9_US,
    P99_99_US,
    ELAPSED_S,
    MTU,
    VALIDATION,
    HOST,
    PEER_HOST,
    DEVICE,
    PEER_DEVICE,
    MEM_LOCAL,
    MEM_REMOTE,
    GPU_LOCAL,
    GPU_REMOTE,
    ARRIVAL,
    INLINE_SIZE,
    PERCENTILE_SOURCE,
    SATURATED_SAMPLES,
    COPY_TIME_S,
    CPU,
    NUMA_NODE,
    GPU_LOCAL_BUS_ID,
    NIC_RETRANSMISSIONS,
    NIC_SEQ_ERRORS,
    NIC_RNR_NAKS,
    NIC_OUT_OF_BUFFER,
    NIC_LINK_DOWNED,
    NIC_ERRORS,
    NIC_COUNTERS,
    LATENCY_SPAN,
    REFUSED_SAMPLES,
    TRAFFIC_CLASS,
    SERVICE_LEVEL,
    NIC_NODE_GUID,
    GPU_LOCAL_UUID,
    RELAXED_ORDERING,
];

/// `gdrperf accept`'s `summary.csv`, in published order.
pub const ACCEPT_SUMMARY_ORDER: &[ColumnName] = &[
    NIC,
    PORT_RATE,
    GPU,
    GPU_BUS_ID,
    TEST,
    MEM,
    BYTES,
    METRIC,
    VALUE,
    UNIT,
    THRESHOLD,
    VERDICT,
    DETAIL,
    THRESHOLD_SOURCE,
    RESULT_FILE,
    CEILING_GBPS,
    CEILING_LIMITED_BY,
    PCT_OF_CEILING,
    CEILING_CAUSES,
    DEVIATION,
];

/// The columns a Slurm job's gather appends to each bench row of `results.csv`: which round and
/// which pair of ranks and nodes measured it.
pub const GATHER_ADDED: [ColumnName; 5] = [ROUND, SERVER_RANK, CLIENT_RANK, SERVER_NODE, CLIENT_NODE];

/// The columns of a Slurm job's `matrix.csv`: one line per client node, server node and lane. The
/// two devices say which NIC port each lane was at each end, so that a plot can mark a named
/// port (`gdrperf fleet judge` names ports by device) on its lane.
pub const MATRIX: [ColumnName; 7] =
    [CLIENT_NODE, SERVER_NODE, LANE, BYTES, BW_AVG_GBIT_S, CLIENT_DEVICE, SERVER_DEVICE];

/// `gdrperf copy-bw`'s rows (one per GPU, memory kind, direction and size), in published order.
/// Its writer's own tests check the header it writes against this order.
pub const COPY_BANDWIDTH_ORDER: [ColumnName; 13] = [
    GPU,
    BUS_ID,
    GPU_NAME,
    KIND,
    DIRECTION,
    SIZE_BYTES,
    ITERATIONS,
    BYTES_MOVED,
    ELAPSED_S,
    BW_GBYTES_S,
    LAT_MEDIAN_US,
    LAT_MIN_US,
    ONE_BY_ONE_GBYTES_S,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_found_by_its_spelling() {
        for column in ALL {
            assert_eq!(ALL.iter().filter(|other| other == &column).count(), 1, "{column} listed twice");
            assert_eq!(ColumnName::named(column.name()), Some(*column));
        }
        assert_eq!(ColumnName::named("no_such_column"), None);
    }

    #[test]
    fn every_ordered_column_is_listed() {
        let orders = [
            BANDWIDTH_ORDER,
            SEND_BANDWIDTH_ORDER,
            LATENCY_ORDER,
            ACCEPT_SUMMARY_ORDER,
            &GATHER_ADDED,
            &MATRIX,
            &COPY_BANDWIDTH_ORDER,
        ];
        for column in orders.into_iter().flatten() {
            assert!(ALL.contains(column), "{column} is in an order but not in ALL");
        }
    }
}
