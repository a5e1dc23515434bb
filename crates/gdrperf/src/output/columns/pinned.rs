//! The three row tables as the exporters really write them, byte for byte: one row of each,
//! every column holding a value (text with a comma and a quote, fractions, empty and null
//! optionals), through [`CsvFile`] and [`JsonFile`] into files compared with `pinned/`. The
//! CSV header is the published order; the JSON file's keys are the same names, in the order
//! serde_json writes an object (sorted). These files are the contract itself: a change to a
//! row type that moves, renames or reformats a column fails here, and no switch rewrites them.

use std::path::PathBuf;

use crate::memory_kind::MemoryKind;
use crate::node::nic_counters::NicColumns;
use crate::output::ceiling_columns::CeilingColumns;
use crate::output::columns::Table;
use crate::output::latency_row::{LatencyFigures, LatencyRow, LatencySettings};
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
use crate::output::{BandwidthRow, CsvFile, Exporter, JsonFile, Row, RowContext};

/// A context where every shared column has a value.
fn context(test: &str) -> RowContext {
    RowContext {
        test: test.into(),
        host: "node1".into(),
        peer_host: "node2".into(),
        device: "mlx5_0".into(),
        peer_device: "mlx5_1".into(),
        mtu: 4096,
        qps: 2,
        mem_local: MemoryKind::Cuda,
        mem_remote: MemoryKind::HostStaged,
        gpu_local: "1".into(),
        gpu_remote: "0".into(),
        lane: "1".into(),
        cpu: "0-15".into(),
        numa_node: Some(0),
        gpu_local_bus_id: "0000:19:00.0".into(),
        nic_node_guid: "506b:4b03:00f1:2c3a".into(),
        gpu_local_uuid: "GPU-5e1c2c3a-0000-4000-8000-00000000001b".into(),
        traffic_class: Some(106),
        service_level: Some(3),
        relaxed_ordering: "asked".into(),
        nic: NicColumns {
            nic_retransmissions: 1,
            nic_seq_errors: 2,
            nic_rnr_naks: 3,
            nic_out_of_buffer: 4,
            nic_link_downed: 5,
            nic_errors: 15,
            nic_counters: "out_of_sequence=2;rnr_nak_retry_err=3".into(),
        },
        path: None,
    }
}

/// Ceiling columns with a comma and a quote in their text, as a real cause can have.
fn ceiling() -> CeilingColumns {
    CeilingColumns {
        ceiling_gbps: Some(190.5),
        ceiling_limited_by: "server NIC PCIe 16 GT/s x16".into(),
        pct_of_ceiling: Some(52.25),
        ceiling_causes: "server: mlx5_0 at x8, \"expected\" x16 | client: MaxPayload 128".into(),
        causes_if_failed: "not a column".into(),
        links: vec![gdrperf_ceiling::SharedLink { name: "not a column either".into(), gbps: 1.0 }],
    }
}

fn figures(bytes_per_second: f64, copy_seconds: f64, events_not_stored: u64) -> BandwidthFigures {
    BandwidthFigures {
        message_size_bytes: 65536,
        messages: 5000,
        elapsed_nanos: 3_125_000_123,
        peak_bytes_per_second: Some(bytes_per_second * 1.5),
        average_bytes_per_second: bytes_per_second,
        messages_per_second: 1_600.000_1,
        copy_seconds,
        peak_span: Some((100, 62_500)),
        events_not_stored,
    }
}

const SETTINGS: BandwidthSettings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: false };

fn bandwidth_row() -> BandwidthRow {
    let mut row =
        BandwidthRow::new(&context("write_bw"), SETTINGS, &[figures(104_857_600.0, 0.25, 3)], "pass");
    row.ceiling = ceiling();
    // The figures' peak (150 MiB/s) is below this ceiling; the mark is pinned as a row with a
    // peak above its ceiling carries it.
    row.peak_note = crate::output::rows::PEAK_ABOVE_CEILING.into();
    row
}

