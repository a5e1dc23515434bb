//! The samples of one size: the recorder, with the warm-up, the stop rule and the interval log
//! around it. Pure bookkeeping, tested without a device.
//!
//! A run of `-n` iterations without an interval log keeps its clock readings raw during the loop
//! and records them after it ([`Samples::deferring`]), as perftest keeps its `tposted` cycles: a
//! loop turn then stores two stamps and compares a count, where recording live converts both
//! stamps to `Instant`s (floating-point helpers under QEMU TCG) and feeds the histogram, the
//! moments and the exact buffer, all of it inside the next sample of a post-to-post span.

use std::time::Instant;

use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;
use gdrperf_stats::{LatencyRecorder, RunClock, SampleClock, Stamp};

use crate::error::{Error, Result};
use crate::options::config::{LatencySpan, StopRule};

use super::plan::{IntervalSink, LatencyPlan, LatencyRun};

/// A sample is a whole round trip (READ) or half of one (ping-pong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundTrip {
    Whole,
    Halved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continue {
    Go,
    Stop,
}

/// The recorder with the warm-up, the stop rule and the interval log around it.
pub struct Samples<'a> {
    recorder: LatencyRecorder,
    warmup_left: u64,
    stop: StopRule,
    clock: Option<RunClock>,
    last_end: Option<Instant>,
    sink: Option<&'a mut dyn IntervalSink>,
    next_interval: Option<Instant>,
    recorded_at_last_interval: u64,
    /// An interval was written by the last `record`: see [`Samples::take_interval_written`].
    interval_written: bool,
    span: LatencySpan,
    /// Longest sample accepted: the stall timeout (a wait that long fails before it ends).
    longest_nanos: u64,
    refused: u64,
    /// The raw stamps of a deferred run, recorded at [`Samples::finish`].
    deferred: Option<Deferred>,
}

/// A deferred run's stamps: every turn's (start, end), warm-up included, and what turns them into
/// samples afterwards.
struct Deferred {
    stamps: Vec<(Stamp, Stamp)>,
    /// Warm-up and measured turns: the loop stops when this many are stored.
    turns: usize,
    clock: SampleClock,
    round_trip: RoundTrip,
}

