//! Two small inline SVG charts for the acceptance report: a value over message size (bandwidth
//! over size) and one bar per statistic (latency percentiles), each with the threshold drawn
//! as a dashed line. The SVG is text in the page: nothing is fetched, no font is named beyond
//! the generic `sans-serif`, no script runs.
//!
//! Hand-written rather than a plotting crate (plotters has an SVG backend): two chart kinds of
//! a few dozen elements each, deterministic output a test can read, and no font machinery or
//! twenty more crates to build.

use crate::html_text::escape;

/// Width and height of every chart, in SVG user units (pixels at 100%).
const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 240.0;
/// Room for the axis labels: left, right, top, bottom.
const MARGIN: (f64, f64, f64, f64) = (64.0, 16.0, 24.0, 44.0);

/// One chart: what is drawn and what the threshold line says.
pub struct Chart<'a> {
    pub title: &'a str,
    pub y_label: &'a str,
    /// The threshold in the chart's unit, drawn dashed (`None`: not drawn).
    pub threshold: Option<f64>,
}

/// A value over message size: `points` are `(bytes, value)`, plotted on a log2 size axis, one
/// marker per size and a line through them.
pub fn over_size(chart: &Chart, points: &[(u64, f64)]) -> String {
    let mut points: Vec<(u64, f64)> =
        points.iter().copied().filter(|(bytes, value)| *bytes > 0 && value.is_finite()).collect();
    points.sort_by_key(|(bytes, _)| *bytes);
    if points.is_empty() {
        return empty(chart, "no measured sizes in the result file");
    }
    let (low, high) = (points[0].0 as f64, points[points.len() - 1].0 as f64);
    let (low, high) = if low == high { (low / 2.0, high * 2.0) } else { (low, high) };
    let top = nice_ceiling(points.iter().map(|(_, value)| *value).chain(chart.threshold).fold(0.0, f64::max));
    let x = |bytes: f64| {
        MARGIN.0 + (bytes.log2() - low.log2()) / (high.log2() - low.log2()) * (WIDTH - MARGIN.0 - MARGIN.1)
    };
    let y = |value: f64| HEIGHT - MARGIN.3 - value / top * (HEIGHT - MARGIN.2 - MARGIN.3);
    let mut svg = frame(chart);
    for step in 0..=4 {
        let value = top * f64::from(step) / 4.0;
        svg.push_str(&y_tick(y(value), &format_number(value)));
    }
    for (bytes, _) in &points {
        let at = x(*bytes as f64);
        svg.push_str(&format!(
            "<text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
            HEIGHT - MARGIN.3 + 16.0,
            escape(&human_bytes(*bytes))
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">message size</text>\n",
        (MARGIN.0 + WIDTH - MARGIN.1) / 2.0,
        HEIGHT - 6.0
    ));
    if let Some(threshold) = chart.threshold {
        svg.push_str(&threshold_line(y(threshold), threshold));
    }
    let line: Vec<String> =
        points.iter().map(|(bytes, value)| format!("{:.1},{:.1}", x(*bytes as f64), y(*value))).collect();
    svg.push_str(&format!(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\n",
        line.join(" ")
    ));
    for (bytes, value) in &points {
        svg.push_str(&format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1f5fa8\"><title>{}: {}</title></circle>\n",
            x(*bytes as f64),
            y(*value),
            escape(&human_bytes(*bytes)),
            format_number(*value)
        ));
    }
    svg + "</svg>\n"
}

