//! `gdrperf copy-bw`: host<->GPU copy bandwidth and latency per GPU.
//!
//! In `--mem cuda-staged` mode every message crosses PCIe between the GPU and a
//! pinned host buffer, so the pinned-copy figures here are the ceiling a staged
//! bench can approach; pageable figures show what unpinned memory would cost, and
//! the bidirectional figure what a bench copying both ways at once can expect.
//!
//! Up to 64 KiB it also times copies through the benches' staging path (kind `staged`: the
//! calls the engines' `CudaStager` makes, `StagedBuffer::begin_stage_out/in`, `is_complete`
//! polled to the end, `wait`; one at a time, with the buffer's events reused and nothing
//! allocated per copy) next to the bare pinned copy of the same size and direction, and prints
//! the ratio of their medians: what staging adds per message.
//!
//! Two bandwidth columns, one per method, so that a row is only ever compared with a row
//! measured the same way: `queued GB/s` (`bw_gbytes_s`) keeps `iterations` copies in flight on
//! one stream (pinned, pageable, bidir), `1-by-1 GB/s` (`one_by_one_gbytes_s`) is bytes over the
//! summed times of the copies waited for one at a time (the latency samples: pinned and
//! pageable up to the latency limit, and the staged path, which is only measured that way).

use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use gdrperf_cuda::{
    CopyBench, CopyDirection, Cuda, Gpu, GpuSelection, HostMemory, Measurement, StagedBuffer, StagingConfig,
};
use gdrperf_files::columns::{self, ColumnName};
use gdrperf_stats::units::nanos_to_micros;
use gdrperf_stats::{one_at_a_time, Bandwidth};
use serde::Serialize;

/// Sizes measured when neither `-s` nor `-a` is given.
const DEFAULT_SIZES: &[usize] = &[4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20];
/// `-a` measures every power of two up to this.
const ALL_SIZES_MAX: usize = 64 << 20;
/// Latency is measured for sizes up to this; above it a copy's time is just size / bandwidth.
const LATENCY_MAX_SIZE: usize = 1 << 20;
/// Copies through the staging path are timed for sizes up to this (where a copy's fixed cost
/// shows; above it a copy's time is its bytes).
const STAGED_PATH_MAX_SIZE: usize = 64 << 10;
/// With no `-n`, each measurement moves about this many bytes (within the bounds below).
const AUTO_BYTES_PER_MEASUREMENT: usize = 1 << 30;
const AUTO_MIN_ITERATIONS: usize = 20;
const AUTO_MAX_ITERATIONS: usize = 1000;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// GPUs to measure: an index (0), a list (0,2,3), `all`, or a PCI bus id. Indices are CUDA's:
    /// fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID (then PCI bus order, as nvidia-smi),
    /// counting only the GPUs in CUDA_VISIBLE_DEVICES; every row gives the bus id.
    #[arg(long, default_value = "all", value_parser = parse_gpu_selection)]
    gpu: GpuSelection,
    /// The GPU at this PCI bus id (e.g. 0000:17:00.0), as `nvidia-smi` or `lspci -D` show it
    /// (default: none, --gpu).
    #[arg(long, value_parser = parse_gpu_bus_id, conflicts_with = "gpu")]
    gpu_bus_id: Option<GpuSelection>,
    /// One copy size in bytes; K, M, G suffixes mean KiB, MiB, GiB [default: 4K, 64K, 1M, 4M, 16M, 64M].
    #[arg(short = 's', long = "size", value_parser = parse_size, conflicts_with = "all_sizes")]
    size: Option<usize>,
    /// Every power of two from 1 B to 64 MiB.
    #[arg(short = 'a', long = "all")]
    all_sizes: bool,
    /// Copies per measurement [default: enough to move ~1 GiB, at least 20 and at most 1000].
    #[arg(short = 'n', long = "iters", value_parser = parse_count)]
    iterations: Option<usize>,
    /// Write one CSV row per GPU, kind, direction and size (flushed as each completes; default: none).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write all rows, with the driver and GPU descriptions, as JSON at the end (default: none).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Parses `--gpu`.
pub(crate) fn parse_gpu_selection(text: &str) -> Result<GpuSelection, String> {
    GpuSelection::parse(text).map_err(|error| error.to_string())
}

/// Parses `--gpu-bus-id`.
pub(crate) fn parse_gpu_bus_id(text: &str) -> Result<GpuSelection, String> {
    GpuSelection::parse_bus_id(text).map_err(|error| error.to_string())
}

