//! Result rows of the latency tests, and the files that keep each size's whole distribution.
//!
//! A row holds perftest's columns (t_min, t_max, t_typical, t_avg, t_stdev, 99%, 99.9%) plus
//! 99.99%, all in microseconds with fractions: perftest's integer stdev reads as ~0 for sub-µs
//! jitter, ours does not. The row's field names are the CSV column names, a published contract:
//! add columns at the end, rename none.
//!
//! Besides the rows, [`LatencyFiles`] writes what the rows summarise away: per size the `.hgrm`
//! percentile table (HdrHistogram's plotter reads it) and the V2-encoded histogram (`.hdr`, to
//! merge or re-plot), the interval log of a long run (`--hlog`), and every raw sample (`-H`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use gdrperf_stats::hdrhistogram::Histogram;
use gdrperf_stats::units::nanos_to_micros;
use gdrperf_stats::{
    write_percentile_distribution, write_perftest_listing, write_raw_samples, write_v2_histogram,
    HdrOutputError, LatencyIntervalLog, LatencyRecorder, PercentileSource, PercentileTableFormat,
    RawSampleOrder,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::options::config::{LatencyFilePaths, LatencySpan};
use crate::options::values::OutputFigure;
use crate::output::context::RowContext;
use crate::output::exporter::{ConsoleStyle, Row};
use crate::output::perftest_table;
use crate::output::row_columns::{columns, IdentityColumns, MachineColumns, PlaceColumns, QosColumns};

/// What the measuring side found for one size, in integer nanoseconds (mean and deviation in
/// floating point): the report that crosses the exchange and becomes a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyFigures {
    pub bytes: u64,
    pub samples: u64,
    pub t_min_nanos: u64,
    pub t_max_nanos: u64,
    pub t_typical_nanos: u64,
    pub t_avg_nanos: f64,
    pub t_stdev_nanos: f64,
    pub p99_nanos: u64,
    pub p99_9_nanos: u64,
    pub p99_99_nanos: u64,
    pub elapsed_nanos: u64,
    /// Samples above the histogram's range (kept, clamped to its top).
    pub saturated: u64,
    /// Percentiles from the sorted exact samples, or from the histogram (runs above 10^6 samples).
    pub exact_percentiles: bool,
    /// Staged memory: seconds this side spent copying between payload and bounce buffer during
    /// the size, warm-up included (set by the bench around the run; 0 where nothing is staged).
    /// Defaults to 0 in reports from peers that predate it.
    #[serde(default)]
    pub copy_seconds: f64,
    /// What a sample spans: `iteration` (post to next post, perftest's) or `arrival`.
    #[serde(default)]
    pub span: Option<LatencySpan>,
    /// Samples refused as negative or absurd (see `engines::latency::LatencyRun`).
    #[serde(default)]
    pub refused_samples: u64,
    /// The inline size the sending side used (perftest's rule on its device and memory; set by
    /// the bench around the run).
    #[serde(default)]
    pub inline_size: u32,
}

impl LatencyFigures {
    /// The figures of `bytes`-byte messages from the samples of one run (`recorder`), which took
    /// `elapsed_nanos` from its first sample's start to its last's end and refused
    /// `refused_samples`.
    pub fn new(
        bytes: usize,
        recorder: &LatencyRecorder,
        elapsed_nanos: u64,
        span: LatencySpan,
        refused_samples: u64,
    ) -> Result<LatencyFigures> {
        let summary =
            recorder.summary().map_err(|source| Error::Figure { what: format!("{bytes} bytes"), source })?;
        Ok(LatencyFigures {
            bytes: bytes as u64,
            samples: summary.count,
            t_min_nanos: summary.t_min_nanos,
            t_max_nanos: summary.t_max_nanos,
            t_typical_nanos: summary.t_typical_nanos,
            t_avg_nanos: summary.t_avg_nanos,
            t_stdev_nanos: summary.t_stdev_nanos,
            p99_nanos: summary.p99_nanos,
            p99_9_nanos: summary.p99_9_nanos,
            p99_99_nanos: summary.p99_99_nanos,
            elapsed_nanos,
            saturated: summary.saturated,
            exact_percentiles: summary.percentile_source == PercentileSource::ExactSamples,
            copy_seconds: 0.0,
            span: Some(span),
            refused_samples,
            inline_size: 0,
        })
    }

