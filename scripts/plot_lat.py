#!/usr/bin/env python3
"""Latency percentile distributions from .hgrm files, several runs overlaid.

The .hgrm text is what the gdr-*-lat benches write with --hdr-dir (one file per size) and what
HdrHistogram's Java tools print: value, percentile, total count, 1/(1-percentile). As in
HdrHistogram's plotter, x is the percentile on a log "nines" scale (90%, 99%, 99.9%, ...), so
the tail gets as much room as the median; y is the latency in microseconds.

    scripts/plot_lat.py results/node1/read_lat-host/2.hgrm results/node1/read_lat-cuda/2.hgrm -o lat.png
    scripts/plot_lat.py a.hgrm b.hgrm --label before --label after --log-y -o lat.png
    scripts/plot_lat.py hdr/read_lat-2B.hgrm hdr/read_lat-4096B.hgrm --run read_lat.json -o lat.png

Legend entries come from the file names the benches give (read_lat-4096B.hgrm: "read_lat 4096 B"),
with the memory kinds and the run's host and date when --run names the run's JSON result file.
"""
import argparse
import math
import os

# plot_bw checks for matplotlib (one line and exit 2 without it) and selects the file backend.
import matplotlib  # noqa: E402
from plot_bw import EXIT_CODES, fail, save_figure, mode_label, plt, read_results, run_label, run_main, run_title  # noqa: E402


def read_hgrm(path):
    """[(value_us, percentile)] of the table rows, and the footer's max (None if absent)."""
    points, maximum = [], None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if line.startswith("#[Max"):
                maximum = float(line.split("=")[1].split(",")[0])
                continue
            if len(fields) < 3 or line.startswith("#"):
                continue
            try:
                points.append((float(fields[0]), float(fields[1])))
            except ValueError:
                continue  # the header line
    return points, maximum


def hgrm_label(path):
    """"read_lat 4096 B" from the benches' read_lat-4096B.hgrm; the file name otherwise."""
    stem = os.path.basename(path).rsplit(".", 1)[0]
    test, _, size = stem.rpartition("-")
    if test and size.endswith("B") and size[:-1].isdigit():
        return f"{test} {size[:-1]} B"
    return stem


def nines(x, _position=None):
    """Axis label of x = 1/(1-p): 1 -> 0%, 10 -> 90%, 1000 -> 99.9%."""
    if x < 1.5:
        return "0%"
    digits = max(0, round(math.log10(x)) - 2)
    return f"{100 * (1 - 1 / x):.{digits}f}%"


# The spread (largest / smallest plotted latency) above which "auto" picks a log axis: past
# it, a linear axis scaled to the tail puts every median in the bottom tenth of the plot.
LOG_SPREAD = 10.0


def y_scale(asked, values):
    """"log" or "linear": as asked, or for "auto" log when the values span more than LOG_SPREAD."""
    if asked != "auto":
        return asked
    positive = [value for value in values if value > 0]
    return "log" if positive and max(positive) / min(positive) > LOG_SPREAD else "linear"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_CODES)
    parser.add_argument("files", nargs="+", help=".hgrm percentile distributions")
    parser.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    parser.add_argument("--label", action="append", default=[],
                        help="legend entry per file, in order (default: test and size from the file name)")
    parser.add_argument("--run", action="append", default=[],
                        help="the run's JSON result file (one for all .hgrm files, or one per file): "
                             "memory kinds, host and date for the legend and title")
    parser.add_argument("--y-scale", choices=["auto", "linear", "log"], default="auto",
                        help="latency axis: log, linear, or auto (default): log when the plotted latencies "
                             f"span more than {LOG_SPREAD:g}x, where a linear axis would flatten the medians")
    parser.add_argument("--log-y", action="store_const", const="log", dest="y_scale", help="same as --y-scale log")
    parser.add_argument("--title", help="plot title (default: from --run, else the tests' names)")
    args = parser.parse_args()
    if args.run and len(args.run) not in (1, len(args.files)):
        fail(f"{len(args.run)} --run for {len(args.files)} files: give one, or one per file")
    runs = [read_results(path) for path in args.run]
    if args.label and len(args.label) != len(args.files):
        fail(f"{len(args.label)} --label for {len(args.files)} files: give one per file or none")

    figure, axes = plt.subplots(figsize=(9, 5.5))
    top = 10.0
    plotted = []
    for index, path in enumerate(args.files):
        points, maximum = read_hgrm(path)
        # Percentile 1.0 has no finite place on this axis; its value is the footer's Max.
        finite = [(1 / (1 - p), value) for value, p in points if p < 1.0]
        if not finite:
            fail(f"{path} has no percentile rows (is it an .hgrm file?)")
        top = max(top, finite[-1][0])
        name = args.label[index] if args.label else hgrm_label(path)
        if runs and not args.label:
            metadata, rows = runs[index] if len(runs) > 1 else runs[0]
            memory = mode_label(rows[0]) if rows else ""
            name += f", {memory}" + (f", {run_label(metadata, '')}" if len(runs) > 1 else "")
        if maximum is not None:
            name += f" (max {maximum:g} us)"
        axes.plot([x for x, _ in finite], [v for _, v in finite], drawstyle="steps-post", label=name)
        plotted += [v for _, v in finite]

    axes.set_xscale("log")
    axes.set_xlim(1, 10 ** math.ceil(math.log10(top)))
    axes.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, numticks=12))
    axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(nines))
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if y_scale(args.y_scale, plotted) == "log":
        axes.set_yscale("log")
        axes.set_ylabel("latency [us], log scale")
    else:
        axes.set_ylim(bottom=0)
        axes.set_ylabel("latency [us]")
    axes.set_xlabel("percentile")
    title = args.title or (run_title(*runs[0]) if runs else "latency by percentile: "
                           + ", ".join(sorted({hgrm_label(path).split(" ")[0] for path in args.files})))
    axes.set_title(title)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    save_figure(figure, args.output, 120)
    print(f"plot_lat.py: wrote {args.output}")


if __name__ == "__main__":
    run_main(main)
