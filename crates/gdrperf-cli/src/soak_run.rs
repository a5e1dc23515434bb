//! `gdrperf accept --soak LEVEL|DURATION`: after the acceptance rows, each lane (a bandwidth or
//! latency check on a NIC, a memory mode, a GPU) runs again interval after interval for the
//! soak's length. Per interval: the bandwidth (a latency lane: the latency statistic its check
//! judges, `t_typical_us` by default), the NIC's error counters over the run (the bench's `nic_errors`,
//! and which counters those were, from its `nic_counters`; in a loopback run both ends count on
//! the one port, so the remote end's counters are these too),
//! and the AER counters and links of the GPU, the NIC and every bridge above them, re-read
//! after each interval (`gdrperf_topology::pcie_health`), and where NVML is present the GPU's
//! own word over the interval (`gdrperf_cuda::gpu_watch`: XID events, PCIe replays, throttle
//! reasons and time held by the power and thermal limits; absent NVML is said once, not an
//! error). Each lane is judged on stability by
//! `gdrperf_report::soak::judge`; everything goes to `soak.json` and the interval files to
//! `soak/`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use gdrperf_ceiling::ERROR_COUNTERS;
use gdrperf_cuda::gpu_watch::{self, GpuReading, GpuWatch};
use gdrperf_files::columns as column;
use gdrperf_report::acceptance::{AcceptanceRow, CheckKind, PlannedRun};
use gdrperf_report::soak::{judge, judge_latency, Interval};
use gdrperf_report::{BandwidthUnit, Profile, ResultFile, SourcedValue, Verdict};
use gdrperf_topology::identity::NodeIdentity;
use gdrperf_topology::pcie_health::{changes, watched_functions, HealthSnapshot};
use gdrperf_topology::SysRoot;
use serde_json::json;

/// The soak asked for, resolved against the profile before anything runs.
#[derive(Debug, Clone)]
pub struct SoakPlan {
    pub seconds: f64,
    pub interval_s: f64,
    /// The level and its source, or "a duration given on the command line".
    pub why: String,
    pub max_dip: Option<SourcedValue>,
    /// How far a latency lane's worst interval may rise above its median ("N%"), if set.
    pub max_rise: Option<SourcedValue>,
    /// The profile's allowance of NIC errors per run, held per interval.
    pub max_nic_errors: u64,
}

impl SoakPlan {
    /// Number of intervals: the soak's length in whole intervals, at least one.
    pub fn intervals(&self) -> usize {
        ((self.seconds / self.interval_s).ceil() as usize).max(1)
    }
}

/// `--soak` checked against the profile (a usage error, exit 2, when it cannot be run).
pub fn resolve(profile: &Profile, asked: &str) -> anyhow::Result<SoakPlan> {
    let Some(soak) = &profile.soak else {
        bail!("--soak {asked}: profile {} has no [soak] section (levels and interval)", profile.name);
    };
    if profile.bandwidth.is_empty() && profile.latency.is_empty() {
        bail!("--soak {asked}: profile {} has no [bandwidth] or [latency] section to repeat", profile.name);
    }
    let (seconds, why) = soak.resolve(asked).map_err(anyhow::Error::msg)?;
    Ok(SoakPlan {
        seconds,
        interval_s: soak.interval_s,
        why,
        max_dip: soak.max_dip.clone(),
        max_rise: soak.max_rise.clone(),
        max_nic_errors: profile.max_nic_errors,
    })
}

/// The bench arguments with the run's length replaced by one interval (`-D seconds`).
fn with_duration(args: &[String], seconds: f64) -> Vec<String> {
    let mut kept = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "-n" || word == "-D" {
            words.next();
            continue;
        }
        kept.push(word.clone());
    }
    kept.extend(["-D".to_string(), format!("{}", seconds.ceil().max(1.0) as u64)]);
    kept
}

/// Interval `index` of `lane`: its run, one interval long, with files of its own.
pub fn interval_run(plan: &SoakPlan, lane: &PlannedRun, index: usize) -> PlannedRun {
    let mut run = lane.clone();
    run.stem = format!("{}-interval{index:03}", lane.stem);
    run.args = with_duration(&lane.args, plan.interval_s);
    run
}