    /// The report of a side that takes no samples but copies inside the peer's (a staged
    /// ping-pong server): its copy time only, so that the row can count both sides' copies.
    pub fn copies_only(bytes: usize, copy_seconds: f64) -> LatencyFigures {
        LatencyFigures {
            bytes: bytes as u64,
            samples: 0,
            t_min_nanos: 0,
            t_max_nanos: 0,
            t_typical_nanos: 0,
            t_avg_nanos: 0.0,
            t_stdev_nanos: 0.0,
            p99_nanos: 0,
            p99_9_nanos: 0,
            p99_99_nanos: 0,
            elapsed_nanos: 0,
            saturated: 0,
            exact_percentiles: false,
            copy_seconds,
            span: None,
            refused_samples: 0,
            inline_size: 0,
        }
    }
}

/// Settings of a latency row that are not in the context.
#[derive(Debug, Clone, Copy)]
pub struct LatencySettings {
    /// How arrival was detected: `completion` (READ), `poll_last_byte`, `write_imm_completion`,
    /// `recv_completion`.
    pub arrival: &'static str,
    /// Messages up to this size were posted inline from host memory.
    pub inline_size: u32,
}

columns! {
    /// One size of a latency test. Times in microseconds.
    #[derive(Debug, Clone)]
    pub struct LatencyRow {
        column test: String,
        column bytes: u64,
        /// Samples taken (warm-up excluded).
        column iterations: u64,
        column t_min_us: f64,
        column t_max_us: f64,
        /// The median.
        column t_typical_us: f64,
        column t_avg_us: f64,
        /// Population standard deviation, in floating point.
        column t_stdev_us: f64,
        column p99_us: f64,
        column p99_9_us: f64,
        column p99_99_us: f64,
        column elapsed_s: f64,
        column mtu: u32,
        /// `off`, `pass` or `fail`.
        column validation: String,
        columns place: PlaceColumns,
        column arrival: String,
        column inline_size: u32,
        /// `exact_samples` or `histogram`.
        column percentile_source: String,
        column saturated_samples: u64,
        /// Staged memory: the seconds during which at least one copy between payload and bounce
        /// buffer was running (per side the union of its copies' intervals,
        /// `gdrperf_stats::busy_nanos`), both sides summed, for this size, warm-up included (0
        /// where nothing is staged); the copies are inside the samples. read_lat counts the
        /// reader's copies only: the passive server copies its payload out once per size,
        /// outside any sample.
        column copy_time_s: f64,
        columns machine: MachineColumns,
        /// What a sample spans: `iteration` (perftest's: post to next post, the whole
        /// iteration) or `arrival` (post to the answer's arrival).
        column latency_span: String,
        /// Samples refused instead of recorded: negative, or longer than the stall timeout.
        column refused_samples: u64,
        /// `-T` and `-S` (appended after the original columns).
        columns qos: QosColumns,
        /// The NIC's and the GPU's identities (appended last: readers by position keep working).
        columns identity: IdentityColumns,
        /// PCIe relaxed ordering on this side's registrations (appended after the identities).
        column relaxed_ordering: String,
    }
}

impl LatencyRow {
    pub fn new(
        context: &RowContext,
        settings: LatencySettings,
        figures: &LatencyFigures,
        validation: &str,
    ) -> LatencyRow {
        let micros = |nanos: u64| nanos_to_micros(nanos as f64);
        LatencyRow {
            test: context.test.clone(),
            bytes: figures.bytes,
            iterations: figures.samples,
            t_min_us: micros(figures.t_min_nanos),
            t_max_us: micros(figures.t_max_nanos),
            t_typical_us: micros(figures.t_typical_nanos),
            t_avg_us: nanos_to_micros(figures.t_avg_nanos),
            t_stdev_us: nanos_to_micros(figures.t_stdev_nanos),
            p99_us: micros(figures.p99_nanos),
            p99_9_us: micros(figures.p99_9_nanos),
            p99_99_us: micros(figures.p99_99_nanos),
            elapsed_s: figures.elapsed_nanos as f64 / 1e9,
            mtu: context.mtu,
            validation: validation.to_string(),
            place: PlaceColumns::of(context),
            arrival: settings.arrival.to_string(),
            inline_size: settings.inline_size,
            percentile_source: if figures.exact_percentiles { "exact_samples" } else { "histogram" }
                .to_string(),
            saturated_samples: figures.saturated,
            copy_time_s: figures.copy_seconds,
            machine: MachineColumns::of(context),
            latency_span: figures.span.map(LatencySpan::name).unwrap_or_default().to_string(),
            refused_samples: figures.refused_samples,
            qos: QosColumns::of(context),
            identity: IdentityColumns::of(context),
            relaxed_ordering: context.relaxed_ordering.clone(),
        }
    }
}

