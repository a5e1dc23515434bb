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
//!
//! A profile may run several tests: `[[bandwidth]]` and `[[latency]]` (arrays of tables) in
//! place of the single tables, one per test, each with its own values and sources. A source
//! that runs between two nodes says so with `two_nodes = true` (then a run without `--peer` marks
//! every row with the deviation); a section that differs from its source in another way says how
//! in `deviation`, which every row of that section carries into the summary and the report.
//! `all_nics_at_once = true` starts a bandwidth section's runs on every NIC together (as a health
//! check that loads the whole node does; across two nodes, every NIC pair together), and `warn_band = { value = "5%", ... }` marks a PASS
//! less than that far above its threshold as a warning.

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
const BUILTIN: [(&str, &str); 7] = [
    ("ndr-400g", include_str!("../../../profiles/ndr-400g.toml")),
    ("hdr-200g", include_str!("../../../profiles/hdr-200g.toml")),
    ("ngc-ndr-400g", include_str!("../../../profiles/ngc-ndr-400g.toml")),
    ("ngc-hdr-200g", include_str!("../../../profiles/ngc-hdr-200g.toml")),
    ("azure-h100", include_str!("../../../profiles/azure-h100.toml")),
    ("azure-h200", include_str!("../../../profiles/azure-h200.toml")),
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
    /// Start the runs of this section on every NIC at the same time (each GPU with its NIC), so
    /// that the node is loaded as a whole; default: one run at a time.
    #[serde(default)]
    pub all_nics_at_once: bool,
    /// A PASS less than this far above its threshold ("N%") is marked as a warning in the row's
    /// detail: it passes, but is near a failure.
    #[serde(default)]
    pub warn_band: Option<SourcedValue>,
    /// How this section's runs differ from the source its values come from (shown in every row).
    #[serde(default)]
    pub deviation: Option<String>,
}

impl BandwidthCheck {
    /// The shortfall level in percent, if the profile sets one (checked when it was parsed).
    pub fn shortfall_percent(&self) -> Option<f64> {
        self.shortfall.as_ref().and_then(|sourced| parse_percent(&sourced.value).ok())
    }

    /// The warning band in percent above the threshold, if the profile sets one.
    pub fn warn_band_percent(&self) -> Option<f64> {
        self.warn_band.as_ref().and_then(|sourced| parse_percent(&sourced.value).ok())
    }
}

/// "10%" (or "10") as a percentage in `[0, 100)`.
fn parse_percent(value: &str) -> Result<f64, String> {
    let number = value.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(percent) if (0.0..100.0).contains(&percent) => Ok(percent),
        _ => Err(format!("{value:?} is not a percentage from 0% to below 100%")),
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
    /// How this section's runs differ from the source its values come from (shown in every row).
    #[serde(default)]
    pub deviation: Option<String>,
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
    /// The bandwidth tests: `[bandwidth]` for one, `[[bandwidth]]` for several.
    #[serde(default, deserialize_with = "one_or_many")]
    pub bandwidth: Vec<BandwidthCheck>,
    /// The latency tests: `[latency]` for one, `[[latency]]` for several.
    #[serde(default, deserialize_with = "one_or_many")]
    pub latency: Vec<LatencyCheck>,
    /// The source runs its tests between two nodes: run without `--peer`, every row says that
    /// it ran in loopback on one node instead.
    #[serde(default)]
    pub two_nodes: bool,
    /// How many NIC error counter increments (the row's `nic_errors`) a judged size may have;
    /// default 0: a link that passes on bandwidth but retransmits fails.
    #[serde(default)]
    pub max_nic_errors: u64,
    /// Soak levels by name and the stability criterion (`crate::soak`); absent: no soak.
    #[serde(default)]
    pub soak: Option<crate::soak::SoakCheck>,
}

/// A section given once (`[bandwidth]`) or as an array of tables (`[[bandwidth]]`). Read by
/// shape rather than by trying both (serde's untagged enums), so that a section's own error
/// ("unknown field `sizes`") reaches the user instead of "did not match any variant".
fn one_or_many<'de, D, T>(deserializer: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};

    struct Sections<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Sections<T> {
        type Value = Vec<T>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("a table or an array of tables")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<Vec<T>, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(|section| vec![section])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<Vec<T>, A::Error> {
            Vec::<T>::deserialize(SeqAccessDeserializer::new(seq))
        }
    }
    deserializer.deserialize_any(Sections(std::marker::PhantomData))
}

