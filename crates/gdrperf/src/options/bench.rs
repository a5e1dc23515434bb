//! One descriptor per bench: the one list from which a bench's names, title, defaults and
//! perftest equivalent are taken everywhere else (the binary's `--help`, the run header, the
//! result files' `test` column, the bad-input tests, the profiles' known tests, docs/benchmarks.md's
//! bench table, checked by tests where a file cannot derive from code).
//!
//! A new bench is its file under `benches/src/bin/`, one entry in [`BENCHES`] and its VM test
//! (gdr-atomic-bw's whole change is counted in docs/benchmarks.md).

use crate::options::perftest_defaults::{
    TestDefaults, ATOMIC_BW_DEFAULTS, ATOMIC_LATENCY_DEFAULTS, LATENCY_DEFAULTS, SEND_BW_DEFAULTS,
    WRITE_BW_DEFAULTS,
};

/// What a bench measures: which figures make its rows, which options apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measures {
    Bandwidth,
    Latency,
}

/// The verbs operation a bench times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Write,
    Read,
    Send,
    Atomic,
}

/// One bench, described once.
#[derive(Debug, Clone, Copy)]
pub struct Bench {
    /// Machine name: the `test` column, the result files' base name, a profile's `test`.
    pub name: &'static str,
    /// The binary: "gdr-" and the name with dashes (a test holds them together).
    pub binary: &'static str,
    /// The console title, perftest's wording ("RDMA_Write BW Test").
    pub title: &'static str,
    pub operation: Operation,
    pub measures: Measures,
    /// What it measures, in words (the README's table, `--help`'s first line).
    pub summary: &'static str,
    /// The perftest program it is compared with.
    pub perftest: &'static str,
    /// perftest's defaults for that program (see `options::perftest_defaults`).
    pub defaults: TestDefaults,
}

impl Bench {
    /// `--help`'s first line.
    pub fn about(&self) -> String {
        format!("{} (server: no HOST; client: HOST; or --loopback)", self.summary)
    }

    /// The bench named `name` ("write_bw"), if there is one.
    pub fn named(name: &str) -> Option<&'static Bench> {
        BENCHES.iter().find(|bench| bench.name == name)
    }
}

pub const WRITE_BW: Bench = Bench {
    name: "write_bw",
    binary: "gdr-write-bw",
    title: "RDMA_Write BW Test",
    operation: Operation::Write,
    measures: Measures::Bandwidth,
    summary: "RDMA WRITE bandwidth",
    perftest: "ib_write_bw",
    defaults: WRITE_BW_DEFAULTS,
};

pub const SEND_BW: Bench = Bench {
    name: "send_bw",
    binary: "gdr-send-bw",
    title: "Send BW Test",
    operation: Operation::Send,
    measures: Measures::Bandwidth,
    summary: "SEND/RECV bandwidth",
    perftest: "ib_send_bw",
    defaults: SEND_BW_DEFAULTS,
};

/// ib_read_bw's defaults: as ib_send_bw's (`DEF_ITERS`, 1000: only WRITE bandwidth tests take
/// `DEF_ITERS_WB`).
pub const READ_BW: Bench = Bench {
    name: "read_bw",
    binary: "gdr-read-bw",
    title: "RDMA_Read BW Test",
    operation: Operation::Read,
    measures: Measures::Bandwidth,
    summary: "RDMA READ bandwidth",
    perftest: "ib_read_bw",
    defaults: SEND_BW_DEFAULTS,
};

pub const ATOMIC_BW: Bench = Bench {
    name: "atomic_bw",
    binary: "gdr-atomic-bw",
    title: "Atomic BW Test",
    operation: Operation::Atomic,
    measures: Measures::Bandwidth,
    summary: "RDMA atomic bandwidth and message rate, 8-byte fetch-and-add or compare-and-swap",
    perftest: "ib_atomic_bw",
    defaults: ATOMIC_BW_DEFAULTS,
};

pub const READ_LAT: Bench = Bench {
    name: "read_lat",
    binary: "gdr-read-lat",
    title: "RDMA_Read Latency Test",
    operation: Operation::Read,
    measures: Measures::Latency,
    summary: "RDMA READ latency",
    perftest: "ib_read_lat",
    defaults: LATENCY_DEFAULTS,
};

pub const WRITE_LAT: Bench = Bench {
    name: "write_lat",
    binary: "gdr-write-lat",
    title: "RDMA_Write Latency Test",
    operation: Operation::Write,
    measures: Measures::Latency,
    summary: "RDMA WRITE latency, ping-pong",
    perftest: "ib_write_lat",
    defaults: LATENCY_DEFAULTS,
};

pub const SEND_LAT: Bench = Bench {
    name: "send_lat",
    binary: "gdr-send-lat",
    title: "Send Latency Test",
    operation: Operation::Send,
    measures: Measures::Latency,
    summary: "SEND/RECV latency, ping-pong",
    perftest: "ib_send_lat",
    defaults: LATENCY_DEFAULTS,
};

pub const ATOMIC_LAT: Bench = Bench {
    name: "atomic_lat",
    binary: "gdr-atomic-lat",
    title: "Atomic Latency Test",
    operation: Operation::Atomic,
    measures: Measures::Latency,
    summary: "RDMA atomic latency, 8-byte fetch-and-add or compare-and-swap",
    perftest: "ib_atomic_lat",
    defaults: ATOMIC_LATENCY_DEFAULTS,
};

/// Every bench, in the order tables list them.
pub const BENCHES: &[Bench] =
    &[WRITE_BW, READ_BW, SEND_BW, ATOMIC_BW, READ_LAT, WRITE_LAT, SEND_LAT, ATOMIC_LAT];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_binary_is_gdr_and_its_name_and_each_name_is_once() {
        for bench in BENCHES {
            assert_eq!(bench.binary, format!("gdr-{}", bench.name.replace('_', "-")));
            let suffix = match bench.measures {
                Measures::Bandwidth => "_bw",
                Measures::Latency => "_lat",
            };
            assert!(bench.name.ends_with(suffix), "{}", bench.name);
            assert!(bench.perftest.starts_with("ib_") && bench.perftest.ends_with(suffix));
            assert_eq!(BENCHES.iter().filter(|other| other.name == bench.name).count(), 1);
        }
        assert_eq!(Bench::named("read_lat").map(|bench| bench.binary), Some("gdr-read-lat"));
        assert!(Bench::named("read").is_none());
    }

    /// The bench table of docs/benchmarks.md lists every bench with its summary and perftest
    /// equivalent.
    #[test]
    fn the_benchmarks_page_lists_every_bench() {
        let page = include_str!("../../../../docs/benchmarks.md");
        for bench in BENCHES {
            let row = format!("| `{}` | {} | `{}` |", bench.binary, bench.summary, bench.perftest);
            assert!(page.contains(&row), "docs/benchmarks.md lacks the row {row}");
        }
    }

    /// Every profile's `test = "..."` names a bench of the list (`gdrperf accept` runs its binary).
    #[test]
    fn the_profiles_name_benches_of_the_list() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles");
        let mut seen = 0;
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines().filter(|line| line.trim_start().starts_with("test =")) {
                let name = line.split('"').nth(1).unwrap_or_default();
                assert!(Bench::named(name).is_some(), "{}: test {name:?} is no bench", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 2, "no profile names a test in {folder}");
    }
}
