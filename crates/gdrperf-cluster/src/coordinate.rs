//! The live `locate` schedule of a job: rank 0 decides each round after the first pass from the
//! rows of the rounds before it, and tells the other ranks through one file.
//!
//! Every rank runs the first pass (a ring over a seeded shuffle, [`crate::locate::first_pass`],
//! known to all from the seed alone). Then, round by round:
//!
//! - rank 0 waits until every rank has finished the last round (each rank's one progress file,
//!   (`wait.rs`); a rank silent for `--round-timeout` is taken for dead and paired with no
//!   one again), reads that round's client rows from the clients' record files, calls each pair
//!   low or not, and asks the pure planner ([`crate::locate::Locator`]) for the next round;
//! - it appends that round to `locate.json` (the decided rounds, rewritten whole and renamed: a
//!   reader never sees half of it; the gather computes the job's pairs from the first pass's
//!   seed and these), or marks `locate.json` finished, and rewrites `plan.json`'s counts;
//! - every other rank polls `locate.json` alone until the round it waits for is there.
//!
//! Once no suspect is left to re-pair, rank 0 runs the **retests** (when `gdrperf slurm` gives a
//! judge, [`crate::options::Retests`]): it gathers the rows so far into `results.csv`, asks the
//! judge for the pairs it lists to retest (a one-off deficit: one low row of a pair, too few to
//! name a link), and schedules each such pair once more, in the direction it first ran, split
//! into rounds with no unit in two pairs ([`crate::locate::rounds_apart`]); those rounds go
//! through `locate.json` like the locate rounds. Then the judge looks again over every row, the
//! retests' included: a pair whose retest was low again stays listed and runs again (a bad link
//! needs as many agreeing rows as the class's transient rate asks), a dip clears. At most
//! [`crate::locate::MOST_RETEST_PASSES`] passes; a pair with an end that stopped answering, or
//! whose ports no row names, is not run.
//!
//! A pair is low when its client recorded no exit 0, wrote no rows, or a lane's bandwidth at the
//! largest size is more than 15 % below that lane's median in the first pass (the same rule as
//! `gdrperf fleet simulate`'s). Per lane, as the judge's rails are: a rail switch that slows
//! every port of one lane would otherwise make every first-pass pair low. How many healthy peers
//! must agree about a suspect follows the share of the first pass's lane rows that were low
//! ([`crate::locate::agreeing_peers`]). What decides a verdict stays the fleet judge's, over all
//! rows.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::time::Duration;

use gdrperf_files::columns::{self as column, ColumnName};

use crate::error::Result;
use crate::layout::{read_json_if_present, write_json, Decisions, PairLine, RunPlan};
use crate::locate::{Locator, Verdicts, MOST_RETEST_PASSES};
use crate::options::{LocateOptions, PortPair, Retests, TaskOptions};
use crate::plan::{BenchPair, Plan};
use crate::schedule::Pair;
use crate::step::SlurmStep;
use crate::wait::{poll_for, progress_of, wait_while_alive, Beat, Watch, HEARTBEAT};

mod low_pairs;
mod retest;

use low_pairs::{client_lines, plateaus, Levels};
use retest::Retesting;
pub use retest::{Retested, RetestedPair};

/// What locating cost and what it found (rank 0).
#[derive(Debug, Clone)]
pub struct Located {
    pub rounds: usize,
    pub first_pass_rounds: usize,
    /// Unit pairs measured (node pairs, or task pairs with `--pair-by task`).
    pub pair_runs: usize,
    /// What all-pairs over the same units would have measured.
    pub all_pairs_runs: usize,
    /// Each suspect (node, or `node/rankN`) and what its healthy peers said.
    pub suspects: Vec<(String, Verdicts)>,
    /// Healthy peers in a row that had to agree in each role.
    pub agree: usize,
    /// Units given up on as dead.
    pub retired: Vec<String>,
    /// The retests run after locating; `None` where none were asked for.
    pub retests: Option<Retested>,
}