impl Profile {
    /// The first bandwidth section's shortfall level, if it sets one: `gdrperf explain`'s.
    pub fn shortfall_percent(&self) -> Option<f64> {
        self.bandwidth.iter().find_map(BandwidthCheck::shortfall_percent)
    }

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
        if profile.bandwidth.is_empty() && profile.latency.is_empty() {
            return Err(fail(
                "it has neither a [bandwidth] nor a [latency] section: nothing to check".into(),
            ));
        }
        for check in &profile.bandwidth {
            let section = format!("[bandwidth] {}", check.test);
            check_run(
                &section,
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
            for (key, level) in [("shortfall", &check.shortfall), ("warn_band", &check.warn_band)] {
                if let Some(level) = level {
                    parse_percent(&level.value).map_err(|error| fail(format!("{section} {key} {error}")))?;
                    if level.source.trim().is_empty() {
                        return Err(fail(format!(
                            "{section} {key}: source is empty: say where the level comes from"
                        )));
                    }
                }
            }
        }
        for check in &profile.latency {
            let section = format!("[latency] {}", check.test);
            check_run(
                &section,
                &check.test,
                "_lat",
                check.size,
                check.duration_s,
                check.iterations,
                &check.source,
            )
            .map_err(&fail)?;
            LatencyStatistic::parse(&check.statistic)
                .map_err(|error| fail(format!("{section} statistic: {error}")))?;
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
            assert!(!profile.bandwidth.is_empty(), "{name}: no bandwidth section");
            let sources: Vec<&SourcedValue> = profile
                .bandwidth
                .iter()
                .flat_map(|check| check.min_bw.values().chain(&check.warn_band))
                .chain(profile.latency.iter().flat_map(|check| check.max_lat.values()))
                .collect();
            assert!(
                sources.iter().all(|value| value.source.len() > 20),
                "{name}: a source too short to say anything"
            );
            // A profile named after a source's shape runs GPU memory; the smoke profile runs
            // where no GPU exists (Soft-RoCE): host memory only.
            let modes: Vec<&String> =
                profile.bandwidth.iter().flat_map(|check| check.min_bw.keys()).collect();
            let wanted = if name == "softroce-smoke" { "host" } else { "cuda" };
            assert!(modes.iter().any(|mode| *mode == wanted), "{name} lacks {wanted}: {modes:?}");
        }
    }

    #[test]
    fn the_ngc_profiles_run_what_ngc_multinode_perf_runs() {
        for (name, bidirectional_gbps) in [("ngc-ndr-400g", "720Gb/s"), ("ngc-hdr-200g", "360Gb/s")] {
            let profile = Profile::load(name).unwrap();
            assert!(profile.two_nodes, "{name}: ngc_multinode_perf runs between two nodes");
            let tests: Vec<&str> = profile.bandwidth.iter().map(|check| check.test.as_str()).collect();
            assert_eq!(tests, ["write_bw", "read_bw", "send_bw"], "{name}");
            for check in &profile.bandwidth {
                assert_eq!((check.size, check.qps, check.bidirectional), (65536, 4, true), "{name}");
                assert_eq!(check.min_bw["cuda"].value, bidirectional_gbps, "{name}");
                assert!(check.min_bw["cuda"].source.contains("7d0808520fb1"), "{name}: cite the commit");
            }
            let limits: Vec<(&str, &str)> = profile
                .latency
                .iter()
                .map(|check| (check.test.as_str(), check.max_lat["host"].value.as_str()))
                .collect();
            assert_eq!(
                limits,
                [("write_lat", "2.5us"), ("send_lat", "2.5us"), ("read_lat", "4.5us")],
                "{name}"
            );
            assert!(profile.latency.iter().all(|check| check.size == 2 && check.statistic == "average"));
        }
    }

    #[test]
    fn the_azure_profiles_load_every_nic_at_once_against_the_per_model_figure() {
        for (name, gbps) in [("azure-h100", "380Gb/s"), ("azure-h200", "360Gb/s")] {
            let profile = Profile::load(name).unwrap();
            let [check] = profile.bandwidth.as_slice() else { panic!("{name}: one bandwidth section") };
            assert!(check.all_nics_at_once && !check.bidirectional, "{name}");
            assert_eq!((check.test.as_str(), check.size), ("write_bw", 8 * 1024 * 1024), "{name}");
            assert_eq!(check.min_bw.keys().collect::<Vec<_>>(), ["cuda"], "{name}: GPUDirect only");
            assert_eq!(check.min_bw["cuda"].value, gbps, "{name}");
            assert!(check.min_bw["cuda"].source.contains("0e0a1ac26a64"), "{name}: cite the commit");
            assert_eq!(check.warn_band_percent(), Some(5.0), "{name}");
            assert!(profile.latency.is_empty(), "{name}: the source has no latency check");
        }
    }

    #[test]
    fn a_custom_profile_is_a_file_away() {
        let profile = Profile::parse("custom.toml", CUSTOM).unwrap();
        let bandwidth = &profile.bandwidth[0];
        assert_eq!((bandwidth.qps, bandwidth.bidirectional, bandwidth.size), (1, false, 4096));
        assert!(profile.latency.is_empty() && !profile.two_nodes);
        assert_eq!(bandwidth.shortfall_percent(), None, "no level: gdrperf's default");
        let with_level =
            CUSTOM.replace("[bandwidth]", "[bandwidth]\nshortfall = { value = \"25%\", source = \"test\" }");
        let profile = Profile::parse("custom.toml", &with_level).unwrap();
        assert_eq!(profile.bandwidth[0].shortfall_percent(), Some(25.0));
        assert_eq!(profile.shortfall_percent(), Some(25.0));
        // Several tests: an array of tables, each section judged on its own.
        let (head, body) = CUSTOM.split_once("[bandwidth]").unwrap();
        let two = format!("{head}[[bandwidth]]{body}[[bandwidth]]{}", body.replace("write_bw", "read_bw"));
        let profile = Profile::parse("custom.toml", &two).unwrap();
        let tests: Vec<&str> = profile.bandwidth.iter().map(|check| check.test.as_str()).collect();
        assert_eq!(tests, ["write_bw", "read_bw"]);
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
                "[bandwidth] write_bw shortfall \"150%\" is not a percentage",
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
        assert!(unknown.contains("ndr-400g, hdr-200g, ngc-ndr-400g"), "{unknown}");
        let section_error = Profile::parse(
            "custom.toml",
            &CUSTOM
                .replace("[bandwidth]", "[[bandwidth]]")
                .replace("size = 4096", "size = 4096\nsizes = [1]"),
        )
        .unwrap_err()
        .to_string();
        assert!(section_error.contains("unknown field `sizes`"), "{section_error}");
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
