//! NIC counters per size: what the port's own counters say happened while a size ran.
//!
//! A link that reaches its bandwidth while it retransmits, drops out-of-sequence packets or
//! runs out of receive buffers is not healthy, and the bandwidth alone does not show it. The
//! kernel exposes the port's counters under `/sys/class/infiniband/DEV/ports/N/counters/`
//! (InfiniBand port counters) and `hw_counters/` (the driver's: Soft-RoCE's `rcvd_seq_err`,
//! `completer_retry_err`; ConnectX's `out_of_sequence`, `local_ack_timeout_err`, ...). The
//! client reads both before and after each size and puts the deltas in the row:
//!
//! - `nic_counters`: every counter that moved, `name=delta` joined with `;` (JSON and CSV);
//! - compact columns, each a sum over the drivers' names for the same thing
//!   ([`RETRANSMISSIONS`], [`SEQUENCE_ERRORS`], [`RNR_NAKS`], [`OUT_OF_BUFFER`], [`LINK_DOWNED`]);
//! - `nic_errors`: the sum of every error counter ([`ERROR_COUNTERS`]) that moved, which
//!   `--max-nic-errors` holds against a limit.
//!
//! The counters are the port's, not the run's: other traffic on the port counts too, and in a
//! loopback run both ends share the port. An unreadable file is skipped, never guessed.

use std::collections::BTreeMap;
use std::path::Path;

/// Counters that count retransmitted requests (a timeout, then the request again).
pub const RETRANSMISSIONS: &[&str] = &["completer_retry_err", "local_ack_timeout_err", "roce_adp_retrans"];
/// Packets that arrived out of sequence (a loss upstream) or NAKs for them.
pub const SEQUENCE_ERRORS: &[&str] =
    &["rcvd_seq_err", "out_of_seq_request", "packet_seq_err", "out_of_sequence", "implied_nak_seq_err"];
/// Receiver-not-ready NAKs sent or received.
pub const RNR_NAKS: &[&str] = &["rcvd_rnr_err", "send_rnr_err", "rnr_nak_retry_err"];
/// Packets dropped for lack of a posted receive buffer.
pub const OUT_OF_BUFFER: &[&str] = &["out_of_buffer"];
/// Times the link went down.
pub const LINK_DOWNED: &[&str] = &["link_downed"];
/// Every counter whose movement is an error (kept with the causes that quote them).
pub use gdrperf_ceiling::ERROR_COUNTERS;

/// The port's counters at one moment, by name (`hw_counters/` names as they are; a name that
/// both directories have keeps `counters/`'s value and gets `hw_` before the driver's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterSnapshot(pub BTreeMap<String, u64>);

impl CounterSnapshot {
    /// Reads `counters/` and `hw_counters/` of port `port` of `device` under `root` ("/").
    pub fn read(root: &Path, device: &str, port: u8) -> CounterSnapshot {
        let port_directory =
            root.join("sys/class/infiniband").join(device).join("ports").join(port.to_string());
        let mut values = BTreeMap::new();
        for (directory, prefix) in [("counters", ""), ("hw_counters", "hw_")] {
            let Ok(entries) = std::fs::read_dir(port_directory.join(directory)) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(value) =
                    std::fs::read_to_string(entry.path()).ok().and_then(|text| text.trim().parse().ok())
                else {
                    continue;
                };
                let key = if values.contains_key(&name) { format!("{prefix}{name}") } else { name };
                values.insert(key, value);
            }
        }
        CounterSnapshot(values)
    }

    /// The counters that grew from `before` to `self` (a counter that went down was reset or
    /// wrapped: left out, not made up).
    pub fn moved_since(&self, before: &CounterSnapshot) -> BTreeMap<String, u64> {
        self.0
            .iter()
            .filter_map(|(name, &after)| {
                let before = *before.0.get(name)?;
                (after > before).then(|| (name.clone(), after - before))
            })
            .collect()
    }
}

/// The CSV and JSON columns of one size's counter deltas, in every row type, in this order
/// (`output::row_columns` writes them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NicColumns {
    pub nic_retransmissions: u64,
    pub nic_seq_errors: u64,
    pub nic_rnr_naks: u64,
    pub nic_out_of_buffer: u64,
    pub nic_link_downed: u64,
    pub nic_errors: u64,
    /// Every counter that moved: "rcvd_pkts=120;rcvd_seq_err=3".
    pub nic_counters: String,
}

