#!/usr/bin/env bash
# gdrperf against Debian's perftest, same VM boot, same sizes, iterations and queue settings:
#   scripts/compare-perftest.sh write_bw read_bw send_bw read_lat write_lat send_lat atomic_lat
# On the host it boots the Soft-RoCE VM (scripts/softroce.sh) and runs itself inside; inside the
# VM it runs each tool 3 times per size, alternating, and writes
# results/softroce/<test>-vs-perftest.csv, headed by '#' lines with the command, machine, date and
# the host's load average when it started (other QEMU VMs on the host slow every figure):
# - bandwidth tests: size, perftest MiB/s, gdrperf MiB/s (sender's average), ratio gdrperf/perftest
#   (>= 1 is as fast or faster), then the same for BW peak (both tools define it the same way:
#   the fastest span from a post to a later completion; docs/methodology.md) and each tool's
#   peak / average;
# - latency tests: size, perftest t_typical, gdrperf t_typical (median) in microseconds, ratio
#   gdrperf/perftest (<= 1 is as fast or faster). Like with like: both time a sample from one
#   post to the next (gdrperf's default --latency-span iteration, passed explicitly). Medians:
#   perftest's is the median of its n-1 samples less the two largest (mean of the middle two when
#   even), gdrperf's the nearest-rank median of all n (docs/methodology.md): at most one rank
#   apart, far inside the runs' spread.
# Each figure is the median of the 3 runs (COMPARE_ROUNDS=N: N runs, odd), and every run's figure
# follows the table as '# runs' lines: under TCG runs of one tool spread by 10-20%, so a single
# ratio means little without them. Runs that print no number (under TCG perftest's CPU clock
# calibration sometimes gives up: "Correlation coefficient r^2 < 0.9"; or it prints "inf") are
# retried. p_value says whether the two tools' runs differ beyond that spread: the two-sided p
# of a Mann-Whitney U test of the runs (near 1: indistinguishable; under 0.05: a real difference).
# A ratio above 1 with a large p_value is the VM's noise, not a verdict; 3 runs a tool can never
# reach 0.05 (COMPARE_ROUNDS=11 or more can).
# Two forms of each test (COMPARE_FORMS, default "flags defaults", both in one boot):
# - flags (results/softroce/<test>-vs-perftest.csv): the same work forced on both: -Q CQ_MOD for
#   bandwidth, -I 0 for gdrperf's latency (perftest disables inline sends on devices it does not
#   know, rxe among them), and no warm-up in either, latency and bandwidth alike (perftest has none
#   unless --perform_warm_up; gdrperf gets --warmup 0);
# - defaults (results/softroce/<test>-default-flags-vs-perftest.csv): what a user typing the bare
#   command gets, neither -Q nor -I nor --warmup: each tool's own CQ moderation (both: 1 above
#   8 KiB, else 100), inline size (gdrperf inlines on rxe where perftest does not) and warm-up
#   (perftest none; gdrperf 16 untimed messages a QP in bandwidth, 16 dropped samples in latency).
# COMPARE_CQ_MOD=default (older spelling) is COMPARE_FORMS=defaults. Needs the release binaries
# (cargo build --release). COMPARE_DIR=DIR writes the files into DIR (a folder under the
# repository, default results/softroce), so that a shorter recheck keeps the committed files.
set -eu
# Scratch files in a private folder (mktemp), never a fixed /tmp name another user could plant.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
cd "$(dirname "$0")/.."