impl Located {
    /// The lines `gdrperf slurm` prints and appends to fleet.txt.
    pub fn text(&self) -> String {
        let mut text = format!(
            "locate: {} rounds ({} first pass), {} pair runs ({:.1} % of all-pairs' {}), {} agreeing peers a role\n",
            self.rounds,
            self.first_pass_rounds,
            self.pair_runs,
            100.0 * self.pair_runs as f64 / self.all_pairs_runs.max(1) as f64,
            self.all_pairs_runs,
            self.agree
        );
        let said = |list: &[bool]| match list.last() {
            None => "not measured".to_string(),
            Some(&low) => {
                let agreeing = list.iter().rev().take_while(|&&each| each == low).count();
                format!("{} with {agreeing} healthy peer(s)", if low { "LOW" } else { "fine" })
            }
        };
        for (unit, verdicts) in &self.suspects {
            let _ = writeln!(
                text,
                "  suspect {unit}: sending {}, receiving {}{}",
                said(&verdicts.sending),
                said(&verdicts.receiving),
                if verdicts.settled(self.agree) { "" } else { " (unsettled)" }
            );
        }
        if !self.retired.is_empty() {
            let _ = writeln!(text, "  stopped answering: {}", self.retired.join(" "));
        }
        if let Some(retests) = &self.retests {
            let _ = writeln!(
                text,
                "  retests: {} judgement(s) of the rows so far, {} pair run(s) in {} round(s) (in the counts above; at most {MOST_RETEST_PASSES} passes){}",
                retests.passes,
                retests.pair_runs,
                retests.rounds,
                retests.stopped.as_deref().map(|why| format!("; stopped: {why}")).unwrap_or_default()
            );
        }
        text
    }
}

/// Where a rank's rounds after the plan's come from.
pub(crate) enum Rounds {
    /// The plan holds every round.
    Fixed,
    /// Rank 0 of a `locate` job: decides them.
    Leader(Box<Leader>),
    /// Another rank of a `locate` job: reads them from `locate.json`.
    Follower { first_pass_rounds: usize },
}

/// Rank 0's state while locating.
pub(crate) struct Leader {
    step: SlurmStep,
    options: LocateOptions,
    locator: Locator,
    first_pass_rounds: usize,
    /// Rounds whose rows the locator has.
    recorded: usize,
    /// The first pass's median plateau per lane (ln Gb/s), what "low" is measured against.
    levels: Levels,
    dead: BTreeSet<usize>,
    decisions: Decisions,
    /// The judge of the retests, if any; the retests, once locating has settled.
    judge: Option<Retests>,
    retesting: Option<Retesting>,
    /// Each unit pair's direction when it first ran (server, client), by its ordered units.
    ran: HashMap<(usize, usize), Pair>,
    /// Each port (node, device) the rows named, and its unit (for `--pair-by task`).
    ports: HashMap<(String, String), usize>,
}

impl Rounds {
    /// The rounds of a `locate` job whose first pass is `plan`'s rounds.
    pub(crate) fn locate(
        step: &SlurmStep,
        plan: &Plan,
        options: &LocateOptions,
        judge: Option<&Retests>,
    ) -> Rounds {
        let first_pass_rounds = plan.rounds();
        if step.rank != 0 {
            return Rounds::Follower { first_pass_rounds };
        }
        Rounds::Leader(Box::new(Leader {
            step: step.clone(),
            options: *options,
            locator: Locator::new(options.pair_by.unit_count(step), options.seed),
            first_pass_rounds,
            recorded: 0,
            levels: Levels::default(),
            dead: BTreeSet::new(),
            decisions: Decisions { run_id: step.run_id(), ..Decisions::default() },
            judge: judge.cloned(),
            retesting: None,
            ran: HashMap::new(),
            ports: HashMap::new(),
        }))
    }

    /// Adds the next round to `job`'s plan; `false` when there is none (the job is done).
    pub(crate) fn next(&mut self, job: Job<'_, '_, '_>) -> Result<bool> {
        match self {
            Rounds::Fixed => Ok(false),
            Rounds::Leader(leader) => leader.decide(job),
            Rounds::Follower { first_pass_rounds } => follow(*first_pass_rounds, job),
        }
    }