/// Runs the soak of every lane in `runs` (the acceptance's bandwidth and latency runs); writes `soak.json`; returns the worst
/// stability verdict. `execute` runs one bench into a folder and judges its row.
pub fn run(
    plan: &SoakPlan,
    runs: &[PlannedRun],
    out: &Path,
    sysfs_root: &Path,
    execute: &dyn Fn(&PlannedRun, &Path) -> AcceptanceRow,
) -> anyhow::Result<Verdict> {
    let folder = out.join("soak");
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let sys = SysRoot::open(sysfs_root)?;
    let identity = NodeIdentity::read(&sys);
    let count = plan.intervals();
    say!("\nsoak: {count} intervals of {} s per lane ({})", plan.interval_s, plan.why);
    let gpus = watched_gpus(runs);
    let (gpu_watch, gpu_watch_words) = match gpus.is_empty() {
        true => (None, "no lane uses GPU memory".to_string()),
        false => match GpuWatch::open(&gpus) {
            Ok(watch) => {
                let words = watch.description().to_string();
                (Some(watch), words)
            }
            Err(why) => (None, format!("GPUs not watched: {why}")),
        },
    };
    say!("soak: GPU watch: {gpu_watch_words}");
    let read_gpu = |lane: &PlannedRun| -> GpuReading {
        match (&gpu_watch, &lane.gpu) {
            (Some(watch), Some(gpu)) => watch.read().remove(&gpu.bus_id).unwrap_or_default(),
            _ => GpuReading::default(),
        }
    };
    let mut lanes = Vec::new();
    let mut verdicts = Vec::new();
    for lane in runs {
        let nic_address = identity
            .nics
            .iter()
            .find(|nic| nic.name == lane.nic.device)
            .and_then(|nic| nic.pci.as_ref().map(|pci| pci.address.clone()));
        let devices: Vec<&str> =
            lane.gpu.iter().map(|gpu| gpu.bus_id.as_str()).chain(nic_address.as_deref()).collect();
        let watched = watched_functions(&sys, &devices);
        let mut before = HealthSnapshot::read(&sys, &watched);
        let mut gpu_before = read_gpu(lane);
        let started = Instant::now();
        let mut intervals = Vec::new();
        for index in 0..count {
            let interval_run = interval_run(plan, lane, index);
            let start_s = started.elapsed().as_secs_f64();
            let row = execute(&interval_run, &folder);
            let after = HealthSnapshot::read(&sys, &watched);
            let pcie_events: Vec<String> = changes(&before, &after).iter().map(ToString::to_string).collect();
            before = after;
            let gpu_after = read_gpu(lane);
            let gpu = gpu_watch::changes(&gpu_before, &gpu_after);
            gpu_before = gpu_after;
            let (nic_errors, nic_error_counters) =
                nic_errors(&folder.join(format!("{}.json", interval_run.stem)), lane.bytes);
            let figure = interval_figure(lane.kind, &row);
            say!(
                "  {} interval {index}: {}{}{}",
                lane.stem,
                match figure {
                    Figure { bandwidth_gbps: Some(gbps), .. } => format!("{gbps:.3} Gb/s"),
                    Figure { latency_us: Some(us), .. } => format!("{us:.2} us {}", row.metric),
                    _ => format!("ERROR {}", row.detail),
                },
                if nic_errors > 0 {
                    format!(", NIC errors +{nic_errors} ({})", named(&nic_error_counters))
                } else {
                    String::new()
                },
                pcie_events
                    .iter()
                    .chain(&gpu.errors)
                    .chain(&gpu.held_back)
                    .map(|event| format!(", {event}"))
                    .collect::<String>()
            );
            intervals.push(Interval {
                start_s,
                bandwidth_gbps: figure.bandwidth_gbps,
                latency_us: figure.latency_us,
                nic_errors,
                nic_error_counters,
                pcie_events,
                gpu_events: gpu.errors,
                gpu_held_back: gpu.held_back,
            });
        }
        let stability = match lane.kind {
            CheckKind::Bandwidth => judge(&intervals, plan.max_dip.as_ref(), plan.max_nic_errors),
            CheckKind::Latency => judge_latency(&intervals, plan.max_rise.as_ref(), plan.max_nic_errors),
        };
        say!("  {} stability: {}", lane.stem, stability.verdict);
        for reason in &stability.reasons {
            say!("    {reason}");
        }
        verdicts.push(stability.verdict);
        lanes.push(json!({
            "lane": lane.stem,
            "nic": lane.nic.device,
            "gpu": lane.gpu.as_ref().map(|gpu| gpu.label.clone()),
            "mem": lane.mode,
            "watched_pci_functions": watched,
            "intervals": intervals,
            "stability": stability,
        }));
    }
    let overall = Verdict::overall(verdicts.iter().copied().chain([Verdict::Pass]));
    let document = json!({
        "duration_s": plan.seconds,
        "interval_s": plan.interval_s,
        "why": plan.why,
        "gpu_watch": gpu_watch_words,
        "stability": overall,
        "lanes": lanes,
    });
    let path = out.join("soak.json");
    gdrperf_files::write_file(&path, (serde_json::to_string_pretty(&document)? + "\n").as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    say!("soak: {overall} ({})", path.display());
    Ok(overall)
}

/// The GPUs the lanes use, by bus id, each once.
fn watched_gpus(runs: &[PlannedRun]) -> Vec<&str> {
    let mut gpus: Vec<&str> =
        runs.iter().filter_map(|run| run.gpu.as_ref().map(|gpu| gpu.bus_id.as_str())).collect();
    gpus.sort_unstable();
    gpus.dedup();
    gpus
}

/// What one interval measured: a bandwidth lane's rate in Gb/s (the row's value is in the
/// profile threshold's unit), or a latency lane's statistic in µs; neither when the run failed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figure {
    bandwidth_gbps: Option<f64>,
    latency_us: Option<f64>,
}