impl<'a> Samples<'a> {
    pub fn new(plan: &LatencyPlan, sink: Option<&'a mut dyn IntervalSink>) -> Result<Samples<'a>> {
        // A -D run's count is unknown: keep exact samples up to the limit, beyond it the
        // percentiles come from the histogram (the recorder says which in its summary).
        let expected = match plan.stop {
            StopRule::Iterations(iterations) => iterations,
            StopRule::Duration(_) => EXACT_SAMPLE_LIMIT,
        };
        let recorder = LatencyRecorder::new(expected)
            .map_err(|source| Error::Figure { what: "latency recorder".into(), source })?;
        Ok(Samples {
            recorder,
            warmup_left: plan.warmup,
            stop: plan.stop,
            clock: None,
            last_end: None,
            sink,
            next_interval: None,
            recorded_at_last_interval: 0,
            interval_written: false,
            span: LatencySpan::Arrival,
            longest_nanos: u64::try_from(plan.stall_timeout.as_nanos()).unwrap_or(u64::MAX),
            refused: 0,
            deferred: None,
        })
    }

    /// Keeps the stamps raw until [`Samples::finish`] where the run allows it: a fixed count
    /// (`-n`, at most [`EXACT_SAMPLE_LIMIT`] turns, so the store stays as small as the recorder's
    /// exact buffer) and no interval log (which needs the histogram as the run goes). Otherwise
    /// [`Samples::record_stamps`] records live. A deferred run takes exactly warm-up + `-n`
    /// turns, the count the responder expects; a refused sample leaves the run one sample short
    /// (and is reported), where a live run would take one more turn.
    pub fn deferring(mut self, clock: SampleClock, round_trip: RoundTrip) -> Self {
        let turns = match self.stop {
            StopRule::Iterations(iterations) => self.warmup_left.saturating_add(iterations),
            StopRule::Duration(_) => return self,
        };
        if self.sink.is_none() && turns <= EXACT_SAMPLE_LIMIT {
            let turns = turns as usize;
            self.deferred = Some(Deferred { stamps: Vec::with_capacity(turns), turns, clock, round_trip });
        }
        self
    }

    /// One turn's raw stamps: stored where the run is deferred (see [`Samples::deferring`]),
    /// else converted and recorded at once ([`Samples::record`]).
    #[inline]
    pub fn record_stamps(
        &mut self,
        clock: &SampleClock,
        start: Stamp,
        end: Stamp,
        round_trip: RoundTrip,
    ) -> Result<Continue> {
        match self.deferred.as_mut() {
            Some(deferred) => {
                // Reserved for `turns` and the loop stops at `turns`: never reallocates.
                deferred.stamps.push((start, end));
                Ok(if deferred.stamps.len() >= deferred.turns { Continue::Stop } else { Continue::Go })
            }
            None => self.record(clock.instant(start), clock.instant(end), round_trip),
        }
    }

    /// Says what the engine's samples span (reported with the run; post to arrival unless said).
    pub fn spanning(mut self, span: LatencySpan) -> Self {
        self.span = span;
        self
    }

    #[inline]
    pub fn record(&mut self, start: Instant, end: Instant, round_trip: RoundTrip) -> Result<Continue> {
        if self.warmup_left > 0 {
            self.warmup_left -= 1;
            return Ok(Continue::Go);
        }
        let clock = *self.clock.get_or_insert_with(|| RunClock::starting_at(start));
        match sample_nanos(start, end, self.longest_nanos) {
            Some(nanos) => self.recorder.record(match round_trip {
                RoundTrip::Whole => nanos,
                RoundTrip::Halved => nanos / 2,
            }),
            None => self.refused += 1,
        }
        self.last_end = Some(end);
        if let Some(sink) = self.sink.as_deref_mut() {
            let next = *self.next_interval.get_or_insert_with(|| start + sink.period());
            if end >= next {
                sink.interval(self.recorder.histogram(), clock.nanos_at(end))?;
                self.recorded_at_last_interval = self.recorder.count();
                self.interval_written = true;
                let mut following = next + sink.period();
                while following <= end {
                    following += sink.period();
                }
                self.next_interval = Some(following);
            }
        }
        let done = match self.stop {
            StopRule::Iterations(iterations) => self.recorder.count() >= iterations,
            StopRule::Duration(duration) => end.saturating_duration_since(clock.origin()) >= duration,
        };
        Ok(if done { Continue::Stop } else { Continue::Go })
    }

    /// Whether the last `record` wrote an interval of the `--hlog` log (and forgets it). With the
    /// iteration span, samples follow each other without a gap (post to next post), so the
    /// engine stamps its next sample's start again after a write: the file's I/O then lies
    /// between two samples, in none of them.
    #[inline]
    pub(super) fn take_interval_written(&mut self) -> bool {
        std::mem::take(&mut self.interval_written)
    }

    pub fn finish(mut self) -> Result<LatencyRun> {
        if let Some(deferred) = self.deferred.take() {
            for (start, end) in deferred.stamps {
                let (clock, round_trip) = (deferred.clock, deferred.round_trip);
                self.record(clock.instant(start), clock.instant(end), round_trip)?;
            }
        }
        let (clock, last_end) = match (self.clock, self.last_end) {
            (Some(clock), Some(end)) => (clock, end),
            _ => return Err(Error::Internal(crate::error::InternalError::NoLatencySample)),
        };
        let elapsed_nanos = clock.nanos_at(last_end);
        if let Some(sink) = self.sink.as_deref_mut() {
            if self.recorder.count() > self.recorded_at_last_interval {
                sink.interval(self.recorder.histogram(), elapsed_nanos)?;
            }
        }
        if self.refused > 0 {
            eprintln!(
                "warning: {} latency samples refused (negative, or longer than the {} s stall timeout): \
                 the clock is not steady on this machine",
                self.refused,
                self.longest_nanos / 1_000_000_000
            );
        }
        Ok(LatencyRun {
            recorder: self.recorder,
            elapsed_nanos,
            span: self.span,
            refused_samples: self.refused,
        })
    }
}

/// A sample's length, or `None` when it cannot be real: the end before the start (a clock that
/// went backwards, e.g. TSCs of two CPUs out of step) or longer than `longest_nanos`.
pub(super) fn sample_nanos(start: Instant, end: Instant, longest_nanos: u64) -> Option<u64> {
    let length = end.checked_duration_since(start)?;
    u64::try_from(length.as_nanos()).ok().filter(|&nanos| nanos <= longest_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdrperf_stats::hdrhistogram::Histogram;
    use std::time::Duration;

    struct Log {
        period: Duration,
        ends: Vec<(u64, u64)>,
    }

    impl IntervalSink for Log {
        fn period(&self) -> Duration {
            self.period
        }
        fn interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()> {
            self.ends.push((cumulative.len(), end_nanos));
            Ok(())
        }
    }

    fn plan(stop: StopRule, warmup: u64) -> LatencyPlan {
        LatencyPlan {
            size: 2,
            stop,
            warmup,
            inline: false,
            stall_timeout: Duration::from_secs(1),
            span: LatencySpan::Iteration,
        }
    }

    #[test]
    fn warmup_is_not_recorded_and_halving_applies_to_ping_pong_only() {
        let mut samples = Samples::new(&plan(StopRule::Iterations(2), 3), None).unwrap();
        let origin = Instant::now();
        let at = |micros: u64| origin + Duration::from_micros(micros);
        for index in 0..3 {
            assert_eq!(
                samples.record(at(index * 10), at(index * 10 + 9), RoundTrip::Halved).unwrap(),
                Continue::Go
            );
        }
        assert_eq!(samples.recorder.count(), 0, "warm-up samples are not counted");
        assert_eq!(samples.record(at(100), at(104), RoundTrip::Halved).unwrap(), Continue::Go);
        assert_eq!(samples.record(at(110), at(116), RoundTrip::Whole).unwrap(), Continue::Stop);
        let run = samples.finish().unwrap();
        let summary = run.recorder.summary().unwrap();
        assert_eq!((summary.t_min_nanos, summary.t_max_nanos), (2_000, 6_000));
        assert_eq!(run.elapsed_nanos, 16_000, "from the first sample's start to the last one's end");
    }

    #[test]
    fn negative_and_absurd_samples_are_refused_and_counted() {
        let mut samples =
            Samples::new(&plan(StopRule::Iterations(3), 0), None).unwrap().spanning(LatencySpan::Arrival);
        let origin = Instant::now();
        let at = |micros: u64| origin + Duration::from_micros(micros);
        // Ends before it starts; then 2 s, above the 1 s stall timeout; then a real 5 us sample.
        assert_eq!(samples.record(at(10), at(5), RoundTrip::Whole).unwrap(), Continue::Go);
        assert_eq!(samples.record(at(20), at(2_000_020), RoundTrip::Whole).unwrap(), Continue::Go);
        assert_eq!(samples.record(at(30), at(35), RoundTrip::Whole).unwrap(), Continue::Go);
        let run = samples.finish().unwrap();
        assert_eq!((run.recorder.count(), run.refused_samples), (1, 2));
        assert_eq!(run.recorder.summary().unwrap().t_max_nanos, 5_000);
        assert_eq!(run.span, LatencySpan::Arrival);
        assert_eq!(sample_nanos(at(0), at(1_000_000), 1_000_000_000), Some(1_000_000_000));
    }

    /// Real stamps of a monotonic clock, `count` of them, each at least a microsecond apart.
    fn stamps(clock: &SampleClock, count: usize) -> Vec<Stamp> {
        (0..count)
            .map(|_| {
                let stamp = clock.stamp();
                while clock.instant(clock.stamp()) < clock.instant(stamp) + Duration::from_micros(1) {}
                stamp
            })
            .collect()
    }

    #[test]
    fn a_deferred_run_records_after_the_loop_what_a_live_run_records_during_it() {
        let clock = SampleClock::monotonic();
        let taken = stamps(&clock, 6);
        let mut deferred = Samples::new(&plan(StopRule::Iterations(3), 2), None)
            .unwrap()
            .deferring(clock, RoundTrip::Halved);
        let mut live = Samples::new(&plan(StopRule::Iterations(3), 2), None).unwrap();
        let mut steps = Vec::new();
        for pair in taken.windows(2) {
            steps.push(deferred.record_stamps(&clock, pair[0], pair[1], RoundTrip::Halved).unwrap());
            live.record(clock.instant(pair[0]), clock.instant(pair[1]), RoundTrip::Halved).unwrap();
        }
        assert_eq!(steps, [Continue::Go, Continue::Go, Continue::Go, Continue::Go, Continue::Stop]);
        assert_eq!(deferred.recorder.count(), 0, "nothing is recorded inside the loop");
        let (deferred, live) = (deferred.finish().unwrap(), live.finish().unwrap());
        assert_eq!(deferred.recorder.count(), 3, "warm-up turns are dropped after the loop too");
        assert_eq!(deferred.recorder.summary().unwrap(), live.recorder.summary().unwrap());
        assert_eq!(deferred.elapsed_nanos, live.elapsed_nanos);
    }

    #[test]
    fn a_deferred_run_takes_a_fixed_count_and_reports_refusals_after_it() {
        let clock = SampleClock::monotonic();
        let taken = stamps(&clock, 3);
        let mut samples =
            Samples::new(&plan(StopRule::Iterations(2), 0), None).unwrap().deferring(clock, RoundTrip::Whole);
        // The second turn runs backwards (end before start): refused, and the run still ends at 2.
        assert_eq!(
            samples.record_stamps(&clock, taken[0], taken[1], RoundTrip::Whole).unwrap(),
            Continue::Go
        );
        assert_eq!(
            samples.record_stamps(&clock, taken[2], taken[1], RoundTrip::Whole).unwrap(),
            Continue::Stop
        );
        let run = samples.finish().unwrap();
        assert_eq!((run.recorder.count(), run.refused_samples), (1, 1));
    }

    #[test]
    fn duration_runs_and_interval_logs_record_live() {
        let clock = SampleClock::monotonic();
        let mut log = Log { period: Duration::from_secs(1), ends: Vec::new() };
        let timed = Samples::new(&plan(StopRule::Duration(Duration::from_secs(1)), 0), None).unwrap();
        assert!(timed.deferring(clock, RoundTrip::Whole).deferred.is_none());
        let logged = Samples::new(&plan(StopRule::Iterations(5), 0), Some(&mut log)).unwrap();
        assert!(logged.deferring(clock, RoundTrip::Whole).deferred.is_none());
        let huge = Samples::new(&plan(StopRule::Iterations(EXACT_SAMPLE_LIMIT), 1), None).unwrap();
        assert!(
            huge.deferring(clock, RoundTrip::Whole).deferred.is_none(),
            "more turns than the exact buffer holds"
        );
        let taken = stamps(&clock, 2);
        let mut live = Samples::new(&plan(StopRule::Iterations(1), 0), Some(&mut log))
            .unwrap()
            .deferring(clock, RoundTrip::Whole);
        live.record_stamps(&clock, taken[0], taken[1], RoundTrip::Whole).unwrap();
        assert_eq!(live.recorder.count(), 1, "recorded at once");
    }

    #[test]
    fn duration_runs_stop_on_time_and_write_every_interval_once() {
        let mut log = Log { period: Duration::from_micros(100), ends: Vec::new() };
        let mut samples =
            Samples::new(&plan(StopRule::Duration(Duration::from_micros(1000)), 0), Some(&mut log)).unwrap();
        let origin = Instant::now();
        let (mut index, mut writes) = (0u64, 0);
        loop {
            let start = origin + Duration::from_micros(index * 30);
            let step = samples.record(start, start + Duration::from_micros(20), RoundTrip::Whole).unwrap();
            writes += usize::from(samples.take_interval_written());
            assert!(!samples.take_interval_written(), "taken once");
            index += 1;
            if step == Continue::Stop {
                break;
            }
        }
        let run = samples.finish().unwrap();
        assert!(run.elapsed_nanos >= 1_000_000 && run.elapsed_nanos < 1_030_000, "{}", run.elapsed_nanos);
        assert_eq!(run.recorder.count(), index);
        let ends = &log.ends;
        assert!(ends.len() >= 2, "{ends:?}");
        assert!(ends.windows(2).all(|pair| pair[0].1 < pair[1].1 && pair[0].0 < pair[1].0), "{ends:?}");
        assert_eq!(ends.last().map(|last| last.0), Some(index), "the final partial interval is written");
        assert!((10..=11).contains(&ends.len()), "one line per 100 us of a 1 ms run: {ends:?}");
        // Each write inside the run is told to the engine; a final partial one comes from finish.
        assert!(writes >= ends.len() - 1 && writes <= ends.len(), "{writes} of {ends:?}");
    }
}
