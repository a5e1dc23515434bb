//! The column reference: every column of every CSV/JSON row gdrperf writes, with its unit, its
//! meaning and where its value comes from. The names and each table's published order are
//! `gdrperf_files::columns`, which every crate that reads a result file shares.
//!
//! This is the one list. `docs/columns.md` is rendered from it ([`render_markdown`]; a test
//! fails when the file differs, `GDRPERF_WRITE_COLUMNS_DOC=1` rewrites it), and tests compare it
//! with the headers the row types really serialise (bandwidth, send bandwidth and latency rows
//! here, `gdrperf accept`'s `summary.csv` in gdrperf-report's tests, `gdrperf copy-bw`'s rows in
//! gdrperf-cli's). A column added to a row without an entry here fails those tests by name.
//!
//! The contract that holds: from this list on, columns are only appended at the end of a
//! table and never renamed or moved; the tests pin each table's order. Before it, columns were
//! inserted (`copy_time_s` was put before gdr-send-bw's `rx_*` columns, and `cpu`..`nic_*`
//! were followed later by `peak_messages`, `peak_span_s`, `latency_span`, `refused_samples`),
//! so readers of older files should look columns up by name, as `gdrperf compare` and the plot
//! scripts do.

use gdrperf_files::columns::{self, ColumnName};

use crate::bench::{Bench, Measures, Verb, BENCHES};

/// A table gdrperf writes: the CSV columns and the keys of each JSON `results` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// gdr-write-bw rows (`BandwidthRow`).
    Bandwidth,
    /// gdr-send-bw rows (`SendBandwidthRow`): the bandwidth columns plus the receiver's.
    SendBandwidth,
    /// gdr-read-lat, gdr-write-lat, gdr-send-lat rows (`LatencyRow`).
    Latency,
    /// `gdrperf accept`'s `summary.csv` (`gdrperf_report::AcceptanceRow`).
    AcceptSummary,
    /// `gdrperf copy-bw`'s rows (gdrperf-cli's `copy_bw`, whose tests hold its header to the
    /// published order).
    CopyBandwidth,
}

impl Table {
    /// Every table, in the order the reference document lists them.
    pub const ALL: [Table; 5] =
        [Table::Bandwidth, Table::SendBandwidth, Table::Latency, Table::AcceptSummary, Table::CopyBandwidth];

    /// The table's title in the reference, naming the binaries that write it (taken from
    /// [`BENCHES`], so a new bench appears under its table without an edit here).
    pub fn title(self) -> String {
        let writers = |kind: &str| {
            let binaries: Vec<&str> = BENCHES
                .iter()
                .filter(|bench| Table::of(bench) == Some(self))
                .map(|bench| bench.binary)
                .collect();
            format!("{kind} rows ({}; `--csv`, `--json`)", binaries.join(", "))
        };
        match self {
            Table::Bandwidth => writers("Bandwidth"),
            Table::SendBandwidth => writers("Send bandwidth"),
            Table::Latency => writers("Latency"),
            Table::AcceptSummary => "Acceptance summary (`gdrperf accept`: `summary.csv`)".into(),
            Table::CopyBandwidth => "Copy bandwidth rows (`gdrperf copy-bw`: `--csv`, `--json`)".into(),
        }
    }

    /// The table a bench's rows are written as.
    pub fn of(bench: &Bench) -> Option<Table> {
        Some(match (bench.measures, bench.verb) {
            (Measures::Latency, _) => Table::Latency,
            (Measures::Bandwidth, Verb::Send) => Table::SendBandwidth,
            (Measures::Bandwidth, Verb::Write | Verb::Read | Verb::Atomic) => Table::Bandwidth,
        })
    }

    /// The published order of the table's columns: appended to, never reordered (see the
    /// module's contract).
    pub fn published_order(self) -> &'static [ColumnName] {
        match self {
            Table::Bandwidth => columns::BANDWIDTH_ORDER,
            Table::SendBandwidth => columns::SEND_BANDWIDTH_ORDER,
            Table::Latency => columns::LATENCY_ORDER,
            Table::AcceptSummary => columns::ACCEPT_SUMMARY_ORDER,
            Table::CopyBandwidth => &columns::COPY_BANDWIDTH_ORDER,
        }
    }
}

