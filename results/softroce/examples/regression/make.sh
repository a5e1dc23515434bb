#!/bin/sh
# Remakes the repeated runs of this folder (the README's regression recipe compares them) with the
# checked-out code, in the Soft-RoCE VM:
#   cargo build --release -p gdrperf-benches --bin gdr-write-bw
#   flock /tmp/gdrperf-vm.lock scripts/softroce.sh run --timeout 900 -- \
#       "sh results/softroce/examples/regression/make.sh"
# (GDR_WRITE_BW=PATH runs another gdr-write-bw than the one on the VM's PATH.)
# Three runs called "base" and three called "new", one after another with the same binary and
# flags: the two sets differ only by run-to-run noise, so a comparison of them finds no
# regression. Each JSON names its command (metadata.argv) and commit (metadata.git_commit).
set -eu
cd "$(dirname "$0")/../../../.."
dir=results/softroce/examples/regression
bench=${GDR_WRITE_BW:-gdr-write-bw}
for set in base new; do
    for run in 1 2 3; do
        "$bench" --loopback -s 65536 -n 200 -t 16 --json $dir/$set-$run.json --csv $dir/$set-$run.csv >/dev/null
    done
done
echo "regression examples remade"
