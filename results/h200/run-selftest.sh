#!/usr/bin/env bash
# Issue 20 item 5 on the H200 (no NIC): `gdrperf selftest` judging the staged round trip against the
# both-ways copy rate of the same run, and `gdrperf copy-bw` with its two bandwidth columns
# (queued GB/s, 1-by-1 GB/s) at the sizes where the staged path is measured.
# Usage (from the repository root, the release binary built with CUDA and carried):
#   OUT=/some/dir BIN=target/cuda/release/gdrperf GIT_COMMIT=$(git rev-parse --short HEAD) results/h200/run-selftest.sh
# Writes OUT/selftest-both-ways.txt, OUT/copy-bw-columns.txt and OUT/copy-bw-columns-SIZE.csv, each headed by the
# command, commit, machine and date; commit them under results/h200/.
set -u
BIN=${BIN:-target/cuda/release/gdrperf}
OUT=${OUT:?set OUT to a folder for the logs}
header() {
    echo "# command: $*"
    echo "# git commit: ${GIT_COMMIT:-unknown} (binary: $BIN)"
    echo "# machine: $(nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader | head -n 1); $(uname -srm)"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
{ header "$BIN" selftest; "$BIN" selftest 2>&1; echo "exit status: $?"; } > "$OUT/selftest-both-ways.txt"
{
    header "$BIN" copy-bw --gpu 0 -s SIZE -n 5000 --csv "$OUT/copy-bw-columns-SIZE.csv" "(SIZE: 1K 4K 64K)"
    for size in 1K 4K 64K; do
        "$BIN" copy-bw --gpu 0 -s $size -n 5000 --csv "$OUT/copy-bw-columns-$size.csv" 2>&1; echo "exit status: $?"
    done
} > "$OUT/copy-bw-columns.txt"
grep -E "TARGET|^selftest:" "$OUT/selftest-both-ways.txt"
cat "$OUT/copy-bw-columns.txt"
