//! `gdrperf`: the multi-tool beside the bench binaries.
//!
//! Each subcommand lives in its own module with an `Args` struct (clap) and a
//! `run(args) -> anyhow::Result<ExitCode>` function; `main` only dispatches, so
//! adding a subcommand is one enum variant and one module.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// `println!` for the subcommands that run benches and write results (accept, slurm, copy-bw,
/// selftest): a closed stdout (`gdrperf accept ... | head`) must not end a run whose files are
/// still to be written, so a failed write to stdout is dropped, never a panic.
macro_rules! say {
    ($($argument:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($argument)*);
    }};
}

/// `print!` with [`say!`]'s rule.
macro_rules! say_raw {
    ($($argument:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($argument)*);
    }};
}

mod accept;
mod accept_peer;
mod accept_plan;
mod compare;
mod compare_folders;
mod copy_bw;
mod doctor;
mod explain;
mod fleet;
mod inventory;
#[cfg(test)]
mod planned_run_for_tests;
mod report;
mod selftest;
mod slurm;
mod soak_run;
mod token;

#[derive(Debug, Parser)]
#[command(
    name = "gdrperf",
    version,
    about = "GPUDirect RDMA benchmark suite: tools beside the gdr-* benches"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Can this node do GPUDirect RDMA, and which NIC goes with which GPU?
    Doctor(doctor::Args),
    /// What staged copies cost: pinned/pageable H2D and D2H bandwidth and latency per GPU.
    CopyBw(copy_bw::Args),
    /// Exercise the GPU half (allocation, dma-buf export, staged pipeline) with data checked.
    Selftest(selftest::Args),
    /// Does this node pass? Every GPU and its NIC against an acceptance profile: PASS/FAIL per row.
    Accept(accept::Args),
    /// Did this change regress? Two result files joined per size; or the memory modes of one run (--by mem).
    Compare(compare::Args),
    /// Run a bench between node pairs of a Slurm step (under srun); gather and judge the job.
    Slurm(slurm::Args),
    /// Why is this row short? A stored result judged again against its path ceiling.
    Explain(explain::Args),
    /// The self-contained report.html of an acceptance folder (accept writes it; this rewrites or checks it).
    Report(report::Args),
    /// Print a fresh shared secret for --token / GDRPERF_TOKEN: 128 random bits as hex.
    Token(token::Args),
    /// Which NIC port, GPU, node or link is slow among passes: judge a job's gathered rows, or a simulated fleet.
    Fleet(fleet::Args),
}

fn main() -> ExitCode {
    if let Some(message) = gdrperf_command_line::non_utf8_argument(std::env::args_os()) {
        eprintln!("gdrperf: error: {message}");
        return ExitCode::from(2);
    }
    if gdrperf_command_line::secret_on_command_line(&gdrperf_command_line::arguments()) {
        eprintln!("gdrperf: {}", gdrperf_command_line::SECRET_ON_COMMAND_LINE);
    }
    let cli = parse();
    if !cli.command.runs_benches() {
        end_quietly_on_a_closed_pipe();
    }
    let result = match cli.command {
        Command::Doctor(args) => doctor::run(args),
        Command::CopyBw(args) => copy_bw::run(args),
        Command::Selftest(args) => selftest::run(args),
        Command::Accept(args) => accept::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Slurm(args) => slurm::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Report(args) => report::run(args),
        Command::Token(args) => token::run(args),
        Command::Fleet(args) => fleet::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("gdrperf: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// The command line, with the exit-code contract at the end of every `--help`.
fn parse() -> Cli {
    let matches = with_exit_codes(Cli::command()).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// `command` and each of its subcommands, at any depth, with
/// [`gdrperf_command_line::EXIT_CODES`] after their own help text.
fn with_exit_codes(command: clap::Command) -> clap::Command {
    let names: Vec<String> = command.get_subcommands().map(|sub| sub.get_name().to_string()).collect();
    let command = names.iter().fold(command, |command, name| command.mut_subcommand(name, with_exit_codes));
    let own = command.get_after_help().map(ToString::to_string);
    let text = gdrperf_command_line::help_with_exit_codes(own.as_deref());
    command.after_help(text)
}

impl Command {
    /// Whether this subcommand measures and writes result files: those keep going when stdout
    /// closes (their printing is [`say!`]); the others only read and print.
    fn runs_benches(&self) -> bool {
        matches!(self, Command::Accept(_) | Command::Slurm(_) | Command::CopyBw(_) | Command::Selftest(_))
    }
}

/// A subcommand that only reads and prints ends as `head`'s other writers do when the reader
/// goes away (`gdrperf fleet simulate ... | head`): by SIGPIPE, with nothing on stderr, instead of
/// Rust's default (SIGPIPE ignored, so `println!` panics on the broken pipe with exit 101).
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL installs no handler and touches no
    // memory; it runs before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
