//! How ranks wait on each other: each rank's one progress file, never a file per pair.
//!
//! A rank rewrites `status/rankN.json` when it finishes a round, and beats a heartbeat in it
//! about once a second while it waits or while its bench runs, so that a rank waiting on it
//! tells a busy or held-up peer (its heartbeat moves) from a dead one (nothing moves for
//! `--round-timeout`). A waiter reads one small file per poll, whatever the size of the job.

use std::time::{Duration, Instant};

use crate::error::{ClusterError, Result};
use crate::layout::{read_json_if_present, write_json, OutputDir, Progress};

/// How often a waiter looks again.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// How often a waiting or busy rank beats its heartbeat; a waiter sees it within its next poll.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a waiter that reads `files` progress files per look sleeps between looks: one
/// poll for a few, longer for many (at most 2 s), so that rank 0 waiting on thousands of ranks
/// reads at most about 250 files a second from the shared file system.
pub(crate) fn poll_for(files: usize) -> Duration {
    POLL.max(Duration::from_millis(4 * files as u64)).min(Duration::from_secs(2))
}

/// This rank's progress file and when it last beat.
pub(crate) struct Beat<'a> {
    pub(crate) out: &'a OutputDir,
    pub(crate) progress: Progress,
    every: Duration,
    last: Instant,
}

impl<'a> Beat<'a> {
    /// Starts with `progress` written; beats at most every `every` (at least every poll).
    pub(crate) fn start(out: &'a OutputDir, progress: Progress, every: Duration) -> Result<Beat<'a>> {
        write_json(&out.progress(progress.rank), &progress)?;
        Ok(Beat { out, progress, every: HEARTBEAT.min(every).max(POLL), last: Instant::now() })
    }

    /// Writes that this rank finished `rounds_done` rounds (and whether it is finished).
    pub(crate) fn rounds_done(&mut self, rounds_done: usize, finished: bool) -> Result<()> {
        self.progress.rounds_done = rounds_done;
        self.progress.finished = finished;
        self.write()
    }

    /// Beats the heartbeat when it is due.
    pub(crate) fn beat(&mut self) -> Result<()> {
        if self.last.elapsed() < self.every {
            return Ok(());
        }
        self.progress.heartbeat += 1;
        self.write()
    }

    fn write(&mut self) -> Result<()> {
        self.last = Instant::now();
        write_json(&self.out.progress(self.progress.rank), &self.progress)
    }
}

/// Rank `rank`'s progress, if it is this run's.
pub(crate) fn progress_of(out: &OutputDir, run_id: &str, rank: usize) -> Option<Progress> {
    read_json_if_present::<Progress>(&out.progress(rank)).ok().flatten().filter(|peer| peer.run_id == run_id)
}

/// Watches one rank for signs of life: a change of its progress resets the clock.
pub(crate) struct Watch {
    seen: Option<(usize, u64, bool)>,
    last_sign: Instant,
}

impl Watch {
    pub(crate) fn new() -> Watch {
        Watch { seen: None, last_sign: Instant::now() }
    }

