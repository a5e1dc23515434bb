#!/bin/sh
# The seed sweep behind results/fleet/noise.md (issue 41): `gdrperf fleet simulate` over seeds,
# with and without a noisy fabric (Student-t noise of 4 degrees of freedom and 2 % of pair runs
# dipped to 50-70 %), retests on (the default). Each line of the list below: nodes, schedule,
# first seed, seeds, setting (quiet|noisy), faults. One process, one thread each (the judge runs
# on one core), P at a time; each range's output in $O/parts/, then one file per (size,
# schedule, setting) in $O. `sh sweep-noise.sh chunk N S FIRST COUNT SETTING FAULTS` runs one.
set -eu
B=${B:-target/release/gdrperf}
O=${O:-results/fleet/raw-noise}
P=${P:-2}
if [ "${1:-}" = chunk ]; then
  n=$2 s=$3 first=$4 count=$5 setting=$6 faults=$7
  X=""; [ "$setting" = noisy ] && X="--tails 4 --dips 0.02"
  f=$O/parts/${n}x8-$s-$setting.$(printf %04d "$first").txt
  start=$(date -u +%s)
  nice -n "${NICE:-19}" "$B" fleet simulate --nodes "$n" --lanes 8 --schedule "$s" $X \
    --fault "$faults" --first-seed "$first" --seeds "$count" > "$f.tmp" 2>&1
  mv "$f.tmp" "$f"
  echo "$n $s $setting $first $count $start $(date -u +%s)" >> "$O/parts/times.log"
  exit 0
fi
mkdir -p "$O/parts"
ALL=slow-port,bad-link,gpu-x8,dead-node,slow-sending,slow-rail,near-miss,intermittent
LOCATE=slow-port,bad-link,gpu-x8,dead-node,slow-sending
# A list of ranges (nodes schedule first count setting faults), or the one given in $LIST.
LIST=${LIST:-$O/ranges.txt}
xargs -P "$P" -n 6 sh "$0" chunk < "$LIST"
for f in "$O"/parts/*.0001.txt; do
  name=$(basename "$f" .0001.txt)
  cat "$O"/parts/"$name".[0-9]*.txt > "$O/$name.txt"
done
