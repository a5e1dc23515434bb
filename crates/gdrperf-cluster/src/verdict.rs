//! The verdict on each pair from what its two sides recorded.
//!
//! A pair passes when both sides' benches exited 0, the client wrote at least one row and no
//! row failed its data check. Everything else fails with a reason a person can act on: which
//! side, which exit status, the last line the bench printed, or that a task left no record at
//! all (it died, or its node did).
//!
//! The two sides of a pair lie in two ranks' records files, and the gather reads one file at a
//! time. What each side said (a few words: how it ended, its rows, its problems) is put aside by
//! the pair's place in the job's list, a range of places per bucket; the verdicts are then
//! decided one range at a time, in list order, and handed on one by one. Memory is one range of
//! sides, however many pairs the job ran.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::layout::{OutputDir, PairRecord};
use crate::plan::{BenchPair, Role};
use crate::spill::{Spill, MOST_BUCKETS};

/// The verdict on one pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairOutcome {
    #[serde(flatten)]
    pub pair: BenchPair,
    pub passed: bool,
    pub reasons: Vec<String>,
    pub rows: usize,
    pub server_exit: Option<i32>,
    pub client_exit: Option<i32>,
}

/// The fewest places a bucket holds: below this, more files would save little memory.
const FEWEST_PLACES: usize = 1 << 16;

/// What one line of a records file says about its side of the pair at `place`.
#[derive(Serialize, Deserialize)]
pub(crate) struct SideLine {
    #[serde(rename = "p")]
    pub place: usize,
    #[serde(rename = "c")]
    pub client: bool,
    /// The client's rows, when it wrote a CSV.
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    #[serde(rename = "r", default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    #[serde(rename = "e")]
    pub ended: Ended,
}

/// How a side ended.
#[derive(Default, Serialize, Deserialize)]
pub(crate) struct Ended {
    /// The run the record says it belongs to, kept only when it is not this one.
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    foreign_run: Option<String>,
    #[serde(rename = "x", default, skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    last_line: Option<String>,
}

impl Ended {
    pub(crate) fn of(record: PairRecord, run_id: &str) -> Ended {
        Ended {
            foreign_run: (record.run_id != run_id).then_some(record.run_id),
            exit_code: record.exit_code,
            note: record.note,
            last_line: record.last_line,
        }
    }
}

/// One side as its lines left it: a later line of the same side adds its reasons and replaces
/// the rest (a client's rows only when it wrote a CSV).
#[derive(Default)]
struct Side {
    /// `None`: no record from this side.
    ended: Option<Ended>,
    rows: usize,
    reasons: Vec<String>,
}

/// Every side's lines, put aside by place.
pub(crate) struct Sides {
    spill: Spill,
    places: usize,
    per_bucket: usize,
}

impl Sides {
    /// Room for the sides of `places` pairs, put aside under `dir`.
    pub(crate) fn new(dir: &OutputDir, places: usize) -> Sides {
        Sides::spread(dir, places, places.div_ceil(MOST_BUCKETS).max(FEWEST_PLACES))
    }

    fn spread(dir: &OutputDir, places: usize, per_bucket: usize) -> Sides {
        let buckets = places.div_ceil(per_bucket);
        Sides { spill: Spill::new(dir.root.join("sides"), buckets), places, per_bucket }
    }

    pub(crate) fn put(&mut self, line: &SideLine) -> Result<()> {
        self.spill.put(line.place / self.per_bucket, line)
    }

    /// Hands `each` the verdict on every pair, in list order; `pairs` yields them in that order.
    pub(crate) fn decide(
        mut self,
        dir: &OutputDir,
        run_id: &str,
        pairs: &mut dyn Iterator<Item = BenchPair>,
        each: &mut dyn FnMut(PairOutcome) -> Result<()>,
    ) -> Result<()> {
        let mut start = 0;
        let mut bucket = 0;
        while start < self.places {
            let width = self.per_bucket.min(self.places - start);
            let mut sides: Vec<[Side; 2]> = (0..width).map(|_| Default::default()).collect();
            self.spill.take(bucket, &mut |line: SideLine| {
                let side = &mut sides[line.place - start][line.client as usize];
                side.reasons.extend(line.reasons);
                if let Some(rows) = line.rows {
                    side.rows = rows;
                }
                side.ended = Some(line.ended);
                Ok(())
            })?;
            for [server, client] in &sides {
                let Some(pair) = pairs.next() else { return Ok(()) };
                each(outcome(dir, pair, server, client, run_id))?;
            }
            start += width;
            bucket += 1;
        }
        Ok(())
    }
}

