#!/usr/bin/env bash
# The verdict of a `gdrperf slurm` run (scripts/slurm/acceptance.sbatch or your own srun):
#
#   scripts/slurm/summary.sh OUT_DIR
#
# Gathers the per-rank files again (so it also works after a job that was cut short, before
# rank 0 could gather), prints PASS/FAIL per pair and the failing nodes, and, if any failed,
# the scontrol command that would drain them (printed, not run: draining is an admin's call).
# Exit status: 0 all pairs passed, 1 some failed, 2 the folder could not be read.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
dir=$1
summary=$(gdrperf slurm summary "$dir")
status=$?
[ "$status" -le 1 ] || exit "$status"
printf '%s\n' "$summary"
failing=$(sed -n 's/^FAILING NODES: //p' <<<"$summary")
if [ "$status" = 1 ] && [ -n "$failing" ] && [ "$failing" != none ]; then
    echo
    echo "to take them out of service:"
    echo "  scontrol update NodeName=$(tr ' ' ',' <<<"$failing") State=DRAIN Reason=\"gdrperf acceptance failed, see $dir/summary.txt\""
fi
exit "$status"
