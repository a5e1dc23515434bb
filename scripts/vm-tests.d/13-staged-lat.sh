# Staged memory in gdr-read-lat, gdr-write-lat, gdr-send-lat and gdr-send-bw, run with the hidden
# host-staged memory (the staged engines with memcpy in place of CUDA copies, so they are tested
# without a GPU). Sourced by scripts/vm-tests.sh (helpers: run, pass, fail, expect_in,
# next_port, check_bw_csv, csv_awk; outputs under $OUT). Counts stay small: under TCG a copy of 1 MiB
# alone takes milliseconds.

# check_staged_csv NAME FILE MEM_LOCAL MEM_REMOTE ITERATIONS COPIES: one row per line after the
# header, every one with these memories, ITERATIONS samples or messages (rx_iterations too where
# the column exists), validation pass, and copy_time_s > 0 (COPIES=yes) or = 0 (COPIES=no).
check_staged_csv() {
    name=$1; file=$2; local_mem=$3; remote_mem=$4; iterations=$5; copies=$6
    if [ ! -s "$file" ]; then fail "$name: csv written" "missing $file"; return; fi
    problems=$(csv_awk "$file" '
        {
            n++
            if ($col["mem_local"] != lm || $col["mem_remote"] != rm) print "row " n ": memory " $col["mem_local"] "/" $col["mem_remote"] ", expected " lm "/" rm
            if ($col["iterations"] != iters) print "row " n ": " $col["iterations"] " iterations, expected " iters
            if (("rx_iterations" in col) && $col["rx_iterations"] != iters) print "row " n ": receiver counted " $col["rx_iterations"]
            if ($col["validation"] != "pass") print "row " n ": validation " $col["validation"]
            copy = $col["copy_time_s"]
            if (copy ~ /nan|inf/ || copy == "") print "row " n ": copy_time_s " copy
            if (copies == "yes" && !(copy + 0 > 0)) print "row " n ": copy_time_s " copy ", expected > 0"
            if (copies == "no" && copy + 0 != 0) print "row " n ": copy_time_s " copy ", expected 0"
        }
        END { if (n < 1) print "no rows" }' -v lm="$local_mem" -v rm="$remote_mem" -v iters="$iterations" -v copies="$copies" \
        -v need="mem_local mem_remote iterations validation copy_time_s")
    if [ -z "$problems" ]; then
        pass "$name: $local_mem/$remote_mem, $iterations each, validation pass, copies $copies"
    else
        fail "$name: csv" "$problems"
    fi
}

# Loopback, both sides staged (every latency test at 2 B, 4 KiB, 64 KiB and 1 MiB, WRITE_WITH_IMM
# under staging, timed ping-pong; gdr-send-bw at two sizes, timed, -b refused): benches/tests/
# simulated_latency.rs (staged_latency_and_send_bw_count_their_copies_and_check_their_data).
# Here one side staged and the other host, in two processes.

# --- server and client: one side staged, the other host ----------------------------------------
# lat_pair TEST NAME SERVER_MEM CLIENT_MEM SIZE N COPIES
lat_pair() {
    test=$1; name=$2; server_mem=$3; client_mem=$4; size=$5; n=$6; copies=$7
    next_port
    gdr-$test-lat -p $PORT --mem $server_mem -s $size -n $n --validate >"$OUT/${name}_server.log" 2>&1 &
    listening_server "$OUT/${name}_server.log"
    server=$!
    if run $name 0 gdr-$test-lat -p $PORT --mem $client_mem -s $size -n $n --validate --csv "$OUT/$name.csv" 127.0.0.1; then
        pass "$name: $client_mem client, $server_mem server, -s $size --validate exits 0"
    fi
    wait $server; status=$?
    if [ $status = 0 ]; then pass "$name: server exits 0"; else fail "$name: server exits 0" "exit $status" "$(tail -5 "$OUT/${name}_server.log")"; fi
    check_staged_csv $name "$OUT/$name.csv" $client_mem $server_mem $n $copies
}
for test in write send; do
    # A staged server's copies are inside the client's samples, and counted in its row.
    lat_pair $test ${test}_lat_staged_server host-staged host 4096 50 yes
    lat_pair $test ${test}_lat_staged_client host host-staged 65536 30 yes
done
lat_pair read read_lat_staged_client host host-staged 65536 30 yes
# The passive READ server copies out once per size, outside every sample: no copy time counted.
lat_pair read read_lat_staged_server host-staged host 4096 50 no

# --- gdr-send-bw ---------------------------------------------------------------------------------
next_port
gdr-send-bw -p $PORT --mem host-staged -s 65536 -n 40 -q 2 --validate >"$OUT/send_bw_staged_server.log" 2>&1 &
listening_server "$OUT/send_bw_staged_server.log"
server=$!
if run send_bw_staged_receiver 0 gdr-send-bw -p $PORT -s 65536 -n 40 -q 2 --validate --csv "$OUT/send_bw_staged_receiver.csv" 127.0.0.1; then
    pass "send_bw host client -> staged server, -q 2 --validate"
fi
wait $server || fail "send_bw staged server exits 0" "$(tail -5 "$OUT/send_bw_staged_server.log")"
check_staged_csv send_bw_staged_receiver "$OUT/send_bw_staged_receiver.csv" host host-staged 80 yes

next_port
gdr-send-bw -p $PORT -s 4096 -n 200 --validate >"$OUT/send_bw_staged_server2.log" 2>&1 &
listening_server "$OUT/send_bw_staged_server2.log"
server=$!
if run send_bw_staged_sender 0 gdr-send-bw -p $PORT --mem host-staged -s 4096 -n 200 --validate --csv "$OUT/send_bw_staged_sender.csv" 127.0.0.1; then
    pass "send_bw staged client -> host server, --validate (host ring checks every payload)"
fi
wait $server || fail "send_bw host server exits 0" "$(tail -5 "$OUT/send_bw_staged_server2.log")"
check_staged_csv send_bw_staged_sender "$OUT/send_bw_staged_sender.csv" host-staged host 200 yes
