//! The terms of a run, agreed before any key leaves.
//!
//! A hello carries QP numbers, PSNs, GIDs, buffer addresses and rkeys: enough for a peer to write
//! into our memory. So both sides first swap their *terms* (the run parameters and the lane, none
//! of it a key), check them, and only a peer whose terms match gets our hello. A mismatch is then
//! told the way a person fixes it: the decisive difference (another benchmark) first, in the
//! binaries' names, then the other settings as the flags that differ.

use crate::control::Control;
use crate::error::{ExchangeError, ExchangeResult};
use crate::message::Message;
use serde_json::Value;

impl Control {
    /// Sends our terms (the run parameters and the lane), reads the peer's and checks them.
    /// Returns the peer's lane (0 outside `--concurrent`).
    pub fn agree_on_terms(&mut self, parameters: &Value, lane: u32) -> ExchangeResult<u32> {
        let ours = Message::Terms { parameters: parameters.clone(), lane };
        self.send(&ours, "sending our run parameters")?;
        let (theirs, their_lane) =
            self.expect("Terms", "waiting for the peer's run parameters", |message| match message {
                Message::Terms { parameters, lane } => Ok((parameters, lane)),
                other => Err(other),
            })?;
        let who = if self.accepted { "the client" } else { "the server" };
        match describe_mismatch(parameters, &theirs) {
            None => Ok(their_lane),
            Some(differences) => Err(ExchangeError::Mismatch {
                peer: self.peer.clone(),
                differences: format!("{who} {} {differences}", self.peer),
            }),
        }
    }
}

/// "gdr-write-bw" for the parameter `test` "write_bw".
fn binary(test: &Value) -> String {
    match test.as_str() {
        Some(name) => format!("gdr-{}", name.replace('_', "-")),
        None => "an unknown benchmark".into(),
    }
}

/// How a person would write `value` of parameter `name` on the command line; `None` when the
/// parameter does not apply to that side's benchmark (a null it did not send).
fn flag(name: &str, value: &Value) -> Option<String> {
    let number = |flag: &str| Some(format!("{flag} {value}"));
    let switch = |flag: &str| match value.as_bool() {
        Some(true) => Some(flag.to_string()),
        _ => Some(format!("no {flag}")),
    };
    if value.is_null() && name != "mtu" {
        return None;
    }
    match name {
        "sizes" => {
            let sizes: Vec<u64> = value.as_array()?.iter().filter_map(Value::as_u64).collect();
            let all: Vec<u64> = (1..=23).map(|exponent| 1u64 << exponent).collect();
            Some(match sizes.as_slice() {
                [one] => format!("-s {one}"),
                list if list == all.as_slice() => "-a".into(),
                list => format!("sizes {list:?}"),
            })
        }
        "stop" => match (value.get("iterations"), value.get("duration")) {
            (Some(count), _) => Some(format!("-n {count}")),
            (None, Some(seconds)) => Some(format!("-D {seconds}")),
            _ => Some(format!("stop {value}")),
        },
        "mtu" if value.is_null() => Some("no -m".into()),
        "mtu" => number("-m"),
        "qps" => number("-q"),
        "tx_depth" => number("-t"),
        "warmup" => number("--warmup"),
        "cq_mod" => number("-Q"),
        "validate" => switch("--validate"),
        "bidirectional" => switch("-b"),
        "concurrent" => switch("--concurrent"),
        "rdma_cm" => switch("-R"),
        other => {
            let long = format!("--{}", other.replace('_', "-"));
            if value.is_boolean() {
                switch(&long)
            } else {
                Some(format!("{long} {value}"))
            }
        }
    }
}

