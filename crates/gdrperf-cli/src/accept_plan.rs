//! `gdrperf accept --dry-run`: the plan as the real run would carry it out, read before a node
//! is booked for it. Every run with the command of each node (this one, and the peer's with
//! `--peer`/`--serve`), its threshold and where the threshold and the run's shape come from, how
//! it departs from that source, the soak's intervals with `--soak`, and an estimate of the wall
//! time. A row that this host cannot run (no NIC, no GPU) still shows the command it stands for,
//! its missing device as a placeholder, beside the reason.
//!
//! The estimate is a sum of run lengths: a run given in seconds (`-D`) takes them; a run given in
//! iterations takes them at the pace of its threshold (a bandwidth run moving its messages at the
//! threshold rate, a latency run of round trips twice the threshold), which bounds a passing run;
//! each run adds [`START_S`] to connect, register memory and warm up. Runs started together (a
//! profile section with `all_nics_at_once`) count once, as their longest.

use std::fmt::Write as _;

use gdrperf_report::acceptance::{CheckKind, PlannedRun, Step};
use gdrperf_report::threshold::{BandwidthThreshold, LatencyThreshold};
use gdrperf_report::Profile;

use crate::accept_peer::{Ports, Side};
use crate::soak_run::{interval_run, SoakPlan};

/// Seconds a run is counted for its start (connection, memory registration, warm-up) and end
/// (result files). gdrperf's own allowance, not measured on a particular machine: a GPU run on a
/// large node may take longer to register its memory.
pub const START_S: f64 = 5.0;

/// What the dry run shows, as the real run would be made.
pub struct Plan<'a> {
    pub profile: &'a Profile,
    pub steps: &'a [Step],
    pub side: &'a Side,
    pub first_port: u16,
    pub soak: Option<&'a SoakPlan>,
    /// `--run-timeout`: a server's wait for its client.
    pub run_timeout: u64,
    /// This node's name, for the peer's view of a `--serve` plan.
    pub host: &'a str,
}

