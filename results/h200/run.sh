#!/usr/bin/env bash
# Runs gdrperf's GPU checks and copy measurements on a lent H200 machine.
# Usage (from the repository root, with the release binary built elsewhere and carried):
#   OUT=/some/dir BIN=target/cuda/release/gdrperf GIT_COMMIT=$(git rev-parse --short HEAD) results/h200/run.sh
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
# PCIe facts (issue 17 item 3): the doctor reads each GPU's link (current vs max), its Device Control
# register (Max Payload, Max Read Request, relaxed ordering; needs root past config byte 64) and
# ACS on GPU-NIC paths. lspci -vv, where installed, is the cross-check of the decoding.
{
  echo "# command: $BIN doctor   (then $BIN doctor --json > doctor.json; lspci -vv per GPU)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ), user: $(id -un), commit: ${GIT_COMMIT:-unknown, set GIT_COMMIT}"
  "$BIN" doctor; echo "exit status: $? (2 is right on a machine without an RDMA NIC)"
  for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
    echo "## lspci -vv -s $bus (cross-check)"
    lspci -vv -s "$bus" 2>&1 | grep -E "LnkCap:|LnkSta:|DevCtl:|MaxPayload|RlxdOrd" || echo "lspci not installed"
  done
} > "$OUT/doctor.txt" 2>&1
"$BIN" doctor --json > "$OUT/doctor.json" 2>&1
grep "staged path" "$OUT/staged-path.txt"
