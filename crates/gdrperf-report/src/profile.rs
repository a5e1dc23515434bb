//! Acceptance profiles: the thresholds a node must meet, per memory mode, in a small TOML file
//! where every value says where it comes from. Built-in profiles ship in the repository's
//! `profiles/` folder (and inside the binary); a custom one is a file away.
//!
//! ```toml
//! name = "my-cluster"
//! description = "what this profile is for"
//! port_rate = "200 Gb/sec (4X HDR)"          # optional: the rate the port should report
//!
//! [bandwidth]                                # gdr-write-bw --loopback
//! test = "write_bw"
//! size = 65536
//! qps = 4
//! duration_s = 10                            # or iterations = N
//! source = "why these run parameters"
//! min_bw.host = { value = "180Gb/s", source = "why this figure" }
//! min_bw.cuda = { value = "90%", source = "..." }
//! shortfall = { value = "10%", source = "..." } # optional: a row further below its path
//!                                            # ceiling lists its causes (default 10%)
//!
//! [latency]                                  # gdr-read-lat --loopback
//! test = "read_lat"
//! size = 2
//! iterations = 10000
//! statistic = "average"                      # as --lat-pct
//! source = "..."
//! max_lat.host = { value = "4.5us", source = "..." }
//! ```
//!
//! A memory mode absent from `min_bw`/`max_lat` is not run for that test.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ReportError, Result};
pub use crate::sourced_value::SourcedValue;
use crate::threshold::{BandwidthThreshold, LatencyStatistic, LatencyThreshold};

/// The memory modes a profile may give thresholds for (the bench binaries' `--mem` values).
pub const MEMORY_MODES: [&str; 3] = ["host", "cuda", "cuda-staged"];

/// The profiles shipped with gdrperf: (name, TOML text), every file of profiles/ (a test checks
/// that none is left out), so that `--profile NAME` works wherever the binary is.
const BUILTIN: [(&str, &str); 3] = [
    ("ndr-400g", include_str!("../../../profiles/ndr-400g.toml")),
    ("hdr-200g", include_str!("../../../profiles/hdr-200g.toml")),
    ("softroce-smoke", include_str!("../../../profiles/softroce-smoke.toml")),
];

/// The bandwidth part of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthCheck {
    /// The bench's `test` name: `write_bw` runs `gdr-write-bw`.
    pub test: String,
    pub size: u64,
    #[serde(default = "one")]
    pub qps: u32,
    pub duration_s: Option<f64>,
    pub iterations: Option<u64>,
    #[serde(default)]
    pub bidirectional: bool,
    /// Where the run parameters come from.
    pub source: String,
    /// Per memory mode.
    pub min_bw: BTreeMap<String, SourcedValue>,
    /// How far below its path ceiling a judged row may fall, as "N%", before its verdict lists
    /// the causes (`ceiling_causes`); absent: gdrperf's level, 10 %.
    #[serde(default)]
    pub shortfall: Option<SourcedValue>,
}

impl BandwidthCheck {
    /// The shortfall level in percent, if the profile sets one (checked when it was parsed).
    pub fn shortfall_percent(&self) -> Option<f64> {
        self.shortfall.as_ref().and_then(|sourced| parse_percent(&sourced.value).ok())
    }
}

/// "10%" (or "10") as a percentage in `[0, 100)`.
fn parse_percent(value: &str) -> Result<f64, String> {
    let number = value.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(percent) if (0.0..100.0).contains(&percent) => Ok(percent),
        _ => Err(format!("shortfall {value:?} is not a percentage from 0% to below 100%")),
    }
}

/// The latency part of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyCheck {
    /// The bench's `test` name: `read_lat` runs `gdr-read-lat`.
    pub test: String,
    pub size: u64,
    pub iterations: Option<u64>,
    pub duration_s: Option<f64>,
    /// The statistic held against `max_lat`, as `--lat-pct` takes it.
    #[serde(default = "typical")]
    pub statistic: String,
    pub source: String,
    pub max_lat: BTreeMap<String, SourcedValue>,
}

fn one() -> u32 {
    1
}

fn typical() -> String {
    "typical".to_string()
}

/// A validated acceptance profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// The port rate this profile is meant for, as sysfs words it; `accept` warns on another.
    pub port_rate: Option<String>,
    pub bandwidth: Option<BandwidthCheck>,
    pub latency: Option<LatencyCheck>,
    /// How many NIC error counter increments (the row's `nic_errors`) a judged size may have;
    /// default 0: a link that passes on bandwidth but retransmits fails.
    #[serde(default)]
    pub max_nic_errors: u64,
    /// Soak levels by name and the stability criterion (`crate::soak`); absent: no soak.
    #[serde(default)]
    pub soak: Option<crate::soak::SoakCheck>,
}