fn send_row() -> SendBandwidthRow {
    let client = SendFigures { sent: Some(figures(104_857_600.0, 0.5, 1)), received: None, rx_depth: 0 };
    // The receiver (staged, but faster than the sender: the sender's figures lead) timed no peak.
    let received = BandwidthFigures { peak_bytes_per_second: None, ..figures(120_000_000.0, 0.25, 2) };
    let server = SendFigures { sent: None, received: Some(received), rx_depth: 512 };
    let mut row = SendBandwidthRow::new(
        &context("send_bw"),
        SETTINGS,
        SendSettings { inline_size: 0 },
        &[client, server],
        "fail",
    )
    .unwrap();
    row.sender.ceiling = ceiling();
    row
}

fn latency_row() -> LatencyRow {
    let figures = LatencyFigures {
        bytes: 2,
        samples: 1000,
        t_min_nanos: 1001,
        t_max_nanos: 2000,
        t_typical_nanos: 1500,
        t_avg_nanos: 1500.5,
        t_stdev_nanos: 288.675_134,
        p99_nanos: 1990,
        p99_9_nanos: 1999,
        p99_99_nanos: 2000,
        elapsed_nanos: 1_500_500,
        saturated: 1,
        exact_percentiles: true,
        copy_seconds: 0.125,
        span: Some(crate::options::config::LatencySpan::Iteration),
        refused_samples: 2,
        inline_size: 220,
    };
    let settings = LatencySettings { arrival: "poll_last_byte", inline_size: 220 };
    LatencyRow::new(&context("write_lat"), settings, &figures, "off")
}

/// What the CSV and JSON exporters write for `row`, as text.
fn written<R: Row + 'static>(name: &str, row: &R) -> (String, String) {
    let directory = std::env::temp_dir().join(format!("gdrperf-pinned-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let (csv_path, json_path) = (directory.join("rows.csv"), directory.join("rows.json"));
    let mut csv = CsvFile::create(&csv_path).unwrap();
    Exporter::<R>::write_row(&mut csv, row).unwrap();
    drop(csv);
    let mut json = JsonFile::create(&json_path).unwrap();
    Exporter::<R>::write_row(&mut json, row).unwrap();
    let texts = (std::fs::read_to_string(&csv_path).unwrap(), std::fs::read_to_string(&json_path).unwrap());
    std::fs::remove_dir_all(&directory).unwrap();
    texts
}

fn pinned(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/output/columns/pinned").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// `row` written as the pinned files say, its CSV header the table's published order.
fn assert_pinned<R: Row + 'static>(table: Table, name: &str, row: &R) {
    let (csv, json) = written(name, row);
    assert_eq!(csv, pinned(&format!("{name}.csv")), "{table:?} row's CSV differs from pinned/{name}.csv");
    assert_eq!(json, pinned(&format!("{name}.json")), "{table:?} row's JSON differs from pinned/{name}.json");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let published: Vec<&str> = table.published_order().iter().map(|name| name.name()).collect();
    assert_eq!(header, published, "{table:?}: the header is not the published order");
    let document: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut keys: Vec<&str> =
        document["results"][0].as_object().unwrap().keys().map(String::as_str).collect();
    let mut published = published.clone();
    keys.sort_unstable();
    published.sort_unstable();
    assert_eq!(keys, published, "{table:?}: the JSON keys are not the published columns");
    // The serialiser's own order (what any other serde format would see) is the published one.
    let serialised = serde_json::to_string(row).unwrap();
    let positions: Vec<usize> = table
        .published_order()
        .iter()
        .map(|name| serialised.find(&format!("\"{name}\":")).unwrap_or_else(|| panic!("no key {name}")))
        .collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "{table:?}: keys out of order: {serialised}");
}

#[test]
fn the_bandwidth_row_is_written_as_pinned() {
    assert_pinned(Table::Bandwidth, "bandwidth", &bandwidth_row());
}

#[test]
fn the_send_bandwidth_row_is_written_as_pinned() {
    assert_pinned(Table::SendBandwidth, "send_bandwidth", &send_row());
}

#[test]
fn the_latency_row_is_written_as_pinned() {
    assert_pinned(Table::Latency, "latency", &latency_row());
}