    /// Notes what the rank shows now; returns how long it has shown nothing new.
    pub(crate) fn silent_for(&mut self, shown: Option<&Progress>) -> Duration {
        let now = shown.map(|peer| (peer.rounds_done, peer.heartbeat, peer.finished));
        if now.is_some() && now != self.seen {
            self.seen = now;
            self.last_sign = Instant::now();
        }
        self.last_sign.elapsed()
    }
}

/// Waits until `peer_rank` has finished `round` rounds (so it is free for this one), beating
/// this rank's heartbeat meanwhile. The timeout counts from the peer's last sign of life: a
/// peer busy with a bench or itself waiting beats its heartbeat and is waited for; one that
/// shows nothing for `timeout` (never started, died) is given up. Such chains end: a rank waits
/// only for a peer in an earlier round. `Ok(Err(_))`: the pair cannot run; `Err(_)`: the own
/// file cannot be written.
pub(crate) fn wait_for_peer(
    beat: &mut Beat<'_>,
    round: usize,
    peer_rank: usize,
    timeout: Duration,
) -> Result<std::result::Result<(), ClusterError>> {
    let ready =
        |peer: Option<&Progress>| Ok(peer.is_some_and(|peer| peer.rounds_done >= round).then_some(()));
    Ok(wait_while_alive(beat, peer_rank, timeout, POLL, ready)?.map_err(|peer| ClusterError::PeerWait {
        peer_rank,
        peer_node: peer.map_or_else(|| "never started".into(), |peer| peer.node),
        round,
        seconds: timeout.as_secs(),
    }))
}

/// Looks every `every` until `ready` (shown rank `watched`'s progress) gives a value, beating
/// this rank's heartbeat meanwhile, for as long as `watched` shows signs of life: once it has
/// shown nothing new for `timeout`, gives up with what it showed last. Every wait of a rank on
/// another is this one loop.
pub(crate) fn wait_while_alive<T>(
    beat: &mut Beat<'_>,
    watched: usize,
    timeout: Duration,
    every: Duration,
    mut ready: impl FnMut(Option<&Progress>) -> Result<Option<T>>,
) -> Result<std::result::Result<T, Option<Progress>>> {
    let mut watch = Watch::new();
    loop {
        let shown = progress_of(beat.out, &beat.progress.run_id, watched);
        if let Some(value) = ready(shown.as_ref())? {
            return Ok(Ok(value));
        }
        if watch.silent_for(shown.as_ref()) >= timeout {
            return Ok(Err(shown));
        }
        beat.beat()?;
        std::thread::sleep(every);
    }
}

/// Waits until every rank of `ranks` is finished or silent for `silence`, checking only those
/// not yet seen finished (one file each per poll); returns those that did not finish. Rank 0
/// waits so before gathering, with `silence` the gather timeout counted from the start.
pub(crate) fn wait_for_finish(
    out: &OutputDir,
    run_id: &str,
    ranks: impl Iterator<Item = usize>,
    timeout: Duration,
) -> Vec<usize> {
    let start = Instant::now();
    let mut missing: Vec<usize> = ranks.collect();
    loop {
        missing.retain(|&rank| !progress_of(out, run_id, rank).is_some_and(|progress| progress.finished));
        if missing.is_empty() || start.elapsed() >= timeout {
            return missing;
        }
        std::thread::sleep(poll_for(missing.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> OutputDir {
        let out =
            OutputDir::new(std::env::temp_dir().join(format!("gdrperf-wait-{name}-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&out.root);
        out.create().unwrap();
        out
    }

    fn progress(rank: usize, rounds_done: usize, heartbeat: u64) -> Progress {
        Progress {
            run_id: "1.0".into(),
            rank,
            node: format!("n{}", rank + 1),
            rounds_done,
            heartbeat,
            finished: false,
        }
    }

    #[test]
    fn a_peer_waiting_for_a_rank_of_its_own_is_waited_for_past_the_timeout() {
        let out = scratch("beating");
        // Rank 1 is held up in round 0 for 1.2 s (three timeouts), beating its heartbeat, then
        // finishes the round.
        write_json(&out.progress(1), &progress(1, 0, 0)).unwrap();
        let peer_out = out.clone();
        let peer = std::thread::spawn(move || {
            for beat in 1..=12 {
                std::thread::sleep(Duration::from_millis(100));
                write_json(&peer_out.progress(1), &progress(1, 0, beat)).unwrap();
            }
            write_json(&peer_out.progress(1), &progress(1, 1, 0)).unwrap();
        });
        let start = Instant::now();
        let timeout = Duration::from_millis(400);
        let mut beat = Beat::start(&out, progress(0, 1, 0), timeout / 4).unwrap();
        let waited = wait_for_peer(&mut beat, 1, 1, timeout).unwrap();
        peer.join().unwrap();
        assert!(waited.is_ok(), "{waited:?}");
        assert!(start.elapsed() >= Duration::from_millis(1200), "{:?}", start.elapsed());
        // This rank beat its own heartbeat meanwhile (every 200 ms: at least 4 times in 1.2 s).
        let own: Progress = read_json_if_present(&out.progress(0)).unwrap().unwrap();
        assert!(own.heartbeat >= 4 && own.rounds_done == 1, "{own:?}");
        let _ = std::fs::remove_dir_all(&out.root);
    }

    #[test]
    fn a_silent_or_absent_peer_is_given_up_after_the_timeout() {
        let out = scratch("silent");
        write_json(&out.progress(1), &progress(1, 0, 7)).unwrap();
        let start = Instant::now();
        let timeout = Duration::from_millis(400);
        let mut beat = Beat::start(&out, progress(0, 1, 0), timeout / 4).unwrap();
        let error = wait_for_peer(&mut beat, 1, 1, timeout).unwrap().unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(400) && start.elapsed() < Duration::from_secs(3));
        assert!(
            error.to_string().starts_with("rank 1 (n2) was not ready for round 1: no sign of it for 0 s"),
            "{error}"
        );
        let error = wait_for_peer(&mut beat, 1, 2, timeout).unwrap().unwrap_err();
        assert!(error.to_string().starts_with("rank 2 (never started) was not ready for round 1"), "{error}");
        let _ = std::fs::remove_dir_all(&out.root);
    }
}
