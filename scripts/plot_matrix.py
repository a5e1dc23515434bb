#!/usr/bin/env python3
"""A gathered job's matrix.csv as a node-by-node heatmap, one panel per lane, named parts marked.

Rows are client nodes, columns server nodes, the colour the bandwidth of the largest size each
pair measured (matrix.csv of `gdrperf slurm`; empty cells: pairs not run or without rows). With
--findings (the JSON of `gdrperf fleet judge --json`) the named parts are framed in red: a node
(and a node without rows) by its row and column in every panel, a NIC port or GPU by its row and
column in the panel of its lane (the lane whose device it is, from matrix.csv's client_device and
server_device; every panel when the file has no device columns), a link by its two cells; every
finding is listed under the panels.

    scripts/plot_matrix.py JOB/matrix.csv --findings fleet.json -o matrix.png
"""
import argparse
import csv
import json
import math
import os
import re

from plot_bw import EXIT_CODES, fail, plt, run_main, save_figure

NEEDED = ("client_node", "server_node", "bw_avg_gbit_s")
# Kinds of `gdrperf fleet judge` findings (crates/gdrperf-fleet/src/judge.rs, PartKind).
NODE_KINDS = {"node", "node-without-rows"}
PORT_KINDS = {"nic-port", "nic-port-sending", "nic-port-receiving", "nic-port-intermittent", "gpu",
              "nic-port-or-gpu", "port-without-rows"}
KIND_WORDS = {"node": "node", "node-without-rows": "node without rows", "nic-port": "NIC port",
              "nic-port-sending": "NIC port, when sending", "nic-port-receiving": "NIC port, when receiving",
              "gpu": "GPU", "nic-port-or-gpu": "NIC port or its GPU", "link": "link",
              "class-below-ceiling": "class below its ceiling", "rail": "rail",
              "nic-port-intermittent": "NIC port, intermittent", "port-without-rows": "NIC port without rows"}
MARK = "#d62728"
NO_ROWS = "(no rows)"
LISTED = 12


def natural(text):
    """node2 before node10: digit runs compared as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def read_matrix(path):
    """[(client, server, lane, gbps, client_device, server_device)] of a matrix.csv."""
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            columns = reader.fieldnames or []
            for column in NEEDED:
                if column not in columns:
                    fail(f"{path}: no column '{column}': is this the matrix.csv of gdrperf slurm?")
            cells = []
            for row in reader:
                try:
                    gbps = float(row["bw_avg_gbit_s"])
                except (TypeError, ValueError):
                    continue
                if math.isfinite(gbps):
                    cells.append((row["client_node"], row["server_node"], row.get("lane") or "",
                                  gbps, row.get("client_device") or "", row.get("server_device") or ""))
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    except (csv.Error, UnicodeDecodeError) as error:
        fail(f"{path}: not a CSV file ({error})")
    if not cells:
        fail(f"{path}: no bandwidth in any row")
    return cells


def read_findings(path):
    """The findings list of a `gdrperf fleet judge --json` file."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        fail(f"{path}: not JSON ({error})")
    findings = document.get("findings") if isinstance(document, dict) else None
    if not isinstance(findings, list) or not all(isinstance(item, dict) for item in findings):
        fail(f"{path}: no 'findings' list: is this the --json of gdrperf fleet judge?")
    return findings


def finding_text(finding):
    """A short line: "NIC port, when sending: node0015 mlx5_0, 28.9 % below"."""
    words = KIND_WORDS.get(finding.get("kind"), str(finding.get("kind")))
    where = " ".join(str(finding[key]) for key in ("node", "device") if finding.get(key))
    if finding.get("peer_node"):
        where += " <-> " + " ".join(str(finding[key]) for key in ("peer_node", "peer_device") if finding.get(key))
    if finding.get("kind") == "node-without-rows":
        return f"{words}: {where}"
    below = finding.get("below_pct")
    text = f"{words}: {where}" + (f", {below:.1f} % below" if isinstance(below, (int, float)) else "")
    return text + (f" [{finding['class']}]" if finding.get("kind") == "class-below-ceiling" else "")