impl LatencyRow {
    /// Iterations over the measured time: perftest's `tps` (`print_report_lat_duration`).
    fn transactions_per_second(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.iterations as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

impl Row for LatencyRow {
    fn console_header(style: ConsoleStyle) -> String {
        if style.timed { perftest_table::LATENCY_DURATION_HEADER } else { perftest_table::LATENCY_HEADER }
            .into()
    }

    /// perftest's row: its nine figures, or under `-D` the average and the transactions per
    /// second (`print_report_lat_duration`: iterations over the measured time).
    fn console_line(&self, style: ConsoleStyle) -> String {
        if style.timed {
            let rate = self.transactions_per_second();
            return perftest_table::latency_duration_line(self.bytes, self.iterations, self.t_avg_us, rate);
        }
        perftest_table::latency_line(&perftest_table::LatencyFields {
            bytes: self.bytes,
            iterations: self.iterations,
            t_min: self.t_min_us,
            t_max: self.t_max_us,
            t_typical: self.t_typical_us,
            t_avg: self.t_avg_us,
            t_stdev: self.t_stdev_us,
            p99: self.p99_us,
            p99_9: self.p99_9_us,
        })
    }

    /// `REPORT_FMT_LAT_JSON`, or under `-D` `REPORT_FMT_LAT_DUR_JSON`, two decimals.
    fn perftest_results(&self, style: ConsoleStyle) -> serde_json::Map<String, serde_json::Value> {
        let figure = |value: f64| perftest_table::rounded(value, 2);
        let mut results = serde_json::Map::new();
        results.insert("MsgSize".into(), self.bytes.into());
        results.insert("n_iterations".into(), self.iterations.into());
        if style.timed {
            results.insert("t_avg".into(), figure(self.t_avg_us));
            results.insert("tps_average".into(), figure(self.transactions_per_second()));
            return results;
        }
        for (key, value) in [
            ("t_min", self.t_min_us),
            ("t_max", self.t_max_us),
            ("t_typical", self.t_typical_us),
            ("t_avg", self.t_avg_us),
            ("t_stdev", self.t_stdev_us),
            ("percentile_99", self.p99_us),
            ("percentile_99.9", self.p99_9_us),
        ] {
            results.insert(key.into(), figure(value));
        }
        results
    }

    fn perftest_test_kind(&self) -> &'static str {
        "Latency_Test"
    }

    fn perftest_figure(&self, figure: OutputFigure, _style: ConsoleStyle) -> Option<f64> {
        (figure == OutputFigure::Latency).then_some(self.t_avg_us)
    }

    /// The 99.99th percentile (not in perftest's row), the distribution of a `-D` run (its row
    /// has the average only), and the data check.
    fn console_notes(&self, style: ConsoleStyle) -> Vec<String> {
        let mut first = Vec::new();
        if style.timed {
            first.push(format!(
                "t_min {:.2}, t_typical {:.2}, t_max {:.2}, t_stdev {:.2}, 99% {:.2}, 99.9% {:.2} usec",
                self.t_min_us, self.t_typical_us, self.t_max_us, self.t_stdev_us, self.p99_us, self.p99_9_us
            ));
        }
        first.push(format!("99.99% {:.2} usec", self.p99_99_us));
        if self.validation != "off" {
            first.push(format!("check {}", self.validation));
        }
        crate::output::console::notes_of(self.bytes, &first, "")
    }
}

/// The latency files of a run (all optional), written by the side that takes the samples.
#[derive(Debug, Clone)]
pub struct LatencyFiles {
    paths: LatencyFilePaths,
    test: &'static str,
    several_sizes: bool,
    /// The command line, named with the git commit under each `.hgrm` table.
    argv: Vec<String>,
}

impl LatencyFiles {
    /// Checks the destinations now (creating `--hdr-dir`), so that a bad path fails before
    /// anything is measured.
    pub fn create(paths: &LatencyFilePaths, test: &'static str, sizes: &[usize]) -> Result<LatencyFiles> {
        if let Some(directory) = &paths.hdr_dir {
            std::fs::create_dir_all(directory).map_err(|source| output_error(directory, source))?;
        }
        for path in [&paths.hlog, &paths.histogram_raw].into_iter().flatten() {
            let parent =
                path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(output_error(
                    path,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
                ));
            }
        }
        Ok(LatencyFiles { paths: paths.clone(), test, several_sizes: sizes.len() > 1, argv: Vec::new() })
    }

