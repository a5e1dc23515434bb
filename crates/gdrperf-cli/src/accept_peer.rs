//! `gdrperf accept --peer HOST` and `gdrperf accept --serve`: the acceptance across a link.
//!
//! In loopback both ends of a run sit on one port and Soft-RoCE hands every packet from the
//! requester to the responder inside the kernel (its loopback short-cut), so nothing on the
//! wire, and nothing `tc netem` does to it, reaches the run. Across a link the same rows and soak
//! intervals measure the path between two nodes: the node under test runs each bench as a
//! client of HOST (`--peer HOST`), where `gdrperf accept --serve` with the same profile, `--soak`
//! and device flags runs the server of each run, in the same order (a group the client starts on
//! every NIC at once, served at once: [`started_together`]). Run N of the plan (rows in
//! plan order, then the soak's intervals lane by lane) uses TCP port `--peer-port` + N on both
//! sides, so a client never reaches the server of another run: it waits (`--timeout`) until its
//! own server listens.

use std::cell::Cell;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context;
use gdrperf_report::acceptance::PlannedRun;

/// Seconds either end waits for the other (connect, exchange, completion progress): the
/// server's node starts each server only once the previous run has ended there, and a loaded
/// host or a lossy link can take more than the benches' 10 s default for that.
const PEER_TIMEOUT_S: &str = "60";

/// Which end of a run this node is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// Loopback on this node (no `--peer`, no `--serve`).
    Loopback,
    /// The client of the server on this host.
    Client(String),
    /// The server of a `gdrperf accept --peer` on the other node.
    Server,
}

/// The warning a cross-node acceptance gives on the terminal when no token guards its benches
/// (`token`: `GDRPERF_TOKEN` as the benches will inherit it): each server then admits any client
/// on the fabric that sends the run's parameters, and gives it its buffers' keys. The benches'
/// own warning goes only to their log files, which nobody reads while the run goes on.
pub fn token_warning(side: &Side, token: Option<&str>) -> Option<String> {
    let role = match side {
        Side::Loopback => return None,
        Side::Client(_) => "--peer",
        Side::Server => "--serve",
    };
    let guarded = matches!(token, Some(token) if !token.trim().is_empty());
    (!guarded).then(|| {
        format!(
            "warning: gdrperf accept {role} without GDRPERF_TOKEN: every server of this acceptance admits any \
             client on the fabric that sends the run's parameters, and lets it reach its benchmark buffers. \
             Set the same GDRPERF_TOKEN on both nodes (`gdrperf token` makes one); docs/security.md"
        )
    })
}

/// Numbers the runs of a plan as they are made: run N gets port `first + N` on both sides.
pub struct Ports {
    first: u16,
    next: Cell<u16>,
}

impl Ports {
    pub fn new(first: u16) -> Ports {
        Ports { first, next: Cell::new(0) }
    }

    /// `run` as this side makes it: loopback as planned, else the next port and the peer.
    /// `accept_timeout_s`: how long a server waits for its client (the run's watchdog).
    pub fn place(&self, run: &PlannedRun, side: &Side, accept_timeout_s: u64) -> anyhow::Result<PlannedRun> {
        if *side == Side::Loopback {
            return Ok(run.clone());
        }
        let index = self.next.get();
        self.next.set(index + 1);
        let port = self.first.checked_add(index).with_context(|| {
            format!("--peer-port {}: run {index} of the plan would need a port above 65535", self.first)
        })?;
        let mut placed = run.clone();
        placed.args = across(&run.args, side, port, accept_timeout_s);
        Ok(placed)
    }
}

/// The planned loopback arguments for one end of the run across the link.
fn across(args: &[String], side: &Side, port: u16, accept_timeout_s: u64) -> Vec<String> {
    let mut kept: Vec<String> = args.iter().filter(|word| *word != "--loopback").cloned().collect();
    kept.extend(["-p".to_string(), port.to_string(), "--timeout".into(), PEER_TIMEOUT_S.into()]);
    match side {
        Side::Loopback => return args.to_vec(),
        Side::Client(host) => kept.push(host.clone()),
        Side::Server => kept.extend(["--accept-timeout".into(), accept_timeout_s.to_string()]),
    }
    kept
}

