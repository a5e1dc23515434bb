#!/usr/bin/env python3
"""Bandwidth over message size from gdrperf result files (CSV or JSON).

One line per file x memory mode x GPU (x test, when files hold several tests), x axis the
message size on a log2 scale, y the average bandwidth.

    scripts/plot_bw.py results/node1/write_bw-host.json results/node1/write_bw-cuda.json -o bw.png
    scripts/plot_bw.py run.csv --metric bw_peak_mib_s -o peak.png

plot_compare.py imports read_results() and size_axis() from here.
"""
import argparse
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display needed (CI, ssh sessions)
import matplotlib.pyplot as plt  # noqa: E402  (after use())

UNITS = {"bw_avg_gbit_s": "Gb/s", "bw_peak_gbit_s": "Gb/s", "bw_avg_mib_s": "MiB/s",
         "bw_peak_mib_s": "MiB/s", "msg_rate_mpps": "Mpps"}


def read_results(path):
    """(metadata dict, list of row dicts) of a gdrperf CSV or JSON result file.

    JSON: {"metadata": {...}, "results": [...]}. CSV: leading "# key: value" lines are
    metadata, then a header and one row per size. Numbers are converted where they parse."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith(".json") or text.lstrip().startswith(("{", "[")):
        document = json.loads(text)
        if isinstance(document, list):
            return {}, document
        return document.get("metadata") or {}, document["results"]
    lines = text.splitlines()
    metadata = {}
    while lines and lines[0].lstrip().startswith("#"):
        key, _, value = lines.pop(0).lstrip("# ").partition(":")
        if value:
            metadata[key.strip()] = value.strip()
    rows = []
    for row in csv.DictReader(lines):
        for key, value in row.items():
            try:
                row[key] = float(value) if "." in value or "e" in value else int(value)
            except (TypeError, ValueError):
                pass
        rows.append(row)
    return metadata, rows


def mode_label(row):
    """"cuda", or "cuda/host" when the two sides differ; plus the GPU when there is one."""
    local, remote = row.get("mem_local") or "host", row.get("mem_remote") or ""
    label = local if remote in ("", local) else f"{local}/{remote}"
    gpu = row.get("gpu_local") or ""
    return f"{label} {gpu}".strip()


def size_axis(axes):
    """Log2 x axis labelled 2, 64, 1K, 32K, 1M like perftest's size column."""
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda x, _: next((f"{x / 2 ** p:g}{s}" for p, s in ((20, "M"), (10, "K")) if x >= 2 ** p), f"{x:g}")))
    axes.set_xlabel("message size [bytes]")
    axes.grid(True, which="major", alpha=0.3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="gdrperf result files (.csv or .json)")
    parser.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    parser.add_argument("--metric", default="bw_avg_gbit_s", help="column to plot (default: %(default)s)")
    parser.add_argument("--title", help="plot title (default: test, host and device of the first file)")
    args = parser.parse_args()

    figure, axes = plt.subplots(figsize=(9, 5.5))
    first_metadata = None
    for path in args.files:
        metadata, rows = read_results(path)
        first_metadata = first_metadata if first_metadata is not None else metadata
        rows = [row for row in rows if isinstance(row.get(args.metric), (int, float))]
        if not rows:
            sys.exit(f"plot_bw.py: {path} has no numeric {args.metric!r} column")
        tests = {row.get("test") for row in rows}
        lines = {}
        for row in rows:
            parts = [os.path.basename(path)] if len(args.files) > 1 else []
            parts += [row["test"]] if len(tests) > 1 else []
            lines.setdefault(" ".join(parts + [mode_label(row)]), []).append((row["bytes"], row[args.metric]))
        for label, points in sorted(lines.items()):
            points.sort()
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)

    size_axis(axes)
    axes.set_ylabel(f"{args.metric} [{UNITS.get(args.metric, '')}]")
    axes.set_ylim(bottom=0)
    meta = first_metadata or {}
    axes.set_title(args.title or " ".join(str(part) for part in (
        meta.get("test", ""), "on", meta.get("host", "?"), f"({meta.get('device', '?')})", meta.get("date", "")[:10])))
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"plot_bw.py: wrote {args.output}")


if __name__ == "__main__":
    main()