    /// Rank 0's account of a `locate` job.
    pub(crate) fn located(&self) -> Option<Located> {
        let Rounds::Leader(leader) = self else { return None };
        let pair_by = leader.options.pair_by;
        let name = |unit: usize| pair_by.unit_name(&leader.step, unit);
        let units = pair_by.unit_count(&leader.step);
        let retests = leader.retesting.as_ref().map(|retesting| retesting.report.clone());
        let (retest_rounds, retest_runs) =
            retests.as_ref().map_or((0, 0), |retests| (retests.rounds, retests.pair_runs));
        Some(Located {
            rounds: leader.locator.rounds + leader.first_pass_rounds.saturating_sub(1) + retest_rounds,
            first_pass_rounds: leader.first_pass_rounds,
            pair_runs: leader.locator.pair_runs + retest_runs,
            all_pairs_runs: units * (units - 1) / 2,
            agree: leader.locator.agree,
            suspects: leader
                .locator
                .suspects()
                .iter()
                .map(|(&unit, verdicts)| (name(unit), verdicts.clone()))
                .collect(),
            retired: leader.dead.iter().map(|&rank| name(pair_by.unit_of(&leader.step, rank))).collect(),
            retests,
        })
    }
}

/// What a rank's next round is decided with and written to.
pub(crate) struct Job<'job, 'beat, 'say> {
    pub(crate) step: &'job SlurmStep,
    pub(crate) plan: &'job mut Plan,
    /// `plan.json` as rank 0 rewrites it.
    pub(crate) run: &'job mut RunPlan,
    pub(crate) beat: &'job mut Beat<'beat>,
    pub(crate) options: &'job TaskOptions,
    pub(crate) say: &'job mut (dyn FnMut(&str) + 'say),
}

impl Leader {
    fn decide(&mut self, job: Job<'_, '_, '_>) -> Result<bool> {
        let Job { step, plan, run, beat, options, say } = job;
        let out = &options.out;
        let round = plan.rounds();
        self.wait_for_round(round, beat, options.round_timeout, say)?;
        // The rows of the rounds not yet recorded (the whole first pass at first).
        let pairs: Vec<BenchPair> =
            (self.recorded..round).flat_map(|each| plan.round(&self.step, each)).collect();
        let lines = client_lines(out, &pairs)?;
        self.note_ports(&pairs, &lines);
        let first_pass = self.recorded == 0;
        self.recorded = round;
        if self.retesting.is_none() {
            if let Some(unit_pairs) = self.locate_next(&pairs, &lines, first_pass) {
                return self.add(
                    unit_pairs,
                    step,
                    plan,
                    run,
                    out,
                    say,
                    "suspect(s) re-paired with healthy peers",
                );
            }
            match self.judge.is_some() {
                true => self.retesting = Some(Retesting::default()),
                false => return self.finish(out),
            }
        }
        let next = match (self.retesting.take(), &self.judge) {
            (Some(mut retesting), Some(judge)) => {
                let units_of = |ports: &PortPair| self.units_of(ports);
                let next = retesting.next_round(judge, out, say, &self.ran, units_of);
                self.retesting = Some(retesting);
                next
            }
            (retesting, _) => {
                self.retesting = retesting;
                None
            }
        };
        if let Some(unit_pairs) = next {
            return self.add(
                unit_pairs,
                step,
                plan,
                run,
                out,
                say,
                "pair(s) the fleet judge listed, run again",
            );
        }
        self.finish(out)
    }

