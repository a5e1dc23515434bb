#!/bin/sh
# Switch-map sweep: 256 x 8 all-pairs, first five faults plus a slow leaf or a slow half, quiet and noisy.
B=/tmp/gdrperf-fleet-1859cad
FIRST=slow-port,bad-link,gpu-x8,dead-node,slow-sending
cd /tmp/fleet-runs
for s in slow-group slow-half; do
  for n in quiet noisy; do
    X=""; [ "$n" = noisy ] && X="--tails 4 --dips 0.02"
    start=$(date -u +%s)
    $B fleet simulate --nodes 256 --lanes 8 --schedule all-pairs --switch-map $X --fault $FIRST,$s --seeds 30 > 256x8-all-pairs-$n-map-$s.txt 2>&1
    echo "256 all-pairs $n map $s 1 30 $start $(date -u +%s)" >> map.times
  done
done
