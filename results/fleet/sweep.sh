#!/bin/sh
# The seed sweep behind results/fleet/README.md, as run (from the worktree root, B built at 38211ec).
# Fewer seeds where one seed takes seconds on the shared 2-core host (see README).
B=${B:-target/release/gdrperf}
O=results/fleet/raw
mkdir -p $O
run() { n=$1; s=$2; k=$3; X=""; [ $s = random ] && X="--random-rounds 8"
  nice -n 10 $B fleet simulate --nodes $n --lanes 8 --schedule $s $X --seeds $k > $O/${n}x8-$s.txt 2>&1; echo "$n $s $k $(date -u +%T)"; }
run 1024 pairs 200; run 1024 ring 200; run 1024 random 200; run 1024 locate 200
run 4096 locate 100
run 4096 all-pairs 2
run 4096 random 100; run 4096 ring 100; run 4096 pairs 100
run 1024 all-pairs 60