    /// Records the rounds just run for the locator (every pair low or not) and asks it for the
    /// next round; `None` once every suspect has settled.
    fn locate_next(
        &mut self,
        pairs: &[BenchPair],
        lines: &HashMap<(usize, u16), PairLine>,
        first_pass: bool,
    ) -> Option<Vec<Pair>> {
        if first_pass {
            self.levels = Levels::of(lines.values());
            let unit = |rank: usize| self.options.pair_by.unit_of(&self.step, rank);
            let rows: Vec<(Pair, u32, u32)> = pairs
                .iter()
                .map(|pair| {
                    let units = Pair { server: unit(pair.server_rank), client: unit(pair.client_rank) };
                    match lines.get(&(pair.round, pair.port)).map(plateaus) {
                        Some(lanes) if !lanes.is_empty() => {
                            let low =
                                lanes.iter().filter(|(lane, value)| self.levels.low(lane, *value)).count();
                            (units, low as u32, lanes.len() as u32)
                        }
                        _ => (units, 1, 1),
                    }
                })
                .collect();
            let units = self.options.pair_by.unit_count(&self.step);
            let ports = units * self.levels.lanes.len().max(1);
            self.locator.size_for_noise(&rows, ports);
        }
        let mut unit_pairs: BTreeMap<(usize, usize), bool> = BTreeMap::new();
        for pair in pairs {
            let unit = |rank: usize| self.options.pair_by.unit_of(&self.step, rank);
            let low = lines.get(&(pair.round, pair.port)).is_none_or(|line| self.low(line));
            *unit_pairs.entry((unit(pair.server_rank), unit(pair.client_rank))).or_default() |= low;
        }
        let verdicts: Vec<(Pair, bool)> =
            unit_pairs.into_iter().map(|((server, client), low)| (Pair { server, client }, low)).collect();
        self.locator.record_round(&verdicts, first_pass);
        for &rank in &self.dead {
            self.locator.retire(self.options.pair_by.unit_of(&self.step, rank));
        }
        self.locator.next_round()
    }

    /// The unit pair of a listed port pair (ordered), or why it cannot run.
    fn units_of(&self, ports: &PortPair) -> std::result::Result<(usize, usize), String> {
        let unit = |node: &str, device: Option<&String>| -> Option<usize> {
            match self.options.pair_by {
                crate::plan::PairBy::Node => self.step.nodes.iter().position(|name| name == node),
                crate::plan::PairBy::Task => {
                    self.ports.get(&(node.to_string(), device.cloned().unwrap_or_default())).copied()
                }
            }
        };
        let (Some(a), Some(b)) =
            (unit(&ports.node, ports.device.as_ref()), unit(&ports.peer_node, ports.peer_device.as_ref()))
        else {
            return Err("no task of this job runs that port (its node and device)".into());
        };
        if a == b {
            return Err("both ends are the same unit".into());
        }
        let dead = |unit: usize| {
            self.dead.iter().any(|&rank| self.options.pair_by.unit_of(&self.step, rank) == unit)
        };
        if dead(a) || dead(b) {
            return Err("an end stopped answering".into());
        }
        Ok((a.min(b), a.max(b)))
    }

    /// Notes the ports the rows of `pairs` name (their unit, for `--pair-by task`) and each unit
    /// pair's first direction.
    fn note_ports(&mut self, pairs: &[BenchPair], lines: &HashMap<(usize, u16), PairLine>) {
        let unit = |rank: usize| self.options.pair_by.unit_of(&self.step, rank);
        for pair in pairs {
            let units = Pair { server: unit(pair.server_rank), client: unit(pair.client_rank) };
            let key = (units.server.min(units.client), units.server.max(units.client));
            self.ran.entry(key).or_insert(units);
            let Some(line) = lines.get(&(pair.round, pair.port)) else { continue };
            let Some(header) = &line.header else { continue };
            let find = |name: ColumnName| header.iter().position(|column| column == name.name());
            for (column, node, unit) in [
                (find(column::DEVICE), &pair.client_node, units.client),
                (find(column::PEER_DEVICE), &pair.server_node, units.server),
            ] {
                let Some(column) = column else { continue };
                for row in &line.rows {
                    if let Some(device) = row.get(column) {
                        self.ports.entry((node.clone(), device.clone())).or_insert(unit);
                    }
                }
            }
        }
    }

