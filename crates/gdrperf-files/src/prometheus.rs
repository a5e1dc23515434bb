//! Prometheus's text exposition format (version 0.0.4), as node_exporter's textfile collector
//! reads it: a file `NAME.prom` in its folder, replaced whole by a rename so that a scrape never
//! reads half a file (node_exporter's own advice, and what [`write_file`] does).
//!
//! A [`Exposition`] holds metric families in the order they were declared, each with its
//! `# HELP` and `# TYPE` lines written once, and one sample per series (a name and a set of
//! labels): setting a series again replaces its value, so a file never holds the duplicate
//! series that Prometheus rejects. Label values and help texts are escaped as the format says
//! (`\\`, `\"` and `\n` in label values; `\\` and `\n` in help texts), so a host or device name
//! from outside cannot break a line.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::write::write_file;

/// A family's `# TYPE`: only the two kinds a finished run's figures need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A value that may go up or down (a bandwidth, a latency, a verdict).
    Gauge,
    /// A count that only grows over the life of what it counts (its name ends in `_total`).
    Counter,
}

impl MetricKind {
    fn word(self) -> &'static str {
        match self {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
        }
    }
}

/// One metric family: its name, help, kind and samples keyed by their labels.
#[derive(Debug, Clone)]
struct Family {
    name: String,
    help: String,
    kind: MetricKind,
    /// Labels (sorted by name, which is how the key compares) -> value.
    samples: BTreeMap<Vec<(String, String)>, f64>,
}

/// A Prometheus text file being built: families in declaration order, one sample per series.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    families: Vec<Family>,
}

/// Whether `name` is a metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`) or, without colons, a label
/// name (`[a-zA-Z_][a-zA-Z0-9_]*`, and not one of the reserved `__` names).
fn valid_name(name: &str, colons: bool) -> bool {
    let allowed = |character: char, first: bool| {
        character == '_'
            || character.is_ascii_alphabetic()
            || (!first && character.is_ascii_digit())
            || (colons && character == ':')
    };
    let mut characters = name.chars();
    characters.next().is_some_and(|first| allowed(first, true))
        && characters.all(|character| allowed(character, false))
        && (colons || !name.starts_with("__"))
}