/// A copy size: as every gdrperf tool reads sizes (`gdrperf_command_line::parse_size`), at
/// least 1 byte (a copy of nothing measures nothing).
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let bytes = gdrperf_command_line::parse_nonzero_size(text)?;
    usize::try_from(bytes).map_err(|_| format!("'{}' is too large", text.trim()))
}

/// Parses a count that must be at least 1.
pub(crate) fn parse_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("'{text}' is not a positive whole number")),
    }
}

/// `1K` style rendering for tables.
pub(crate) fn format_size(bytes: usize) -> String {
    // The largest binary unit that divides the size exactly.
    match bytes.trailing_zeros() {
        _ if bytes == 0 => "0".to_string(),
        30.. => format!("{}G", bytes >> 30),
        20.. => format!("{}M", bytes >> 20),
        10.. => format!("{}K", bytes >> 10),
        _ => bytes.to_string(),
    }
}

/// Copies per measurement when `-n` is not given.
fn auto_iterations(size: usize) -> usize {
    (AUTO_BYTES_PER_MEASUREMENT / size).clamp(AUTO_MIN_ITERATIONS, AUTO_MAX_ITERATIONS)
}

/// The validated plan of a run, built once from the flags.
#[derive(Debug)]
struct Plan {
    selection: GpuSelection,
    sizes: Vec<usize>,
    iterations: Option<usize>,
}

impl Plan {
    fn from_args(args: &Args) -> Plan {
        let sizes = match (args.size, args.all_sizes) {
            (Some(size), _) => vec![size],
            (None, true) => {
                (0..).map(|shift| 1usize << shift).take_while(|&size| size <= ALL_SIZES_MAX).collect()
            }
            (None, false) => DEFAULT_SIZES.to_vec(),
        };
        Plan {
            selection: args.gpu_bus_id.clone().unwrap_or_else(|| args.gpu.clone()),
            sizes,
            iterations: args.iterations,
        }
    }

    fn iterations_for(&self, size: usize) -> usize {
        self.iterations.unwrap_or_else(|| auto_iterations(size))
    }
}

/// One measured line: CSV row, JSON element and table line.
#[derive(Debug, Clone, Serialize)]
struct Row {
    gpu: usize,
    bus_id: String,
    gpu_name: String,
    kind: &'static str,
    direction: &'static str,
    size_bytes: usize,
    iterations: usize,
    /// Bytes and seconds of the queued run (staged rows: of the one-at-a-time copies).
    bytes_moved: u64,
    elapsed_s: f64,
    /// Copies queued on the stream; `None` for the staged path, which is not measured so.
    bw_gbytes_s: Option<f64>,
    lat_median_us: Option<f64>,
    lat_min_us: Option<f64>,
    /// Copies waited for one at a time: the latency samples' bytes over their summed times.
    one_by_one_gbytes_s: Option<f64>,
}

/// How a row fills one CSV field.
type Field = fn(&Row) -> String;

/// The CSV's columns, each with how a row fills it: the header and every row come from this one
/// list, whose names are `gdrperf_files::columns`' (a test holds it to the published order).
const CSV_COLUMNS: [(ColumnName, Field); 13] = [
    (columns::GPU, |row| row.gpu.to_string()),
    (columns::BUS_ID, |row| row.bus_id.clone()),
    (columns::GPU_NAME, |row| row.gpu_name.clone()),
    (columns::KIND, |row| row.kind.to_string()),
    (columns::DIRECTION, |row| row.direction.to_string()),
    (columns::SIZE_BYTES, |row| row.size_bytes.to_string()),
    (columns::ITERATIONS, |row| row.iterations.to_string()),
    (columns::BYTES_MOVED, |row| row.bytes_moved.to_string()),
    (columns::ELAPSED_S, |row| format!("{:.6}", row.elapsed_s)),
    (columns::BW_GBYTES_S, |row| three_decimals(row.bw_gbytes_s)),
    (columns::LAT_MEDIAN_US, |row| three_decimals(row.lat_median_us)),
    (columns::LAT_MIN_US, |row| three_decimals(row.lat_min_us)),
    (columns::ONE_BY_ONE_GBYTES_S, |row| three_decimals(row.one_by_one_gbytes_s)),
];

/// A figure a row may lack, as its CSV field: three decimals, or empty.
fn three_decimals(value: Option<f64>) -> String {
    value.map(|value| format!("{value:.3}")).unwrap_or_default()
}

/// The CSV's header line, from [`CSV_COLUMNS`].
fn csv_header() -> [&'static str; 13] {
    CSV_COLUMNS.map(|(column, _)| column.name())
}

impl Row {
    fn csv_fields(&self) -> [String; 13] {
        CSV_COLUMNS.map(|(_, field)| field(self))
    }