fn interval_figure(kind: CheckKind, row: &AcceptanceRow) -> Figure {
    let value = row.value.filter(|_| row.verdict != Verdict::Error);
    match kind {
        CheckKind::Bandwidth => Figure {
            // Back through the threshold unit that wrote it (its label is the row's unit).
            bandwidth_gbps: value.map(|value| {
                [BandwidthUnit::GigabitsPerSecond, BandwidthUnit::MebibytesPerSecond]
                    .into_iter()
                    .find(|unit| unit.label() == row.unit)
                    .map_or(value, |unit| unit.to_gbit(value))
            }),
            latency_us: None,
        },
        CheckKind::Latency => Figure { bandwidth_gbps: None, latency_us: value },
    }
}

/// The judged size's `nic_errors` in a bench's JSON file and the error counters it sums (from
/// the row's `nic_counters`, "name=delta;..."); 0 and none when the file or column is absent.
fn nic_errors(json: &Path, bytes: u64) -> (u64, BTreeMap<String, u64>) {
    // The one reader of result files: columns by name, so a renamed column does not compile.
    let Ok(file) = ResultFile::read(json) else { return (0, BTreeMap::new()) };
    let Some(row) = file.rows.iter().find(|row| row.bytes() == bytes) else {
        return (0, BTreeMap::new());
    };
    (
        row.count(column::NIC_ERRORS).ok().flatten().unwrap_or(0),
        error_counters(&row.text(column::NIC_COUNTERS)),
    )
}

/// The error counters (`gdrperf_ceiling::ERROR_COUNTERS`, the ones `nic_errors` sums) among a
/// row's moved counters "rcvd_pkts=120;rcvd_seq_err=3". A name that both sysfs directories have
/// comes with `hw_` before the driver's copy (`gdrperf::node::nic_counters`): it counts under its name.
fn error_counters(moved: &str) -> BTreeMap<String, u64> {
    moved
        .split(';')
        .filter_map(|pair| {
            let (name, delta) = pair.split_once('=')?;
            let base =
                if ERROR_COUNTERS.contains(&name) { name } else { name.strip_prefix("hw_").unwrap_or(name) };
            let delta: u64 = delta.trim().parse().ok()?;
            (ERROR_COUNTERS.contains(&base) && delta > 0).then(|| (name.to_string(), delta))
        })
        .collect()
}

