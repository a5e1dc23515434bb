//! `gdrperf token`: prints a fresh shared secret for `--token` / `GDRPERF_TOKEN`.
//!
//! The benches refuse a token under 128 bits (`gdrperf::exchange::check_token_strength`): a
//! recorded handshake lets anyone test guesses offline. This prints 128 bits from the kernel's
//! random source as 32 hex digits, the same form as `openssl rand -hex 16`, made by the
//! exchange's own `random_token_hex` (the one place that draws a token; its test is there).

use std::process::ExitCode;

use anyhow::Context;

/// No options: one token, one line, on stdout (so `export GDRPERF_TOKEN=$(gdrperf token)` works).
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    println!("{}", gdrperf::exchange::random_token_hex().context("cannot read /dev/urandom")?);
    Ok(ExitCode::SUCCESS)
}
