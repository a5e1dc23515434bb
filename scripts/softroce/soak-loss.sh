#!/bin/sh
# Soak under packet loss, the VM half of scripts/soak-loss-test.sh: both VMs of
# `softroce.sh pair` run it (busybox sh):
#
#   scripts/softroce.sh pair --timeout 900 -- 'scripts/softroce/soak-loss.sh OUT_DIR'
#
# The same acceptance with a soak (scripts/softroce/soak-loss.toml: one bandwidth row, then five
# 4-second intervals) runs twice across the link: gdrvm0 serves every run
# (`gdrperf accept --serve`), gdrvm1 is the node under test (`gdrperf accept --peer gdrvm0`).
#   clean: no netem.
#   lossy: once gdrvm1's soak has printed its interval 1 line (a condition, not a delay),
#          `tc qdisc add dev eth0 root netem loss 2%` on gdrvm1 drops 2% of what it sends (the
#          data of its writes); removed when the run has ended.
# Each run leaves NAME.client.log/.status (gdrvm1), NAME.serve.log/.status (gdrvm0) and the
# acceptance folder NAME/ with soak.json; the lossy run also netem.log. The host judges.
set -u
OUT=$1
mkdir -p "$OUT"
export GDRPERF_TOKEN=3b9e6f1d07a24c58e1f0d6a39c7b2e45  # 128 bits, as tokens must be (both VMs share it)
PROFILE=scripts/softroce/soak-loss.toml
uname -a >"$OUT/uname.$GDRPERF_VM_HOST.txt"

# soak NAME FIRST_PORT [loss]: one acceptance with a soak, gdrvm0 serving and gdrvm1 measuring.
soak() {
    name=$1; port=$2; loss=${3:-}
    if [ "$GDRPERF_VM_INDEX" = 0 ]; then
        busybox timeout 600 gdrperf accept --profile $PROFILE --soak r1 --serve --peer-port "$port" \
            --run-timeout 180 --out "$OUT/$name-serve" >"$OUT/$name.serve.log" 2>&1
        echo $? >"$OUT/$name.serve.status"
        return
    fi
    busybox timeout 600 gdrperf accept --profile $PROFILE --soak r1 --peer "$GDRPERF_PEER_HOST" --peer-port "$port" \
        --run-timeout 180 --out "$OUT/$name" >"$OUT/$name.client.log" 2>&1 &
    pid=$!
    if [ -n "$loss" ]; then
        polls=0
        while ! grep -q "^  write_bw-host-rxe0 interval 1: " "$OUT/$name.client.log" 2>/dev/null &&
            kill -0 $pid 2>/dev/null && [ $polls -lt 1500 ]; do polls=$((polls + 1)); sleep 0.2; done
        if grep -q "^  write_bw-host-rxe0 interval 1: " "$OUT/$name.client.log"; then
            # iproute2's tc by path: busybox's own tc applet knows no netem.
            /usr/bin/tc qdisc add dev eth0 root netem loss "$loss" >"$OUT/netem.log" 2>&1
            echo "tc qdisc add dev eth0 root netem loss $loss: exit $? after the line: $(grep ' interval [0-9]*: ' "$OUT/$name.client.log" | tail -n 1)" >>"$OUT/netem.log"
            /usr/bin/tc qdisc show dev eth0 >>"$OUT/netem.log" 2>&1
        else
            echo "no interval 1 line: netem not switched on" >"$OUT/netem.log"
        fi
    fi
    wait $pid
    echo $? >"$OUT/$name.client.status"
    if [ -n "$loss" ]; then
        /usr/bin/tc -s qdisc show dev eth0 >>"$OUT/netem.log" 2>&1
        /usr/bin/tc qdisc del dev eth0 root >>"$OUT/netem.log" 2>&1
    fi
}

soak clean 19400
soak lossy 19500 2%
echo "$GDRPERF_VM_HOST: both soaks done"