    /// The command line to record in the `.hgrm` tables (the run's `argv`).
    pub fn with_command(self, argv: &[String]) -> LatencyFiles {
        LatencyFiles { argv: argv.to_vec(), ..self }
    }

    /// Opens the interval log of one size, when `--hlog` asked for one.
    pub fn interval_log(&self, size: usize) -> Result<Option<IntervalLogFile>> {
        let Some(path) = &self.paths.hlog else { return Ok(None) };
        let path = self.per_size(path, size);
        let file = gdrperf_files::create_fresh(&path).map_err(|source| output_error(&path, source))?;
        let tag = format!("{size}B");
        let log = LatencyIntervalLog::new(BufWriter::new(file), SystemTime::now(), Some(&tag))
            .map_err(|error| hdr_error(&path, error))?;
        Ok(Some(IntervalLogFile { log, path, period: self.paths.hlog_interval }))
    }

    /// Writes the `.hgrm` and `.hdr` files and the raw dump of one size, as asked. Returns the
    /// paths written.
    pub fn write(&self, size: usize, recorder: &LatencyRecorder) -> Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        if let Some(directory) = &self.paths.hdr_dir {
            let stem = directory.join(format!("{}-{size}B", self.test));
            let table = stem.with_extension("hgrm");
            // Each file through a new temporary file and a rename: a link planted at its name in a
            // shared folder is refused, never followed (issue 44).
            let mut file =
                gdrperf_files::NewFile::create(&table).map_err(|source| output_error(&table, source))?;
            write_percentile_distribution(recorder.histogram(), &mut file, PercentileTableFormat::default())
                .map_err(|error| hdr_error(&table, error))?;
            // After the table, in the footer's own `#[...]` form that HdrHistogram's plotter and
            // scripts/plot_lat.py skip: what made it (the table itself stays Java's, byte for byte).
            let footer = format!(
                "#[Command = {}]\n#[Git commit = {}]\n",
                gdrperf_command_line::provenance::command_line(&self.argv),
                gdrperf_command_line::provenance::GIT_COMMIT
            );
            file.write_all(footer.as_bytes()).map_err(|source| output_error(&table, source))?;
            file.commit().map_err(|source| output_error(&table, source))?;
            written.push(table);
            let encoded = stem.with_extension("hdr");
            let mut file = BufWriter::new(
                gdrperf_files::NewFile::create(&encoded).map_err(|source| output_error(&encoded, source))?,
            );
            write_v2_histogram(recorder.histogram(), &mut file)
                .map_err(|error| hdr_error(&encoded, error))?;
            let file = file.into_inner().map_err(|error| output_error(&encoded, error.into_error()))?;
            file.commit().map_err(|source| output_error(&encoded, source))?;
            written.push(encoded);
        }
        if !self.paths.keeps_every_sample() {
            return Ok(written);
        }
        let samples = recorder
            .exact_samples()
            .ok_or_else(|| Error::Internal(crate::error::InternalError::NoExactSamples { size }))?;
        let listings = [
            (self.paths.report_unsorted, RawSampleOrder::AsRecorded),
            (self.paths.report_sorted, RawSampleOrder::Sorted),
        ];
        for (_, order) in listings.into_iter().filter(|(asked, _)| *asked) {
            let stdout = std::io::stdout();
            write_perftest_listing(samples, order, &mut stdout.lock())
                .map_err(|error| hdr_error(Path::new("stdout"), error))?;
        }
        if let Some(path) = &self.paths.histogram_raw {
            let path = self.per_size(path, size);
            let mut file =
                gdrperf_files::NewFile::create(&path).map_err(|source| output_error(&path, source))?;
            write_raw_samples(samples, RawSampleOrder::AsRecorded, &mut file)
                .map_err(|error| hdr_error(&path, error))?;
            file.commit().map_err(|source| output_error(&path, source))?;
            written.push(path);
        }
        Ok(written)
    }

    /// `PATH` for a single size, `PATH` with `-<size>B` before its extension in a sweep.
    fn per_size(&self, path: &Path, size: usize) -> PathBuf {
        if self.several_sizes {
            per_size_path(path, size)
        } else {
            path.to_path_buf()
        }
    }
}

