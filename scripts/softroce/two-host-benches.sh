#!/bin/sh
# The VM half of the bench tests of scripts/two-host-tests.sh; both VMs of `softroce.sh pair`
# run it (busybox sh):
#
#   scripts/softroce.sh pair -- 'scripts/softroce/two-host-benches.sh OUT_DIR'
#
# gdrvm0 runs the servers, gdrvm1 the clients (connecting to gdrvm0 by name), one bench at a
# time, each on its own TCP port, host memory, --validate. For each case NAME it leaves in
# OUT_DIR: NAME.csv and NAME.json (client), NAME.server.log, NAME.client.log, NAME.server.status
# and NAME.client.status (exit codes); and eth0's byte counters before and after every case
# (eth0.gdrvmN.before/.after), so the host can check that the traffic crossed the link. Bench
# binaries that are not built are skipped (NAME.skipped). The host judges the files.
set -u
OUT=$1
mkdir -p "$OUT"
ME=$GDRPERF_VM_HOST
port=19200
# One secret for both sides: the exchange's challenge runs over the link too.
export GDRPERF_TOKEN=a83f1c6e20d94b7f5e0c2a9d1b6e4f07  # 128 bits, as tokens must be (both VMs share it)

counters() { echo "$(cat /sys/class/net/eth0/statistics/tx_bytes) $(cat /sys/class/net/eth0/statistics/rx_bytes)"; }

# case NAME BENCH ARGS...: one server/client run.
case_() {
    name=$1; bench=$2; shift 2
    port=$((port + 1))
    if ! command -v "$bench" >/dev/null; then
        echo "$bench not built" >"$OUT/$name.skipped"
        return
    fi
    if [ "$GDRPERF_VM_INDEX" = 0 ]; then
        "$bench" "$@" -p $port --timeout 120 >"$OUT/$name.server.log" 2>&1 &
        pid=$!
        # The bench's server waits for its client without a limit: stop it 30 s after the
        # client has given up, so one broken case does not stall the rest.
        after_client=0
        while kill -0 $pid 2>/dev/null; do
            if [ -f "$OUT/$name.client.status" ]; then
                after_client=$((after_client + 1))
                [ $after_client -gt 30 ] && { echo "killed: client finished 30 s ago" >>"$OUT/$name.server.log"; kill $pid; }
            fi
            sleep 1
        done
        wait $pid
        echo $? >"$OUT/$name.server.status"
    else
        "$bench" "$@" -p $port --timeout 120 --csv "$OUT/$name.csv" --json "$OUT/$name.json" "$GDRPERF_PEER_HOST" \
            >"$OUT/$name.client.log" 2>&1
        echo $? >"$OUT/$name.client.status"
    fi
    echo "$ME: $name done"
}

counters >"$OUT/eth0.$ME.before"
# Iterations are small: under TCG the link moves ~10 MiB/s.
case_ write_bw_sweep gdr-write-bw -a -n 5 --warmup 1 -t 16 -Q 4 --validate
case_ write_bw_bidir gdr-write-bw -s 64K -n 50 -q 2 -b --validate
case_ read_lat gdr-read-lat -s 64 -n 200 --validate
case_ send_bw gdr-send-bw -s 64K -n 50 --validate
case_ write_lat gdr-write-lat -s 64 -n 200 --validate
case_ send_lat gdr-send-lat -s 64 -n 200 --validate
counters >"$OUT/eth0.$ME.after"
