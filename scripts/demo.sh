#!/usr/bin/env bash
# gdrperf's main job in one command, on a fresh Debian 12 machine (the only system it has run on; Ubuntu is untested):
#   ./scripts/demo.sh
# Builds the release binaries (installing cmake/clang if missing; no tests) and runs an RDMA WRITE
# bandwidth sweep with data checking: on this host's RDMA device when it has one, otherwise in a
# Soft-RoCE VM (scripts/softroce.sh). Results go to results/<label>/demo/: the console table
# (write_bw.txt, headed with the command, machine and date), write_bw.csv and write_bw.json.
# Extra arguments go to gdr-write-bw (e.g. ./scripts/demo.sh -n 200).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/build-packages.sh
ensure_build_packages   # only what is missing; no tests run here (scripts/test.sh runs them)
cargo build --release --bins --quiet

if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    label=$(hostname)
    runner=()
    machine="$(hostname), $(ls /sys/class/infiniband | tr '\n' ' ')"
else
    label=softroce
    runner=(scripts/softroce.sh run --timeout 1200 --)
    machine="Soft-RoCE (rdma_rxe on lo) in a QEMU TCG VM on $(hostname) ($(nproc) cores)"
fi
out="results/$label/demo"
mkdir -p "$out"
. scripts/lib/demo.sh
command=$(demo_command "$out" "$@")
demo_header "$out" "$command" "$machine"
if [ ${#runner[@]} -gt 0 ]; then
    "${runner[@]}" "$command" | tee -a "$out/write_bw.txt"
else
    PATH="$PWD/target/release:$PATH" sh -c "$command" | tee -a "$out/write_bw.txt"
fi
status=${PIPESTATUS[0]}
echo "demo: results in $out/ (write_bw.txt, write_bw.csv, write_bw.json)" >&2
exit "$status"
