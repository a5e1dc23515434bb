//! Options of the SEND/RECV bandwidth benchmark (`gdr-send-bw`), besides the bandwidth ones
//! (-Q, -b), and the validated settings built from them.

use crate::error::{ConfigError, Result};
use crate::options::args::{BandwidthInlineArgs, MemoryKind};
use crate::options::bandwidth::BandwidthConfig;
use crate::options::config::{BenchConfig, Role};

/// Options of gdr-send-bw, besides the bandwidth ones (-Q, -b).
#[derive(Debug, Clone, clap::Args)]
pub struct SendArgs {
    /// Receives kept posted per QP; the receiver reposts each one as it consumes it. A sender
    /// that finds none posted is told to retry later (RNR), which costs bandwidth: keep it at or
    /// above -t/--tx-depth.
    #[arg(short = 'r', long = "rx-depth", value_name = "N", default_value_t = 512)]
    pub rx_depth: u32,

    #[command(flatten)]
    pub inline: BandwidthInlineArgs,
}

/// Validated gdr-send-bw settings.
#[derive(Debug, Clone, Copy)]
pub struct SendConfig {
    pub rx_depth: u32,
    pub inline_size: u32,
}

impl SendConfig {
    /// `-r` and `-I`, and `--validate` against the memory of a side that receives (the server,
    /// and the client with `-b`).
    pub fn from_args(
        args: &SendArgs,
        common: &BenchConfig,
        bandwidth: &BandwidthConfig,
    ) -> Result<SendConfig> {
        if args.rx_depth == 0 || args.rx_depth > 16_384 {
            return Err(
                ConfigError::out_of_range("-r/--rx-depth", args.rx_depth, "between 1 and 16384").into()
            );
        }
        let inline_size = args.inline.checked()?;
        if common.run_infinitely && bandwidth.bidirectional {
            return Err(ConfigError::conflict(
                "--run-infinitely",
                "is not supported in a bidirectional SEND test (as perftest: \"run_infinitely mode is not \
                 supported in SEND, SEND_IMM or WRITE_IMM Bidirectional BW test\")",
            )
            .into());
        }
        // A receiver checks each payload in a host-memory ring, or as a staged side copies it
        // in; GPUDirect memory the CPU cannot read has neither.
        let receives = !matches!(common.role, Role::Client { .. }) || bandwidth.bidirectional;
        if common.validate && receives && common.memory.kinds.contains(&MemoryKind::Cuda) {
            return Err(ConfigError::conflict(
                "--validate",
                "on gdr-send-bw checks every payload in a host-memory ring, so it would not receive into \
                 cuda memory: check the data path with --mem host (or cuda-staged), or measure without --validate",
            )
            .into());
        }
        Ok(SendConfig { rx_depth: args.rx_depth, inline_size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::SEND_BW;
    use crate::error::Error;
    use crate::options::args::{BandwidthArgs, CommonArgs};
    use clap::Parser;

    #[derive(Parser)]
    struct SendCli {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        bandwidth: BandwidthArgs,
        #[command(flatten)]
        send: SendArgs,
    }

    /// gdr-send-bw's settings from `arguments`, as its binary builds them.
    fn parse(arguments: &[&str]) -> Result<SendConfig> {
        let cli = SendCli::try_parse_from(std::iter::once("test").chain(arguments.iter().copied()))
            .expect("clap takes the arguments");
        let common = BenchConfig::from_args(&cli.common, SEND_BW.defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, SEND_BW.verb)?;
        SendConfig::from_args(&cli.send, &common, &bandwidth)
    }

    #[test]
    fn send_options_default_to_perftest_and_are_checked() {
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

    /// `-l` is taken as on the other bandwidth benches, staged memory included (its lists are
    /// the messages whose copy out finished); perftest's checks still refuse what they refuse.
    #[test]
    fn a_post_list_is_taken_with_perftests_checks() {
        assert!(parse(&["-l", "4", "-n", "100"]).is_ok());
        assert!(parse(&["--loopback", "-l", "4", "-n", "100", "--mem", "host-staged"]).is_ok());
        let error = parse(&["-l", "4", "-n", "10"]).unwrap_err();
        assert!(matches!(&error, Error::Config(ConfigError::PostList { post_list: 4, .. })), "{error:?}");
    }

    #[test]
    fn validate_is_refused_before_connecting_where_cuda_memory_would_receive() {
        for receiving in
            [&["--mem", "cuda", "--validate"][..], &["--loopback", "--mem", "host,cuda", "--validate"]]
        {
            let error = parse(receiving).unwrap_err();
            assert!(
                matches!(&error, Error::Config(ConfigError::Conflict { flag: "--validate", .. })),
                "{error:?}"
            );
        }
        // A client that only sends, and staged memory (checked as it is copied in), validate.
        assert!(parse(&["--mem", "cuda", "--validate", "node2"]).is_ok());
        assert!(
            parse(&["--mem", "cuda", "--validate", "-b", "node2"]).is_err(),
            "-b: the client receives too"
        );
        assert!(parse(&["--mem", "cuda-staged", "--validate"]).is_ok());
    }
}
