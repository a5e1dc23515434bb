#!/bin/sh
# A short row explained (issue 22), made in the Soft-RoCE VM from the repository root:
#   scripts/softroce.sh run -- results/softroce/ceilings/run.sh
# after `cargo build --release -p gdrperf-benches --bin gdr-write-bw -p gdrperf-cli
# -p gdrperf-doctor-fixtures --example write_fixture`.
# The data moves over rxe0; the path facts each side reads are fixture trees of real machine
# shapes (gdrperf-doctor-fixtures, NIC of pair 0 renamed rxe0): the client a healthy DGX
# H100-like node, the server the same with its NIC trained at PCIe x8. So the row is short for
# Soft-RoCE's reasons, and the causes listed are the fixtures': this shows the mechanism (the
# server's facts crossing the handshake into the client's row, and `gdrperf explain` judging the
# stored file again), not a measurement of any real node.
set -eu
out=results/softroce/ceilings
trees=/tmp/ceiling-trees
rm -rf "$trees"
target/release/examples/write_fixture dgx-h100 "$trees/healthy" rxe0
target/release/examples/write_fixture dgx-h100-nic-at-x8 "$trees/x8" rxe0
GDRPERF_PATH_SYSFS_ROOT="$trees/x8" gdr-write-bw -p 18555 -s 65536 -n 200 >"$out/server.log" 2>&1 &
server=$!
GDRPERF_PATH_SYSFS_ROOT="$trees/healthy" gdr-write-bw -p 18555 -s 65536 -n 200 --report-gbits \
    --json "$out/client.json" --csv "$out/client.csv" 127.0.0.1 >"$out/client.log" 2>&1
wait "$server"
status=0
gdrperf explain "$out/client.json" >"$out/explain.tmp" || status=$?
commit=$(sed -n 's/.*"git_commit": "\([^"]*\)".*/\1/p' "$out/client.json" | head -1)
{
    echo "# command: gdrperf explain $out/client.json (exit $status), commit $commit, Soft-RoCE VM (TCG), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    cat "$out/explain.tmp"
} >"$out/explain.txt"
rm -f "$out/explain.tmp"
for log in client server; do
    { echo "# command: see run.sh ($log side of gdr-write-bw), commit $commit"; cat "$out/$log.log"; } >"$out/$log.tmp"
    mv "$out/$log.tmp" "$out/$log.log"
done