    fn table_line(&self) -> String {
        let optional =
            |value: Option<f64>| value.map(|value| format!("{value:.2}")).unwrap_or_else(|| "-".to_string());
        format!(
            "{:>3} {:>9} {:>6} {:>8} {:>6} {:>11} {:>11} {:>11} {:>11}",
            self.gpu,
            self.kind,
            self.direction,
            format_size(self.size_bytes),
            self.iterations,
            optional(self.bw_gbytes_s),
            optional(self.one_by_one_gbytes_s),
            optional(self.lat_median_us),
            optional(self.lat_min_us)
        )
    }
}

const TABLE_HEADER: &str =
    "gpu      kind    dir     size  iters queued GB/s 1-by-1 GB/s  lat med us  lat min us";

/// A measurement's rate in GB/s (10^9 bytes/s; zero for a zero time), through gdrperf-stats.
pub(crate) fn gbytes_per_second(measurement: Measurement) -> f64 {
    Bandwidth::from_bytes_and_nanos(measurement.bytes, measurement.elapsed.as_nanos() as u64)
        .gbyte_per_second()
}

/// The one-at-a-time figures of latency samples into `row`: median and least in µs, the
/// one-by-one rate in GB/s (gdrperf-stats' [`one_at_a_time`]); left empty without samples.
fn set_one_at_a_time(row: &mut Row, size: usize, samples: &[Duration]) {
    let nanos: Vec<u64> = samples.iter().map(|sample| sample.as_nanos() as u64).collect();
    if let Some(figures) = one_at_a_time(size as u64, &nanos) {
        row.lat_median_us = Some(nanos_to_micros(figures.median_nanos as f64));
        row.lat_min_us = Some(nanos_to_micros(figures.min_nanos as f64));
        row.one_by_one_gbytes_s = Some(figures.rate.gbyte_per_second());
    }
}

/// `iterations` copies of `size` bytes in `direction` through the benches' staging path, one at
/// a time: each sample from the copy's start to the moment a poll sees it finished and it was
/// retired (after one warm-up copy), as a staged engine's `CudaStager` does it.
fn staged_path_latencies(
    stager: &mut StagedBuffer,
    direction: CopyDirection,
    size: usize,
    iterations: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(iterations);
    for sample in 0..=iterations {
        let started = Instant::now();
        let ticket = match direction {
            CopyDirection::DeviceToHost => stager.begin_stage_out(0..size)?,
            CopyDirection::HostToDevice => stager.begin_stage_in(0..size)?,
        };
        while !stager.is_complete(&ticket)? {
            std::hint::spin_loop();
        }
        stager.wait(ticket)?;
        if sample > 0 {
            samples.push(started.elapsed());
        }
    }
    Ok(samples)
}

/// Where rows go besides the console: the CSV as they come, the JSON at the end.
struct Outputs {
    csv: Option<csv::Writer<File>>,
    rows: Vec<Row>,
}

impl Outputs {
    fn create(args: &Args) -> anyhow::Result<Outputs> {
        let csv = match &args.csv {
            Some(path) => {
                let mut file = gdrperf_files::create_fresh(path)
                    .with_context(|| format!("cannot create CSV file {}", path.display()))?;
                let argv: Vec<String> = gdrperf_command_line::arguments();
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
                let head = gdrperf_command_line::provenance::comment_lines(
                    "copy_bw",
                    &argv,
                    &gdrperf_command_line::provenance::utc_timestamp(),
                    host.trim(),
                );
                std::io::Write::write_all(&mut file, head.as_bytes())?;
                let mut writer = csv::WriterBuilder::new().has_headers(false).from_writer(file);
                writer.write_record(csv_header())?;
                writer.flush()?;
                Some(writer)
            }
            None => None,
        };
        if let Some(path) = &args.json {
            // Created now so a bad path fails before minutes of measuring, filled at the end.
            gdrperf_files::create_fresh(path)
                .with_context(|| format!("cannot create JSON file {}", path.display()))?;
        }
        Ok(Outputs { csv, rows: Vec::new() })
    }

