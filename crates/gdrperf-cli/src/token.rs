//! `gdrperf token`: prints a fresh shared secret for `--token` / `GDRPERF_TOKEN`.
//!
//! The benches refuse a token under 128 bits (`gdrperf::exchange::check_token_strength`): a
//! recorded handshake lets anyone test guesses offline. This prints 128 bits from the kernel's
//! random source as 32 hex digits, the same form as `openssl rand -hex 16`. (The kernel source is
//! read directly, as the exchange reads its nonces: one file read needs no crate.)

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;

/// No options: one token, one line, on stdout (so `export GDRPERF_TOKEN=$(gdrperf token)` works).
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    println!("{}", random_token_hex().context("cannot read /dev/urandom")?);
    Ok(ExitCode::SUCCESS)
}

/// 128 random bits as 32 lowercase hex digits.
fn random_token_hex() -> std::io::Result<String> {
    let mut bits = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bits)?;
    Ok(bits.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_is_32_fresh_hex_digits() {
        let token = super::random_token_hex().unwrap();
        assert_eq!(token.len(), 32);
        assert!(token.chars().all(|character| character.is_ascii_hexdigit()), "{token}");
        assert_ne!(token, super::random_token_hex().unwrap());
    }
}
