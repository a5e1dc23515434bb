#!/usr/bin/env python3
"""Bandwidth over message size from gdrperf result files (CSV or JSON).

One line per file x memory mode x GPU (x test, when files hold several tests), x axis the
message size on a log2 scale, y the average bandwidth.

    scripts/plot_bw.py results/node1/write_bw-host.json results/node1/write_bw-cuda.json -o bw.png
    scripts/plot_bw.py run.csv --metric bw_peak_mib_s -o peak.png

plot_compare.py, plot_lat.py and plot_matrix.py import read_results(), size_axis(), fail() and
run_main() from here: every plot script ends on bad input with one line and exit 2.
"""
import argparse
import csv
import json
import os
import sys
import tempfile



# The end of every plot script's --help: the exit-code contract every gdrperf tool keeps (README,
# "Exit codes"), as it applies to a script that judges nothing.
EXIT_CODES = ("exit codes, as every gdrperf tool's: 0 the image was written; 2 could not run "
              "(bad flags or input, a missing or unreadable file), said in one line on stderr. "
              "A plot judges nothing, so it never exits 1.")


def fail(message):
    """Ends a plot script as every gdrperf tool ends on bad input: one line on stderr, exit 2."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    sys.exit(2)


def save_figure(figure, output, dpi):
    """Writes the image as every gdrperf writer does (gdrperf-files' create-new-and-rename): into
    a new file beside OUTPUT, then renamed over it, so that a link planted at OUTPUT is refused
    rather than followed (savefig alone opens the name and writes wherever a link points) and a
    reader never sees half an image."""
    if os.path.islink(output):
        fail(f"{output}: is a symbolic link; refusing to write through it (remove it or name another file)")
    folder = os.path.dirname(os.path.abspath(output))
    extension = os.path.splitext(output)[1].lstrip(".") or "png"
    handle, temporary = tempfile.mkstemp(prefix=".plot-", suffix="." + extension, dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            figure.savefig(stream, dpi=dpi, format=extension)
        os.replace(temporary, output)
    except BaseException:
        os.unlink(temporary)
        raise


def run_main(main):
    """Runs a plot script's main(): a missing or unreadable input, or a file that is not what the
    script reads, ends with one line naming it and exit 2, never a Python traceback."""
    try:
        main()
    except OSError as error:
        fail(f"{error.filename or 'output'}: {error.strerror or error}")
    except (ValueError, KeyError, IndexError, TypeError, csv.Error) as error:
        fail(f"cannot read the input: {type(error).__name__}: {error}")


try:
    import matplotlib
except ImportError:
    fail(f"matplotlib is not installed for {sys.executable}: run it as "
         "scripts/plot KIND ... (which makes .cache/plot-venv with matplotlib), or pip install matplotlib")

matplotlib.use("Agg")  # files only: no display needed (CI, ssh sessions)
import matplotlib.pyplot as plt  # noqa: E402  (after use())

UNITS = {"bw_avg_gbit_s": "Gb/s", "bw_peak_gbit_s": "Gb/s", "bw_avg_mib_s": "MiB/s",
         "bw_peak_mib_s": "MiB/s", "msg_rate_mpps": "Mpps"}
# Axis names of the columns (docs/columns.md defines each).
NAMES = {"bw_avg_gbit_s": "average bandwidth", "bw_peak_gbit_s": "peak bandwidth", "bw_avg_mib_s": "average bandwidth",
         "bw_peak_mib_s": "peak bandwidth", "msg_rate_mpps": "message rate", "t_typical_us": "median latency",
         "t_avg_us": "average latency", "p99_us": "99th percentile latency"}


def axis_name(metric):
    """"average bandwidth [Gb/s]": the column's name in words, or the column itself."""
    unit = UNITS.get(metric) or ("us" if metric.endswith("_us") else "")
    return f"{NAMES.get(metric, metric)} [{unit}]" if unit else NAMES.get(metric, metric)


def run_label(metadata, fallback):
    """A run in words from its metadata: "softroce 2026-12-03 15:43 (807450c7)"; fallback without."""
    date = str(metadata.get("date", "")).replace("T", " ").rstrip("Z")[:19]
    commit = str(metadata.get("git_commit") or "")[:8]
    parts = [str(metadata.get("host", "")), date] + ([f"({commit})"] if commit else [])
    label = " ".join(part for part in parts if part)
    return label or fallback


def run_title(metadata, rows):
    """"write_bw on softroce (rxe0), 2026-12-03": the test, host, device and day of a run."""
    test = metadata.get("test") or (rows[0].get("test") if rows else "") or "?"
    host = metadata.get("host") or (rows[0].get("host") if rows else "") or "?"
    device = metadata.get("device") or (rows[0].get("device") if rows else "")
    day = str(metadata.get("date", ""))[:10]
    return f"{test} on {host}" + (f" ({device})" if device else "") + (f", {day}" if day else "")


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
        if not isinstance(document, dict) or not isinstance(document.get("results"), list):
            fail(f"{path}: no 'results' list: is this a gdrperf result file?")
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_CODES)
    parser.add_argument("files", nargs="+", help="gdrperf result files (.csv or .json)")
    parser.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    parser.add_argument("--metric", default="bw_avg_gbit_s", help="column to plot (default: %(default)s)")
    parser.add_argument("--title", help="plot title (default: test, host, device and date of the first file)")
    args = parser.parse_args()

    figure, axes = plt.subplots(figsize=(9, 5.5))
    first = None
    labels = {}
    for path in args.files:
        metadata, rows = read_results(path)
        first = first if first is not None else (metadata, rows)
        # Runs told apart by host, date and commit; the file name only when the file says none.
        label = run_label(metadata, os.path.basename(path))
        labels[label] = labels.get(label, 0) + 1
        run = label if labels[label] == 1 else f"{label} #{labels[label]}"
        rows = [row for row in rows if isinstance(row.get(args.metric), (int, float))]
        if not rows:
            fail(f"{path} has no numeric {args.metric!r} column")
        tests = {row.get("test") for row in rows}
        lines = {}
        for row in rows:
            parts = [run] if len(args.files) > 1 else []
            parts += [row["test"]] if len(tests) > 1 else []
            lines.setdefault(" ".join(parts + [mode_label(row)]), []).append((row["bytes"], row[args.metric]))
        for label, points in sorted(lines.items()):
            points.sort()
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)

    size_axis(axes)
    axes.set_ylabel(axis_name(args.metric))
    axes.set_ylim(bottom=0)
    axes.set_title(args.title or run_title(*first))
    axes.legend(title="memory" if len(args.files) == 1 else "run, memory")
    figure.tight_layout()
    save_figure(figure, args.output, 120)
    print(f"plot_bw.py: wrote {args.output}")


if __name__ == "__main__":
    run_main(main)
