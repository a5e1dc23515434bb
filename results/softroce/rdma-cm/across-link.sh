#!/bin/sh
# -R across the link of `scripts/softroce.sh pair` (both VMs run it, busybox sh): gdrvm0 serves,
# gdrvm1 connects to it by address, rdma_cm resolving 192.0.2.10 on gdrvm1's rxe0 (eth0):
#
#   scripts/softroce.sh pair -- 'sh results/softroce/rdma-cm/across-link.sh OUT_DIR'
#
# Each case leaves NAME.server.log / NAME.client.log and their exit codes (.status) in OUT_DIR.
set -u
OUT=$1
mkdir -p "$OUT"
port=19300

case_() {
    name=$1; shift
    port=$((port + 1))
    if [ "$GDRPERF_VM_INDEX" = 0 ]; then
        "$@" -p $port >"$OUT/$name.server.log" 2>&1 &
        pid=$!
        waited=0
        while kill -0 $pid 2>/dev/null; do
            [ -f "$OUT/$name.client.status" ] && waited=$((waited + 1))
            [ $waited -gt 20 ] && { echo "killed: client finished 20 s ago" >>"$OUT/$name.server.log"; kill $pid; }
            sleep 1
        done
        wait $pid; echo $? >"$OUT/$name.server.status"
    else
        sleep 3 # the server listens first (perftest's client does not retry)
        "$@" -p $port "$GDRPERF_PEER_IP" >"$OUT/$name.client.log" 2>&1
        echo $? >"$OUT/$name.client.status"
        # The next case starts when the server side has written its status.
        while [ ! -f "$OUT/$name.server.status" ]; do sleep 1; done
    fi
}

case_ write_bw gdr-write-bw -R -q 2 -s 65536 -n 100 --validate
case_ read_lat gdr-read-lat -R -s 64 -n 200 --validate
case_ send_lat gdr-send-lat -R -s 64 -n 200 --validate
case_ ib_write_bw ib_write_bw -R -s 65536 -n 200
echo "$GDRPERF_VM_HOST: done"
