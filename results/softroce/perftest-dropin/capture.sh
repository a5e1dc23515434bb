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

# perftest TOOL NAME ARGS...: server and client, stdout of each (stderr apart), and each side's
# --out_json file where this perftest has the flag (Debian's build may predate it).
perftest() {
    tool=$1 file=ib-$2; shift 2
    json() { $tool --help 2>&1 | grep -q out_json && echo "--out_json --out_json_file=$DEST/$file.$1.json"; }
    for try in 1 2 3; do
        PORT=$((PORT + 1))
        $tool -d rxe0 -x 1 -p $PORT "$@" $(json server) >$DEST/$file.server.out 2>$DEST/$file.server.err </dev/null &
        server=$!
        sleep 3 # perftest's server says nothing before a client comes: give it time to listen
        $tool -d rxe0 -x 1 -p $PORT "$@" $(json client) 127.0.0.1 >$DEST/$file.client.out 2>$DEST/$file.client.err </dev/null
        status=$?
        echo "$file: client exit $status (try $try)"
        n=0; while kill -0 $server 2>/dev/null && [ $n -lt 150 ]; do n=$((n + 1)); sleep 0.2; done
        kill $server 2>/dev/null; wait $server 2>/dev/null
        [ $status = 0 ] && return
    done
}
# gdrperf TOOL NAME ARGS...: the same command lines with the binary's name changed.
gdrperf() {
    tool=$1 file=gdr-$2; shift 2; PORT=$((PORT + 1))
    $tool -p $PORT "$@" --out_json --out_json_file=$DEST/$file.server.json >$DEST/$file.server.out 2>$DEST/$file.server.err </dev/null &
    wait_for $DEST/$file.server.err "waiting for a client on"
    $tool -p $PORT "$@" --out_json --out_json_file=$DEST/$file.client.json 127.0.0.1 >$DEST/$file.client.out 2>$DEST/$file.client.err </dev/null
    echo "$file: client exit $?"
    n=0; while kill -0 $! 2>/dev/null && [ $n -lt 150 ]; do n=$((n + 1)); sleep 0.2; done
    kill $! 2>/dev/null; wait
}
# name, then the command line both tools are given. -F: under TCG perftest's CPU frequency
# estimate fails ("Can't produce a report") without it; gdrperf ignores it with a note.
while read -r name perftest_tool gdrperf_tool arguments; do
    perftest $perftest_tool $name $arguments
    gdrperf $gdrperf_tool $name $arguments
done <<TESTS
write_bw ib_write_bw gdr-write-bw -F -s 65536 -n 200
write_bw_sweep ib_write_bw gdr-write-bw -F -a -n 20
write_bw_bidir ib_write_bw gdr-write-bw -F -s 65536 -n 200 -b
send_bw ib_send_bw gdr-send-bw -F -s 65536 -n 200
read_lat ib_read_lat gdr-read-lat -F -s 64 -n 200
send_lat_duration ib_send_lat gdr-send-lat -F -s 64 -D 2
TESTS
{ echo "perftest: $(ib_write_bw --version 2>&1 | head -1)"; echo "gdrperf: $(gdr-write-bw --version 2>&1 | head -1), commit ${GDRPERF_COMMIT:-unknown}"; echo "host load: ${GDRPERF_HOST_LOAD:-unknown}"; } >$DEST/versions.txt
