#!/bin/sh
# NIC counters under packet loss, the VM half of scripts/loss-test.sh: both VMs of
# `softroce.sh pair` run it (busybox sh):
#
#   scripts/softroce.sh pair --timeout 900 -- 'scripts/softroce/loss.sh OUT_DIR LOSS ITERS REPEATS'
#
# gdrvm1 drops LOSS (e.g. 2%) of what leaves its eth0 (tc netem; sch_netem is in the VM image;
# NETEM_EXTRA adds netem options, e.g. duplicate or reorder),
# then gdrvm0 serves and gdrvm1 runs, one case at a time, 64 KiB messages, ITERS of them:
# gdrperf's gdr-write-bw one way and both ways (-b), the client with --max-nic-errors 0, and
# perftest's ib_write_bw the same two ways, on the same GID (RoCE v2, IPv4-mapped). Before and
# after each case both VMs save rxe0's hw_counters and eth0's statistics
# (NAME.gdrvmN.before/.after, "name value" lines); every case leaves its logs and exit codes
# (NAME.server.log/.status, NAME.client.log/.status) and gdrperf's client its CSV and JSON.
# Then REPEATS times each, alternating: the two-host suite's write_bw_bidir case as it is
# (-s 64K -n 50 -q 2 -b --validate, which once failed with "remote invalid request" in CI) and
# ib_write_bw with the same shape, to see whether loss brings that error and in which tool.
# The host judges the files.
set -u
OUT=$1; LOSS=${2:-2%}; ITERS=${3:-500}; REPEATS=${4:-3}
mkdir -p "$OUT"
ME=$GDRPERF_VM_HOST
port=19300
export GDRPERF_TOKEN=5c0e9a41d7b3f2886e1d4c0ab9357f2e  # 128 bits, as tokens must be (both VMs share it)
PORT_DIR=/sys/class/infiniband/rxe0/ports/1

