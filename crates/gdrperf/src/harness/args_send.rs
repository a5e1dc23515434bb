//! Options of the SEND/RECV bandwidth benchmark (`gdr-send-bw`), besides the bandwidth ones
//! (-Q, -b), and the validated settings built from them.

use crate::error::{ConfigError, Result};
use crate::harness::config::MAX_INLINE_SIZE;

/// Options of gdr-send-bw, besides the bandwidth ones (-Q, -b).
#[derive(Debug, Clone, clap::Args)]
pub struct SendArgs {
    /// Receives kept posted per QP; the receiver reposts each one as it consumes it. A sender
    /// that finds none posted is told to retry later (RNR), which costs bandwidth: keep it at or
    /// above -t/--tx-depth.
    #[arg(short = 'r', long = "rx-depth", value_name = "N", default_value_t = 512)]
    pub rx_depth: u32,

    /// Send messages up to this many bytes inline (0, the default, never).
    #[arg(short = 'I', long = "inline-size", value_name = "BYTES", default_value_t = 0)]
    pub inline_size: u32,
}

/// Validated gdr-send-bw settings.
#[derive(Debug, Clone, Copy)]
pub struct SendConfig {
    pub rx_depth: u32,
    pub inline_size: u32,
}

impl SendConfig {
    pub fn from_args(args: &SendArgs) -> Result<SendConfig> {
        if args.rx_depth == 0 || args.rx_depth > 16_384 {
            return Err(
                ConfigError::out_of_range("-r/--rx-depth", args.rx_depth, "between 1 and 16384").into()
            );
        }
        if args.inline_size > MAX_INLINE_SIZE {
            return Err(ConfigError::AboveLimit {
                flag: "-I/--inline-size",
                value: args.inline_size.into(),
                limit: format!("{MAX_INLINE_SIZE} bytes, more than NICs accept inline"),
            }
            .into());
        }
        Ok(SendConfig { rx_depth: args.rx_depth, inline_size: args.inline_size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use clap::Parser;

    #[derive(Parser)]
    struct SendCli {
        #[command(flatten)]
        send: SendArgs,
    }

    #[test]
    fn send_options_default_to_perftest_and_are_checked() {
        let parse = |arguments: &[&str]| {
            let cli = SendCli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
                .expect("clap takes the arguments");
            SendConfig::from_args(&cli.send)
        };
        let defaults = parse(&[]).unwrap();
        assert_eq!((defaults.rx_depth, defaults.inline_size), (512, 0));
        assert!(parse(&["-r", "0"]).unwrap_err().to_string().contains("-r/--rx-depth"));
        let inline = parse(&["-I", "4096"]).unwrap_err();
        assert!(
            matches!(
                &inline,
                Error::Config(ConfigError::AboveLimit { flag: "-I/--inline-size", value: 4096, .. })
            ),
            "{inline:?}"
        );
        assert!(inline.to_string().contains("-I/--inline-size 4096 is above 1024 bytes"), "{inline}");
    }
}