impl Profile {
    /// The built-in profiles' names.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    /// `--profile NAME|PATH`: an existing file (or anything that looks like a path) is read,
    /// anything else is looked up among the built-in profiles.
    pub fn load(name_or_path: &str) -> Result<Profile> {
        let path = Path::new(name_or_path);
        if path.exists() || name_or_path.contains('/') || name_or_path.ends_with(".toml") {
            let text = gdrperf_files::read_named_text(path, gdrperf_files::MAX_SMALL_FILE_BYTES)
                .map_err(|error| ReportError::ReadProfile { path: path.to_path_buf(), error })?;
            return Profile::parse(name_or_path, &text);
        }
        match BUILTIN.iter().find(|(name, _)| *name == name_or_path) {
            Some((name, text)) => Profile::parse(name, text),
            None => Err(ReportError::UnknownProfile {
                name: name_or_path.to_string(),
                builtin: Profile::builtin_names().join(", "),
            }),
        }
    }

    /// Parses and checks a profile: every value must parse as its flag would, every mode be one
    /// the benches know, every value name its source.
    pub fn parse(origin: &str, text: &str) -> Result<Profile> {
        let fail = |reason: String| ReportError::Profile { name: origin.to_string(), reason };
        let profile: Profile =
            toml::from_str(text).map_err(|error| fail(error.to_string().trim().to_string()))?;
        if profile.bandwidth.is_none() && profile.latency.is_none() {
            return Err(fail(
                "it has neither a [bandwidth] nor a [latency] section: nothing to check".into(),
            ));
        }
        if let Some(check) = &profile.bandwidth {
            check_run(
                "[bandwidth]",
                &check.test,
                "_bw",
                check.size,
                check.duration_s,
                check.iterations,
                &check.source,
            )
            .map_err(&fail)?;
            check_values("min_bw", &check.min_bw, |value| {
                BandwidthThreshold::parse(value).map(|_| ()).map_err(Into::into)
            })
            .map_err(&fail)?;
            if let Some(shortfall) = &check.shortfall {
                parse_percent(&shortfall.value).map_err(|error| fail(format!("[bandwidth] {error}")))?;
                if shortfall.source.trim().is_empty() {
                    return Err(fail(
                        "[bandwidth] shortfall: source is empty: say where the level comes from".into(),
                    ));
                }
            }
        }
        if let Some(check) = &profile.latency {
            check_run(
                "[latency]",
                &check.test,
                "_lat",
                check.size,
                check.duration_s,
                check.iterations,
                &check.source,
            )
            .map_err(&fail)?;
            LatencyStatistic::parse(&check.statistic)
                .map_err(|error| fail(format!("[latency] statistic: {error}")))?;
            check_values("max_lat", &check.max_lat, |value| {
                LatencyThreshold::parse(value).map(|_| ()).map_err(Into::into)
            })
            .map_err(&fail)?;
        }
        if let Some(soak) = &profile.soak {
            soak.check().map_err(&fail)?;
        }
        Ok(profile)
    }
}

impl LatencyCheck {
    /// The statistic, checked when the profile was parsed.
    pub fn statistic(&self) -> LatencyStatistic {
        LatencyStatistic::parse(&self.statistic).unwrap_or_default()
    }
}

fn check_run(
    section: &str,
    test: &str,
    suffix: &str,
    size: u64,
    duration_s: Option<f64>,
    iterations: Option<u64>,
    source: &str,
) -> Result<(), String> {
    if !test.ends_with(suffix) || !test.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(format!(
            "{section} test {test:?} must be a bench name ending in {suffix} (like write_bw, read_lat)"
        ));
    }
    if size == 0 {
        return Err(format!("{section} size must be at least 1 byte"));
    }
    if duration_s.is_some() && iterations.is_some() {
        return Err(format!("{section} gives both duration_s and iterations; keep one"));
    }
    if duration_s.is_some_and(|seconds| !(seconds.is_finite() && seconds > 0.0)) {
        return Err(format!("{section} duration_s must be a positive number of seconds"));
    }
    if source.trim().is_empty() {
        return Err(format!("{section} source is empty: say where the run parameters come from"));
    }
    Ok(())
}

