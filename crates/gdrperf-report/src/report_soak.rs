//! The soak section of `report.html`, from `soak.json` (written by `gdrperf accept --soak`):
//! per lane the bandwidth interval by interval with the intervals where something moved
//! marked, the stability verdict, its level with its source, and the reasons tied to their
//! intervals.

use serde_json::Value;

use crate::report_html::{cell, escape};
use crate::svg_chart::{self, Chart};

/// The soak file's name in an acceptance folder.
pub const FILE_NAME: &str = "soak.json";

/// The section, or nothing when the run had no soak.
pub fn section(soak: Option<&Value>) -> String {
    let Some(soak) = soak else { return String::new() };
    let mut html = format!(
        "<h2 id=\"soak\">Soak</h2>\n<p>Stability {} &middot; {} s in intervals of {} s &middot; {}</p>\n",
        cell(&soak["stability"]),
        cell(&soak["duration_s"]),
        cell(&soak["interval_s"]),
        cell(&soak["why"])
    );
    for lane in soak["lanes"].as_array().into_iter().flatten() {
        let title = format!("soak {}", lane["lane"].as_str().unwrap_or(""));
        let marked: Vec<u64> =
            lane["stability"]["marked"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
        let points: Vec<(f64, Option<f64>, bool)> = lane["intervals"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, interval)| {
                (index as f64, interval["bandwidth_gbps"].as_f64(), marked.contains(&(index as u64)))
            })
            .collect();
        html.push_str(&format!(
            "<div class=\"test\">\n<h3>{} <span class=\"note\">{}</span></h3>\n",
            escape(&title),
            cell(&lane["stability"]["verdict"])
        ));
        html.push_str(&svg_chart::over_time(
            &Chart { title: &title, y_label: "Gb/s", threshold: None },
            &points,
        ));
        html.push_str(&format!(
            "<p>Median {} Gb/s, worst interval {} ({} % below). Dip level: {}</p>\n",
            lane["stability"]["median_gbps"]
                .as_f64()
                .map(|gbps| format!("{gbps:.3}"))
                .unwrap_or_else(|| "-".into()),
            cell(&lane["stability"]["worst_interval"]),
            lane["stability"]["dip_percent"]
                .as_f64()
                .map(|pct| format!("{pct:.1}"))
                .unwrap_or_else(|| "-".into()),
            cell(&lane["stability"]["level"])
        ));
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
