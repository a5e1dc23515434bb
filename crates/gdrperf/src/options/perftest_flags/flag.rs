//! One flag of perftest's list and what gdrperf does with it: the words the list
//! (`list.rs`) and the translation (`super`) both speak, kept apart so that neither needs the
//! other's module to say them.

/// One perftest flag: its spellings, whether it takes a value, what it means in perftest, and
/// what gdrperf does with it.
#[derive(Debug, Clone, Copy)]
pub struct PerftestFlag {
    pub short: Option<char>,
    pub long: &'static str,
    pub takes_value: bool,
    /// What it does in perftest (its `--help` line, shortened).
    pub meaning: &'static str,
    pub status: Status,
    /// On the latency binaries, where it differs from `status`.
    pub on_latency: Option<Status>,
}

/// What gdrperf does with a perftest flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// gdrperf takes the same spelling with the same meaning (where the binary has the option).
    Same,
    /// Taken, and read as gdrperf's arguments `gdrperf` (`{}` stands for the flag's value).
    AliasOf { gdrperf: &'static [&'static str] },
    /// gdrperf's own option of that spelling, whose meaning differs as `how` says.
    Differs { how: &'static str },
    /// Taken and ignored with a note on stderr: `how` says why it has nothing to change.
    Ignored { how: &'static str },
    /// Refused (exit 2) with `how`: what to give gdrperf instead.
    Refused { how: &'static str },
    /// Refused (exit 2): gdrperf has no such feature.
    NotSupported { why: &'static str },
}

impl PerftestFlag {
    /// The flag as perftest's help writes it: "-T, --tos" or "--use_cuda".
    pub fn spelling(&self) -> String {
        match self.short {
            Some(short) => format!("-{short}, --{}", self.long),
            None => format!("--{}", self.long),
        }
    }

    pub(super) fn status_for(&self, latency: bool) -> Status {
        match (latency, self.on_latency) {
            (true, Some(status)) => status,
            _ => self.status,
        }
    }
}
