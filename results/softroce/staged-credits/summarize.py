#!/usr/bin/env python3
"""Summary of the alternating staged write_bw / send_bw runs of run.sh (issue 25).

Command: python3 results/softroce/staged-credits/summarize.py > results/softroce/staged-credits/summary.md
Written at commit a187b84 (branch placements); the runs' own commit is in each JSON's metadata.

Reads every write_bw-N.json and send_bw-N.json here and prints a Markdown summary: each run's
average bandwidth and NIC counters, the medians, the ratio of medians, and a one-sided exact
permutation test of "write_bw's mean is above 0.9 x send_bw's mean" (p: the share of
relabellings of the write_bw and 0.9 x send_bw samples whose difference of means is at least
the observed one).
"""
import glob
import itertools
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def runs(test):
    found = []
    for path in sorted(glob.glob(os.path.join(HERE, f"{test}-*.json")), key=lambda p: int(p.rsplit("-", 1)[1][:-5])):
        document = json.load(open(path))
        row = document["results"][0]
        found.append((os.path.basename(path), document["metadata"], row))
    return found


def permutation_p(above, below):
    observed = statistics.mean(above) - statistics.mean(below)
    pooled = above + below
    count = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(above)):
        picked = set(chosen)
        first = [pooled[i] for i in picked]
        second = [pooled[i] for i in range(len(pooled)) if i not in picked]
        total += 1
        count += statistics.mean(first) - statistics.mean(second) >= observed - 1e-12
    return count / total


def main():
    write, send = runs("write_bw"), runs("send_bw")
    if not write or not send:
        sys.exit("no runs here: run run.sh in the VM first")
    meta = write[0][1]
    print("# Staged write_bw against staged send_bw at 4 KiB, one Soft-RoCE VM boot, alternating\n")
    print(f"- command: `results/softroce/staged-credits/run.sh` in `scripts/softroce.sh run`, each run `{' '.join(meta['argv'])}` (and the same for gdr-send-bw)")
    print(f"- commit {meta.get('git_commit')} (each JSON's metadata), summary by `summarize.py` here")
    print(f"- machine: {meta.get('host')}, the Soft-RoCE VM (QEMU TCG) on the 2-core build host, loaded by other builds")
    print(f"- date: {meta.get('date', meta.get('started', '?'))}\n")
    print("| run | write_bw avg MiB/s | write_bw NIC RNR / errors | send_bw avg MiB/s | send_bw NIC RNR / errors |")
    print("|---|---|---|---|---|")
    for (wname, _, wrow), (sname, _, srow) in zip(write, send):
        print(f"| {wname[9:-5]} | {wrow['bw_avg_mib_s']:.2f} | {wrow['nic_rnr_naks']} / {wrow['nic_errors']} | {srow['bw_avg_mib_s']:.2f} | {srow['nic_rnr_naks']} / {srow['nic_errors']} |")
    w = [row["bw_avg_mib_s"] for _, _, row in write]
    s = [row["bw_avg_mib_s"] for _, _, row in send]
    ratio = statistics.median(w) / statistics.median(s)
    p = permutation_p(w, [0.9 * value for value in s])
    print(f"\nMedians: write_bw {statistics.median(w):.2f}, send_bw {statistics.median(s):.2f} MiB/s; ratio {ratio:.3f} (target at least 0.9).")
    print(f"One-sided exact permutation test, write_bw mean above 0.9 x send_bw mean: p = {p:.4f} ({len(w)} + {len(s)} runs).")
    rnr = sum(row["nic_rnr_naks"] for _, _, row in write + send)
    print(f"RNR NAKs over all {len(w) + len(s)} runs: {rnr}.")


main()