/// Bandwidth interval by interval over a soak: `points` are `(interval number, value, marked)`,
/// placed by number (intervals are of one length); a marked interval (something moved, or the
/// worst) is drawn as a red square, one that measured nothing as a red cross.
pub fn over_time(chart: &Chart, points: &[(f64, Option<f64>, bool)]) -> String {
    if points.is_empty() {
        return empty(chart, "no soak intervals");
    }
    let end = points.iter().map(|(start, ..)| *start).fold(0.0, f64::max).max(1.0);
    let top = nice_ceiling(
        points.iter().filter_map(|(_, value, _)| *value).chain(chart.threshold).fold(0.0, f64::max),
    );
    let x = |seconds: f64| MARGIN.0 + seconds / end * (WIDTH - MARGIN.0 - MARGIN.1);
    let y = |value: f64| HEIGHT - MARGIN.3 - value / top * (HEIGHT - MARGIN.2 - MARGIN.3);
    let mut svg = frame(chart);
    for step in 0..=4 {
        let value = top * f64::from(step) / 4.0;
        svg.push_str(&y_tick(y(value), &format_number(value)));
    }
    let middle = (end / 2.0).round();
    for number in [0.0, middle, end] {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
            x(number),
            HEIGHT - MARGIN.3 + 16.0,
            format_number(number)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">interval</text>\n",
        (MARGIN.0 + WIDTH - MARGIN.1) / 2.0,
        HEIGHT - 6.0
    ));
    if let Some(threshold) = chart.threshold {
        svg.push_str(&threshold_line(y(threshold), threshold));
    }
    let line: Vec<String> = points
        .iter()
        .filter_map(|(start, value, _)| Some(format!("{:.1},{:.1}", x(*start), y((*value)?))))
        .collect();
    svg.push_str(&format!(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\n",
        line.join(" ")
    ));
    for (index, (start, value, marked)) in points.iter().enumerate() {
        let Some(value) = value else {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"14\" fill=\"#b00020\">&#215;<title>interval {index}: nothing measured</title></text>\n",
                x(*start),
                HEIGHT - MARGIN.3 - 4.0
            ));
            continue;
        };
        let (cx, cy) = (x(*start), y(*value));
        if *marked {
            svg.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"#b00020\"><title>interval {index}: {}</title></rect>\n",
                cx - 5.0,
                cy - 5.0,
                format_number(*value)
            ));
        } else {
            svg.push_str(&format!(
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3\" fill=\"#1f5fa8\"><title>interval {index}: {}</title></circle>\n",
                format_number(*value)
            ));
        }
    }
    svg + "</svg>\n"
}

/// One bar per named statistic (`min`, `typical`, `p99`, ...), on a log10 axis so that a tail
/// a thousand times the median still leaves the median readable.
pub fn bars(chart: &Chart, bars: &[(&str, f64)]) -> String {
    let bars: Vec<(&str, f64)> =
        bars.iter().copied().filter(|(_, value)| *value > 0.0 && value.is_finite()).collect();
    if bars.is_empty() {
        return empty(chart, "no latency statistics in the result file");
    }
    // A log axis has no place for a threshold of 0 (or below): such a line is left out, never
    // allowed to make the axis start at 0 (its decades would never reach the top: issue 44).
    let threshold =
        chart.threshold.filter(|threshold| *threshold >= f64::MIN_POSITIVE && threshold.is_finite());
    let largest = bars.iter().map(|(_, value)| *value).chain(threshold).fold(0.0, f64::max);
    let smallest = bars.iter().map(|(_, value)| *value).chain(threshold).fold(f64::INFINITY, f64::min);
    let (low, high) = (10f64.powf(smallest.log10().floor()), 10f64.powf(largest.log10().ceil().max(1.0)));
    let high = if high <= low { low * 10.0 } else { high };
    let y = |value: f64| {
        HEIGHT
            - MARGIN.3
            - (value.log10() - low.log10()) / (high.log10() - low.log10()) * (HEIGHT - MARGIN.2 - MARGIN.3)
    };
    let mut svg = frame(chart);
    // One tick a decade, at most MAX_DECADES of them (a tiny threshold such as 1e-300 spans
    // hundreds): then every n-th decade.
    let decades = (high.log10() - low.log10()).round().max(1.0) as i32;
    let step = (decades + MAX_DECADES - 1) / MAX_DECADES;
    for power in (0..=decades).step_by(step.max(1) as usize) {
        let decade = low * 10f64.powi(power);
        svg.push_str(&y_tick(y(decade), &format_number(decade)));
    }
    let slot = (WIDTH - MARGIN.0 - MARGIN.1) / bars.len() as f64;
    for (index, (name, value)) in bars.iter().enumerate() {
        let left = MARGIN.0 + slot * index as f64 + slot * 0.15;
        let top = y(*value);
        svg.push_str(&format!(
            "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#1f5fa8\"><title>{}: {}</title></rect>\n",
            slot * 0.7,
            (HEIGHT - MARGIN.3 - top).max(0.0),
            escape(name),
            format_number(*value)
        ));
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\n",
            left + slot * 0.35,
            top - 3.0,
            format_number(*value)
        ));
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
            left + slot * 0.35,
            HEIGHT - MARGIN.3 + 16.0,
            escape(name)
        ));
    }
    if let Some(threshold) = threshold {
        svg.push_str(&threshold_line(y(threshold), threshold));
    }
    svg + "</svg>\n"
}

/// The most decade ticks a log axis shows.
const MAX_DECADES: i32 = 12;