fn outcome(dir: &OutputDir, pair: BenchPair, server: &Side, client: &Side, run_id: &str) -> PairOutcome {
    let mut reasons = Vec::new();
    let server_exit = side_verdict(dir, &pair, Role::Server, server, run_id, &mut reasons);
    let client_exit = side_verdict(dir, &pair, Role::Client, client, run_id, &mut reasons);
    reasons.extend(server.reasons.iter().chain(&client.reasons).cloned());
    if client.rows == 0 && client_exit == Some(0) {
        reasons.push("the client exited 0 but wrote no result rows".into());
    }
    PairOutcome { pair, passed: reasons.is_empty(), reasons, rows: client.rows, server_exit, client_exit }
}

/// Adds this side's failure reasons; returns its exit status.
fn side_verdict(
    dir: &OutputDir,
    pair: &BenchPair,
    role: Role,
    side: &Side,
    run_id: &str,
    reasons: &mut Vec<String>,
) -> Option<i32> {
    let rank = match role {
        Role::Server => pair.server_rank,
        Role::Client => pair.client_rank,
    };
    let node = match role {
        Role::Server => &pair.server_node,
        Role::Client => &pair.client_node,
    };
    let who = format!("{} (rank {rank} on {node})", role.name());
    let Some(record) = &side.ended else {
        reasons.push(format!("no record from the {who}: the task died, was killed, or has not finished"));
        return None;
    };
    if let Some(foreign) = &record.foreign_run {
        reasons.push(format!("the {who}'s record belongs to run {foreign}, not {run_id}"));
        return None;
    }
    let log = dir.log(rank);
    let log_name = log.strip_prefix(&dir.root).unwrap_or(&log).display().to_string();
    match record.exit_code {
        Some(0) => {}
        Some(1) => reasons
            .push(format!("{who} exit 1: a size failed its data check or a threshold (see {log_name})")),
        Some(code) => reasons.push(format!(
            "{who} exit {code}: {}",
            record.last_line.clone().unwrap_or_else(|| format!("see {log_name}"))
        )),
        None => reasons.push(format!("{who}: {}", record.note.as_deref().unwrap_or("no exit status"))),
    }
    record.exit_code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(place: usize) -> BenchPair {
        BenchPair {
            round: place / 4,
            server_rank: 0,
            server_node: "a".into(),
            client_rank: 1,
            client_node: "b".into(),
            local: 0,
            port: 18515 + (place % 4) as u16,
        }
    }

    fn line(place: usize, client: bool, exit_code: i32, rows: Option<usize>, reasons: &[&str]) -> SideLine {
        let ended = Ended { exit_code: Some(exit_code), ..Ended::default() };
        let reasons = reasons.iter().map(|reason| reason.to_string()).collect();
        SideLine { place, client, rows, reasons, ended }
    }

    #[test]
    fn verdicts_come_in_place_order_across_buckets_whatever_order_the_sides_came_in() {
        let root = std::env::temp_dir().join(format!("gdrperf-verdict-buckets-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let dir = OutputDir::new(&root);
        // Ten places, three a bucket: four buckets, the last one short.
        let mut sides = Sides::spread(&dir, 10, 3);
        for place in (0..10).rev() {
            if place != 7 {
                sides.put(&line(place, false, if place == 4 { 2 } else { 0 }, None, &[])).unwrap();
            }
            sides.put(&line(place, true, 0, Some(place + 1), &[])).unwrap();
        }
        // A later line of a side adds its reasons; its rows stand unless it gives some.
        sides.put(&line(5, true, 0, None, &["the CSV could not be read"])).unwrap();
        let mut outcomes = Vec::new();
        sides
            .decide(&dir, "job.0", &mut (0..10).map(pair), &mut |outcome| {
                outcomes.push(outcome);
                Ok(())
            })
            .unwrap();
        let places: Vec<u16> = outcomes
            .iter()
            .map(|outcome| outcome.pair.port - 18515 + 4 * outcome.pair.round as u16)
            .collect();
        assert_eq!(places, (0..10).collect::<Vec<u16>>());
        let failed: Vec<usize> = (0..10).filter(|&place| !outcomes[place].passed).collect();
        assert_eq!(failed, [4, 5, 7]);
        assert_eq!(outcomes[5].rows, 6);
        assert_eq!(outcomes[5].reasons, ["the CSV could not be read"]);
        assert_eq!(outcomes[4].server_exit, Some(2));
        assert!(
            outcomes[7].reasons[0].starts_with("no record from the server (rank 0 on a)"),
            "{:?}",
            outcomes[7]
        );
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
