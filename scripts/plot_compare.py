#!/usr/bin/env python3
"""The ratio of two runs, or of two memory modes, per message size, with the 95 % interval of
repeated runs as a band.

Repeated runs (the recipe): plot the JSON of `gdrperf compare`, whose ratios, intervals and
verdicts it draws as computed there (nothing is recomputed here). A regressed size is a red
cross, an undecided one a hollow circle, an improvement a triangle.

    gdrperf compare --base a1.json,a2.json,a3.json --new b1.json,b2.json,b3.json --json cmp.json
    scripts/plot_compare.py cmp.json -o ratio.png

    gdrperf compare h1.csv c1.csv s1.csv h2.csv c2.csv s2.csv --by mem --json modes.json
    scripts/plot_compare.py modes.json -o speedup.png

Single runs, straight from their result files (no interval: one run measures no noise):
y = NEW / BASE of the metric, with the tolerance band around 1; or, with --by mem, each mode's
speed-up over the baseline mode (for latency, baseline time / mode time), so > 1 is faster.

    scripts/plot_compare.py base.json new.json --tolerance 5 -o ratio.png
    scripts/plot_compare.py host.json cuda.json cuda-staged.json --by mem -o speedup.png
"""
import argparse
import json
import math
import os

from plot_bw import NAMES, EXIT_CODES, fail, save_figure, matplotlib, mode_label, plt, read_results, run_label, run_main, size_axis


def metric_of(rows, wanted):
    if wanted:
        return wanted
    return "bw_avg_gbit_s" if any("bw_avg_gbit_s" in row for row in rows) else "t_typical_us"


def keyed(paths, metric):
    """{(test, mode, gpu, bytes): value} over the files; a key seen twice is an error."""
    table = {}
    for path in paths:
        for row in read_results(path)[1]:
            key = (row.get("test", ""), mode_label(row).split(" ")[0], row.get("gpu_local") or "", row["bytes"])
            if key in table:
                fail(f"{path}: a second row for {key}: for repeated runs, plot the --json file of "
                     "gdrperf compare (--base/--new, or --by mem), which holds their intervals")
            if isinstance(row.get(metric), (int, float)):
                table[key] = row[metric]
    return table


def compare_document(path):
    """The JSON of `gdrperf compare --json` (kind "runs" or "modes"), or None for a result file."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if not text.lstrip().startswith("{"):
        return None
    document = json.loads(text)
    if isinstance(document.get("rows"), list) and "tolerance" in document:
        return "runs", document
    if isinstance(document.get("groups"), list) and "baseline" in document:
        return "modes", document
    return None


def interval_of(value):
    """(low, high) of a JSON interval, or (nan, nan) where there is none."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return math.nan, math.nan


def mark_of(row):
    """How a compared row is marked: its finding, else its verdict (older files said
    "regression" as the verdict)."""
    finding = row.get("finding")
    if finding in ("regression", "improvement"):
        return finding
    verdict = row.get("verdict")
    return {"fail": "regression", "regression": "regression", "improvement": "improvement",
            "undecided": "undecided"}.get(verdict, "pass")


def run_lines(document):
    """{label: [(bytes, ratio, low, high, mark)]} from `gdrperf compare --json` of two runs or
    two sets of runs: the ratio new / base is the row's change + 1, its band the row's 95 %
    interval of new / base, as the comparison computed them."""
    lines = {}
    for row in document["rows"]:
        place = " ".join(part for part in (row.get("gpu") or "", f"lane {row['lane']}" if row.get("lane") else "") if part)
        label = " ".join(part for part in (row["test"], row["memory"], place, f"({row['metric']})") if part)
        low, high = interval_of(row.get("interval"))
        lines.setdefault(label, []).append((row["bytes"], 1.0 + row["change"], low, high, mark_of(row)))
    return lines