impl NicColumns {
    /// The columns for these deltas.
    pub fn from_deltas(moved: &BTreeMap<String, u64>) -> NicColumns {
        let sum = |names: &[&str]| -> u64 {
            moved.iter().filter(|(name, _)| names.contains(&base_name(name))).map(|(_, delta)| delta).sum()
        };
        NicColumns {
            nic_retransmissions: sum(RETRANSMISSIONS),
            nic_seq_errors: sum(SEQUENCE_ERRORS),
            nic_rnr_naks: sum(RNR_NAKS),
            nic_out_of_buffer: sum(OUT_OF_BUFFER),
            nic_link_downed: sum(LINK_DOWNED),
            nic_errors: sum(ERROR_COUNTERS),
            nic_counters: moved
                .iter()
                .map(|(name, delta)| format!("{name}={delta}"))
                .collect::<Vec<_>>()
                .join(";"),
        }
    }

    /// The console line under a size whose error counters moved: "NIC counters moved:
    /// rcvd_seq_err +3, completer_retry_err +1 (port rxe0/1)".
    pub fn warning(moved: &BTreeMap<String, u64>, port: &str) -> Option<String> {
        let errors: Vec<String> = moved
            .iter()
            .filter(|(name, _)| ERROR_COUNTERS.contains(&base_name(name)))
            .map(|(name, delta)| format!("{name} +{delta}"))
            .collect();
        let rnr = rnr_moved(moved);
        // A receiver-not-ready NAK makes the sender wait out the RNR timer: the figure then
        // measures that timer, not the path (see `engines::credits`).
        let consequence = match rnr {
            true => "; the figures of this size include receiver-not-ready (RNR) waits",
            false => "",
        };
        (!errors.is_empty()).then(|| {
            format!("WARNING: NIC error counters moved on {port}: {}{consequence}", errors.join(", "))
        })
    }
}

/// Where the retransmissions of a software device on a clean link were measured.
pub const SOFTWARE_BASELINE: &str = "results/softroce/clean-link-retries.txt";

/// A run on a software device (rxe, siw) says what its error counters did in one line at the
/// end, not in a WARNING under each size: Soft-RoCE retransmits now and then on a clean link
/// too (its timer fires under load; [`SOFTWARE_BASELINE`], perftest alike), so a line under
/// most rows would tell a newcomer of a fault that is not there. The counts stay in every row.
/// An RNR NAK is still warned of under its size: that is the benchmark's receives running out,
/// not the device's noise, and it changes what the size measured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SoftwareDeviceTally {
    sizes: u64,
    sizes_moved: u64,
    totals: BTreeMap<String, u64>,
}

impl SoftwareDeviceTally {
    /// Counts one size's deltas.
    pub fn add(&mut self, moved: &BTreeMap<String, u64>) {
        self.sizes += 1;
        let errors: Vec<(&String, &u64)> =
            moved.iter().filter(|(name, _)| ERROR_COUNTERS.contains(&base_name(name))).collect();
        if !errors.is_empty() {
            self.sizes_moved += 1;
        }
        for (name, delta) in errors {
            *self.totals.entry(name.clone()).or_default() += delta;
        }
    }

    /// The end-of-run line of `device` (a software device of kind `driver`) at `port`, `None`
    /// when no error counter moved.
    pub fn line(&self, device: &str, port: u32, driver: &str) -> Option<String> {
        (self.sizes_moved > 0).then(|| {
            let totals: Vec<String> = self.totals.iter().map(|(name, delta)| format!("{name} +{delta}")).collect();
            format!(
                "note: NIC error counters moved on {device} port {port} during {} of {} sizes ({}): {device} is \
                 a software device ({driver}), which retransmits on a clean link too; compare with \
                 {SOFTWARE_BASELINE}. Each row keeps its counts (nic_errors, nic_counters).",
                self.sizes_moved,
                self.sizes,
                totals.join(", ")
            )
        })
    }
}

/// Whether a receiver-not-ready NAK moved (warned of under its size even on a software device).
pub fn rnr_moved(moved: &BTreeMap<String, u64>) -> bool {
    moved.iter().any(|(name, &delta)| delta > 0 && RNR_NAKS.contains(&base_name(name)))
}