fn frame(chart: &Chart) -> String {
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\">\n<title>{}</title>\n",
        escape(chart.title)
    );
    svg.push_str(&format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
        MARGIN.0,
        MARGIN.2,
        WIDTH - MARGIN.0 - MARGIN.1,
        HEIGHT - MARGIN.2 - MARGIN.3
    ));
    svg.push_str(&format!(
        "<text x=\"14\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">{}</text>\n",
        HEIGHT / 2.0,
        HEIGHT / 2.0,
        escape(chart.y_label)
    ));
    svg
}

fn y_tick(at: f64, label: &str) -> String {
    format!(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"#ddd\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>\n",
        MARGIN.0,
        WIDTH - MARGIN.1,
        MARGIN.0 - 4.0,
        at + 4.0,
        escape(label)
    )
}

/// The threshold as a dashed line across the plot, named in a legend above it (outside the
/// plot, so that it never covers a bar's label).
fn threshold_line(at: f64, value: f64) -> String {
    let legend_right = WIDTH - MARGIN.1;
    format!(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"#b00020\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/>\n\
         <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"12\" y2=\"12\" stroke=\"#b00020\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/>\n\
         <text x=\"{legend_right:.1}\" y=\"16\" text-anchor=\"end\" font-size=\"11\" fill=\"#b00020\">threshold {}</text>\n",
        MARGIN.0,
        WIDTH - MARGIN.1,
        legend_right - 120.0,
        legend_right - 96.0,
        format_number(value)
    )
}

fn empty(chart: &Chart, why: &str) -> String {
    let mut svg = frame(chart);
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n</svg>\n",
        WIDTH / 2.0,
        HEIGHT / 2.0,
        escape(why)
    ));
    svg
}

/// A message size as sizes are said: `2 B`, `4 KiB`, `1 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(size, _)| bytes >= *size && bytes.is_multiple_of(*size))
        .map(|(size, unit)| format!("{} {unit}", bytes / size))
        .unwrap_or_else(|| format!("{bytes} B"))
}

/// The smallest 1, 2 or 5 × 10^n at or above `value` (an axis top that reads well).
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let decade = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|step| step * decade).find(|top| *top >= value).unwrap_or(10.0 * decade)
}

/// Three significant figures, without exponent for everyday magnitudes.
fn format_number(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else if value.abs() >= 100.0 || (value.abs() >= 1.0 && value.fract() == 0.0) {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else if value.abs() >= 0.01 {
        format!("{value:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{value:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_bytes(2), "2 B");
        assert_eq!(human_bytes(65536), "64 KiB");
        assert_eq!(human_bytes(3 << 20), "3 MiB");
        assert_eq!(human_bytes(1000), "1000 B");
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(0.478), 0.5);
        assert_eq!(nice_ceiling(95.0), 100.0);
        assert_eq!(nice_ceiling(120.0), 200.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
    }

    #[test]
    fn points_sit_where_their_values_say() {
        let chart = Chart { title: "t", y_label: "Gb/s", threshold: Some(50.0) };
        let svg = over_size(&chart, &[(4096, 100.0), (1024, 0.0)]);
        // Axis top 100: 100 Gb/s at the plot's top edge, 0 at the bottom, sizes at both ends.
        assert!(svg.contains(&format!("cx=\"{:.1}\" cy=\"{:.1}\"", WIDTH - MARGIN.1, MARGIN.2)), "{svg}");
        assert!(svg.contains(&format!("cx=\"{:.1}\" cy=\"{:.1}\"", MARGIN.0, HEIGHT - MARGIN.3)), "{svg}");
        assert!(svg.contains("threshold 50"), "{svg}");
    }

    #[test]
    fn labels_are_escaped_and_nothing_to_plot_is_said() {
        let chart = Chart { title: "<b>x</b>", y_label: "us", threshold: None };
        let svg = bars(&chart, &[]);
        assert!(svg.contains("&lt;b&gt;x&lt;/b&gt;") && !svg.contains("<b>"), "{svg}");
        assert!(svg.contains("no latency statistics"), "{svg}");
    }

    /// Issue 44 item 7: a latency threshold of 0 made the tick loop start at 0 and never end.
    #[test]
    fn a_threshold_of_zero_or_a_tiny_one_ends_and_draws_a_bounded_axis() {
        for threshold in [0.0, -1.0, f64::NAN, 1e-300, 5e-324] {
            let chart = Chart { title: "t", y_label: "us", threshold: Some(threshold) };
            let svg = bars(&chart, &[("min", 1.5), ("p99", 40.0)]);
            assert!(svg.ends_with("</svg>\n"), "{threshold}");
            assert!(svg.matches("<line").count() < 40, "{threshold}: a bounded number of ticks");
        }
    }
}
