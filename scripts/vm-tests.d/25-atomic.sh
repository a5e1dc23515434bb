# gdr-atomic-lat and gdr-atomic-bw over rxe0: sourced by scripts/vm-tests.sh (helpers: run, pass,
# fail, expect_in, csv_awk, check_bw_csv, next_port, listening_server, turned_away; outputs under
# $OUT). Every run here with --validate has the client check that the server's counter (each QP's)
# advanced by exactly 1 per atomic (warm-up included), so `validation pass` says no atomic was
# lost or applied twice.

# check_atomic_csv NAME FILE ITERATIONS: one 8-byte atomic_lat row with ITERATIONS samples (0:
# any positive count), validation pass, arrival completion, times positive with t_min <=
# t_typical <= p99 <= t_max. Columns read by name.
check_atomic_csv() {
    name=$1; file=$2; iterations=$3
    if [ ! -s "$file" ]; then fail "$name: csv written" "missing $file"; return; fi
    problems=$(csv_awk "$file" '
        {
            n++
            if ($col["test"] != "atomic_lat" || $col["bytes"] != 8) print "row " n ": " $col["test"] " " $col["bytes"] " B, not atomic_lat 8 B"
            if (iters > 0 && $col["iterations"] != iters) print "row " n ": " $col["iterations"] " samples, expected " iters
            if (!($col["iterations"] + 0 > 0)) print "row " n ": no samples"
            if ($col["validation"] != "pass") print "row " n " validation " $col["validation"] " not pass"
            if ($col["arrival"] != "completion") print "row " n " arrival " $col["arrival"] " not completion"
            split("t_min_us t_typical_us p99_us t_max_us", order, " ")
            for (k = 1; k <= 4; k++) { v = $col[order[k]]; if (v ~ /nan|inf/ || !(v + 0 > 0)) print "row " n " " order[k] " not a positive time: " v }
            for (k = 1; k < 4; k++) if ($col[order[k]] + 0 > $col[order[k + 1]] + 0) print "row " n ": " order[k] " > " order[k + 1]
        }
        END { if (n != 1) print "expected 1 row, found " n }' -v iters="$iterations" \
        -v need="test bytes iterations t_min_us t_typical_us p99_us t_max_us validation arrival")
    if [ -z "$problems" ]; then pass "$name: one 8-byte row, $(if [ "$iterations" = 0 ]; then echo some; else echo "$iterations"; fi) samples, counter check pass"; else fail "$name: csv" "$problems"; fi
}

# In loopback (each atomic, a -D run, staged memory, all with the counter check): benches/tests/
# simulated_latency.rs, atomics_advance_the_counter_once_each_in_every_mode.

# --- server and client processes: both exit 0, every sample dumped ------------------------------
next_port
gdr-atomic-lat -p $PORT -n 300 --validate >"$OUT/atomic_lat_server.log" 2>&1 &
server=$!
listening_server "$OUT/atomic_lat_server.log"
if run atomic_lat_client 0 gdr-atomic-lat -p $PORT -n 300 --validate --csv "$OUT/atomic_lat_client.csv" \
        --raw-samples "$OUT/atomic_lat_raw.txt" 127.0.0.1; then
    pass "atomic_lat server/client --validate exits 0"
fi
wait $server; status=$?
if [ $status = 0 ]; then pass "atomic_lat server exits 0"; else fail "atomic_lat server exits 0" "exit $status" "$(tail -5 "$OUT/atomic_lat_server.log")"; fi
check_atomic_csv atomic_lat_client "$OUT/atomic_lat_client.csv" 300
lines=$(wc -l <"$OUT/atomic_lat_raw.txt" 2>/dev/null || echo 0)
if [ "$lines" = 301 ]; then pass "atomic_lat --raw-samples dumps 300 samples"; else fail "atomic_lat --raw-samples dumps 300 samples" "$lines lines"; fi

# --- gdr-atomic-bw ------------------------------------------------------------------------------
# In loopback (each atomic's stream, a -D run, staged memory, all with the counter check):
# benches/tests/simulated_bandwidth.rs, atomic_bw_streams_check_their_counters_in_every_mode.

# Two processes, two QPs, both directions, -o within the device's bound: each side's atomics act
# on the other's counters, and each checks its own.
next_port
gdr-atomic-bw -p $PORT -n 500 -q 2 -b -o 4 --validate >"$OUT/atomic_bw_server.log" 2>&1 &
server=$!
listening_server "$OUT/atomic_bw_server.log"
if run atomic_bw_pair 0 gdr-atomic-bw -p $PORT -n 500 -q 2 -b -o 4 --validate --csv "$OUT/atomic_bw_pair.csv" 127.0.0.1; then
    pass "atomic_bw server/client -q 2 -b -o 4 --validate exits 0"
fi
wait $server; status=$?
if [ $status = 0 ]; then pass "atomic_bw server exits 0"; else fail "atomic_bw server exits 0" "exit $status" "$(tail -5 "$OUT/atomic_bw_server.log")"; fi
check_bw_csv atomic_bw_pair "$OUT/atomic_bw_pair.csv" 1 pass
expect_in atomic_bw_pair "Outstanding atomics"

# --- bad input: exit 2 and a message naming the problem ----------------------------------------
run atomic_bw_size 2 gdr-atomic-bw --loopback -s 64 && expect_in atomic_bw_size "-s/--size 64: an atomic is 8 bytes, the only size gdr-atomic-bw runs"
run atomic_bw_sweep 2 gdr-atomic-bw --loopback -a && expect_in atomic_bw_sweep "-s/--size -a (23 sizes)"
run atomic_lat_size 2 gdr-atomic-lat --loopback -s 64 && expect_in atomic_lat_size "-s/--size 64: an atomic is 8 bytes"
run atomic_lat_sweep 2 gdr-atomic-lat --loopback -a && expect_in atomic_lat_sweep "-s/--size -a (23 sizes)"
run atomic_lat_type 2 gdr-atomic-lat --loopback -A XOR && expect_in atomic_lat_type "invalid value 'XOR'"
run atomic_lat_inline 2 gdr-atomic-lat --loopback -I 64 && expect_in atomic_lat_inline "unexpected argument '-I'"
run atomic_on_write_bw 2 gdr-write-bw --loopback -A CMP_AND_SWAP && expect_in atomic_on_write_bw "not supported by gdr-write-bw"
next_port
gdr-atomic-lat -p $PORT -n 5 -A CMP_AND_SWAP >"$OUT/atomic_lat_mismatch_server.log" 2>&1 &
server=$!
listening_server "$OUT/atomic_lat_mismatch_server.log"
run atomic_lat_mismatch 2 gdr-atomic-lat -p $PORT -n 5 127.0.0.1 && expect_in atomic_lat_mismatch '--atomic-type "CMP_AND_SWAP"'
turned_away atomic_lat_mismatch_server $server '--atomic-type "FETCH_AND_ADD"'
