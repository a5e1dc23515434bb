#!/bin/sh
# Rank 0's gather of a large job, measured without a cluster: FAKE_JOB (the fake_job example of
# gdrperf-cluster) writes the folder a job of NODES nodes x TASKS tasks leaves (plan.json and every
# rank's records; every side on FAIL_NODE exits 1, `-` for none), then each GDRPERF in turn runs
# `slurm summary DIR` on it: the gather (results.csv, results.json, matrix.csv) and the summary,
# printed. Prints, per binary, GNU time's wall clock and peak resident memory, the summary's
# first line and failing nodes, and a checksum of each output: equal checksums, equal bytes.
#
#   scripts/slurm/gather-scale.sh FAKE_JOB NODES TASKS SCHEDULE FAIL_NODE GDRPERF...
#   scripts/slurm/gather-scale.sh target/release/examples/fake_job 1024 8 all-pairs gpu0007 \
#       ./gdrperf-before target/release/gdrperf
# SCRATCH (default: a new folder under TMPDIR) holds the job; it takes about 2 KiB a pair.
set -eu
if [ $# -lt 6 ]; then
    sed -n 's/^#   //p' "$0" >&2
    exit 2
fi
fake_job=$1 nodes=$2 tasks=$3 schedule=$4 fail_node=$5
shift 5
scratch=${SCRATCH:-$(mktemp -d)}
trap 'rm -rf "$scratch"' EXIT
[ "$fail_node" = - ] && fail_node=
start=$(date +%s)
"$fake_job" "$scratch/job" "$nodes" "$tasks" "$schedule" $fail_node
echo "nodes $nodes, tasks per node $tasks, schedule $schedule, failing node ${fail_node:-none}:" \
    "records written in $(($(date +%s) - start)) s, $(du -sh "$scratch/job/status" | cut -f1)"
for gdrperf in "$@"; do
    code=0
    /usr/bin/time -v "$gdrperf" slurm summary "$scratch/job" >"$scratch/summary" 2>"$scratch/time" || code=$?
    echo "== $gdrperf (exit $code)"
    head -1 "$scratch/summary"
    grep -A3 '^FAILING NODES' "$scratch/summary" || true
    echo "summary lines: $(wc -l <"$scratch/summary")"
    grep -E 'Elapsed \(wall clock\)|Maximum resident set size|User time|System time' "$scratch/time" |
        sed 's/^[[:space:]]*//'
    for file in results.csv results.json matrix.csv; do
        echo "$file: $(sha256sum <"$scratch/job/$file" | cut -c1-16) $(wc -c <"$scratch/job/$file") bytes"
    done
    echo "summary: $(sha256sum <"$scratch/summary" | cut -c1-16)"
    leftover=$(find "$scratch/job" -name '*.partial' | wc -l)
    echo "temporary files left: $leftover"
done
