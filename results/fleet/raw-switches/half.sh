#!/bin/sh
# Half the fleet behind a slow switch (a cut), with the switch map: 256 x 8 all-pairs, first five faults too, quiet (30 seeds) then noisy (30 seeds, stopped at the deadline).
B=/tmp/gdrperf-fleet-1859cad
FIRST=slow-port,bad-link,gpu-x8,dead-node,slow-sending
cd /tmp/fleet-runs
for n in quiet noisy; do
  X=""; [ "$n" = noisy ] && X="--tails 4 --dips 0.02"
  start=$(date -u +%s)
  $B fleet simulate --nodes 256 --lanes 8 --schedule all-pairs --switch-map $X --fault $FIRST,slow-half --seeds 30 > 256x8-all-pairs-$n-map-slow-half.txt 2>&1
  echo "256 all-pairs $n map slow-half 1 30 $start $(date -u +%s)" >> map.times
done
