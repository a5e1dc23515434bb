#!/bin/sh
# Issue 25 item 3: gdr-send-bw --concurrent -d rxe0,rxe0 --mem host -s 1M stalls ("no completion
# progress for 10 s") in some runs. Is it a hang or a long silence, and does perftest see the same
# on the same port in the same boot? Per round, in one Soft-RoCE VM boot:
#   1. gdrperf's two lanes with the default --timeout 10;
#   2. the same with --timeout 120 (a hang still fails, a long silence passes);
#   3. two perftest ib_send_bw pairs at once on rxe0 with gdrperf's flags (-t 128 -Q 100 -r 512).
# Each line: what ran, its exit status, wall seconds, and the port's retry and duplicate counters
# over it, and how many times the kernel's watchdog reported a CPU stuck in the kernel
# ("soft lockup") meanwhile. Command, from the repository root:
#
#   scripts/softroce.sh run --timeout 1500 -- "COMMIT=$(git rev-parse --short HEAD) results/softroce/lanes-stall/run.sh"
# Written at commit e974eba (branch placements); runs.txt's header names the commit it ran. Since
# the rows' CSV files begin with '#' provenance lines (issue 20), the lane figures skip them.
set -u
HERE=${HERE:-results/softroce/lanes-stall}
mkdir -p "$HERE"
OUT=$HERE/runs.txt
N=${N:-200}
ROUNDS=${ROUNDS:-2}
C=/sys/class/infiniband/rxe0/ports/1/hw_counters
counters() { echo "$(cat $C/completer_retry_err) $(cat $C/duplicate_request) $(dmesg | grep -c "soft lockup")"; }
now() { cut -d' ' -f1 /proc/uptime; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
{
    echo "# command: results/softroce/lanes-stall/run.sh (N=$N ROUNDS=$ROUNDS), commit ${COMMIT:-unknown}"
    echo "# machine: Soft-RoCE VM (QEMU TCG, $(nproc) vCPUs) on the 2-core build host, loaded; $(uname -r)"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "# columns: round, run, exit status, wall s, completer_retry_err and duplicate_request moved, kernel soft lockup reports (watchdog: BUG: soft lockup) during the run, then the tool's figures"
} >"$OUT"
port=19500
for round in $(seq $ROUNDS); do
    for timeout in 10 120; do
        before=$(counters); start=$(now)
        gdr-send-bw --loopback --concurrent -d rxe0,rxe0 --mem host -s 1M -n $N --timeout $timeout \
            --csv /tmp/lanes.csv >/tmp/lanes.log 2>&1
        status=$?
        end=$(now); after=$(counters)
        lanes=$(awk -F, '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { printf "lane %s %.2f MiB/s; ", $c["lane"], $c["bw_avg_mib_s"] }' /tmp/lanes.csv)
        error=$(grep -o "error: .*" /tmp/lanes.log | cut -c1-160)
        echo "$round gdrperf-lanes-timeout-$timeout $status $(minus $end $start) $(echo $after $before | awk '{ print $1 - $4, $2 - $5, $3 - $6 }') $lanes $error" >>"$OUT"
    done
    before=$(counters); start=$(now)
    for pair in 1 2; do
        port=$((port + 1))
        ib_send_bw -d rxe0 -x 1 -p $port -s 1048576 -n $N -t 128 -Q 100 -r 512 >/dev/null 2>&1 &
        sleep 1
        (ib_send_bw -d rxe0 -x 1 -p $port -s 1048576 -n $N -t 128 -Q 100 -r 512 127.0.0.1 >/tmp/pair$pair.log 2>&1;
         echo "exit $? at $(now)" >>/tmp/pair$pair.log) &
    done
    wait
    end=$(now); after=$(counters)
    pairs=""
    for pair in 1 2; do
        pairs="$pairs pair $pair: $(awk '/^ 1048576/ { print $4 " MiB/s avg" }' /tmp/pair$pair.log) $(grep '^exit' /tmp/pair$pair.log | awk -v s=$start '{ printf "%s, done after %.1f s", $1 " " $2, $4 - s }')"
        # A pair that printed no figure: its own last words (perftest's error) follow.
        grep -q '^ 1048576' /tmp/pair$pair.log || pairs="$pairs ($(grep -v '^exit' /tmp/pair$pair.log | grep -v '^ *$' | tail -n 2 | tr '\n' ' ' | cut -c1-200))"
        pairs="$pairs;"
    done
    echo "$round perftest-two-pairs - $(minus $end $start) $(echo $after $before | awk '{ print $1 - $4, $2 - $5, $3 - $6 }')$pairs" >>"$OUT"
done