counters() {
    for file in "$PORT_DIR"/hw_counters/*; do echo "$(basename "$file") $(cat "$file")"; done
    # busybox sh has no `local`: these loop variables must not be case_'s `name`.
    for stat in tx_packets rx_packets tx_bytes rx_bytes tx_dropped; do
        echo "eth0_$stat $(cat /sys/class/net/eth0/statistics/$stat)"
    done
}

# The GID index of the IPv4-mapped RoCE v2 GID (what gdrperf picks), for perftest's -x.
gid_index() {
    for file in "$PORT_DIR"/gids/*; do
        index=$(basename "$file")   # (not `name`, see counters)
        case "$(cat "$file")" in
            0000:0000:0000:0000:0000:ffff:*)
                [ "$(cat "$PORT_DIR/gid_attrs/types/$index" 2>/dev/null)" = "RoCE v2" ] && { echo "$index"; return; } ;;
        esac
    done
    echo 1
}
GID=$(gid_index)

if [ "$GDRPERF_VM_INDEX" = 1 ]; then
    {
        # iproute2's tc by path: busybox sh would run its own tc applet, which knows no netem.
        # NETEM_EXTRA: more netem options after the loss (e.g. "duplicate 2%", or
        # "delay 1ms reorder 25% 50%"), word-split on purpose.
        # shellcheck disable=SC2086
        /usr/bin/tc qdisc add dev eth0 root netem loss "$LOSS" ${NETEM_EXTRA:-}
        echo "tc qdisc add dev eth0 root netem loss $LOSS ${NETEM_EXTRA:-}: exit $?"
        /usr/bin/tc qdisc show dev eth0
    } >"$OUT/netem.log" 2>&1
fi
uname -a >"$OUT/uname.$ME.txt"
echo "$ME: RoCE v2 IPv4 GID index $GID: $(cat "$PORT_DIR/gids/$GID")" >"$OUT/gid.$ME.txt"

# case_ NAME SERVER_CMD... -- CLIENT_CMD...: the server in gdrvm0, the client in gdrvm1 (which
# gets "-p PORT PEER" appended); both are bounded by `timeout`, and the server is stopped 30 s
# after its client finished, so one broken case does not stall the rest.
case_() {
    name=$1; shift
    port=$((port + 1))
    server=""; client=""; side=server
    for word in "$@"; do
        if [ "$word" = "--" ]; then side=client; continue; fi
        if [ $side = server ]; then server="$server $word"; else client="$client $word"; fi
    done
    counters >"$OUT/$name.$ME.before"
    if [ "$GDRPERF_VM_INDEX" = 0 ]; then
        echo "#$server -p $port" >"$OUT/$name.server.log"
        busybox timeout 400 $server -p $port >>"$OUT/$name.server.log" 2>&1 &
        pid=$!
        # The client starts once the server's TCP port listens (state 0A in /proc/net/tcp*), a
        # condition rather than a guessed delay; after 60 s without it the client is let go anyway
        # and fails with the server's own words in its log.
        hex=$(printf '%04X' "$port"); polls=0
        while ! grep -q ":$hex [0-9A-F]*:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null &&
            kill -0 $pid 2>/dev/null && [ $polls -lt 300 ]; do polls=$((polls + 1)); sleep 0.2; done
        touch "$OUT/$name.server.started"
        after=0
        while kill -0 $pid 2>/dev/null; do
            if [ -f "$OUT/$name.client.status" ]; then
                after=$((after + 1))
                [ $after -gt 30 ] && { echo "killed: client finished 30 s ago" >>"$OUT/$name.server.log"; kill $pid; }
            fi
            sleep 1
        done
        wait $pid; echo $? >"$OUT/$name.server.status"
        while [ ! -f "$OUT/$name.client.status" ]; do sleep 1; done
    else
        while [ ! -f "$OUT/$name.server.started" ]; do sleep 0.2; done
        echo "#$client -p $port $GDRPERF_PEER_HOST" >"$OUT/$name.client.log"
        busybox timeout 400 $client -p $port "$GDRPERF_PEER_HOST" >>"$OUT/$name.client.log" 2>&1
        echo $? >"$OUT/$name.client.status"
        while [ ! -f "$OUT/$name.server.status" ]; do sleep 1; done
    fi
    counters >"$OUT/$name.$ME.after"
    echo "$ME: $name done"
}

G="-s 64K -n $ITERS --timeout 120"
C="--max-nic-errors 0"
case_ gdrperf_write_bw gdr-write-bw $G -- gdr-write-bw $G $C --csv "$OUT/gdrperf_write_bw.csv" --json "$OUT/gdrperf_write_bw.json"
case_ gdrperf_write_bw_bidir gdr-write-bw $G -b -- gdr-write-bw $G -b $C --csv "$OUT/gdrperf_write_bw_bidir.csv" --json "$OUT/gdrperf_write_bw_bidir.json"
P="-d rxe0 -x $GID -s 65536 -n $ITERS --report_gbits"
case_ perftest_write_bw ib_write_bw $P -- ib_write_bw $P
case_ perftest_write_bw_bidir ib_write_bw $P -b -- ib_write_bw $P -b
repeat=1
while [ $repeat -le "$REPEATS" ]; do
    Q="-s 64K -n 50 -q 2 -b --validate --timeout 120"
    case_ ci_gdrperf_bidir_q2_$repeat gdr-write-bw $Q -- gdr-write-bw $Q --csv "$OUT/ci_gdrperf_bidir_q2_$repeat.csv" --json "$OUT/ci_gdrperf_bidir_q2_$repeat.json"
    Q="-d rxe0 -x $GID -s 65536 -n 50 -q 2 -b --report_gbits"
    case_ ci_perftest_bidir_q2_$repeat ib_write_bw $Q -- ib_write_bw $Q
    repeat=$((repeat + 1))
done
echo "$ME: all cases done"
