#!/usr/bin/env bash
# gdrperf against Debian's perftest, same VM boot, same sizes, iterations, TX depth and CQ
# moderation:   scripts/compare-perftest.sh write_bw
# On the host it boots the Soft-RoCE VM (scripts/softroce.sh) and runs itself inside; inside the
# VM it runs each tool 3 times per size, alternating, and writes
# results/softroce/<test>-vs-perftest.csv: size, perftest MiB/s, gdrperf MiB/s, ratio (medians
# of the 3 runs), headed by '#' lines with the command, machine and date.
# Needs the release binaries (cargo build --release).
set -eu
cd "$(dirname "$0")/.."

if [ "${GDRPERF_SOFTROCE:-0}" != 1 ]; then
    [ $# -ge 1 ] || { echo "usage: $0 write_bw" >&2; exit 2; }
    cargo build --release --bins --quiet
    exec scripts/softroce.sh run --timeout 1500 -- "sh scripts/compare-perftest.sh $*"
fi

SIZES="4096 65536 1048576"
ROUNDS=3
DEPTH=128
CQ_MOD=100
PORT=19500

iterations_for() { # about 32 MiB per run, between 64 and 2000 messages
    n=$((33554432 / $1)); [ $n -gt 2000 ] && n=2000; [ $n -lt 64 ] && n=64; echo $n
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

# perftest_write_bw SIZE ITERS -> average MiB/s (perftest's "MB/sec" is MiB/s)
perftest_write_bw() {
    PORT=$((PORT + 1))
    ib_write_bw -d rxe0 -x 1 -p $PORT -s "$1" -n "$2" -t $DEPTH -Q $CQ_MOD >/dev/null 2>&1 &
    sleep 1
    ib_write_bw -d rxe0 -x 1 -p $PORT -s "$1" -n "$2" -t $DEPTH -Q $CQ_MOD 127.0.0.1 2>/dev/null |
        awk -v size="$1" '$1 == size && NF >= 5 { print $4 }'
    wait
}
gdrperf_write_bw() {
    PORT=$((PORT + 1))
    gdr-write-bw -p $PORT -s "$1" -n "$2" -t $DEPTH -Q $CQ_MOD --warmup 0 >/dev/null 2>&1 &
    gdr-write-bw -p $PORT -s "$1" -n "$2" -t $DEPTH -Q $CQ_MOD --warmup 0 --csv /tmp/compare.csv 127.0.0.1 >/dev/null 2>&1
    wait
    awk -F, 'NR == 2 { print $5 }' /tmp/compare.csv
}

compare() {
    test=$1
    out="results/softroce/$test-vs-perftest.csv"
    mkdir -p results/softroce
    {
        echo "# command: scripts/compare-perftest.sh $test (sizes $SIZES; -t $DEPTH -Q $CQ_MOD; $ROUNDS alternating runs, medians)"
        echo "# machine: Soft-RoCE rxe0 on lo in a QEMU TCG VM ($(nproc) vCPUs), kernel $(uname -r), $(ib_write_bw --version 2>/dev/null | head -1 || echo perftest)"
        echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "size,iterations,perftest_mib_s,gdrperf_mib_s,ratio"
    } >"$out"
    for size in $SIZES; do
        n=$(iterations_for "$size")
        p=""; g=""
        for round in $(seq $ROUNDS); do
            p="$p $(perftest_$test "$size" "$n")"
            g="$g $(gdrperf_$test "$size" "$n")"
        done
        # shellcheck disable=SC2086
        pm=$(median3 $p); gm=$(median3 $g)
        ratio=$(awk -v p="$pm" -v g="$gm" 'BEGIN { if (p > 0) printf "%.3f", g / p; else print "nan" }')
        echo "$size,$n,$pm,$gm,$ratio" | tee -a "$out"
        echo "  $test $size bytes: perftest runs:$p | gdrperf runs:$g" >&2
    done
    echo "wrote $out"
}

for test in "$@"; do
    case $test in
        write_bw) compare write_bw ;;
        *) echo "compare-perftest: unknown test '$test' (known: write_bw)" >&2; exit 2 ;;
    esac
done
