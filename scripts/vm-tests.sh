#!/bin/sh
# Integration tests that need an RDMA device: run inside the Soft-RoCE VM by scripts/test.sh
#   scripts/softroce.sh run -- scripts/vm-tests.sh
# Runs every bench binary for real over rxe0 (loopback and server/client, several sizes, with
# --validate), checks the CSV and JSON they write, and checks that bad input fails cleanly.
# Ends with "N passed, N failed" and exits non-zero if anything failed.
# Iteration counts are small on purpose: under TCG the VM moves ~100 MB/s.
set -u
cd "$(dirname "$0")/.."
OUT=${VM_TEST_OUT:-/tmp/gdrperf-vm-tests}
rm -rf "$OUT"; mkdir -p "$OUT"
PASSED=0; FAILED=0; FAILURES=""
PORT=19000

pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); FAILURES="$FAILURES\n  $1"; echo "FAIL - $1"; shift; for line in "$@"; do echo "       $line"; done; }
next_port() { PORT=$((PORT + 1)); }

# run NAME EXPECTED_EXIT CMD...: runs CMD with output in $OUT/NAME.log, checks the exit code and
# that nothing panicked.
run() {
    name=$1; expected=$2; shift 2
    "$@" >"$OUT/$name.log" 2>&1
    status=$?
    if grep -q "panicked\|RUST_BACKTRACE" "$OUT/$name.log"; then
        fail "$name" "panicked:" "$(tail -5 "$OUT/$name.log")"; return 1
    fi
    if [ "$status" != "$expected" ]; then
        fail "$name" "exit $status, expected $expected" "$(tail -8 "$OUT/$name.log")"; return 1
    fi
    return 0
}

# expect_in NAME TEXT: the log of NAME contains TEXT.
expect_in() {
    if grep -qF -- "$2" "$OUT/$1.log"; then pass "$1: says '$2'"; else fail "$1: says '$2'" "$(tail -5 "$OUT/$1.log")"; fi
}

# check_bw_csv NAME FILE ROWS: header has our columns, ROWS data rows, every number positive and
# finite, validation column as expected.
check_bw_csv() {
    name=$1; file=$2; rows=$3; validation=$4
    if [ ! -s "$file" ]; then fail "$name: csv written" "missing $file"; return; fi
    problems=$(awk -F, -v rows="$rows" -v want="$validation" '
        NR == 1 {
            for (i = 1; i <= NF; i++) col[$i] = i
            split("test bytes iterations bw_peak_mib_s bw_avg_mib_s bw_peak_gbit_s bw_avg_gbit_s msg_rate_mpps validation", need, " ")
            for (k in need) if (!(need[k] in col)) print "missing column " need[k]
            next
        }
        {
            n++
            for (k = 2; k <= 8; k++) { v = $k; if (!(v + 0 > 0) || v ~ /nan|inf/) print "row " n " column " k " not positive: " v }
            if ($col["validation"] != want) print "row " n " validation " $col["validation"] " not " want
        }
        END { if (n != rows) print "expected " rows " rows, found " n }' "$file")
    if [ -z "$problems" ]; then pass "$name: csv has $rows rows of positive numbers, validation $validation"; else fail "$name: csv" "$problems"; fi
}

echo "# gdrperf VM integration tests on $(hostname), $(date)"
rdma link 2>/dev/null | head -3

# --- gdr-write-bw, loopback, sweep with data check -------------------------------------------
if run write_bw_loopback_sweep 0 gdr-write-bw --loopback -a -n 20 -t 16 -Q 4 --validate \
        --csv "$OUT/sweep.csv" --json "$OUT/sweep.json"; then
    pass "write_bw loopback -a --validate exits 0"
fi
check_bw_csv write_bw_loopback_sweep "$OUT/sweep.csv" 23 pass
if grep -q '"results"' "$OUT/sweep.json" && grep -q '"gdrperf_version"' "$OUT/sweep.json" \
        && [ "$(grep -c '"bw_avg_mib_s"' "$OUT/sweep.json")" = 23 ]; then
    pass "write_bw json has metadata and 23 results"
else
    fail "write_bw json has metadata and 23 results" "$(head -c 400 "$OUT/sweep.json")"
fi
expect_in write_bw_loopback_sweep "BW average[MiB/sec]"
expect_in write_bw_loopback_sweep "rxe0"

# --- server and client processes, several QPs, bidirectional, Gb/s ----------------------------
next_port
gdr-write-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate >"$OUT/server.log" 2>&1 &
server=$!
if run write_bw_client 0 gdr-write-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate --report-gbits \
        --csv "$OUT/client.csv" 127.0.0.1; then
    pass "write_bw server/client -q 2 -b --validate exits 0"
fi
wait $server; status=$?
if [ $status = 0 ]; then pass "write_bw server exits 0"; else fail "write_bw server exits 0" "exit $status" "$(tail -5 "$OUT/server.log")"; fi
check_bw_csv write_bw_client "$OUT/client.csv" 1 pass
expect_in write_bw_client "BW average[Gb/sec]"

# --- duration mode ------------------------------------------------------------------------------
if run write_bw_duration 0 gdr-write-bw --loopback -s 4096 -D 1 --csv "$OUT/duration.csv"; then
    pass "write_bw -D 1 exits 0"
fi
check_bw_csv write_bw_duration "$OUT/duration.csv" 1 off

# --- the worked example ------------------------------------------------------------------------
(sleep 0.5; target/release/examples/rdma_write 127.0.0.1 >"$OUT/example_client.log" 2>&1) &
if run example_rdma_write 0 target/release/examples/rdma_write; then pass "examples/rdma_write moves its message"; fi
wait
expect_in example_rdma_write "found \"written by the client's NIC"

# --- bad input: exit 2 and a message naming the problem ----------------------------------------
run bad_size 2 gdr-write-bw --loopback -s 0 && expect_in bad_size "-s/--size must be at least 1 byte"
run bad_device 2 gdr-write-bw --loopback -d mlx5_9 -n 5 && expect_in bad_device "RDMA device 'mlx5_9' not found; devices present: rxe0"
run bad_port 2 gdr-write-bw --loopback -i 3 -n 5 && expect_in bad_port "port 3 of rxe0 does not exist"
run bad_cq_mod 2 gdr-write-bw --loopback -t 8 -Q 16 && expect_in bad_cq_mod "-Q/--cq-mod (16) must not exceed -t/--tx-depth (8)"
run bad_gid 2 gdr-write-bw --loopback -x 77 -n 5 && expect_in bad_gid "GID index 77 of rxe0"
next_port
run no_server 2 gdr-write-bw -p $PORT --timeout 1 -n 5 127.0.0.1 && expect_in no_server "cannot reach the server at 127.0.0.1:$PORT"
next_port
gdr-write-bw -p $PORT -n 5 -t 64 >"$OUT/mismatch_server.log" 2>&1 &
run mismatch 2 gdr-write-bw -p $PORT -n 5 -t 32 127.0.0.1 && expect_in mismatch "tx_depth: ours 32, peer's 64"
wait
if grep -qF "tx_depth: ours 64, peer's 32" "$OUT/mismatch_server.log"; then pass "mismatch: the server names it too"; else fail "mismatch: the server names it too" "$(cat "$OUT/mismatch_server.log")"; fi
run unwritable_csv 2 gdr-write-bw --loopback -n 5 --csv /nonexistent/dir/x.csv && expect_in unwritable_csv "/nonexistent/dir/x.csv"

printf "\nfailed tests:$FAILURES\n" | { [ "$FAILED" -gt 0 ] && cat || true; }
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
