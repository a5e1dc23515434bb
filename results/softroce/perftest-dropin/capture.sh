#!/bin/sh
# Captures perftest's and gdrperf's stdout and --out_json files for the same runs, inside the
# Soft-RoCE VM, into this folder (the repository is mounted read-write there):
#   scripts/softroce.sh run -- sh results/softroce/perftest-dropin/capture.sh
# What tests/perftest-parsers.sh then reads with the field's awk and jq extractions.
# Servers' stdout too (perftest's servers report; so do gdrperf's).
set -u
cd "$(dirname "$0")/../../.."
DEST=results/softroce/perftest-dropin
PORT=19800
wait_for() { n=0; while ! grep -qF -- "$2" "$1" 2>/dev/null; do [ $n -ge 300 ] && return 1; n=$((n + 1)); sleep 0.2; done; }

# perftest TOOL NAME ARGS...: server and client, stdout of each (stderr apart), the client's JSON.
perftest() {
    tool=$1 name=$2; shift 2; PORT=$((PORT + 1))
    $tool -d rxe0 -x 1 -p $PORT "$@" --out_json --out_json_file=$DEST/$name.server.json >$DEST/$name.server.out 2>$DEST/$name.server.err &
    sleep 1 # perftest's server says nothing before a client comes
    $tool -d rxe0 -x 1 -p $PORT "$@" --out_json --out_json_file=$DEST/$name.client.json 127.0.0.1 >$DEST/$name.client.out 2>$DEST/$name.client.err
    echo "$name: client exit $?"
    wait
}
# gdrperf TOOL NAME ARGS...: the same command lines with the binary's name changed.
gdrperf() {
    tool=$1 name=$2; shift 2; PORT=$((PORT + 1))
    $tool -p $PORT "$@" --out_json --out_json_file=$DEST/$name.server.json >$DEST/$name.server.out 2>$DEST/$name.server.err &
    wait_for $DEST/$name.server.err "waiting for a client on" || wait_for $DEST/$name.server.out "waiting for a client on"
    $tool -p $PORT "$@" --out_json --out_json_file=$DEST/$name.client.json 127.0.0.1 >$DEST/$name.client.out 2>$DEST/$name.client.err
    echo "$name: client exit $?"
    wait
}
perftest ib_write_bw ib_write_bw -s 65536 -n 200
gdrperf gdr-write-bw gdr-write-bw -s 65536 -n 200
perftest ib_write_bw ib_write_bw_sweep -a -n 20
gdrperf gdr-write-bw gdr-write-bw_sweep -a -n 20
perftest ib_write_bw ib_write_bw_bidir -s 65536 -n 200 -b
gdrperf gdr-write-bw gdr-write-bw_bidir -s 65536 -n 200 -b
perftest ib_read_lat ib_read_lat -s 64 -n 200
gdrperf gdr-read-lat gdr-read-lat -s 64 -n 200
perftest ib_send_lat ib_send_lat_duration -s 64 -D 2
gdrperf gdr-send-lat gdr-send-lat_duration -s 64 -D 2
perftest ib_send_bw ib_send_bw -s 65536 -n 200
gdrperf gdr-send-bw gdr-send-bw -s 65536 -n 200
ib_write_bw --version 2>&1 | head -1 >$DEST/perftest-version.txt
