//! One planned acceptance run for the CLI's unit tests to start from: a host-memory
//! `gdr-write-bw` of 65536 bytes on `rxe0` held to 1 Gb/s. Each test changes only the fields its
//! decision turns on (`PlannedRun { args, ..planned_run(kind) }`), so a field added to
//! `PlannedRun` is written once here rather than in every test module.

use gdrperf_report::acceptance::{CheckKind, Nic, PlannedRun};
use gdrperf_report::SourcedValue;

pub(crate) fn planned_run(kind: CheckKind) -> PlannedRun {
    PlannedRun {
        kind,
        test: "write_bw".into(),
        binary: "gdr-write-bw".into(),
        mode: "host".into(),
        nic: Nic { device: "rxe0".into(), port: 1, rate: None },
        gpu: None,
        args: Vec::new(),
        stem: "write_bw-host-rxe0".into(),
        threshold: SourcedValue { value: "1Gb/s".into(), source: "test".into() },
        bytes: 65536,
        bidirectional: false,
        statistic: Default::default(),
        max_nic_errors: 0,
        duration_s: None,
        iterations: None,
        run_source: "test".into(),
        deviation: String::new(),
        together: None,
        warn_band_percent: None,
    }
}