/// The differences between our parameters and the peer's, as the rest of a sentence whose
/// subject is the peer ("runs gdr-write-bw, this is gdr-read-lat ..."); `None` when they agree.
pub fn describe_mismatch(ours: &Value, theirs: &Value) -> Option<String> {
    let differences = parameter_differences(ours, theirs);
    if differences.is_empty() {
        return None;
    }
    let null = Value::Null;
    let field = |object: &Value, name: &str| object.get(name).cloned().unwrap_or(Value::Null);
    let mut names: Vec<String> = differences;
    names.retain(|name| name != "test");
    let (mut there, mut here) = (Vec::new(), Vec::new());
    for name in &names {
        let (mine, peer) = (field(ours, name), field(theirs, name));
        match (flag(name, &peer), flag(name, &mine)) {
            (Some(peer), Some(mine)) => {
                there.push(peer);
                here.push(mine);
            }
            (Some(peer), None) => there.push(peer),
            (None, Some(mine)) => here.push(mine),
            (None, None) => {}
        }
    }
    let (our_test, their_test) = (ours.get("test").unwrap_or(&null), theirs.get("test").unwrap_or(&null));
    if our_test != their_test {
        let mut text = format!(
            "runs {}, this is {}: start both sides with the same benchmark",
            binary(their_test),
            binary(our_test)
        );
        if !there.is_empty() {
            text.push_str(&format!(" (it also has {})", there.join(" ")));
        }
        return Some(text);
    }
    Some(format!(
        "runs {} with other settings: it has {}, this side {}; give both sides the same flags",
        binary(their_test),
        or_defaults(&there),
        or_defaults(&here)
    ))
}

fn or_defaults(flags: &[String]) -> String {
    if flags.is_empty() {
        "the defaults".into()
    } else {
        flags.join(" ")
    }
}

/// Names every field whose value differs, in alphabetical order.
pub fn parameter_differences(ours: &serde_json::Value, theirs: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let ours = ours.as_object().unwrap_or(&empty);
    let theirs = theirs.as_object().unwrap_or(&empty);
    let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let mine = ours.get(name).unwrap_or(&serde_json::Value::Null);
            let peer = theirs.get(name).unwrap_or(&serde_json::Value::Null);
            (mine != peer).then(|| name.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn another_benchmark_is_said_first_in_the_binaries_names() {
        // The mix-up users made: gdr-read-lat -s 64K against a gdr-write-bw -s 64K server.
        let read_lat = json!({"test": "read_lat", "sizes": [65536], "stop": {"iterations": 1000},
            "tx_depth": 1, "bidirectional": null, "cq_mod": null});
        let write_bw = json!({"test": "write_bw", "sizes": [65536], "stop": {"iterations": 5000},
            "tx_depth": 128, "bidirectional": false, "cq_mod": 100});
        assert_eq!(
            describe_mismatch(&read_lat, &write_bw).unwrap(),
            "runs gdr-write-bw, this is gdr-read-lat: start both sides with the same benchmark \
             (it also has no -b -Q 100 -n 5000 -t 128)"
        );
    }

    #[test]
    fn other_settings_of_one_benchmark_are_the_flags_that_differ() {
        let ours = json!({"test": "write_bw", "sizes": [4096], "mtu": null, "validate": true, "qps": 1});
        let theirs = json!({"test": "write_bw", "sizes": (1..=23).map(|e| 1u64 << e).collect::<Vec<_>>(),
            "mtu": 1024, "validate": false, "qps": 1});
        assert_eq!(
            describe_mismatch(&ours, &theirs).unwrap(),
            "runs gdr-write-bw with other settings: it has -m 1024 -a no --validate, \
             this side no -m -s 4096 --validate; give both sides the same flags"
        );
        assert_eq!(describe_mismatch(&ours, &ours), None);
    }

    #[test]
    fn one_side_with_rdma_cm_is_told_to_give_both_minus_r() {
        let ours = json!({"test": "send_lat", "qps": 1, "rdma_cm": true});
        let theirs = json!({"test": "send_lat", "qps": 1, "rdma_cm": false});
        assert_eq!(
            describe_mismatch(&ours, &theirs).unwrap(),
            "runs gdr-send-lat with other settings: it has no -R, this side -R; give both sides the same flags"
        );
    }
}
