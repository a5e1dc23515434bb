//! The table read by the parsers the field uses on perftest's stdout (awk's fields: `NF`, `$1`,
//! `$4`, `$NF`), over perftest's own logs committed in results/ and over gdrperf's rows: the same
//! fields come out of both.

use super::*;

/// awk's view of the rows of a perftest table: the lines after a `#bytes` header up to the
/// next rule, split on blanks and tabs as awk splits them.
fn awk_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.contains("#bytes") {
            inside = true;
        } else if line.starts_with("----") {
            inside = false;
        } else if inside {
            rows.push(line.split_whitespace().map(str::to_string).collect());
        }
    }
    rows
}

const PERFTEST_WRITE_BW: &str =
    include_str!("../../../../../results/softroce/rdma-cm/pair-vm0/rdma_cm_perftest.log");
const PERFTEST_LATENCY: &str =
    include_str!("../../../../../results/softroce/rdma-cm/pair-vm0/rdma_cm_perftest_lat.log");

fn table(header: &str, rows: &[String]) -> String {
    format!("{}\n{header}\n{}\n{}\n", "-".repeat(87), rows.join("\n"), "-".repeat(87))
}

#[test]
fn a_bandwidth_row_has_perftests_five_fields_in_perftests_places() {
    let theirs = awk_rows(PERFTEST_WRITE_BW);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].len(), 5);
    assert_eq!((theirs[0][0].as_str(), theirs[0][3].as_str()), ("65536", "13.17"));
    let line = bandwidth_line(65536, 200, Some(37.88), 13.17, 0.000211, BandwidthUnit::MebibytesPerSecond);
    // perftest's row with its numbers, written by gdrperf, is perftest's line but for the tab
    // runs of a newer perftest (the committed log is an older build's: 3 blanks before the tabs).
    assert_eq!(line, " 65536      200              37.88              13.17  \t\t     0.000211");
    let ours = awk_rows(&table(&bandwidth_header(BandwidthUnit::MebibytesPerSecond), &[line]));
    assert_eq!(ours, theirs, "NF, $1, $4 and $NF read the same");
    // The header: perftest's words, MiB where the older build said MB.
    let header = PERFTEST_WRITE_BW.lines().find(|line| line.contains("#bytes")).unwrap();
    assert_eq!(bandwidth_header(BandwidthUnit::MebibytesPerSecond), header.replace("MB/sec", "MiB/sec"));
    // Below 0.1 Gb/s perftest's six decimals; a peak gdrperf could not define stays one field.
    let fine = bandwidth_line(2, 1000, None, 0.0123456, 0.5, BandwidthUnit::GigabitsPerSecond);
    assert_eq!(fine, " 2          1000           -                  0.012346            0.500000");
    let fields: Vec<&str> = fine.split_whitespace().collect();
    assert_eq!((fields.len(), fields[3], fields[4]), (5, "0.012346", "0.500000"));
}

#[test]
fn a_latency_row_has_perftests_nine_fields_and_a_timed_one_four() {
    let theirs = awk_rows(PERFTEST_LATENCY);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].len(), 9);
    let fields = LatencyFields {
        bytes: 64,
        iterations: 200,
        t_min: 21.83,
        t_max: 7843.66,
        t_typical: 29.02,
        t_avg: 1186.39,
        t_stdev: 1813.0,
        p99: 6007.44,
        p99_9: 7843.66,
    };
    let ours = awk_rows(&table(LATENCY_HEADER, &[latency_line(&fields)]));
    // The same numbers in the same places: $1 bytes, $5 typical, $6 average, $NF 99.9%.
    assert_eq!(ours[0].len(), 9);
    let numbers = |row: &[String]| row.iter().map(|field| field.parse::<f64>().unwrap()).collect::<Vec<_>>();
    assert_eq!(numbers(&ours[0]), numbers(&theirs[0]));
    let header = PERFTEST_LATENCY.lines().find(|line| line.contains("#bytes")).unwrap();
    assert_eq!(LATENCY_HEADER, header);
    // -D: `#bytes #iterations t_avg tps`, as print_report_lat_duration.
    let timed =
        awk_rows(&table(LATENCY_DURATION_HEADER, &[latency_duration_line(2, 123456, 3.456, 61728.0)]));
    assert_eq!(timed, [["2", "123456", "3.46", "61728.00"]]);
    assert_eq!(
        LATENCY_DURATION_HEADER.split_whitespace().count(),
        5,
        "#bytes #iterations t_avg[usec] tps average"
    );
}