    fn push(&mut self, row: Row) -> anyhow::Result<()> {
        say!("{}", row.table_line());
        if let Some(writer) = &mut self.csv {
            writer.write_record(row.csv_fields())?;
            writer.flush()?;
        }
        self.rows.push(row);
        Ok(())
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let plan = Plan::from_args(&args);
    let cuda = Cuda::load()?;
    let indices = cuda.resolve(&plan.selection)?;
    let gpus = indices.iter().map(|&index| cuda.open_gpu(index)).collect::<Result<Vec<_>, _>>()?;
    let mut outputs = Outputs::create(&args)?;
    say!(
        "gdrperf copy-bw: driver supports CUDA {} (kernel module {}); GB/s = 10^9 bytes/s; bidir counts both directions",
        cuda.driver_version(),
        cuda.kernel_module_version().unwrap_or_else(|| "unknown".to_string())
    );
    for gpu in &gpus {
        let info = gpu.info();
        say!("GPU {}: {} at {}, {} MiB", info.index, info.name, info.bus_id, info.total_memory_bytes >> 20);
        say!("{TABLE_HEADER}");
        measure_gpu(gpu, &plan, &mut outputs)?;
    }
    if let Some(path) = &args.json {
        let document = serde_json::json!({
            "tool": "gdrperf copy-bw",
            "command": gdrperf_command_line::provenance::command_line(&gdrperf_command_line::arguments()),
            "git_commit": gdrperf_command_line::provenance::GIT_COMMIT,
            "date": gdrperf_command_line::provenance::utc_timestamp(),
            "driver_cuda_version": cuda.driver_version().to_string(),
            "kernel_module_version": cuda.kernel_module_version(),
            "gpus": gpus.iter().map(|gpu| serde_json::json!({
                "index": gpu.index(),
                "name": gpu.info().name,
                "bus_id": gpu.info().bus_id.to_string(),
                "uuid": gpu.info().uuid,
            })).collect::<Vec<_>>(),
            "rows": outputs.rows,
        });
        let text = serde_json::to_string_pretty(&document)?;
        gdrperf_files::write_file(path, text.as_bytes())
            .with_context(|| format!("cannot write JSON file {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn measure_gpu(gpu: &Gpu, plan: &Plan, outputs: &mut Outputs) -> anyhow::Result<()> {
    let max_size = plan.sizes.iter().copied().max().unwrap_or(1);
    let mut bench = CopyBench::new(gpu, max_size)?;
    let info = gpu.info();
    let row = |kind: HostMemory, direction: &'static str, size, iterations, measurement: Measurement| Row {
        gpu: info.index,
        bus_id: info.bus_id.to_string(),
        gpu_name: info.name.clone(),
        kind: kind.label(),
        direction,
        size_bytes: size,
        iterations,
        bytes_moved: measurement.bytes,
        elapsed_s: measurement.elapsed.as_secs_f64(),
        bw_gbytes_s: Some(gbytes_per_second(measurement)),
        lat_median_us: None,
        lat_min_us: None,
        one_by_one_gbytes_s: None,
    };
    let staged_len = max_size.min(STAGED_PATH_MAX_SIZE);
    let mut stager = StagedBuffer::new(gpu, staged_len, StagingConfig::for_message_size(staged_len))?;
    for &size in &plan.sizes {
        let iterations = plan.iterations_for(size);
        let mut bare_medians = [None, None];
        for memory in [HostMemory::Pinned, HostMemory::Pageable] {
            for (slot, direction) in
                [CopyDirection::HostToDevice, CopyDirection::DeviceToHost].into_iter().enumerate()
            {
                let measurement = bench.bandwidth(memory, direction, size, iterations)?;
                let mut line = row(memory, direction.label(), size, iterations, measurement);
                if size <= LATENCY_MAX_SIZE {
                    let samples = bench.latencies(memory, direction, size, iterations)?;
                    set_one_at_a_time(&mut line, size, &samples);
                }
                if memory == HostMemory::Pinned {
                    bare_medians[slot] = line.lat_median_us;
                }
                outputs.push(line)?;
            }
        }
        if size <= STAGED_PATH_MAX_SIZE {
            for (slot, direction) in
                [CopyDirection::HostToDevice, CopyDirection::DeviceToHost].into_iter().enumerate()
            {
                let samples = staged_path_latencies(&mut stager, direction, size, iterations)?;
                let measurement =
                    Measurement { bytes: (size * samples.len()) as u64, elapsed: samples.iter().sum() };
                let mut line = Row {
                    kind: "staged",
                    bw_gbytes_s: None,
                    ..row(HostMemory::Pinned, direction.label(), size, iterations, measurement)
                };
                set_one_at_a_time(&mut line, size, &samples);
                if let (Some(staged), Some(bare)) = (line.lat_median_us, bare_medians[slot]) {
                    say!(
                        "      staged path / bare pinned copy, median, {} {}: {:.3} (target <= 1.15)",
                        direction.label(),
                        format_size(size),
                        staged / bare
                    );
                }
                outputs.push(line)?;
            }
        }
        let measurement = bench.bidirectional_bandwidth(HostMemory::Pinned, size, iterations)?;
        outputs.push(row(HostMemory::Pinned, "bidir", size, iterations, measurement))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size(" 7b "), Ok(7));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["", "K", "0", "0K", "12Q", "-5", "1.5M", "99999999999999999999", "17179869184G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_count("0").is_err());
        assert!(parse_count("x").is_err());
        assert_eq!(parse_count("25"), Ok(25));
    }

    #[test]
    fn sizes_format_compactly() {
        assert_eq!(format_size(1), "1");
        assert_eq!(format_size(1_000_003), "1000003");
        assert_eq!(format_size(4096), "4K");
        assert_eq!(format_size(64 << 20), "64M");
        assert_eq!(format_size(3 << 30), "3G");
        assert_eq!(format_size(1536), "1536");
    }

    #[test]
    fn auto_iterations_stay_within_bounds() {
        assert_eq!(auto_iterations(1), AUTO_MAX_ITERATIONS);
        assert_eq!(auto_iterations(64 << 20), AUTO_MIN_ITERATIONS);
        assert_eq!(auto_iterations(4 << 20), 256);
    }

    #[test]
    fn csv_row_matches_header() {
        let row = Row {
            gpu: 0,
            bus_id: "0000:17:00.0".into(),
            gpu_name: "NVIDIA H200".into(),
            kind: "pinned",
            direction: "h2d",
            size_bytes: 4096,
            iterations: 10,
            bytes_moved: 40960,
            elapsed_s: 0.001,
            bw_gbytes_s: Some(0.04096),
            lat_median_us: Some(5.0),
            lat_min_us: None,
            one_by_one_gbytes_s: Some(0.8192),
        };
        let fields = row.csv_fields();
        let place = |column: ColumnName| csv_header().iter().position(|name| *name == column.name()).unwrap();
        assert_eq!(fields[place(columns::BW_GBYTES_S)], "0.041");
        assert_eq!(fields[place(columns::LAT_MIN_US)], "");
        assert_eq!(fields[place(columns::ONE_BY_ONE_GBYTES_S)], "0.819");
        assert_eq!(fields[place(columns::ELAPSED_S)], "0.001000");
        let staged = Row { kind: "staged", bw_gbytes_s: None, ..row };
        assert_eq!(staged.csv_fields()[place(columns::BW_GBYTES_S)], "");
        let line = staged.table_line();
        let queued_column = TABLE_HEADER.find("queued GB/s").unwrap() + "queued GB/s".len();
        assert_eq!(line[..queued_column].trim_end().chars().last(), Some('-'), "no queued figure: {line}");
        assert_eq!(line.len(), TABLE_HEADER.len(), "columns line up:\n{TABLE_HEADER}\n{line}");
    }

    #[test]
    fn the_csv_header_is_the_published_order_spelled_as_published() {
        assert_eq!(csv_header(), columns::COPY_BANDWIDTH_ORDER.map(ColumnName::name));
        // The bytes a reader of earlier files sees, pinned: the names are a contract.
        let mut writer = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        writer.write_record(csv_header()).unwrap();
        assert_eq!(
            String::from_utf8(writer.into_inner().unwrap()).unwrap(),
            "gpu,bus_id,gpu_name,kind,direction,size_bytes,iterations,bytes_moved,elapsed_s,\
             bw_gbytes_s,lat_median_us,lat_min_us,one_by_one_gbytes_s\n"
        );
    }

    #[test]
    fn a_row_takes_its_one_at_a_time_figures_from_the_samples() {
        // Copies of 1000 bytes taking 5, 1 and 3 us: median 3 us, least 1 us, 3000 bytes in
        // 9 us = 0.333 GB/s.
        let mut row = Row {
            gpu: 0,
            bus_id: String::new(),
            gpu_name: String::new(),
            kind: "pinned",
            direction: "h2d",
            size_bytes: 1000,
            iterations: 3,
            bytes_moved: 3000,
            elapsed_s: 0.0,
            bw_gbytes_s: None,
            lat_median_us: None,
            lat_min_us: None,
            one_by_one_gbytes_s: None,
        };
        set_one_at_a_time(&mut row, 1000, &[]);
        assert_eq!((row.lat_median_us, row.lat_min_us, row.one_by_one_gbytes_s), (None, None, None));
        let samples: Vec<Duration> = [5, 1, 3].iter().map(|&us| Duration::from_micros(us)).collect();
        set_one_at_a_time(&mut row, 1000, &samples);
        assert_eq!((row.lat_median_us, row.lat_min_us), (Some(3.0), Some(1.0)));
        assert_eq!(three_decimals(row.one_by_one_gbytes_s), "0.333");
    }
}
