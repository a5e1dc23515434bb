#!/usr/bin/env python3
"""The ratio of two runs, or of two memory modes, per message size.

Two runs (as `gdrperf compare BASE NEW`): rows joined on test, memory modes, GPU and size;
y = NEW / BASE of the metric, with the tolerance band around 1.

    scripts/plot_compare.py base.json new.json --tolerance 5 -o ratio.png

Memory modes of one run (as `gdrperf compare RUN --by mem`): y = each mode's speed-up over the
baseline mode (for latency, baseline time / mode time), so > 1 is faster either way.

    scripts/plot_compare.py host.json cuda.json cuda-staged.json --by mem -o speedup.png
"""
import argparse
import os

from plot_bw import NAMES, fail, mode_label, plt, read_results, run_label, run_main, size_axis


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
                fail(f"{path}: a second row for {key}; one run per file, please")
            if isinstance(row.get(metric), (int, float)):
                table[key] = row[metric]
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="BASE NEW, or the file(s) of one run with --by mem")
    parser.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
    parser.add_argument("--by", choices=["mem"], help="compare the memory modes inside one run")
    parser.add_argument("--baseline", help="with --by mem: the reference mode (default cuda-staged, else host)")
    parser.add_argument("--metric", help="column (default bw_avg_gbit_s, else t_typical_us)")
    parser.add_argument("--tolerance", type=float, default=5.0, help="band around 1, in percent (default 5)")
    args = parser.parse_args()

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
                    lines.setdefault(f"{test} {mode} {group}".strip(), []).append((size, speedup))
        metadata = read_results(args.files[0])[0]
        ylabel = f"speed-up over {baseline}: ratio of {NAMES.get(metric, metric)} (no unit)"
        title = f"memory modes vs {baseline}: {run_label(metadata, os.path.basename(args.files[0]))}"
    else:
        if len(args.files) != 2:
            fail(f"give BASE and NEW (got {len(args.files)} files), or add --by mem")
        base, new = keyed(args.files[:1], metric), keyed(args.files[1:], metric)
        for key in sorted(base.keys() & new.keys()):
            if base[key]:
                test, mode, gpu, size = key
                lines.setdefault(f"{test} {mode} {gpu}".strip(), []).append((size, new[key] / base[key]))
        better = "lower" if lower_is_better else "higher"
        ylabel = f"ratio new / base of {NAMES.get(metric, metric)} (no unit; {better} is better)"
        # The runs by host, date and commit (their metadata); file names only when they have none.
        base_metadata, new_metadata = read_results(args.files[0])[0], read_results(args.files[1])[0]
        test = new_metadata.get("test") or first_rows[0].get("test", "")
        title = (f"{test}: {run_label(new_metadata, os.path.basename(args.files[1]))}"
                 f" vs {run_label(base_metadata, os.path.basename(args.files[0]))}")
    if not lines:
        fail(f"no size is present in both inputs with a nonzero value")

    figure, axes = plt.subplots(figsize=(9, 5.5))
    for label, points in sorted(lines.items()):
        points.sort()
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)
    axes.axhline(1.0, color="black", linewidth=0.8)
    if args.by != "mem":
        axes.axhspan(1 - args.tolerance / 100, 1 + args.tolerance / 100, color="grey", alpha=0.15,
                     label=f"±{args.tolerance:g}% tolerance")
    size_axis(axes)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=120)
    print(f"plot_compare.py: wrote {args.output}")


if __name__ == "__main__":
    run_main(main)