    /// Appends `unit_pairs` as the next round, to the plan, `plan.json` and `locate.json`.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        unit_pairs: Vec<Pair>,
        step: &SlurmStep,
        plan: &mut Plan,
        run: &mut RunPlan,
        out: &crate::layout::OutputDir,
        say: &mut dyn FnMut(&str),
        what: &str,
    ) -> Result<bool> {
        let round = plan.rounds();
        let added = plan.add_round(step, &unit_pairs)?;
        run.plan = plan.summary(step);
        write_json(&out.plan(), run)?;
        say(&format!("locate round {round}: {} {what}", unit_pairs.len()));
        if let Some(retesting) = self.retesting.as_mut() {
            retesting.report.rounds += 1;
            retesting.report.pair_runs += unit_pairs.len();
        }
        self.decisions.rounds.push(added);
        write_json(&out.decisions(), &self.decisions)?;
        Ok(true)
    }

    /// Marks `locate.json` finished: no round follows.
    fn finish(&mut self, out: &crate::layout::OutputDir) -> Result<bool> {
        self.decisions.finished = true;
        write_json(&out.decisions(), &self.decisions)?;
        Ok(false)
    }

    /// Waits until every live rank has finished the rounds so far; ranks silent for `timeout`
    /// are counted dead from then on.
    fn wait_for_round(
        &mut self,
        round: usize,
        beat: &mut Beat<'_>,
        timeout: Duration,
        say: &mut dyn FnMut(&str),
    ) -> Result<()> {
        let run_id = beat.progress.run_id.clone();
        let mut waiting: Vec<(usize, Watch)> = (1..self.step.tasks)
            .filter(|rank| !self.dead.contains(rank))
            .map(|rank| (rank, Watch::new()))
            .collect();
        let out = beat.out;
        while !waiting.is_empty() {
            let mut given_up = Vec::new();
            waiting.retain_mut(|(rank, watch)| {
                let shown = progress_of(out, &run_id, *rank);
                if shown.as_ref().is_some_and(|progress| progress.rounds_done >= round) {
                    return false;
                }
                if watch.silent_for(shown.as_ref()) >= timeout {
                    given_up.push(*rank);
                    return false;
                }
                true
            });
            for rank in given_up {
                say(&format!(
                    "locate: rank {rank} ({}) showed nothing for {} s; paired with no one again",
                    self.step.node_of(rank),
                    timeout.as_secs()
                ));
                self.dead.insert(rank);
            }
            if !waiting.is_empty() {
                beat.beat()?;
                std::thread::sleep(poll_for(waiting.len()));
            }
        }
        Ok(())
    }

    fn low(&self, line: &PairLine) -> bool {
        if line.record.exit_code != Some(0) || line.rows.is_empty() {
            return true;
        }
        let lanes = plateaus(line);
        lanes.is_empty() || lanes.iter().any(|(lane, value)| self.levels.low(lane, *value))
    }
}

/// A rank other than 0 waits for rank 0's next round; `false` when rank 0 said the job is done,
/// or when rank 0 showed nothing for `--round-timeout` (said, and this rank ends).
fn follow(first_pass_rounds: usize, job: Job<'_, '_, '_>) -> Result<bool> {
    let Job { step, plan, beat, options, say, .. } = job;
    let (out, run_id) = (beat.out, beat.progress.run_id.clone());
    let wanted = plan.rounds() - first_pass_rounds;
    // Every rank but one polls this one file: once a second keeps the load on the shared file
    // system at about one read per rank a second (a round's benches take longer).
    let decided = wait_while_alive(beat, 0, options.round_timeout, HEARTBEAT, |_| {
        let decisions = read_json_if_present::<Decisions>(&out.decisions())
            .ok()
            .flatten()
            .filter(|decisions| decisions.run_id == run_id);
        Ok(decisions.and_then(|mut decisions| {
            if decisions.rounds.len() > wanted {
                Some(Some(decisions.rounds.swap_remove(wanted)))
            } else {
                decisions.finished.then_some(None)
            }
        }))
    })?;
    match decided {
        Ok(Some(round)) => {
            plan.add_bench_round(step, &round)?;
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(_) => {
            say(&format!(
                "rank 0 showed nothing for {} s while this rank waited for locate round {}; stopping",
                options.round_timeout.as_secs(),
                plan.rounds()
            ));
            Ok(false)
        }
    }
}