/// "completer_retry_err +12, rcvd_seq_err +10" for the console line.
fn named(counters: &BTreeMap<String, u64>) -> String {
    counters.iter().map(|(name, delta)| format!("{name} +{delta}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_replaces_the_runs_length_and_keeps_the_port() {
        let args: Vec<String> =
            ["--loopback", "-d", "mlx5_0", "-i", "1", "-s", "65536", "-n", "500", "-q", "4"]
                .map(String::from)
                .into();
        assert_eq!(
            with_duration(&args, 10.0),
            ["--loopback", "-d", "mlx5_0", "-i", "1", "-s", "65536", "-q", "4", "-D", "10"]
        );
    }

    #[test]
    fn an_intervals_error_counters_are_named_from_the_rows_moved_counters() {
        let moved = "completer_retry_err=120;duplicate_request=37;hw_out_of_seq_request=4;rcvd_pkts=9000;\
                     rcvd_seq_err=115;sent_pkts=9100;garbled;link_downed=x";
        let counters = error_counters(moved);
        assert_eq!(
            counters,
            BTreeMap::from([
                ("completer_retry_err".to_string(), 120),
                ("hw_out_of_seq_request".to_string(), 4),
                ("rcvd_seq_err".to_string(), 115),
            ])
        );
        assert_eq!(named(&counters), "completer_retry_err +120, hw_out_of_seq_request +4, rcvd_seq_err +115");
        assert!(error_counters("").is_empty());
    }

    #[test]
    fn an_intervals_json_gives_the_judged_sizes_sum_and_names() {
        let folder = std::env::temp_dir().join(format!("gdrperf-soak-run-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let json = folder.join("write_bw-host-rxe0-interval003.json");
        std::fs::write(
            &json,
            r#"{"results": [
                {"bytes": 4096, "nic_errors": 1, "nic_counters": "rcvd_seq_err=1"},
                {"bytes": 65536, "nic_errors": 235, "nic_counters": "completer_retry_err=120;rcvd_seq_err=115;sent_pkts=800"}
            ]}"#,
        )
        .unwrap();
        let (sum, counters) = nic_errors(&json, 65536);
        assert_eq!(sum, 235);
        assert_eq!(named(&counters), "completer_retry_err +120, rcvd_seq_err +115");
        assert_eq!(nic_errors(&folder.join("absent.json"), 65536), (0, BTreeMap::new()));
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn an_interval_reads_a_bandwidth_in_gbps_whatever_the_unit_and_a_latency_in_us() {
        let planned = crate::planned_run_for_tests::planned_run;
        let measured = |kind, value: f64, unit: &str| {
            let mut row = planned(kind).error(String::new());
            (row.value, row.unit, row.verdict) = (Some(value), unit.into(), Verdict::Pass);
            row
        };
        // 1000 MiB/s is 1000 * 1048576 * 8 bits a second: 8.388608 Gb/s.
        let figure = interval_figure(CheckKind::Bandwidth, &measured(CheckKind::Bandwidth, 1000.0, "MiB/s"));
        assert!((figure.bandwidth_gbps.unwrap() - 8.388_608).abs() < 1e-9, "{figure:?}");
        assert_eq!(
            interval_figure(CheckKind::Bandwidth, &measured(CheckKind::Bandwidth, 97.5, "Gb/s")),
            Figure { bandwidth_gbps: Some(97.5), latency_us: None }
        );
        assert_eq!(
            interval_figure(CheckKind::Latency, &measured(CheckKind::Latency, 2.25, "us")),
            Figure { bandwidth_gbps: None, latency_us: Some(2.25) }
        );
        // A failed run measured nothing, whatever value it carries.
        let mut failed = measured(CheckKind::Latency, 2.25, "us");
        failed.verdict = Verdict::Error;
        assert_eq!(
            interval_figure(CheckKind::Latency, &failed),
            Figure { bandwidth_gbps: None, latency_us: None }
        );
    }
}