COMPARE_DIR=${COMPARE_DIR:-results/softroce}
case $COMPARE_DIR in
    /* | *..* | *[!A-Za-z0-9/_.-]*) echo "compare-perftest: COMPARE_DIR must be a plain folder under the repository (got '$COMPARE_DIR')" >&2; exit 2 ;;
esac
case ${COMPARE_ROUNDS:-3} in
    *[!0-9]* | '' | *[02468]) echo "compare-perftest: COMPARE_ROUNDS must be an odd whole number (got '$COMPARE_ROUNDS')" >&2; exit 2 ;;
esac

if [ "${GDRPERF_SOFTROCE:-0}" != 1 ]; then
    [ $# -ge 1 ] || { echo "usage: $0 TEST... (write_bw read_bw send_bw read_lat write_lat send_lat atomic_lat)" >&2; exit 2; }
    cargo build --release --bins --quiet
    # The VM cannot see the host's load, which moves every timing under TCG: hand it in.
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    # The VM has no git: the commit the binaries were built from is handed in too.
    commit=$(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- crates benches scripts || echo -dirty)
    exec scripts/softroce.sh run --timeout "${COMPARE_TIMEOUT:-1500}" -- "GDRPERF_HOST_LOAD='$load' GDRPERF_COMMIT='$commit' COMPARE_ROUNDS=${COMPARE_ROUNDS:-3} COMPARE_DIR='$COMPARE_DIR' COMPARE_CQ_MOD=${COMPARE_CQ_MOD:-100} COMPARE_FORMS='${COMPARE_FORMS:-flags defaults}' sh scripts/compare-perftest.sh $*"
fi

SIZES="4096 65536 1048576"
LATENCY_SIZES="2 64 4096"
LATENCY_ITERATIONS=1000
ROUNDS=${COMPARE_ROUNDS:-3} # odd (checked above): the median is then one of the runs
DEPTH=128
CQ_MOD=${COMPARE_CQ_MOD:-100}
FORMS=${COMPARE_FORMS:-flags defaults}
if [ "$CQ_MOD" = default ]; then CQ_MOD=100; FORMS=defaults; fi
# use_form FORM: the flags of one form (see the header): -Q both tools get, gdrperf's warm-up and
# inline flags, and the output file's suffix.
use_form() {
    case $1 in
        flags) CQ_FLAG="-Q $CQ_MOD" WARMUP_FLAG="--warmup 0" INLINE_FLAG="-I 0" SUFFIX="" ;;
        defaults) CQ_FLAG="" WARMUP_FLAG="" INLINE_FLAG="" SUFFIX=-default-flags ;;
        *) echo "compare-perftest: unknown form '$1' (known: flags defaults)" >&2; exit 2 ;;
    esac
}
RX_DEPTH=512
PORT=19500
TRIES=5

# iterations_for SIZE: about 32 MiB per run, between 5 x CQ_MOD and 2000 messages. The floor gives
# both tools at least five signalled completions (perftest: every -Q; gdrperf also at least every
# 64 MiB): with fewer than four gdrperf leaves its peak empty (MIN_COMPLETION_EVENTS_FOR_PEAK) and
# perftest's comes out about its average. At 1 MiB that is 500 MiB a run, a few seconds in the VM.
iterations_for() {
    n=$((33554432 / $1)); [ $n -gt 2000 ] && n=2000; [ $n -lt $((5 * CQ_MOD)) ] && n=$((5 * CQ_MOD)); echo $n
}
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }

# csv_column FILE NAME: the value of column NAME in the first data row of a CSV file.
csv_column() { awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } !rows++ && c { print $c }' "$1"; }

# is_number TEXT: TEXT is one finite number above zero.
is_number() { echo "$1" | awk 'NR == 1 && NF == 1 && $1 ~ /^[0-9]+(\.[0-9]+)?$/ && $1 + 0 > 0 { ok = 1 } END { exit !ok }'; }

# mann_whitney "A values" "B values": two-sided p of a Mann-Whitney U test (normal approximation,
# ties given their mean rank), to tell a ratio from the runs' spread.
mann_whitney() {
    { for v in $1; do echo "$v a"; done; for v in $2; do echo "$v b"; done; } | sort -g | awk '
        { value[NR] = $1; group[NR] = $2 }
        END {
            for (i = 1; i <= NR; i = j + 1) {
                for (j = i; j < NR && value[j + 1] == value[i]; j++) {}
                t = j - i + 1; ties += t * t * t - t
                for (k = i; k <= j; k++) if (group[k] == "a") { ranks += (i + j) / 2; n1++ }
            }
            n2 = NR - n1
            if (n1 == 0 || n2 == 0) { print "nan"; exit }
            u = ranks - n1 * (n1 + 1) / 2
            sd = root(n1 * n2 / 12 * ((NR + 1) - ties / (NR * (NR - 1))))
            if (sd == 0) { print "1.000"; exit }
            z = (u - n1 * n2 / 2) / sd; if (z < 0) z = -z
            # two-sided p = erfc(z / sqrt 2), Abramowitz-Stegun 7.1.26 for erf
            x = z / root(2); t = 1 / (1 + 0.3275911 * x)
            erfc = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) / exponential(x * x)
            printf "%.3f\n", erfc
        }
        # The VM'"'"'s busybox awk has no math library: square root by Newton'"'"'s method, e^y (y >= 0) as
        # (1 + y/1024 + ...)^1024 by ten squarings.
        function root(v,  r, i) { if (v <= 0) return 0; r = v > 1 ? v : 1; for (i = 0; i < 60; i++) r = (r + v / r) / 2; return r }
        function exponential(y,  e, i) { y /= 1024; e = 1 + y * (1 + y / 2 * (1 + y / 3 * (1 + y / 4))); for (i = 0; i < 10; i++) e *= e; return e }'
}

# retry CMD...: runs CMD (which prints one number, or for bandwidth "average peak", or nothing when
# perftest gave up) up to $TRIES times. A peak that is not a number (gdrperf leaves it empty with
# too few completions) reads as nan.
retry() {
    for try in $(seq $TRIES); do
        value=$("$@") || true
        first=${value%% *}
        if is_number "$first"; then
            case $value in
                *" "*) second=${value#* }; is_number "$second" || second=nan; echo "$first $second" ;;
                *) echo "$first" ;;
            esac
            return
        fi
        echo "  (no result from $1, try $try of $TRIES)" >&2
    done
    echo nan nan
}

# perftest_one_sided TOOL SIZE ITERS -> "average peak" in MiB/s (perftest's "MB/sec" is MiB/s)
perftest_one_sided() {
    PORT=$((PORT + 1))
    $1 -d rxe0 -x 1 -p $PORT -s "$2" -n "$3" -t $DEPTH $CQ_FLAG >/dev/null 2>&1 &
    sleep 1
    $1 -d rxe0 -x 1 -p $PORT -s "$2" -n "$3" -t $DEPTH $CQ_FLAG 127.0.0.1 2>/dev/null |
        awk -v size="$2" '$1 == size && NF >= 5 { print $4, $3 }'
    wait
}
gdrperf_one_sided() { # TOOL SIZE ITERS
    PORT=$((PORT + 1)); rm -f "$SCRATCH"/compare.csv
    $1 -p $PORT -s "$2" -n "$3" -t $DEPTH $CQ_FLAG $WARMUP_FLAG >/dev/null 2>&1 &
    $1 -p $PORT -s "$2" -n "$3" -t $DEPTH $CQ_FLAG $WARMUP_FLAG --csv "$SCRATCH"/compare.csv 127.0.0.1 >/dev/null 2>&1
    wait
    echo "$(csv_column "$SCRATCH"/compare.csv bw_avg_mib_s) $(csv_column "$SCRATCH"/compare.csv bw_peak_mib_s)"
}
perftest_write_bw() { perftest_one_sided ib_write_bw "$@"; }
gdrperf_write_bw() { gdrperf_one_sided gdr-write-bw "$@"; }
# READ: both tools keep the device's max_qp_rd_atom READs outstanding per QP (neither gets -o).
perftest_read_bw() { perftest_one_sided ib_read_bw "$@"; }
gdrperf_read_bw() { gdrperf_one_sided gdr-read-bw "$@"; }

# SEND/RECV bandwidth: the client's (sender's) average, as perftest's client prints it.
perftest_send_bw() {
    PORT=$((PORT + 1))
    ib_send_bw -d rxe0 -x 1 -p $PORT -s "$1" -n "$2" -t $DEPTH $CQ_FLAG -r $RX_DEPTH >/dev/null 2>&1 &
    sleep 1
    ib_send_bw -d rxe0 -x 1 -p $PORT -s "$1" -n "$2" -t $DEPTH $CQ_FLAG -r $RX_DEPTH 127.0.0.1 2>/dev/null |
        awk -v size="$1" '$1 == size && NF >= 5 { print $4, $3 }'
    wait
}
gdrperf_send_bw() {
    PORT=$((PORT + 1)); rm -f "$SCRATCH"/compare.csv
    gdr-send-bw -p $PORT -s "$1" -n "$2" -t $DEPTH $CQ_FLAG -r $RX_DEPTH $WARMUP_FLAG >/dev/null 2>&1 &
    gdr-send-bw -p $PORT -s "$1" -n "$2" -t $DEPTH $CQ_FLAG -r $RX_DEPTH $WARMUP_FLAG --csv "$SCRATCH"/compare.csv 127.0.0.1 >/dev/null 2>&1
    wait
    echo "$(csv_column "$SCRATCH"/compare.csv bw_avg_mib_s) $(csv_column "$SCRATCH"/compare.csv bw_peak_mib_s)"
}

# Latency: perftest's t_typical (5th column of its result line) and our median.
perftest_latency() { # TOOL SIZE ITERATIONS
    PORT=$((PORT + 1))
    $1 -d rxe0 -x 1 -p $PORT -s "$2" -n "$3" >/dev/null 2>&1 &
    sleep 1
    $1 -d rxe0 -x 1 -p $PORT -s "$2" -n "$3" 127.0.0.1 2>/dev/null | awk -v size="$2" '$1 == size && NF >= 7 { print $5 }'
    wait
}
gdrperf_latency() { # TOOL SIZE ITERATIONS [OPTIONS]
    tool=$1 size=$2 iterations=$3; shift 3
    PORT=$((PORT + 1)); rm -f "$SCRATCH"/compare.csv
    $tool -p $PORT -s "$size" -n "$iterations" $WARMUP_FLAG "$@" >/dev/null 2>&1 &
    $tool -p $PORT -s "$size" -n "$iterations" $WARMUP_FLAG "$@" --csv "$SCRATCH"/compare.csv 127.0.0.1 >/dev/null 2>&1
    wait
    csv_column "$SCRATCH"/compare.csv t_typical_us
}
perftest_read_lat() { perftest_latency ib_read_lat "$@"; }
perftest_write_lat() { perftest_latency ib_write_lat "$@"; }
perftest_send_lat() { perftest_latency ib_send_lat "$@"; }
perftest_atomic_lat() { perftest_latency ib_atomic_lat "$@"; }
gdrperf_read_lat() { gdrperf_latency gdr-read-lat "$@" --latency-span iteration; }
gdrperf_write_lat() { gdrperf_latency gdr-write-lat "$@" $INLINE_FLAG --latency-span iteration; }
gdrperf_send_lat() { gdrperf_latency gdr-send-lat "$@" $INLINE_FLAG --latency-span iteration; }
# Atomics: fetch-and-add of 1 in both (neither gets -A), 8 bytes, the only size either takes.
gdrperf_atomic_lat() { gdrperf_latency gdr-atomic-lat "$@" --latency-span iteration; }

# numbers_in VALUES...: the values that are numbers (a run's empty peak, read as nan, is left out
# of medians and tests; a figure with no number left is nan).
numbers_in() { for v in "$@"; do if is_number "$v"; then printf '%s ' "$v"; fi; done; }
# median_or_nan VALUES...: the median of the numbers among VALUES, or nan when there are none.
median_or_nan() { set -- $(numbers_in "$@"); if [ $# -gt 0 ]; then median "$@"; else echo nan; fi; }
# p_value_of "A values" "B values": mann_whitney over the numbers only, nan when a side has none.
p_value_of() {
    a=$(numbers_in $1) b=$(numbers_in $2)
    if [ -n "$a" ] && [ -n "$b" ]; then mann_whitney "$a" "$b"; else echo nan; fi
}

# ratio_of A B: A / B with three decimals, nan unless both are numbers above zero.
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "nan" }'; }

# compare TEST KIND: KIND is bw (higher is better) or lat (lower is better).
compare() {
    test=$1 kind=$2
    out="$COMPARE_DIR/$test$SUFFIX-vs-perftest.csv"
    mkdir -p "$COMPARE_DIR"
    if [ "$kind" = bw ]; then
        if [ -n "$SUFFIX" ]; then
            extras="without -Q, each tool with its default CQ moderation and warm-up (perftest none, gdrperf 16 messages a QP)"
        else
            extras="$CQ_FLAG, no warm-up in either"
        fi
        sizes=$SIZES settings="-t $DEPTH $extras"
        if [ "$test" = send_bw ]; then settings="$settings -r $RX_DEPTH; sender's average"; fi
        columns="size,iterations,perftest_mib_s,gdrperf_mib_s,ratio,p_value,perftest_peak_mib_s,gdrperf_peak_mib_s,peak_ratio,peak_p_value,perftest_peak_over_avg,gdrperf_peak_over_avg"
    else
        if [ -n "$SUFFIX" ]; then
            extras="each tool's default warm-up (perftest none, gdrperf 16 samples dropped) and inline size (perftest 0 on rxe, gdrperf its own)"
        else
            extras="no warm-up, no inline (perftest's choice on rxe)"
        fi
        sizes=$LATENCY_SIZES; if [ "$test" = atomic_lat ]; then sizes=8; fi
        settings="-n $LATENCY_ITERATIONS, tx depth 1, $extras; sample = post to next post in both; t_typical = median"
        columns="size,iterations,perftest_t_typical_us,gdrperf_t_typical_us,ratio,p_value"
    fi
    {
        echo "# command: COMPARE_ROUNDS=$ROUNDS COMPARE_DIR=$COMPARE_DIR scripts/compare-perftest.sh $test (sizes $sizes; $settings; $ROUNDS alternating runs, medians; ratio = gdrperf / perftest)"
        echo "# machine: Soft-RoCE rxe0 on lo in a QEMU TCG VM ($(nproc) vCPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)), kernel $(uname -r), $(ib_write_bw --version 2>/dev/null | head -1 || echo perftest)"
        echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); host load average (1/5/15 min) at the start: ${GDRPERF_HOST_LOAD:-unknown}"
        echo "# git commit: ${GDRPERF_COMMIT:-unknown} (gdrperf built from it; $(gdr-write-bw --version 2>/dev/null | head -1))"
        echo "$columns"
    } >"$out"
    runs=""
    for size in $sizes; do
        if [ "$kind" = bw ]; then n=$(iterations_for "$size"); else n=$LATENCY_ITERATIONS; fi
        p=""; g=""; pp=""; gp=""
        for round in $(seq $ROUNDS); do
            # shellcheck disable=SC2046
            set -- $(retry perftest_$test "$size" "$n"); p="$p $1"; pp="$pp ${2:-}"
            # shellcheck disable=SC2046
            set -- $(retry gdrperf_$test "$size" "$n"); g="$g $1"; gp="$gp ${2:-}"
        done
        # shellcheck disable=SC2086
        pm=$(median $p); gm=$(median $g)
        ratio=$(ratio_of "$gm" "$pm")
        line="$size,$n,$pm,$gm,$ratio,$(mann_whitney "$p" "$g")"
        if [ "$kind" = bw ]; then
            # shellcheck disable=SC2086
            ppm=$(median_or_nan $pp); gpm=$(median_or_nan $gp)
            line="$line,$ppm,$gpm,$(ratio_of "$gpm" "$ppm"),$(p_value_of "$pp" "$gp"),$(ratio_of "$ppm" "$pm"),$(ratio_of "$gpm" "$gm")"
        fi
        echo "$line" | tee -a "$out"
        echo "  $test $size bytes: perftest runs:$p | gdrperf runs:$g" >&2
        runs="$runs# runs, $size bytes, in order (alternating): perftest$p | gdrperf$g
"
        if [ "$kind" = bw ]; then
            runs="$runs# peak runs, $size bytes: perftest$pp | gdrperf$gp
"
        fi
    done
    printf '%s' "$runs" >>"$out"
    echo "wrote $out"
}

for form in $FORMS; do
    use_form "$form"
    for test in "$@"; do
        case $test in
            write_bw | read_bw | send_bw) compare "$test" bw ;;
            read_lat | write_lat | send_lat | atomic_lat) compare "$test" lat ;;
            *) echo "compare-perftest: unknown test '$test' (known: write_bw read_bw send_bw read_lat write_lat send_lat atomic_lat)" >&2; exit 2 ;;
        esac
    done
done
