//! The four words every gdrperf tool's `--json` (and JSON file) spells a verdict with, one per
//! meaning of the exit-code contract ([`crate::EXIT_CODES`]): `pass` (0), `undecided` (0: the
//! tool could not decide, and says why in the record's detail), `fail` (1: a measured miss or a
//! regression) and `error` (2: could not run, or part of the answer is missing). A tool keeps its
//! own finer word (a skip's reason, `regression` or `improvement`, a doctor line's `WARN`) in
//! another field beside it, so a script reads one vocabulary whichever tool wrote the file.

use serde::Serialize;

/// A verdict as the exit-code contract names it; ordered so that `max` is the worst (an error
/// outranks a failure, since an error means part of the answer is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every judged part met its threshold, or nothing was there to judge.
    Pass,
    /// Nothing measured missed, but something could not be decided (a row not run for a reason
    /// that is not the node's fault, a change the runs cannot tell from their noise, a pair to
    /// test again): exit 0, the record's detail says what would decide it.
    Undecided,
    /// A measured miss: a threshold missed, a check failed, a regression found.
    Fail,
    /// Could not run, or a part of the answer is missing.
    Error,
}

impl Verdict {
    /// Every verdict, best first: the one list the words and codes below are read from.
    pub const ALL: [Verdict; 4] = [Verdict::Pass, Verdict::Undecided, Verdict::Fail, Verdict::Error];

    /// The word `--json` writes.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Undecided => "undecided",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }

    /// The process exit code the contract gives this verdict.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass | Verdict::Undecided => 0,
            Verdict::Fail => 1,
            Verdict::Error => 2,
        }
    }

    /// The verdict of a whole made of parts: the worst part's; nothing at all is a pass (there
    /// was nothing to judge).
    pub fn worst(parts: impl IntoIterator<Item = Verdict>) -> Verdict {
        parts.into_iter().max().unwrap_or(Verdict::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_has_its_exit_code_and_serialises_as_written() {
        let words: Vec<(&str, u8)> =
            Verdict::ALL.iter().map(|verdict| (verdict.word(), verdict.exit_code())).collect();
        assert_eq!(words, [("pass", 0), ("undecided", 0), ("fail", 1), ("error", 2)]);
        for verdict in Verdict::ALL {
            assert_eq!(serde_json::to_value(verdict).unwrap(), verdict.word());
        }
    }

    #[test]
    fn the_whole_takes_its_worst_part() {
        assert_eq!(Verdict::worst([]), Verdict::Pass);
        assert_eq!(Verdict::worst([Verdict::Pass, Verdict::Undecided]), Verdict::Undecided);
        assert_eq!(Verdict::worst([Verdict::Undecided, Verdict::Fail]), Verdict::Fail);
        assert_eq!(Verdict::worst([Verdict::Error, Verdict::Fail, Verdict::Pass]), Verdict::Error);
    }
}