def mode_lines(document):
    """{label: [(bytes, speedup, low, high, "pass")]} from `gdrperf compare --by mem --json`:
    each mode's speed-up over the baseline and its 95 % interval, the baseline itself left out."""
    lines = {}
    modes, baseline = document["modes"], document["baseline"]
    for group in document["groups"]:
        for mode, speedup, interval in zip(modes, group["speedups"], group["intervals"]):
            if mode == baseline or not isinstance(speedup, (int, float)):
                continue
            low, high = interval_of(interval)
            label = " ".join(part for part in (group["test"], mode, group.get("gpu") or "") if part)
            lines.setdefault(label, []).append((group["bytes"], float(speedup), low, high, "pass"))
    return lines


MARKS = {"regression": dict(marker="X", color="#b00020", s=90, zorder=5, label="regression"),
         "undecided": dict(marker="o", facecolors="none", edgecolors="#c25e00", s=90, zorder=5,
                           label="undecided: more runs a side would decide"),
         "improvement": dict(marker="^", color="#1b7f3a", s=70, zorder=5, label="improvement")}


def draw(lines, ylabel, title, output, tolerance=None):
    """Draws the lines, their interval bands and marks; returns (lines, bands, marks by kind)."""
    figure, axes = plt.subplots(figsize=(12, 5.5))
    bands, marked = 0, {kind: 0 for kind in MARKS}
    for label, points in sorted(lines.items()):
        points.sort()
        sizes = [p[0] for p in points]
        (line,) = axes.plot(sizes, [p[1] for p in points], marker="o", markersize=3, label=label)
        lows, highs = [p[2] for p in points], [p[3] for p in points]
        if any(not math.isnan(low) for low in lows):
            bands += 1
            axes.fill_between(sizes, lows, highs, color=line.get_color(), alpha=0.18, linewidth=0)
            if len(points) == 1:  # a band of one size has no width: a bar instead
                axes.errorbar(sizes, [points[0][1]], yerr=[[points[0][1] - lows[0]], [highs[0] - points[0][1]]],
                              fmt="none", ecolor=line.get_color(), elinewidth=1.5, capsize=5)
        for kind in MARKS:
            at = [p for p in points if p[4] == kind]
            if at:
                marked[kind] += len(at)
                axes.scatter([p[0] for p in at], [p[1] for p in at], **MARKS[kind])
    axes.axhline(1.0, color="black", linewidth=0.8)
    if tolerance is not None:
        axes.axhspan(1 - tolerance, 1 + tolerance, color="grey", alpha=0.12,
                     label=f"±{tolerance * 100:g}% tolerance")
    size_axis(axes)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # one legend entry per mark kind
    if bands:
        unique["shaded: 95% interval"] = matplotlib.patches.Patch(color="grey", alpha=0.3)
    axes.legend(unique.values(), unique.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    figure.tight_layout()
    save_figure(figure, output, 120)
    return len(lines), bands, marked


def side_name(names):
    """One side of a comparison in a title: "b1.csv", or "b1.csv .. b3.csv" for repeated runs."""
    files = [os.path.basename(name.strip()) for name in str(names).split(",") if name.strip()]
    return files[0] if len(files) == 1 else f"{files[0]} .. {files[-1]}" if files else "?"


def ratio_label(metrics, what):
    """The y axis: a ratio, said to be one, of the metric it divides."""
    metrics = sorted(metrics)
    if len(metrics) == 1:
        metric = metrics[0]
        better = "lower" if metric.endswith("_us") else "higher"
        return f"{what}: a ratio, no unit\n(of {NAMES.get(metric, metric)}; {better} is better)"
    return f"{what}: a ratio, no unit\n(of each line's metric)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_CODES)
    parser.add_argument("files", nargs="+",
                        help="gdrperf compare's --json file; or BASE NEW result files; or the file(s) of one run with --by mem")
    parser.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    parser.add_argument("--by", choices=["mem"], help="compare the memory modes inside one run")
    parser.add_argument("--baseline", help="with --by mem: the reference mode (default cuda-staged, else host)")
    parser.add_argument("--metric", help="column (default bw_avg_gbit_s, else t_typical_us)")
    parser.add_argument("--tolerance", type=float, default=5.0, help="band around 1, in percent (default 5)")
    args = parser.parse_args()

    found = compare_document(args.files[0])
    if found:
        if len(args.files) != 1 or args.by or args.metric or args.baseline:
            fail("a gdrperf compare --json file is plotted alone, as written: give it without other files, "
                 "--by, --metric or --baseline")
        kind, document = found
        if kind == "runs":
            lines = run_lines(document)
            ylabel = ratio_label({row["metric"] for row in document["rows"]}, "new / base")
            runs = f"{document['base_runs']} vs {document['new_runs']} runs"
            title = (f"{side_name(document['new'])} vs {side_name(document['base'])}: "
                     f"verdict {document['verdict']} ({runs})")
            tolerance = document["tolerance"]
        else:
            lines = mode_lines(document)
            metrics = {group["metric"] for group in document["groups"]}
            ylabel = ratio_label(metrics, f"speed-up over {document['baseline']}")
            title = f"memory modes vs {document['baseline']}, repeated runs"
            tolerance = None
        if not lines:
            fail(f"{args.files[0]}: no compared row to plot")
        drawn = draw(lines, ylabel, title, args.output, tolerance)
        say(args.output, drawn)
        return

    first_rows = read_results(args.files[0])[1]
    metric = metric_of(first_rows, args.metric)
    lower_is_better = metric.endswith("_us")
    lines = {}
    if args.by == "mem":
        table = keyed(args.files, metric)
        modes = sorted({key[1] for key in table})
        baseline = args.baseline or next((m for m in ("cuda-staged", "host") if m in modes), modes[0])
        if baseline not in modes or len(modes) < 2:
            fail(f"--by mem needs the baseline {baseline!r} and another mode; found {modes}")
        gpus = sorted({key[2] for key in table if key[2]}) or [""]
        for (test, mode, gpu, size), value in table.items():
            # Host rows have no GPU: they are held against each GPU's baseline (as gdrperf
            # compare --by mem sets them beside every GPU); a GPU without one uses the host's.
            for group in [gpu] if gpu else gpus:
                reference = table.get((test, baseline, group, size), table.get((test, baseline, "", size)))
                if mode != baseline and reference and value:
                    speedup = reference / value if lower_is_better else value / reference
                    lines.setdefault(f"{test} {mode} {group}".strip(), []).append(
                        (size, speedup, math.nan, math.nan, "pass"))
        metadata = read_results(args.files[0])[0]
        ylabel = ratio_label({metric}, f"speed-up over {baseline}")
        title = f"memory modes vs {baseline}: {run_label(metadata, os.path.basename(args.files[0]))}"
        tolerance = None
    else:
        if len(args.files) != 2:
            fail(f"give BASE and NEW (got {len(args.files)} files), gdrperf compare's --json file, or add --by mem")
        base, new = keyed(args.files[:1], metric), keyed(args.files[1:], metric)
        for key in sorted(base.keys() & new.keys()):
            if base[key]:
                test, mode, gpu, size = key
                lines.setdefault(f"{test} {mode} {gpu}".strip(), []).append(
                    (size, new[key] / base[key], math.nan, math.nan, "pass"))
        ylabel = ratio_label({metric}, "new / base")
        # The runs by host, date and commit (their metadata); file names only when they have none.
        base_metadata, new_metadata = read_results(args.files[0])[0], read_results(args.files[1])[0]
        test = new_metadata.get("test") or first_rows[0].get("test", "")
        title = (f"{test}: {run_label(new_metadata, os.path.basename(args.files[1]))}"
                 f" vs {run_label(base_metadata, os.path.basename(args.files[0]))}\n"
                 "single runs: no interval (repeat each side and plot gdrperf compare --json)")
        tolerance = args.tolerance / 100
    if not lines:
        fail("no size is present in both inputs with a nonzero value")
    say(args.output, draw(lines, ylabel, title, args.output, tolerance))


def say(output, drawn):
    lines, bands, marked = drawn
    marks = ", ".join(f"{count} {kind}" for kind, count in marked.items())
    print(f"plot_compare.py: wrote {output}: {lines} lines, {bands} interval bands; marked {marks}")


if __name__ == "__main__":
    run_main(main)
