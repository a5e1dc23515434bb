#!/bin/sh
# Switch map with locate: 1024 x 8, first five faults (no shared fault planted: false alarms of the switch test on locate's sparse rows), quiet and noisy.
B=/tmp/gdrperf-fleet-1859cad
FIRST=slow-port,bad-link,gpu-x8,dead-node,slow-sending
cd /tmp/fleet-runs
for n in quiet noisy; do
  X=""; [ "$n" = noisy ] && X="--tails 4 --dips 0.02"
  start=$(date -u +%s)
  $B fleet simulate --nodes 1024 --lanes 8 --schedule locate --switch-map $X --fault $FIRST --seeds 100 > 1024x8-locate-$n-map.txt 2>&1
  echo "1024 locate $n map first-five 1 100 $start $(date -u +%s)" >> map.times
done