/// A counter's name without the `hw_` of a name both directories have.
fn base_name(name: &str) -> &str {
    if ERROR_COUNTERS.contains(&name) {
        name
    } else {
        name.strip_prefix("hw_").unwrap_or(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree(std::path::PathBuf);

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree(files: &[(&str, &str)]) -> Tree {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "gdrperf-nic-counters-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        for (path, text) in files {
            let path = root.join("sys/class/infiniband/rxe0/ports/1").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Tree(root)
    }

    #[test]
    fn deltas_of_a_soft_roce_port_under_loss() {
        let before = tree(&[
            ("hw_counters/sent_pkts", "1000\n"),
            ("hw_counters/rcvd_seq_err", "4\n"),
            ("hw_counters/completer_retry_err", "0\n"),
            ("hw_counters/link_downed", "0\n"),
            ("hw_counters/rdma_sends", "garbage\n"),
            ("counters/port_rcv_errors", "0\n"),
        ]);
        let after = tree(&[
            ("hw_counters/sent_pkts", "1500\n"),
            ("hw_counters/rcvd_seq_err", "7\n"),
            ("hw_counters/completer_retry_err", "2\n"),
            ("hw_counters/link_downed", "0\n"),
            ("counters/port_rcv_errors", "1\n"),
        ]);
        let first = CounterSnapshot::read(&before.0, "rxe0", 1);
        assert_eq!(first.0.len(), 5, "the unreadable counter is skipped: {first:?}");
        let moved = CounterSnapshot::read(&after.0, "rxe0", 1).moved_since(&first);
        let columns = NicColumns::from_deltas(&moved);
        assert_eq!(
            columns,
            NicColumns {
                nic_retransmissions: 2,
                nic_seq_errors: 3,
                nic_rnr_naks: 0,
                nic_out_of_buffer: 0,
                nic_link_downed: 0,
                nic_errors: 6,
                nic_counters: "completer_retry_err=2;port_rcv_errors=1;rcvd_seq_err=3;sent_pkts=500".into(),
            }
        );
        assert_eq!(
            NicColumns::warning(&moved, "rxe0/1").unwrap(),
            "WARNING: NIC error counters moved on rxe0/1: completer_retry_err +2, port_rcv_errors +1, rcvd_seq_err +3"
        );
    }

    #[test]
    fn a_clean_size_moves_no_error_and_a_reset_counter_is_left_out() {
        let mut before = CounterSnapshot::default();
        before.0.insert("duplicate_request".into(), 0);
        before.0.insert("sent_pkts".into(), 10);
        before.0.insert("rcvd_seq_err".into(), 9);
        let mut after = before.clone();
        after.0.insert("sent_pkts".into(), 20);
        after.0.insert("rcvd_seq_err".into(), 0);
        after.0.insert("duplicate_request".into(), 21);
        let moved = after.moved_since(&before);
        assert_eq!(moved.len(), 2);
        assert_eq!(NicColumns::from_deltas(&moved).nic_errors, 0);
        assert_eq!(NicColumns::warning(&moved, "rxe0/1"), None);
        let rnr: BTreeMap<String, u64> = [("rcvd_rnr_err".to_string(), 2)].into();
        assert_eq!(
            NicColumns::warning(&rnr, "rxe0/1").unwrap(),
            "WARNING: NIC error counters moved on rxe0/1: rcvd_rnr_err +2; the figures of this size include \
             receiver-not-ready (RNR) waits"
        );
        assert_eq!(CounterSnapshot::read(Path::new("/nonexistent"), "rxe0", 1), CounterSnapshot::default());
    }

    #[test]
    fn a_software_device_sums_its_sizes_into_one_line() {
        let mut tally = SoftwareDeviceTally::default();
        let clean: BTreeMap<String, u64> =
            [("sent_pkts".to_string(), 500), ("duplicate_request".to_string(), 9)].into();
        let retry: BTreeMap<String, u64> =
            [("completer_retry_err".to_string(), 1), ("sent_pkts".to_string(), 5)].into();
        tally.add(&clean);
        assert_eq!(tally.line("rxe0", 1, "rxe"), None, "no error counter moved: nothing to say");
        tally.add(&retry);
        tally.add(&retry);
        assert_eq!(
            tally.line("rxe0", 1, "rxe").unwrap(),
            "note: NIC error counters moved on rxe0 port 1 during 2 of 3 sizes (completer_retry_err +2): rxe0 is \
             a software device (rxe), which retransmits on a clean link too; compare with \
             results/softroce/clean-link-retries.txt. Each row keeps its counts (nic_errors, nic_counters)."
        );
        assert!(!rnr_moved(&retry));
        assert!(rnr_moved(&[("hw_rcvd_rnr_err".to_string(), 1)].into()));
    }

    #[test]
    fn the_software_baseline_file_exists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(SOFTWARE_BASELINE);
        assert!(root.is_file(), "{} is named in the end-of-run line", root.display());
    }

    #[test]
    fn a_name_in_both_directories_keeps_both() {
        let both = tree(&[("counters/link_downed", "1\n"), ("hw_counters/link_downed", "2\n")]);
        let snapshot = CounterSnapshot::read(&both.0, "rxe0", 1);
        assert_eq!(snapshot.0.get("link_downed"), Some(&1));
        assert_eq!(snapshot.0.get("hw_link_downed"), Some(&2));
        let moved: BTreeMap<String, u64> = [("hw_link_downed".to_string(), 1)].into();
        assert_eq!(NicColumns::from_deltas(&moved).nic_link_downed, 1);
    }
}