fn check_values(
    table: &str,
    values: &BTreeMap<String, SourcedValue>,
    parse: impl Fn(&str) -> Result<()>,
) -> Result<(), String> {
    if values.is_empty() {
        return Err(format!("{table} has no memory mode: give at least one of {}", MEMORY_MODES.join(", ")));
    }
    for (mode, sourced) in values {
        if !MEMORY_MODES.contains(&mode.as_str()) {
            return Err(format!("{table}.{mode}: unknown memory mode (modes: {})", MEMORY_MODES.join(", ")));
        }
        parse(&sourced.value).map_err(|error| format!("{table}.{mode}: {error}"))?;
        if sourced.source.trim().is_empty() {
            return Err(format!("{table}.{mode}: source is empty: say where {} comes from", sourced.value));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUSTOM: &str = r#"
        name = "custom"
        description = "test"
        [bandwidth]
        test = "write_bw"
        size = 4096
        iterations = 100
        source = "test"
        min_bw.host = { value = "1Gb/s", source = "test" }
    "#;

    #[test]
    fn builtin_profiles_parse_and_source_every_value() {
        for name in Profile::builtin_names() {
            let profile = Profile::load(name).unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(profile.name, name);
            let bandwidth = profile.bandwidth.as_ref().expect("a bandwidth section");
            let latency = profile.latency.as_ref().expect("a latency section");
            // The smoke profile runs where no GPU exists (Soft-RoCE): host memory only.
            let modes: &[&str] = if name == "softroce-smoke" { &["host"] } else { &MEMORY_MODES };
            for &mode in modes {
                assert!(
                    bandwidth.min_bw.contains_key(mode) && latency.max_lat.contains_key(mode),
                    "{name} lacks {mode}"
                );
            }
            let sources = bandwidth.min_bw.values().chain(latency.max_lat.values());
            assert!(
                sources.clone().all(|value| value.source.len() > 20),
                "{name}: a source too short to say anything"
            );
        }
    }

    #[test]
    fn a_custom_profile_is_a_file_away() {
        let profile = Profile::parse("custom.toml", CUSTOM).unwrap();
        let bandwidth = profile.bandwidth.unwrap();
        assert_eq!((bandwidth.qps, bandwidth.bidirectional, bandwidth.size), (1, false, 4096));
        assert!(profile.latency.is_none());
        assert_eq!(bandwidth.shortfall_percent(), None, "no level: gdrperf's default");
        let with_level =
            CUSTOM.replace("[bandwidth]", "[bandwidth]\nshortfall = { value = \"25%\", source = \"test\" }");
        let bandwidth = Profile::parse("custom.toml", &with_level).unwrap().bandwidth.unwrap();
        assert_eq!(bandwidth.shortfall_percent(), Some(25.0));
    }

    #[test]
    fn broken_profiles_say_what_to_fix() {
        let cases = [
            (CUSTOM.replace("1Gb/s", "1"), "min_bw.host: bandwidth threshold \"1\": it has no unit"),
            (CUSTOM.replace("min_bw.host", "min_bw.gpu"), "min_bw.gpu: unknown memory mode"),
            (CUSTOM.replace("source = \"test\" }", "source = \"\" }"), "source is empty"),
            (CUSTOM.replace("write_bw", "write"), "must be a bench name ending in _bw"),
            (
                CUSTOM.replace("iterations = 100", "iterations = 100\nduration_s = 5"),
                "both duration_s and iterations",
            ),
            (CUSTOM.replace("size = 4096", "size = 4096\nsizes = [1]"), "unknown field `sizes`"),
            ("name = \"x\"\ndescription = \"y\"\n".to_string(), "neither a [bandwidth] nor a [latency]"),
            (
                CUSTOM
                    .replace("[bandwidth]", "[bandwidth]\nshortfall = { value = \"150%\", source = \"t\" }"),
                "[bandwidth] shortfall \"150%\" is not a percentage",
            ),
            (
                CUSTOM.replace("[bandwidth]", "[bandwidth]\nshortfall = { value = \"5%\", source = \" \" }"),
                "shortfall: source is empty",
            ),
        ];
        for (text, expected) in cases {
            let message = Profile::parse("custom.toml", &text).unwrap_err().to_string();
            assert!(message.contains(expected), "{message:?} lacks {expected:?}");
        }
        let unknown = Profile::load("edr-100g").unwrap_err().to_string();
        assert!(unknown.contains("ndr-400g, hdr-200g, softroce-smoke"), "{unknown}");
        assert!(Profile::load("/nonexistent/p.toml")
            .unwrap_err()
            .to_string()
            .contains("cannot read profile /nonexistent/p.toml"));
    }

    #[test]
    fn every_profile_file_is_built_in_under_its_own_name() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
        let mut files: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".toml"))
            .collect();
        files.sort();
        let mut names: Vec<String> =
            Profile::builtin_names().iter().map(|name| format!("{name}.toml")).collect();
        names.sort();
        assert_eq!(files, names, "profiles/ and the built-in profiles differ");
    }
}
