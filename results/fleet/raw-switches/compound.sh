#!/bin/sh
# A slow leaf and a slow half at once, with the switch map: 64 x 4 all-pairs, first five faults too, 100 seeds, quiet and noisy.
B=/tmp/gdrperf-fleet-1859cad
cd /tmp/fleet-runs
for n in quiet noisy; do
  X=""; [ "$n" = noisy ] && X="--tails 4 --dips 0.02"
  start=$(date -u +%s)
  $B fleet simulate --nodes 64 --lanes 4 --schedule all-pairs --switch-map $X --fault slow-port,bad-link,gpu-x8,dead-node,slow-sending,slow-group,slow-half --seeds 100 > 64x4-all-pairs-$n-map-both.txt 2>&1
  echo "64 all-pairs $n map both 1 100 $start $(date -u +%s)" >> map.times
done