def frame_node(axes, index, count):
    """Red frames around a node's row and its column."""
    for x, y, width, height in ((-0.5, index - 0.5, count, 1), (index - 0.5, -0.5, 1, count)):
        axes.add_patch(plt.Rectangle((x, y), width, height, fill=False, edgecolor=MARK, linewidth=1.5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_CODES)
    parser.add_argument("matrix", help="matrix.csv of a gathered job (gdrperf slurm)")
    parser.add_argument("--findings", help="JSON of gdrperf fleet judge --json: mark the named parts")
    parser.add_argument("-o", "--output", help="image to write (.png, .svg, .pdf; default: MATRIX with .png)")
    parser.add_argument("--title", help="title (default: the matrix file's folder)")
    args = parser.parse_args()

    cells = read_matrix(args.matrix)
    findings = read_findings(args.findings) if args.findings else []
    nodes = {cell[0] for cell in cells} | {cell[1] for cell in cells}
    for finding in findings:
        for key in ("node", "peer_node"):
            if finding.get(key) and finding.get(key) != "all":
                nodes.add(str(finding[key]))
    nodes = sorted(nodes, key=natural)
    index = {node: position for position, node in enumerate(nodes)}
    lanes = sorted({cell[2] for cell in cells}, key=natural)
    count = len(nodes)
    grids = {lane: [[math.nan] * count for _ in nodes] for lane in lanes}
    device_of = {}  # (node, lane) -> device
    for client, server, lane, gbps, client_device, server_device in cells:
        grids[lane][index[client]][index[server]] = gbps
        for node, device in ((client, client_device), (server, server_device)):
            if device:
                device_of[(node, lane)] = device
    measured = {cell[0] for cell in cells} | {cell[1] for cell in cells}
    without_rows = [node for node in nodes if node not in measured]

    def tick_label(node):
        return node if node in measured else f"{node} {NO_ROWS}"

    values = [cell[3] for cell in cells]
    low, high = min(values), max(values)

    panels = len(lanes)
    columns = min(panels, 4)
    rows = math.ceil(panels / columns)
    side = min(6.0, max(3.2, 0.22 * count))
    listed = findings[:LISTED]
    notes = len(listed) + (1 if len(findings) > LISTED else 0)
    notes_height = 0.46 + 0.16 * notes
    figure = plt.figure(figsize=(side * columns + 1.4, side * rows + 1.0 + notes_height), layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[side * rows + 1.0, notes_height])
    axes_grid = top.subplots(rows, columns, squeeze=False)
    colours = plt.get_cmap("viridis").copy()
    colours.set_bad("#e4e4e4")
    image = None
    step = max(1, math.ceil(count / 32))  # at most about 32 labels an axis
    for number, lane in enumerate(lanes):
        axes = axes_grid[number // columns][number % columns]
        image = axes.imshow(grids[lane], cmap=colours, vmin=low, vmax=high, interpolation="nearest")
        axes.set_title(f"lane {lane}" if lane else "all pairs", fontsize=10)
        # Every node without a row is labelled, whatever the label step, so that none hides.
        ticks = sorted(set(range(0, count, step)) | {index[node] for node in without_rows})
        labels = [tick_label(nodes[tick]) for tick in ticks]
        axes.set_xticks(ticks, labels, rotation=90, fontsize=6)
        axes.set_yticks(ticks, labels, fontsize=6)
        axes.set_xlabel("server node", fontsize=8)
        axes.set_ylabel("client node", fontsize=8)
        marked = set()
        for finding in findings:
            kind, node = finding.get("kind"), finding.get("node")
            if kind in NODE_KINDS and node in index:
                frame_node(axes, index[node], count)
                marked.add(node)
            elif kind in PORT_KINDS and node in index:
                device = finding.get("device")
                known = device_of.get((node, lane))
                if not device or not known or known == device:
                    frame_node(axes, index[node], count)
                    marked.add(node)
            elif kind == "link" and node in index and finding.get("peer_node") in index:
                ends = ((node, finding.get("device")), (finding["peer_node"], finding.get("peer_device")))
                if all(not device or device_of.get((end, lane), device) == device for end, device in ends):
                    a, b = index[node], index[finding["peer_node"]]
                    for x, y in ((b, a), (a, b)):
                        axes.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor=MARK,
                                                     linewidth=2))
                    marked.update((node, finding["peer_node"]))
        for label in axes.get_xticklabels() + axes.get_yticklabels():
            if label.get_text().removesuffix(f" {NO_ROWS}") in marked:
                label.set_color(MARK)
    for number in range(panels, rows * columns):
        axes_grid[number // columns][number % columns].axis("off")
    top.colorbar(image, ax=axes_grid.ravel().tolist(), label="bandwidth of the largest size [Gb/s]", shrink=0.8)
    title = args.title or os.path.basename(os.path.dirname(os.path.abspath(args.matrix))) or args.matrix
    top.suptitle(f"{title}: {count} nodes, {len(cells)} node pairs x lanes measured", fontsize=11)
    legend = (f"grey cell: a pair not run, or run without a bandwidth row; '{NO_ROWS}' after a node: it has no row "
              f"at all ({len(without_rows)} node{'s' if len(without_rows) != 1 else ''})")
    bottom.text(0.01, 0.995 if findings else 0.98, legend, fontsize=7, va="top")
    if findings:
        lines = [finding_text(finding) for finding in listed]
        if len(findings) > LISTED:
            lines.append(f"... and {len(findings) - LISTED} more (see the findings file)")
        bottom.text(0.01, 0.98, "\nnamed (framed in red):\n" + "\n".join(lines), fontsize=7, va="top",
                    family="monospace")
    elif args.findings:
        bottom.text(0.01, 0.98, "\nnamed: none", fontsize=7, va="top")
    output = args.output or os.path.splitext(args.matrix)[0] + ".png"
    try:
        save_figure(figure, output, 130)
    except (OSError, ValueError) as error:
        fail(f"{output}: {error}")
    print(f"wrote {output}")


if __name__ == "__main__":
    run_main(main)
