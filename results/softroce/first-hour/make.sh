#!/bin/sh
# Issue 23's proofs from one Soft-RoCE VM run of the README's first section (family 05):
#   cargo build --release --workspace --bins     (the binaries of this run: commit 3a312cb)
#   scripts/softroce.sh run --timeout 1200 -- \
#       "VM_TESTS=05-first-hour VM_TEST_OUT=$PWD/target/fh-vm scripts/vm-tests.sh" | tee vm-tests.txt
# then, on the host, this script copies the comparisons and draws the plots from that run's files
# (the VM has no Python): bandwidth over size of the README's sweep (step 2's bw.json). The
# latency and compare plots of a VM run are results/softroce/examples/read_lat.png and
# write_bw-run2-vs-run1.png (redrawn with scripts/plot: see that folder's make.sh).
set -eu
cd "$(dirname "$0")/../../.."
vm=${1:-target/fh-vm}
dir=results/softroce/first-hour
cp "$vm/first-hour/bw.json" "$dir/bw.json"
cp "$vm/compare_identical.log" "$vm/compare_drop.log" "$dir/"
scripts/plot bw "$dir/bw.json" -o "$dir/bw.png"
