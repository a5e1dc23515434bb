#!/usr/bin/env bash
# Issue 34 on the H200 (no NIC): the soak's GPU watch (NVML, loaded at run time) against a real
# GPU under load, and the CUDA-side identity the inventory records (UUID by cuDeviceGetUuid).
# Usage (from the repository root, stripped release binaries carried in DIR):
#   OUT=/some/dir DIR=.cache/device GIT_COMMIT=$(git rev-parse --short HEAD) results/h200/run-gpu-watch.sh
# Writes OUT/gpu-watch.txt (nvidia-smi's own view first, then the example `gpu_watch 4 3`: four
# intervals of three seconds of pinned copies both ways, NVML read before and after each), and
# OUT/copy-bw-uuid.txt + OUT/copy-bw-uuid.json (`gdrperf copy-bw -s 64M`, whose JSON names the
# GPU by UUID), each headed by its command, commit, machine and date; commit them under results/h200/.
set -u
DIR=${DIR:-.cache/device}
OUT=${OUT:?set OUT to a folder for the logs}
header() {
    echo "# command: $*"
    echo "# git commit: ${GIT_COMMIT:-unknown} (binaries: stripped release builds in $DIR)"
    echo "# machine: $(nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader | head -n 1); $(uname -srm); $(nproc) cores"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
{
    header nvidia-smi -L / --query-gpu / "$DIR/gpu_watch" 4 3
    nvidia-smi -L
    nvidia-smi --query-gpu=uuid,pci.bus_id,clocks_throttle_reasons.active,power.draw,power.limit,temperature.gpu --format=csv
    ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 2>&1 || ldconfig -p | grep nvidia-ml
    "$DIR/gpu_watch" 4 3 2>&1; echo "exit status: $?"
    nvidia-smi --query-gpu=clocks_throttle_reasons.active,power.draw,temperature.gpu --format=csv
} > "$OUT/gpu-watch.txt"
{
    header "$DIR/gdrperf" copy-bw -s 64M --json "$OUT/copy-bw-uuid.json"
    "$DIR/gdrperf" copy-bw -s 64M --json "$OUT/copy-bw-uuid.json" 2>&1; echo "exit status: $?"
} > "$OUT/copy-bw-uuid.txt"
cat "$OUT/gpu-watch.txt" "$OUT/copy-bw-uuid.txt"
grep -o '"uuid"[^,]*' "$OUT/copy-bw-uuid.json" | head -n 3
