#!/bin/sh
# Issue 41's scale proofs, for a many-core host: `gdrperf fleet simulate` over seeds SEEDS_FROM to
# SEEDS_TO at 1024 and 4096 nodes x 8 lanes, all-pairs and locate, quiet (log-normal noise of
# 3 %) and noisy (Student-t of 4 degrees of freedom and 2 % of pair runs dipped to 50-70 %),
# retests on (the default, as `gdrperf slurm --schedule locate` runs them live); then, alone on
# an idle machine, the judge's time and memory at the largest size, all-pairs, without retests.
#
#   GDRPERF=/path/to/gdrperf sh results/fleet/sweep-scale.sh SEEDS_FROM SEEDS_TO OUTDIR
#   python3 results/fleet/summary-scale.py OUTDIR
#
# GDRPERF: the release binary (`CARGO_PROFILE_RELEASE_LTO=false
# CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo build --release -p gdrperf-cli`, then
# target/release/gdrperf; nothing else is needed). Optional: P (processes at once, default
# `nproc`), SIZES (default "1024 4096"; "16" for a quick check of the script), NICE (default 0).
# Faults: all-pairs plants all nine (slow-port, bad-link, gpu-x8, dead-node, slow-sending,
# slow-rail, near-miss, intermittent, slow-group), locate the first five and the slow rail
# (results/fleet/noise.md says why). One process, one thread each (the judge runs on one
# core), a range of seeds each: one seed for all-pairs at 4096 nodes (minutes each, about
# 1.1 GiB), a few at 1024, 25 for locate; the longest first. Each range's output goes to
# OUTDIR/parts/NAME.FIRST.txt, the process's `/usr/bin/time -v` (where present) to .time, its
# start and end to OUTDIR/parts/times.log; at the end one file per (size, schedule, setting),
# OUTDIR/NAME.txt, NAME = NODESx8-SCHEDULE-SETTING. A range already done (its .txt there) is
# not run again: run the same command again to go on after a stop. `sh sweep-scale.sh chunk
# OUTDIR NODES SCHEDULE SETTING FIRST COUNT` runs one range.
set -eu
ALL=slow-port,bad-link,gpu-x8,dead-node,slow-sending,slow-rail,near-miss,intermittent,slow-group
LOCATE=slow-port,bad-link,gpu-x8,dead-node,slow-sending,slow-rail
NOISY="--tails 4 --dips 0.02"
: "${GDRPERF:?set GDRPERF to the release gdrperf binary}"

timed() {
    # timed FILE.time COMMAND...: the command under GNU time -v where there is one (sh has no
    # local variables: this one's name is its own).
    timed_file=$1
    shift
    if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
        /usr/bin/time -v -o "$timed_file" "$@"
    else
        echo "no /usr/bin/time -v on this host" >"$timed_file"
        "$@"
    fi
}

if [ "${1:-}" = chunk ]; then
    out=$2 n=$3 schedule=$4 setting=$5 first=$6 count=$7
    faults=$ALL
    [ "$schedule" = locate ] && faults=$LOCATE
    extra=""
    [ "$setting" = noisy ] && extra=$NOISY
    name=${n}x8-$schedule-$setting
    f=$out/parts/$name.$(printf %04d "$first").txt
    [ -s "$f" ] && exit 0
    start=$(date -u +%s)
    # shellcheck disable=SC2086 # $extra is two flags or none
    timed "$f.time" nice -n "${NICE:-0}" "$GDRPERF" fleet simulate --nodes "$n" --lanes 8 \
        --schedule "$schedule" $extra --fault "$faults" --first-seed "$first" --seeds "$count" \
        >"$f.tmp" 2>&1
    mv "$f.tmp" "$f"
    echo "$n $schedule $setting $first $count $start $(date -u +%s)" >>"$out/parts/times.log"
    exit 0
fi

if [ $# -ne 3 ]; then
    echo "usage: GDRPERF=/path/to/gdrperf sh $0 SEEDS_FROM SEEDS_TO OUTDIR" >&2
    exit 2
fi
from=$1 to=$2 out=$3
case "$from$to" in *[!0-9]*) echo "$0: seeds are numbers" >&2; exit 2 ;; esac
[ "$from" -le "$to" ] || { echo "$0: SEEDS_FROM $from is after SEEDS_TO $to" >&2; exit 2; }
[ -x "$GDRPERF" ] || { echo "$0: GDRPERF=$GDRPERF is not an executable" >&2; exit 2; }
P=${P:-$(nproc)}
SIZES=${SIZES:-"1024 4096"}
mkdir -p "$out/parts"
{
    echo "command: GDRPERF=$GDRPERF P=$P SIZES=\"$SIZES\" NICE=${NICE:-0} sh $0 $from $to $out"
    echo "binary: $GDRPERF, sha256 $(sha256sum "$GDRPERF" | cut -d' ' -f1)"
    "$GDRPERF" --version 2>&1 | sed 's/^/version: /'
    echo "host: $(uname -n), $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo 2>/dev/null)"
    echo "started: $(date -u '+%Y-%m-%d %H:%M:%S') UTC"
} >>"$out/run-info.txt"

# Ranges: nodes schedule setting first count, the longest first.
per() {
    # seeds a process: all-pairs at 4096 nodes and up one, at 1024 five, else 25.
    case $2 in
    all-pairs) if [ "$1" -ge 4096 ]; then echo 1; elif [ "$1" -ge 1024 ]; then echo 5; else echo 25; fi ;;
    *) echo 25 ;;
    esac
}
largest=0
for n in $SIZES; do [ "$n" -gt "$largest" ] && largest=$n; done
for n in $(for n in $SIZES; do echo "$n"; done | sort -rn); do
    for schedule in all-pairs locate; do
        for setting in noisy quiet; do
            step=$(per "$n" "$schedule")
            first=$from
            while [ "$first" -le "$to" ]; do
                count=$step
                [ $((first + count - 1)) -gt "$to" ] && count=$((to - first + 1))
                echo "$n $schedule $setting $first $count"
                first=$((first + count))
            done
        done
    done
done | sort -s -k2,2 -k1,1rn >"$out/ranges.txt"
# A range that fails leaves its .txt.tmp and no .txt: said here, left out of the merge, run
# again by the same command.
xargs -P "$P" -L 1 sh "$0" chunk "$out" <"$out/ranges.txt" ||
    echo "$0: some ranges failed (their output: $out/parts/*.tmp); run the same command again to retry them" >&2

# Alone, one at a time: the judge's time and memory at the largest size, all-pairs, on every
# row of the schedule (no retests: the one judgement the goal is about), quiet and noisy.
for setting in quiet noisy; do
    f=$out/timed-${largest}x8-all-pairs-$setting.txt
    [ -s "$f" ] && continue
    extra=""
    [ "$setting" = noisy ] && extra=$NOISY
    # shellcheck disable=SC2086
    timed "$f.time" "$GDRPERF" fleet simulate --nodes "$largest" --lanes 8 --schedule all-pairs \
        $extra --no-retest --fault "$ALL" --first-seed "$from" --seeds 1 >"$f.tmp" 2>&1
    mv "$f.tmp" "$f"
done

for f in "$out"/parts/*.txt; do
    case $f in *.time.txt) continue ;; esac
    name=$(basename "$f" .txt)
    name=${name%.*}
    cat "$out"/parts/"$name".[0-9]*.txt >"$out/$name.txt"
done
echo "ended: $(date -u '+%Y-%m-%d %H:%M:%S') UTC" >>"$out/run-info.txt"
