//! The soak section of `report.html`, from `soak.json` (written by `gdrperf accept --soak`):
//! per lane the bandwidth (a latency lane: its latency) interval by interval with the intervals
//! where something moved
//! marked, the stability verdict, its level with its source, and the reasons tied to their
//! intervals.
//!
//! `soak.json` is read as free-form JSON, not through the result reader: it is no table of
//! result columns but the soak's own document (lanes, intervals, a stability judgement), written
//! by `gdrperf accept --soak`; read loosely, a folder written before a field existed still
//! renders, the field shown as "-".

use serde_json::Value;

use crate::html_text::{cell, escape};
use crate::svg_chart::{self, Chart};

/// The soak file's name in an acceptance folder.
pub const FILE_NAME: &str = "soak.json";

/// The section, or nothing when the run had no soak.
pub fn section(soak: Option<&Value>) -> String {
    let Some(soak) = soak else { return String::new() };
    let mut html = format!(
        "<h2 id=\"soak\">Soak</h2>\n<p>Stability {} &middot; {} s in intervals of {} s &middot; {}</p>\n",
        crate::html_text::shown_verdict(soak["stability"].as_str().unwrap_or("")),
        cell(&soak["duration_s"]),
        cell(&soak["interval_s"]),
        cell(&soak["why"])
    );
    if soak["gpu_watch"].is_string() {
        html.push_str(&format!("<p>GPU watch: {}</p>\n", cell(&soak["gpu_watch"])));
    }
    for lane in soak["lanes"].as_array().into_iter().flatten() {
        let title = format!("soak {}", lane["lane"].as_str().unwrap_or(""));
        // A latency lane's stability has a median latency; a bandwidth lane's a median rate.
        let latency = lane["stability"]["median_latency_us"].is_number()
            || lane["intervals"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|interval| interval["latency_us"].is_number());
        let (key, y_label) = if latency { ("latency_us", "us") } else { ("bandwidth_gbps", "Gb/s") };
        let marked: Vec<u64> =
            lane["stability"]["marked"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
        let points: Vec<(f64, Option<f64>, bool)> = lane["intervals"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, interval)| (index as f64, interval[key].as_f64(), marked.contains(&(index as u64))))
            .collect();
        html.push_str(&format!(
            "<div class=\"test\">\n<h3>{} <span class=\"note\">{}</span></h3>\n",
            escape(&title),
            crate::html_text::shown_verdict(lane["stability"]["verdict"].as_str().unwrap_or(""))
        ));
        html.push_str(&svg_chart::over_time(&Chart { title: &title, y_label, threshold: None }, &points));
        let stability = &lane["stability"];
        let number = |value: &Value, decimals: usize| {
            value.as_f64().map(|number| format!("{number:.decimals$}")).unwrap_or_else(|| "-".into())
        };
        html.push_str(&if latency {
            format!(
                "<p>Median {} us, worst interval {} ({} % above). Rise level: {}</p>\n",
                number(&stability["median_latency_us"], 2),
                cell(&stability["worst_interval"]),
                number(&stability["rise_percent"], 1),
                cell(&stability["level"])
            )
        } else {
            format!(
                "<p>Median {} Gb/s, worst interval {} ({} % below). Dip level: {}</p>\n",
                number(&stability["median_gbps"], 3),
                cell(&stability["worst_interval"]),
                number(&stability["dip_percent"], 1),
                cell(&stability["level"])
            )
        });
        let reasons: Vec<&Value> = lane["stability"]["reasons"].as_array().into_iter().flatten().collect();
        if !reasons.is_empty() {
            html.push_str("<ul>\n");
            for reason in reasons {
                html.push_str(&format!("<li>{}</li>\n", cell(reason)));
            }
            html.push_str("</ul>\n");
        }
        html.push_str("</div>\n");
    }
    html
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::soak::{judge, judge_latency, Interval};

    fn interval(start_s: f64, bandwidth_gbps: Option<f64>, latency_us: Option<f64>) -> Interval {
        Interval {
            start_s,
            bandwidth_gbps,
            latency_us,
            nic_errors: 0,
            nic_error_counters: Default::default(),
            pcie_events: Vec::new(),
            gpu_events: Vec::new(),
            gpu_held_back: Vec::new(),
        }
    }

    #[test]
    fn a_latency_lane_is_drawn_in_microseconds_and_a_bandwidth_lane_in_gbps() {
        let latency: Vec<Interval> =
            [2.0, 2.1, 3.4].iter().enumerate().map(|(i, &us)| interval(i as f64, None, Some(us))).collect();
        let bandwidth: Vec<Interval> =
            [100.0, 90.0].iter().enumerate().map(|(i, &gbps)| interval(i as f64, Some(gbps), None)).collect();
        let soak = json!({
            "duration_s": 30, "interval_s": 10, "why": "level r1: test", "stability": "PASS",
            "lanes": [
                {"lane": "write_lat-host-rxe0", "intervals": latency, "stability": judge_latency(&latency, None, 0)},
                {"lane": "write_bw-host-rxe0", "intervals": bandwidth, "stability": judge(&bandwidth, None, 0)},
            ],
        });
        let html = super::section(Some(&soak));
        // Median of [2.0, 2.1, 3.4] is 2.1; 3.4 is (3.4 - 2.1) / 2.1 = 61.9 % above it.
        assert!(
            html.contains("<p>Median 2.10 us, worst interval 2 (61.9 % above). Rise level: none"),
            "{html}"
        );
        // Median of [100, 90] is 95; 90 is 5.3 % below it.
        assert!(
            html.contains("<p>Median 95.000 Gb/s, worst interval 1 (5.3 % below). Dip level: none"),
            "{html}"
        );
        assert!(html.contains(">us<") && html.contains(">Gb/s<"), "both axes are labelled: {html}");
    }
}
