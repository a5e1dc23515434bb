//! The reference against the rows' real headers, and docs/columns.md against the reference.

use std::path::PathBuf;

use super::*;
use crate::output::latency_row::{LatencyFigures, LatencyRow, LatencySettings};
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
use crate::output::{BandwidthRow, RowContext};

/// The CSV header a row really serialises (the JSON entries' keys are the same fields).
fn header_of(row: &impl serde::Serialize) -> Vec<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(row).unwrap();
    let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
    text.lines().next().unwrap().split(',').map(str::to_string).collect()
}

fn figures() -> BandwidthFigures {
    // Through serde, as figures arrive from the peer: fields added later take their defaults.
    serde_json::from_value(serde_json::json!({
        "message_size_bytes": 65536, "messages": 10, "elapsed_nanos": 1000,
        "peak_bytes_per_second": 2.0, "average_bytes_per_second": 1.0, "messages_per_second": 1.0,
    }))
    .unwrap()
}

/// Each row table's real header, from rows built the way the benches build them.
fn real_headers() -> Vec<(Table, Vec<String>)> {
    let context = RowContext::default();
    let settings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: false };
    let bandwidth = BandwidthRow::new(&context, settings, &[figures()], "off");
    let sent = SendFigures { sent: Some(figures()), received: Some(figures()), rx_depth: 512 };
    let send =
        SendBandwidthRow::new(&context, settings, SendSettings { inline_size: 0 }, &[sent], "off").unwrap();
    let latency_settings = LatencySettings { arrival: "completion", inline_size: 0 };
    let latency = LatencyRow::new(&context, latency_settings, &LatencyFigures::copies_only(8, 0.0), "off");
    vec![
        (Table::Bandwidth, header_of(&bandwidth)),
        (Table::SendBandwidth, header_of(&send)),
        (Table::Latency, header_of(&latency)),
    ]
}

#[test]
fn every_column_of_every_row_has_a_reference_entry_and_keeps_its_published_place() {
    let problems: Vec<String> =
        real_headers().into_iter().flat_map(|(table, header)| header_problems(table, &header)).collect();
    assert!(
        problems.is_empty(),
        "the column reference and the real headers disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_column_without_an_entry_or_out_of_place_is_named() {
    let mut header: Vec<String> =
        Table::Latency.published_order().iter().map(|name| name.name().to_string()).collect();
    header.push("mystery_s".into());
    let problems = header_problems(Table::Latency, &header);
    assert!(
        problems[0].starts_with("column `mystery_s` (Latency row, position 45) has no entry"),
        "{problems:?}"
    );
    assert!(problems[1].contains("new column `mystery_s` at the end"), "{problems:?}");
    header.swap(0, 1);
    header.pop();
    let problems = header_problems(Table::Latency, &header);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("column 1 is `bytes` where the published order has `test`"), "{problems:?}");
}

#[test]
fn every_entry_is_used_by_a_table_and_named_once() {
    for column in COLUMNS {
        let uses = Table::ALL
            .iter()
            .filter(|table| table.published_order().iter().any(|name| name.name() == column.name))
            .count();
        assert!(uses > 0, "the reference's entry `{}` is in no table's published order", column.name);
        let entries = COLUMNS.iter().filter(|other| other.name == column.name).count();
        assert_eq!(entries, 1, "`{}` has {entries} entries", column.name);
        assert!(
            !column.unit.is_empty() && !column.meaning.is_empty() && !column.source.is_empty(),
            "{column:?}"
        );
    }
    for table in Table::ALL {
        for name in table.published_order() {
            assert!(
                entry(name.name()).is_some(),
                "column `{name}` of the {table:?} table has no reference entry"
            );
        }
    }
}

/// docs/columns.md is the rendering of this list; `GDRPERF_WRITE_COLUMNS_DOC=1` rewrites it.
#[test]
fn the_columns_document_is_the_rendered_reference() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/columns.md");
    let rendered = render_markdown();
    if std::env::var_os("GDRPERF_WRITE_COLUMNS_DOC").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == rendered,
        "docs/columns.md differs from the column reference: regenerate it with \
         `GDRPERF_WRITE_COLUMNS_DOC=1 cargo test -p gdrperf --lib columns`"
    );
}

#[test]
fn every_bench_is_named_in_the_test_column_and_under_its_table() {
    let test = entry("test").expect("the test column has an entry");
    for bench in BENCHES {
        assert!(test.meaning.contains(&format!("`{}`", bench.name)), "`test` does not list {}", bench.name);
        let table = Table::of(bench).expect("every bench writes rows");
        assert!(table.title().contains(bench.binary), "{:?}'s title does not name {}", table, bench.binary);
    }
}