/// A label value as the format writes it between quotes.
pub fn escape_label_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A help text as the format writes it after `# HELP name`.
pub fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample's value: Go's spellings of the special values, else the shortest decimal that
/// reads back as the same number.
fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{value}")
    }
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Declares a family (its `# HELP` and `# TYPE`); declaring it again with the same kind is
    /// allowed and keeps the first help. The names are the program's own, never input: an
    /// invalid one, or a counter not ending in `_total`, is a bug and panics.
    pub fn declare(&mut self, name: &str, help: &str, kind: MetricKind) -> &mut Exposition {
        assert!(valid_name(name, true), "{name:?} is not a Prometheus metric name");
        assert!(kind != MetricKind::Counter || name.ends_with("_total"), "counter {name} must end in _total");
        match self.families.iter().find(|family| family.name == name) {
            Some(family) => assert_eq!(family.kind, kind, "{name} declared as two kinds"),
            None => self.families.push(Family {
                name: name.to_string(),
                help: help.to_string(),
                kind,
                samples: BTreeMap::new(),
            }),
        }
        self
    }

    /// Sets the series `name{labels}` to `value` (replacing an earlier value of the same
    /// series). `name` must have been declared; label names must be valid and distinct (the
    /// program's own, as for [`Exposition::declare`]); label values are anything.
    pub fn set(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let family = self
            .families
            .iter_mut()
            .find(|family| family.name == name)
            .unwrap_or_else(|| panic!("{name} set before it was declared"));
        let mut key: Vec<(String, String)> =
            labels.iter().map(|(label, value)| (label.to_string(), value.to_string())).collect();
        key.sort();
        for pair in key.windows(2) {
            assert!(pair[0].0 != pair[1].0, "label {} given twice on {name}", pair[0].0);
        }
        for (label, _) in &key {
            assert!(valid_name(label, false), "{label:?} is not a Prometheus label name");
        }
        family.samples.insert(key, value);
    }

    /// How many series the exposition holds.
    pub fn series(&self) -> usize {
        self.families.iter().map(|family| family.samples.len()).sum()
    }

    /// The text: for each family with samples, `# HELP`, `# TYPE` and its samples (a family
    /// without samples is left out: a `# TYPE` with nothing under it says nothing).
    pub fn render(&self) -> String {
        let mut text = String::new();
        for family in self.families.iter().filter(|family| !family.samples.is_empty()) {
            let _ = writeln!(text, "# HELP {} {}", family.name, escape_help(&family.help));
            let _ = writeln!(text, "# TYPE {} {}", family.name, family.kind.word());
            for (labels, value) in &family.samples {
                text.push_str(&family.name);
                if !labels.is_empty() {
                    let pairs: Vec<String> = labels
                        .iter()
                        .map(|(label, value)| format!("{label}=\"{}\"", escape_label_value(value)))
                        .collect();
                    let _ = write!(text, "{{{}}}", pairs.join(","));
                }
                let _ = writeln!(text, " {}", format_value(*value));
            }
        }
        text
    }

    /// Writes the text to `path` through a new temporary file and a rename ([`write_file`]: a
    /// link at `path` is refused, a reader sees the old file or the new one, never half).
    pub fn write(&self, path: &Path) -> io::Result<()> {
        write_file(path, self.render().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_newline_and_help_backslash_and_newline() {
        assert_eq!(escape_label_value(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label_value("two\nlines"), r"two\nlines");
        assert_eq!(escape_help("say \"x\" \\ then\nmore"), "say \"x\" \\\\ then\\nmore");
        let mut exposition = Exposition::new();
        exposition.declare("gdrperf_test_value", "A test.\nSecond line.", MetricKind::Gauge);
        exposition.set("gdrperf_test_value", &[("host", "node\"7\"\n\\x")], 1.0);
        assert_eq!(
            exposition.render(),
            "# HELP gdrperf_test_value A test.\\nSecond line.\n\
             # TYPE gdrperf_test_value gauge\n\
             gdrperf_test_value{host=\"node\\\"7\\\"\\n\\\\x\"} 1\n"
        );
    }

    #[test]
    fn each_family_has_its_help_and_type_once_and_each_series_one_sample() {
        let mut exposition = Exposition::new();
        exposition.declare("gdrperf_b", "B.", MetricKind::Gauge);
        exposition.declare("gdrperf_a_total", "A.", MetricKind::Counter);
        exposition.declare("gdrperf_unused", "Never set.", MetricKind::Gauge);
        exposition.set("gdrperf_b", &[("size", "2"), ("test", "write_bw")], 1.0);
        exposition.set("gdrperf_b", &[("test", "write_bw"), ("size", "2")], 2.5);
        exposition.set("gdrperf_b", &[("size", "10"), ("test", "write_bw")], 3.0);
        exposition.set("gdrperf_a_total", &[], 7.0);
        exposition.declare("gdrperf_b", "Declared again.", MetricKind::Gauge);
        assert_eq!(exposition.series(), 3);
        let text = exposition.render();
        assert_eq!(
            text,
            "# HELP gdrperf_b B.\n\
             # TYPE gdrperf_b gauge\n\
             gdrperf_b{size=\"10\",test=\"write_bw\"} 3\n\
             gdrperf_b{size=\"2\",test=\"write_bw\"} 2.5\n\
             # HELP gdrperf_a_total A.\n\
             # TYPE gdrperf_a_total counter\n\
             gdrperf_a_total 7\n"
        );
    }

    #[test]
    fn values_are_written_as_go_reads_them() {
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(12_500_000_000.0), "12500000000");
        assert_eq!(format_value(2.5e-6), "0.0000025");
        assert_eq!(format_value(-0.5), "-0.5");
    }

    #[test]
    fn names_follow_the_format() {
        assert!(valid_name("gdrperf_bandwidth_bytes_per_second", true));
        assert!(valid_name("job:rate", true));
        assert!(!valid_name("job:rate", false));
        assert!(!valid_name("2fast", true));
        assert!(!valid_name("with-dash", true));
        assert!(!valid_name("", true));
        assert!(!valid_name("__reserved", false));
    }

    #[test]
    #[should_panic(expected = "must end in _total")]
    fn a_counter_without_total_is_a_bug() {
        Exposition::new().declare("gdrperf_errors", "Errors.", MetricKind::Counter);
    }

    #[test]
    #[should_panic(expected = "given twice")]
    fn a_label_given_twice_is_a_bug() {
        let mut exposition = Exposition::new();
        exposition.declare("gdrperf_x", "X.", MetricKind::Gauge);
        exposition.set("gdrperf_x", &[("a", "1"), ("a", "2")], 1.0);
    }

    #[test]
    fn the_file_is_replaced_whole_and_a_link_refused() {
        let folder = std::env::temp_dir().join(format!("gdrperf-files-prom-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let mut exposition = Exposition::new();
        exposition.declare("gdrperf_x", "X.", MetricKind::Gauge);
        exposition.set("gdrperf_x", &[], 1.0);
        let path = folder.join("gdrperf.prom");
        std::fs::write(&path, "old").unwrap();
        exposition.write(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), exposition.render());
        let link = folder.join("link.prom");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let error = exposition.write(&link).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 2, "no temporary file left");
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