/// `lat.hlog` -> `lat-64B.hlog`, `samples` -> `samples-64B`.
pub fn per_size_path(path: &Path, size: usize) -> PathBuf {
    let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(extension) => format!("{stem}-{size}B.{}", extension.to_string_lossy()),
        None => format!("{stem}-{size}B"),
    };
    path.with_file_name(name)
}

/// The `--hlog` file of one size, fed at interval boundaries by the latency engine.
pub struct IntervalLogFile {
    log: LatencyIntervalLog<BufWriter<File>>,
    path: PathBuf,
    period: Duration,
}

impl IntervalLogFile {
    /// Flushes the log; returns its path.
    pub fn finish(self) -> Result<PathBuf> {
        let path = self.path;
        let mut writer = self.log.into_inner().map_err(|error| hdr_error(&path, error))?;
        std::io::Write::flush(&mut writer).map_err(|source| output_error(&path, source))?;
        Ok(path)
    }

    /// Length of one interval (`--hlog-interval`).
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Writes the interval ending `end_nanos` after the first sample's start; `cumulative` holds
    /// every sample so far.
    pub fn write_interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()> {
        self.log.write_interval(cumulative, end_nanos).map_err(|error| hdr_error(&self.path, error))
    }
}

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output { path: path.display().to_string(), source }
}