mod column;
mod entries;

pub use column::Column;
pub use entries::COLUMNS;

/// The reference entry of `name`, if it has one.
pub fn entry(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|column| column.name == name)
}

/// What is wrong between a table's published order and the header a row really serialises,
/// each problem naming its column; empty when they agree.
pub fn header_problems(table: Table, header: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for (position, name) in header.iter().enumerate() {
        if entry(name).is_none() {
            problems.push(format!(
                "column `{name}` ({table:?} row, position {}) has no entry in the column reference: add \
                 the name to crates/gdrperf-files/src/columns.rs and its `column(columns::NAME, unit, meaning, \
                 source)` to crates/gdrperf/src/output/columns/entries.rs",
                position + 1
            ));
        }
    }
    let published = table.published_order();
    for (position, expected) in published.iter().enumerate() {
        match header.get(position) {
            Some(actual) if actual == expected.name() => {}
            Some(actual) => problems.push(format!(
                "{table:?} row: column {} is `{actual}` where the published order has `{expected}`: columns \
                 are only appended at the end, never inserted, moved or renamed",
                position + 1
            )),
            None => problems.push(format!("{table:?} row: published column `{expected}` is missing")),
        }
    }
    for name in header.iter().skip(published.len()) {
        problems.push(format!(
            "{table:?} row: new column `{name}` at the end: append it to the table's published order in \
             crates/gdrperf-files/src/columns.rs and regenerate docs/columns.md"
        ));
    }
    problems
}

/// The reference as Markdown: the contract, then each table's columns in published order.
pub fn render_markdown() -> String {
    let mut text = String::from(
        "# Result columns\n\n\
         Generated from `crates/gdrperf/src/output/columns.rs` by \
         `GDRPERF_WRITE_COLUMNS_DOC=1 cargo test -p gdrperf --lib columns`; a test fails when this \
         file, the list or the real headers disagree. Do not edit by hand.\n\n\
         A CSV file begins with `# key: value` lines saying what made it (`test`, `command`, \
         `git_commit`, `gdrperf_version`, `date`, `host`, `clock`; more keys may come), then one \
         header line and one row per message size (per lane with `--concurrent`; followed by its two directions, `lane` `local` and `remote`, with `-b --report-both`). Skip the `#` \
         lines by their first character, not with a comment option (a value may hold `#`): \
         Python's csv module: `csv.DictReader(line for line in open(path) if not \
         line.startswith(\"#\"))`; pandas: `pd.read_csv(io.StringIO(\"\".join(line for line in \
         open(path) if not line.startswith(\"#\"))))`. The JSON files hold the same columns as \
         the keys of each entry of `results`, under `metadata` (the run header) and above \
         `outcome`.\n\n\
         **Contract:** columns are only appended at the end of a table, never renamed, moved or \
         removed; a test pins each table's order. Files written before this list existed may \
         have other orders (`copy_time_s` was inserted before gdr-send-bw's `rx_*` columns in \
         2240cd3; `peak_messages`, `peak_span_s`, `latency_span` and `refused_samples` came \
         after the `nic_*` columns): read columns by name.\n\n\
         **Spreadsheet guard (CSV only):** a text cell that starts with `=`, `+`, `-` or `@` \
         and is not a number is written with a leading `'` (`'=HYPERLINK(...)`), so that a \
         spreadsheet shows it as text instead of running it as a formula: host, device and \
         cause texts come from the peer. Numbers are written as they are; the JSON files hold \
         every value unchanged.\n",
    );
    for table in Table::ALL {
        text.push_str(&format!(
            "\n## {}\n\n| # | column | unit | meaning | source |\n|---|---|---|---|---|\n",
            table.title()
        ));
        for (position, name) in table.published_order().iter().enumerate() {
            let column = entry(name.name()).copied().unwrap_or(Column {
                name: name.name(),
                unit: "?",
                meaning: "(no entry)",
                source: "?",
            });
            text.push_str(&format!(
                "| {} | `{}` | {} | {} | {} |\n",
                position + 1,
                column.name,
                column.unit,
                column.meaning,
                column.source
            ));
        }
    }
    text
}

#[cfg(test)]
mod pinned;
#[cfg(test)]
mod tests;
