#!/usr/bin/env bash
# Runs gdrperf's GPU checks and copy measurements on a lent H200 machine.
# Usage (from the repository root, with the release binary built elsewhere and carried):
#   OUT=/some/dir BIN=target/cuda/release/gdrperf results/h200/run.sh
set -u
BIN=${BIN:-target/cuda/release/gdrperf}
OUT=${OUT:?set OUT to a folder for the logs}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -srm)"
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv
  nvidia-smi | head -n 4 | tail -n 2
  echo "kernel module: $(cat /sys/module/nvidia/version 2>/dev/null || echo unknown)"
  echo "license: $(cat /proc/driver/nvidia/version 2>/dev/null | head -n 1)"
  echo "modules: $(ls /sys/module | grep -E '^nvidia|^ib_|^mlx' | tr '\n' ' ')"
  echo "rdma devices: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
} > "$OUT/machine.txt" 2>&1
"$BIN" selftest > "$OUT/selftest.txt" 2>&1; echo "exit status: $?" >> "$OUT/selftest.txt"
"$BIN" selftest --chunk-size 1M > "$OUT/selftest-chunk1m.txt" 2>&1; echo "exit status: $?" >> "$OUT/selftest-chunk1m.txt"
"$BIN" copy-bw -a --csv "$OUT/copy-bw.csv" --json "$OUT/copy-bw.json" > "$OUT/copy-bw.txt" 2>&1; echo "exit status: $?" >> "$OUT/copy-bw.txt"
# Per-message cost of staging (issue 15): copies through the benches' staging path (CudaStager,
# kind "staged") next to bare pinned copies, medians of 5000, with their ratio (target <= 1.15).
for size in 1K 4K 16K 64K; do
  "$BIN" copy-bw --gpu 0 -s $size -n 5000 --csv "$OUT/staged-path-$size.csv"
done > "$OUT/staged-path.txt" 2>&1; echo "exit status: $?" >> "$OUT/staged-path.txt"
"$BIN" copy-bw --gpu 5 > "$OUT/bad-flags.txt" 2>&1; echo "exit status: $?" >> "$OUT/bad-flags.txt"
"$BIN" selftest --gpu-bus-id 0000:01:00.0 >> "$OUT/bad-flags.txt" 2>&1; echo "exit status: $?" >> "$OUT/bad-flags.txt"
tail -n 3 "$OUT"/selftest*.txt
grep "staged path" "$OUT/staged-path.txt"