fn hdr_error(path: &Path, error: HdrOutputError) -> Error {
    Error::Output { path: path.display().to_string(), source: std::io::Error::other(error.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdrperf_stats::hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    fn temporary_directory(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("gdrperf-latency-row-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        directory
    }

    fn recorder_of(samples: &[u64]) -> LatencyRecorder {
        let mut recorder = LatencyRecorder::new(samples.len() as u64).unwrap();
        samples.iter().for_each(|&sample| recorder.record(sample));
        recorder
    }

    fn figures_of(bytes: usize, samples: &[u64]) -> LatencyFigures {
        let elapsed_nanos = samples.iter().sum();
        LatencyFigures::new(bytes, &recorder_of(samples), elapsed_nanos, LatencySpan::Iteration, 0).unwrap()
    }

    #[test]
    fn row_reports_microseconds_with_fractions_and_ordered_percentiles() {
        let samples: Vec<u64> = (1..=1000).map(|index| 1_000 + index).collect();
        let figures = figures_of(2, &samples);
        let context = RowContext { test: "write_lat".into(), mtu: 1024, ..RowContext::default() };
        let row = LatencyRow::new(
            &context,
            LatencySettings { arrival: "poll_last_byte", inline_size: 220 },
            &figures,
            "off",
        );
        assert_eq!((row.t_min_us, row.t_max_us, row.t_typical_us), (1.001, 2.0, 1.5));
        assert!((row.t_stdev_us - 0.288_675).abs() < 1e-5, "{}", row.t_stdev_us);
        assert!(row.t_min_us <= row.t_typical_us && row.t_typical_us <= row.p99_us);
        assert!(row.p99_us <= row.p99_9_us && row.p99_9_us <= row.p99_99_us && row.p99_99_us <= row.t_max_us);
        assert_eq!((row.iterations, row.percentile_source.as_str()), (1000, "exact_samples"));
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(&row).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert!(text.starts_with(
            "test,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p99_us,p99_9_us,p99_99_us,elapsed_s,mtu,validation,"
        ), "{text}");
    }

    #[test]
    fn per_size_paths_keep_the_extension() {
        assert_eq!(per_size_path(Path::new("/tmp/lat.hlog"), 64), PathBuf::from("/tmp/lat-64B.hlog"));
        assert_eq!(per_size_path(Path::new("samples"), 2), PathBuf::from("samples-2B"));
    }

    #[test]
    fn files_hold_every_sample_and_the_interval_log_reads_back() {
        let directory = temporary_directory("files");
        let paths = LatencyFilePaths {
            hdr_dir: Some(directory.join("hdr")),
            hlog: Some(directory.join("lat.hlog")),
            hlog_interval: Duration::from_millis(1),
            histogram_raw: Some(directory.join("raw.txt")),
            ..LatencyFilePaths::default()
        };
        let argv = ["gdr-send-lat".to_string(), "-a".to_string()];
        let files = LatencyFiles::create(&paths, "send_lat", &[2, 4]).unwrap().with_command(&argv);
        let written = files.write(4, &recorder_of(&[1500, 1700, 1600])).unwrap();
        let names: Vec<String> =
            written.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["send_lat-4B.hgrm", "send_lat-4B.hdr", "raw-4B.txt"]);
        let table = std::fs::read_to_string(&written[0]).unwrap();
        assert!(table.contains("Total count    =            3"), "{table}");
        let footer = format!(
            "#[Command = gdr-send-lat -a]\n#[Git commit = {}]\n",
            gdrperf_command_line::provenance::GIT_COMMIT
        );
        assert!(table.ends_with(&footer), "{table}");
        let raw = std::fs::read_to_string(&written[2]).unwrap();
        assert_eq!(raw, "latency_ns\n1500\n1700\n1600\n");

        let mut log = files.interval_log(4).unwrap().unwrap();
        let mut recorder = LatencyRecorder::new(10).unwrap();
        recorder.record(1000);
        log.write_interval(recorder.histogram(), 1_000_000).unwrap();
        recorder.record(2000);
        recorder.record(3000);
        log.write_interval(recorder.histogram(), 2_000_000).unwrap();
        let path = log.finish().unwrap();
        assert_eq!(path, directory.join("lat-4B.hlog"));
        let text = std::fs::read(&path).unwrap();
        let mut counts = Vec::new();
        for entry in IntervalLogIterator::new(&text) {
            if let LogEntry::Interval(interval) = entry.unwrap() {
                assert_eq!(interval.tag().map(|tag| tag.as_str().to_string()).as_deref(), Some("4B"));
                let encoded = base64_decode(interval.encoded_histogram());
                let histogram: Histogram<u64> =
                    gdrperf_stats::read_v2_histogram(&mut encoded.as_slice()).unwrap();
                counts.push(histogram.len());
            }
        }
        assert_eq!(counts, [1, 2], "each interval holds only its own samples");
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[test]
    fn a_missing_directory_fails_before_measuring() {
        let paths = LatencyFilePaths {
            hlog: Some(PathBuf::from("/nonexistent/dir/x.hlog")),
            ..LatencyFilePaths::default()
        };
        let error = LatencyFiles::create(&paths, "read_lat", &[2]).unwrap_err().to_string();
        assert!(error.contains("/nonexistent/dir/x.hlog"), "{error}");
    }

    /// Standard base64, enough to read back an interval log line in a test.
    fn base64_decode(text: &str) -> Vec<u8> {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut count = 0;
        let mut out = Vec::new();
        for byte in text.bytes().filter(|byte| *byte != b'=') {
            let value = alphabet.iter().position(|candidate| *candidate == byte).unwrap() as u32;
            bits = (bits << 6) | value;
            count += 6;
            if count >= 8 {
                count -= 8;
                out.push((bits >> count) as u8);
            }
        }
        out
    }

    #[test]
    fn copy_time_is_the_last_column_and_old_reports_still_parse() {
        let ours = LatencyFigures {
            t_min_nanos: 1000,
            t_typical_nanos: 1000,
            t_max_nanos: 1000,
            copy_seconds: 0.25,
            ..LatencyFigures::copies_only(2, 0.0)
        };
        let context = RowContext { test: "write_lat".into(), ..RowContext::default() };
        let settings = LatencySettings { arrival: "write_imm_completion", inline_size: 0 };
        let row = LatencyRow::new(&context, settings, &ours, "pass");
        assert_eq!(row.copy_time_s, 0.25);
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(&row).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with(",percentile_source,saturated_samples,copy_time_s,cpu,numa_node,gpu_local_bus_id,nic_retransmissions,nic_seq_errors,nic_rnr_naks,nic_out_of_buffer,nic_link_downed,nic_errors,nic_counters,latency_span,refused_samples,traffic_class,service_level,nic_node_guid,gpu_local_uuid,relaxed_ordering"),
            "{text}"
        );

        // A peer without the field (an older gdrperf) reports no copies.
        let mut old = serde_json::to_value(LatencyFigures::copies_only(2, 1.5)).unwrap();
        old.as_object_mut().unwrap().remove("copy_seconds");
        let parsed: LatencyFigures = serde_json::from_value(old).unwrap();
        assert_eq!((parsed.copy_seconds, parsed.samples), (0.0, 0));
    }
}
