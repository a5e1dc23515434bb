#!/bin/sh
# One rank's planning of a large job, measured without a cluster: `gdrperf slurm --dry-run` under
# a faked Slurm step (NODES nodes named gpu0001.., TASKS tasks each, block layout), as rank RANK.
# A rank's planning is what every task of a real job does before its first bench; a plan that
# listed every pair (all-pairs at 4096 x 8 is 67 M bench pairs) cost each rank its memory.
# Prints the rank's first line, how many of its pairs it printed, and GNU time's wall clock and
# peak resident memory.
#
#   scripts/slurm/plan-scale.sh GDRPERF NODES TASKS SCHEDULE [RANK]
#   scripts/slurm/plan-scale.sh target/release/gdrperf 4096 8 all-pairs
set -eu
if [ $# -lt 4 ]; then
    sed -n 's/^#   //p' "$0" >&2
    exit 2
fi
gdrperf=$1 nodes=$2 tasks=$3 schedule=$4 rank=${5:-0}
width=$((${#nodes} < 4 ? 4 : ${#nodes}))
first=$(printf "%0${width}d" 1)
last=$(printf "%0${width}d" "$nodes")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
env SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_PROCID="$rank" SLURM_NTASKS=$((nodes * tasks)) \
    SLURM_JOB_NODELIST="gpu[$first-$last]" SLURM_TASKS_PER_NODE="$tasks(x$nodes)" \
    /usr/bin/time -v "$gdrperf" slurm --dry-run --schedule "$schedule" --out "$scratch/out" \
    -- gdr-write-bw -a >"$scratch/stdout" 2>"$scratch/time"
echo "nodes $nodes, tasks per node $tasks, schedule $schedule, rank $rank"
head -1 "$scratch/stdout" | sed "s/, nodes \([^,]*\),.*,\([^,]*\)$/, nodes \1,...,\2/"
echo "pairs of this rank printed: $(grep -c '^round ' "$scratch/stdout" || true)"
grep -E 'Elapsed \(wall clock\)|Maximum resident set size|User time|System time' "$scratch/time" | sed 's/^[[:space:]]*//'
