#!/bin/sh
# The seed sweep behind results/fleet/README.md, as run from the worktree root (B built at the
# commit PROVENANCE.md names): 200 seeds of every schedule at 1024 and 4096 nodes x 8 lanes.
# P processes at a time, each a range of seeds (one process, one thread: the judge runs on one
# core); each range's output in $O/parts/, its start and end in $O/parts/times.log, then one file
# a schedule in $O (a line per seed, the findings of every seed that missed a part or named
# another, each range's summary). `sh sweep.sh chunk N S FIRST COUNT` runs one range.
set -eu
B=${B:-target/release/gdrperf}
O=${O:-results/fleet/raw}
P=${P:-2}
if [ "${1:-}" = chunk ]; then
  n=$2 s=$3 first=$4 count=$5
  X=""; [ "$s" = random ] && X="--random-rounds 8"
  f=$O/parts/${n}x8-$s.$(printf %04d "$first").txt
  start=$(date -u +%s)
  nice -n "${NICE:-19}" "$B" fleet simulate --nodes "$n" --lanes 8 --schedule "$s" $X \
    --first-seed "$first" --seeds "$count" > "$f.tmp" 2>&1
  mv "$f.tmp" "$f"
  echo "$n $s $first $count $start $(date -u +%s)" >> "$O/parts/times.log"
  exit 0
fi
mkdir -p "$O/parts"
# nodes, schedule, seeds, seeds a process: the cheap ones first, 4096 all-pairs (10 CPU-s a
# seed) last, one seed a process, so that a sweep cut short keeps every seed it finished.
{
  for n in 1024 4096; do for s in pairs ring random locate; do echo "$n $s 200 50"; done; done
  echo "1024 all-pairs 200 10"
  echo "4096 all-pairs 200 1"
} | while read -r n s seeds per; do
  first=1
  while [ "$first" -le "$seeds" ]; do echo "$n $s $first $per"; first=$((first + per)); done
done | xargs -P "$P" -n 4 sh "$0" chunk
for f in "$O"/parts/*.0001.txt; do
  name=$(basename "$f" .0001.txt)
  cat "$O"/parts/"$name".[0-9]*.txt > "$O/$name.txt"
done