impl Plan<'_> {
    /// The plan in words, one block per run, then the soak and the total.
    pub fn render(&self) -> anyhow::Result<String> {
        let mut out = String::new();
        let runs: Vec<&PlannedRun> = self.runs().collect();
        let decided = self.steps.len() - runs.len();
        let placement = match self.side {
            Side::Loopback => "in loopback on this node".to_string(),
            Side::Client(host) => format!("across the link: this node is the client of {host}"),
            Side::Server => "across the link: this node serves the client's runs".to_string(),
        };
        let _ =
            writeln!(out, "plan: profile {} ({}), {placement}", self.profile.name, self.profile.description);
        let _ = writeln!(
            out,
            "{} run(s), {decided} row(s) decided without running; every command below runs as shown, \
             plus --json/--csv (and --hdr-dir for latency) into the output folder\n",
            runs.len()
        );
        let client_ports = Ports::new(self.first_port);
        let server_ports = Ports::new(self.first_port);
        // The runs this node makes, and the rows it cannot run at the length they would take
        // on a node that can: a plan of rows not run here is still a plan with a length.
        let mut here = Estimate::default();
        let mut not_run_here = Estimate::default();
        let mut index = 0;
        for step in self.steps {
            match step {
                Step::Run(run) => {
                    index += 1;
                    not_run_here.break_group();
                    let seconds = here.add(run);
                    self.render_run(&mut out, index, run, &client_ports, &server_ports, seconds)?;
                }
                Step::Decided(row, standing_for) => {
                    // The real run starts a group only of runs next to each other.
                    here.break_group();
                    not_run_here.add(standing_for);
                    let place = [row.gpu.as_str(), row.nic.as_str()]
                        .into_iter()
                        .filter(|part| !part.is_empty())
                        .collect::<Vec<_>>()
                        .join(" on ");
                    let place = if place.is_empty() { String::new() } else { format!(" {place}") };
                    let _ = writeln!(
                        out,
                        " -. {} {}{place}, {} B: {} ({}), not run: {}",
                        row.test, row.mem, row.bytes, row.verdict, row.threshold, row.detail
                    );
                    let _ = writeln!(out, "      would run:  {}", command(standing_for, &standing_for.args));
                    let _ = writeln!(out, "      threshold source: {}", row.threshold_source);
                    if !row.deviation.is_empty() {
                        let _ = writeln!(out, "      deviation: {}", row.deviation);
                    }
                }
            }
        }
        if let Some(soak) = self.soak {
            here.total += self.render_soak(&mut out, soak, &runs, &client_ports, &server_ports)?;
        }
        let _ = writeln!(
            out,
            "\nestimated wall time: about {} ({} s a run to start, runs started together counted once)",
            duration_words(here.total),
            START_S
        );
        if decided > 0 {
            let _ = writeln!(
                out,
                "the {decided} row(s) not run here would add about {} on a node that can run them{}",
                duration_words(not_run_here.total),
                if self.soak.is_some() { ", and their soak intervals" } else { "" }
            );
        }
        Ok(out)
    }

    fn runs(&self) -> impl Iterator<Item = &PlannedRun> {
        self.steps.iter().filter_map(|step| match step {
            Step::Run(run) => Some(run),
            Step::Decided(..) => None,
        })
    }

    fn render_run(
        &self,
        out: &mut String,
        index: usize,
        run: &PlannedRun,
        client_ports: &Ports,
        server_ports: &Ports,
        seconds: f64,
    ) -> anyhow::Result<()> {
        let place = run
            .gpu
            .as_ref()
            .map(|gpu| format!("{} on {}", gpu.label, run.nic.device))
            .unwrap_or_else(|| run.nic.device.clone());
        let together =
            run.together.as_ref().map(|_| ", started together with the others of its test").unwrap_or("");
        let _ = writeln!(
            out,
            "{index:>2}. {} {} {place}, {} B: threshold {}{together}",
            run.test, run.mode, run.bytes, run.threshold.value
        );
        let _ = writeln!(out, "      threshold source: {}", run.threshold.source);
        let _ = writeln!(out, "      run source: {}", run.run_source);
        if !run.deviation.is_empty() {
            let _ = writeln!(out, "      deviation: {}", run.deviation);
        }
        self.render_commands(out, run, client_ports, server_ports)?;
        let _ = writeln!(out, "      time: about {}", duration_words(seconds));
        Ok(())
    }

    /// The commands of both nodes for `run` (one for loopback), placed as the real run places
    /// them (the same port numbering on both sides).
    fn render_commands(
        &self,
        out: &mut String,
        run: &PlannedRun,
        client_ports: &Ports,
        server_ports: &Ports,
    ) -> anyhow::Result<()> {
        match self.side {
            Side::Loopback => {
                let _ = writeln!(out, "      this node:  {}", command(run, &run.args));
            }
            Side::Client(host) => {
                let client = client_ports.place(run, self.side, self.run_timeout)?;
                let server = server_ports.place(run, &Side::Server, self.run_timeout)?;
                let _ = writeln!(out, "      this node:  {}", command(run, &client.args));
                let _ = writeln!(out, "      {host} (--serve):  {}", command(run, &server.args));
            }
            Side::Server => {
                let server = server_ports.place(run, self.side, self.run_timeout)?;
                let client =
                    client_ports.place(run, &Side::Client(self.host.to_string()), self.run_timeout)?;
                let _ = writeln!(out, "      this node (server):  {}", command(run, &server.args));
                let _ = writeln!(out, "      client (--peer {}):  {}", self.host, command(run, &client.args));
            }
        }
        Ok(())
    }

    /// The soak block: each lane's interval command (interval 0; the others differ only in
    /// their port and file names) and the intervals' count; returns the soak's seconds.
    fn render_soak(
        &self,
        out: &mut String,
        soak: &SoakPlan,
        lanes: &[&PlannedRun],
        client_ports: &Ports,
        server_ports: &Ports,
    ) -> anyhow::Result<f64> {
        let count = soak.intervals();
        let _ = writeln!(
            out,
            "\nsoak: {count} interval(s) of {} s per lane, {} lane(s), lane after lane ({})",
            soak.interval_s,
            lanes.len(),
            soak.why
        );
        let mut seconds = 0.0;
        for lane in lanes {
            let _ = writeln!(
                out,
                "  lane {} ({} x {} s, threshold {})",
                lane.stem, count, soak.interval_s, lane.threshold.value
            );
            for index in 0..count {
                let interval = interval_run(soak, lane, index);
                if index == 0 {
                    let _ = writeln!(out, "    interval 000:");
                    self.render_commands(out, &interval, client_ports, server_ports)?;
                } else if self.side != &Side::Loopback {
                    // Keep both numberings in step with the real run's.
                    client_ports.place(&interval, &Side::Client(String::new()), self.run_timeout)?;
                    server_ports.place(&interval, &Side::Server, self.run_timeout)?;
                }
            }
            if count > 1 {
                let _ = writeln!(
                    out,
                    "    intervals 001-{:03}: the same command{}, files {}-interval001 .. -interval{:03}",
                    count - 1,
                    if self.side == &Side::Loopback { "" } else { " on the next ports in turn" },
                    lane.stem,
                    count - 1
                );
            }
            seconds += count as f64 * (soak.interval_s + START_S);
        }
        Ok(seconds)
    }
}

/// A wall-time estimate summed run by run: runs started together (one `together` group, one
/// after another in the plan) count once, as the longest of them.
#[derive(Default)]
struct Estimate {
    total: f64,
    group: Option<String>,
    group_longest: f64,
}

impl Estimate {
    /// Adds `run` and returns its own estimated seconds.
    fn add(&mut self, run: &PlannedRun) -> f64 {
        let seconds = run_seconds(run);
        match (&run.together, &self.group) {
            (Some(group), Some(previous)) if group == previous => {
                self.total += (seconds - self.group_longest).max(0.0);
                self.group_longest = self.group_longest.max(seconds);
            }
            _ => {
                self.total += seconds;
                self.group_longest = seconds;
            }
        }
        self.group = run.together.clone();
        seconds
    }

