//! The samples of one size: the recorder, with the warm-up, the stop rule and the interval log
//! around it. Pure bookkeeping, tested without a device.

use std::time::Instant;

use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;
use gdrperf_stats::{LatencyRecorder, RunClock};

use crate::error::{Error, Result};
use crate::harness::config::{LatencySpan, StopRule};

use super::{IntervalSink, LatencyPlan, LatencyRun};

/// A sample is a whole round trip (READ) or half of one (ping-pong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RoundTrip {
    Whole,
    Halved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Continue {
    Go,
    Stop,
}

/// The recorder with the warm-up, the stop rule and the interval log around it.
pub(super) struct Samples<'a> {
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
}

impl<'a> Samples<'a> {
    pub(super) fn new(plan: &LatencyPlan, sink: Option<&'a mut dyn IntervalSink>) -> Result<Samples<'a>> {
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
        })
    }

    /// Says what the engine's samples span (reported with the run; post to arrival unless said).
    pub(super) fn spanning(mut self, span: LatencySpan) -> Self {
        self.span = span;
        self
    }

    #[inline]
    pub(super) fn record(&mut self, start: Instant, end: Instant, round_trip: RoundTrip) -> Result<Continue> {
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

    pub(super) fn finish(mut self) -> Result<LatencyRun> {
        let (clock, last_end) = match (self.clock, self.last_end) {
            (Some(clock), Some(end)) => (clock, end),
            _ => return Err(Error::Internal("no latency sample was taken".into())),
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
