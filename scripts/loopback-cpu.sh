#!/bin/sh
# Where a loopback latency run spends CPU, thread by thread (does the passive
# side spin on a CPU the active side needs?). Runs inside the Soft-RoCE VM:
#   flock /tmp/gdrperf-vm.lock scripts/softroce.sh run --timeout 600 -- 'sh scripts/loopback-cpu.sh'
# For gdr-read-lat --loopback and for two ib_read_lat processes: 2 s of each thread's CPU time
# (utime + stime from /proc, in clock ticks of 10 ms) taken 3 s into an 8 s run (-D 8).
set -u
# Scratch files in a private folder (mktemp), never a fixed /tmp name another user could plant.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
SECONDS_RUN=8

# ticks PID...: "pid/tid ticks" for every thread of every PID.
ticks() {
    for pid in "$@"; do
        for task in /proc/$pid/task/*; do
            # Fields after "pid (comm) ": state is the 1st, utime the 12th, stime the 13th.
            set -- $(sed 's/^.*) //' "$task/stat")
            echo "$pid/${task##*/} $(( ${12} + ${13} ))"
        done
    done
}

# sample LABEL PID...: CPU ticks per thread over 2 s.
sample() {
    label=$1; shift
    sleep 3
    ticks "$@" >"$SCRATCH"/ticks.before
    sleep 2
    ticks "$@" >"$SCRATCH"/ticks.after
    echo "# $label: CPU ticks (10 ms) per thread over 2 s"
    awk 'NR == FNR { before[$1] = $2; next } { printf "  %-14s %4d\n", $1, $2 - before[$1] }' "$SCRATCH"/ticks.before "$SCRATCH"/ticks.after
}

echo "# $(nproc) vCPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
gdr-read-lat --loopback -d rxe0 -x 1 -s 8 -D $SECONDS_RUN --csv "$SCRATCH"/loopback.csv >"$SCRATCH"/loopback.log 2>&1 &
gdr=$!
sample "gdr-read-lat --loopback -s 8 (one process: main, active and passive threads)" $gdr
wait $gdr
echo "  t_typical_us: $(awk -F, '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == "t_typical_us") c = i; next } !rows++ { print $c }' "$SCRATCH"/loopback.csv)"

ib_read_lat -d rxe0 -x 1 -p 19700 -s 8 -D $SECONDS_RUN >"$SCRATCH"/server.log 2>&1 &
server=$!
sleep 1
ib_read_lat -d rxe0 -x 1 -p 19700 -s 8 -D $SECONDS_RUN 127.0.0.1 >"$SCRATCH"/client.log 2>&1 &
client=$!
sample "ib_read_lat server ($server) and client ($client)" $server $client
wait $client; wait $server
echo "  ib_read_lat client: $(grep -E '^ *8 ' "$SCRATCH"/client.log | head -1)"