    /// The next run starts no group with the previous ones.
    fn break_group(&mut self) {
        self.group = None;
    }
}

/// The bench and its arguments as one line.
fn command(run: &PlannedRun, args: &[String]) -> String {
    std::iter::once(run.binary.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// The seconds one run is estimated to take (see the module's words).
pub fn run_seconds(run: &PlannedRun) -> f64 {
    if let Some(seconds) = run.duration_s {
        return seconds + START_S;
    }
    let iterations = run.iterations.or_else(|| {
        gdrperf::bench::BENCHES
            .iter()
            .find(|bench| bench.binary == run.binary)
            .map(|bench| bench.defaults.iterations)
    });
    // Seconds per message of one QP at the threshold's pace; each QP sends `iterations`.
    let per_message_s = match run.kind {
        CheckKind::Bandwidth => BandwidthThreshold::parse(&run.threshold.value)
            .and_then(|threshold| threshold.resolve(run.nic.rate.as_deref(), run.bidirectional))
            .ok()
            .filter(|limit| limit.gbit_s > 0.0)
            .map(|limit| run.bytes as f64 * 8.0 / (limit.gbit_s * 1e9)),
        CheckKind::Latency => {
            LatencyThreshold::parse(&run.threshold.value).ok().map(|threshold| 2.0 * threshold.max_us * 1e-6)
        }
    };
    match (iterations, per_message_s) {
        (Some(iterations), Some(each)) => iterations as f64 * f64::from(qps(run)) * each + START_S,
        _ => START_S,
    }
}

/// The run's QP count (its `-q`), 1 when it has none.
fn qps(run: &PlannedRun) -> u32 {
    run.args.windows(2).find(|pair| pair[0] == "-q").and_then(|pair| pair[1].parse().ok()).unwrap_or(1)
}

/// "35 s", "4 min 10 s", "1 h 2 min".
pub fn duration_words(seconds: f64) -> String {
    let whole = seconds.ceil() as u64;
    match whole {
        0..=59 => format!("{whole} s"),
        60..=3599 => format!("{} min {} s", whole / 60, whole % 60),
        _ => format!("{} h {} min", whole / 3600, (whole % 3600).div_ceil(60)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdrperf_report::SourcedValue;

    fn run(kind: CheckKind, binary: &str, args: &str, bytes: u64, threshold: &str) -> PlannedRun {
        PlannedRun {
            binary: binary.into(),
            args: args.split_whitespace().map(String::from).collect(),
            threshold: SourcedValue { value: threshold.into(), source: "test".into() },
            bytes,
            ..crate::planned_run_for_tests::planned_run(kind)
        }
    }

    #[test]
    fn a_run_takes_its_seconds_or_its_iterations_at_the_thresholds_pace_plus_its_start() {
        let mut timed = run(CheckKind::Bandwidth, "gdr-write-bw", "-D 30 -q 4", 65536, "720Gb/s");
        timed.duration_s = Some(30.0);
        assert_eq!(run_seconds(&timed), 35.0);
        // 500 x 65536 B x 8 at 0.01 Gb/s: 26.2144 s.
        let mut counted = run(CheckKind::Bandwidth, "gdr-write-bw", "-n 500 -q 1", 65536, "0.01Gb/s");
        counted.iterations = Some(500);
        assert!((run_seconds(&counted) - 31.2144).abs() < 1e-9, "{}", run_seconds(&counted));
        // Each of 4 QPs sends its 500: four times as long.
        counted.args = vec!["-q".into(), "4".into()];
        assert!((run_seconds(&counted) - (4.0 * 26.2144 + 5.0)).abs() < 1e-9);
        // 2000 round trips of twice 10 ms: 40 s.
        let mut latency = run(CheckKind::Latency, "gdr-read-lat", "-n 2000", 2, "10ms");
        latency.iterations = Some(2000);
        assert!((run_seconds(&latency) - 45.0).abs() < 1e-9);
        // No count given: the bench's own default (gdr-write-bw: 5000), 8 MiB at 380 Gb/s.
        let default = run(CheckKind::Bandwidth, "gdr-write-bw", "", 8_388_608, "380Gb/s");
        let expected = 5000.0 * 8_388_608.0 * 8.0 / 380e9 + 5.0;
        assert!((run_seconds(&default) - expected).abs() < 1e-9, "{}", run_seconds(&default));
        // A share of a port whose rate is unknown gives no pace: the start alone.
        assert_eq!(run_seconds(&run(CheckKind::Bandwidth, "gdr-write-bw", "", 65536, "90%")), START_S);
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(duration_words(35.0), "35 s");
        assert_eq!(duration_words(59.2), "1 min 0 s");
        assert_eq!(duration_words(1400.0), "23 min 20 s");
        assert_eq!(duration_words(3725.0), "1 h 3 min");
    }
}