/// Runs the server of every run of the plan in order (`runs`: the rows' and the soak
/// intervals' runs, already placed), each writing its log to `out`. Runs the client starts
/// together (a section with `all_nics_at_once`: the same `together` key, next to each other in
/// the plan) are served together too, one server per NIC pair, so that every NIC of both nodes is
/// loaded at once as on the client's side; the next run starts when all of them have ended. Exit
/// 0 when every server ended well, 2 when one could not be started or ended with an error (its
/// log says why): the server judges nothing, so a run it could not serve is one that could not
/// run, never a miss.
pub fn serve(
    binary_of: &dyn Fn(&str) -> Option<std::path::PathBuf>,
    runs: &[PlannedRun],
    out: &Path,
) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut failed = 0;
    let mut index = 0;
    for batch in started_together(runs) {
        // Every binary of the group found before any of its servers starts.
        let mut binaries = Vec::new();
        for run in batch {
            let Some(binary) = binary_of(&run.binary) else {
                say!("{}: not found (build it: cargo build --release -p gdrperf-benches)", run.binary);
                return Ok(ExitCode::from(2));
            };
            binaries.push(binary);
        }
        let mut servers = Vec::new();
        for (run, binary) in batch.iter().zip(binaries) {
            index += 1;
            let log = out.join(format!("{}.server.log", run.stem));
            let log_file =
                gdrperf_files::create_fresh(&log).with_context(|| format!("creating {}", log.display()))?;
            let together = if batch.len() > 1 { " (with the others of its test, at once)" } else { "" };
            say!("[{index}/{}] serving {} {}{together}", runs.len(), run.binary, run.args.join(" "));
            let child = Command::new(&binary)
                .args(&run.args)
                .stdin(Stdio::null())
                .stdout(log_file.try_clone()?)
                .stderr(log_file)
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))?;
            servers.push((child, log));
        }
        for (mut child, log) in servers {
            let status = child
                .wait()
                .with_context(|| format!("waiting for the server logging to {}", log.display()))?;
            if !status.success() {
                failed += 1;
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let last = text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("(no output)");
                say!("      server {status}: {} (log: {})", last.trim(), log.display());
            }
        }
    }
    say!("served {} runs, {failed} ended with an error", runs.len());
    Ok(ExitCode::from(if failed == 0 { 0 } else { 2 }))
}

/// The runs in the groups they start in: neighbours with the same `together` key form one group,
/// every other run is a group of its own (the client's `gdrperf accept` batches its runs the
/// same way).
pub fn started_together(runs: &[PlannedRun]) -> Vec<&[PlannedRun]> {
    let mut groups = Vec::new();
    let mut rest = runs;
    while let Some(first) = rest.first() {
        let length = match &first.together {
            Some(key) => rest.iter().take_while(|run| run.together.as_ref() == Some(key)).count(),
            None => 1,
        };
        let (group, after) = rest.split_at(length);
        groups.push(group);
        rest = after;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44 item 11: across nodes without a token, the terminal says so.
    #[test]
    fn a_cross_node_acceptance_without_a_token_is_warned_about() {
        let client = Side::Client("nodeB".into());
        for (side, role) in [(&client, "--peer"), (&Side::Server, "--serve")] {
            for token in [None, Some(""), Some("   ")] {
                let warning = token_warning(side, token).expect("no token: a warning");
                assert!(warning.contains(role) && warning.contains("GDRPERF_TOKEN"), "{warning}");
            }
            assert_eq!(token_warning(side, Some("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4")), None);
        }
        assert_eq!(token_warning(&Side::Loopback, None), None, "loopback listens on this node only");
    }

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn both_ends_of_a_run_leave_loopback_for_the_same_port() {
        let planned = words("--loopback -d rxe0 -i 1 -s 65536 -D 4 --mem host");
        assert_eq!(
            across(&planned, &Side::Client("gdrvm0".into()), 18517, 600),
            words("-d rxe0 -i 1 -s 65536 -D 4 --mem host -p 18517 --timeout 60 gdrvm0")
        );
        assert_eq!(
            across(&planned, &Side::Server, 18517, 600),
            words("-d rxe0 -i 1 -s 65536 -D 4 --mem host -p 18517 --timeout 60 --accept-timeout 600")
        );
        assert_eq!(across(&planned, &Side::Loopback, 18517, 600), planned);
    }

    #[test]
    fn runs_take_consecutive_ports_and_the_last_port_is_the_limit() {
        let run = PlannedRun {
            args: words("--loopback -d rxe0"),
            ..crate::planned_run_for_tests::planned_run(gdrperf_report::acceptance::CheckKind::Bandwidth)
        };
        let ports = Ports::new(65534);
        let first = ports.place(&run, &Side::Server, 60).unwrap();
        let second = ports.place(&run, &Side::Server, 60).unwrap();
        assert!(first.args.windows(2).any(|pair| pair == ["-p", "65534"]), "{:?}", first.args);
        assert!(second.args.windows(2).any(|pair| pair == ["-p", "65535"]), "{:?}", second.args);
        let error = ports.place(&run, &Side::Server, 60).unwrap_err().to_string();
        assert!(
            error.contains("--peer-port 65534: run 2 of the plan would need a port above 65535"),
            "{error}"
        );
        // Loopback takes no port and leaves the plan as it is.
        assert_eq!(Ports::new(65535).place(&run, &Side::Loopback, 60).unwrap(), run);
    }
}
