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

# --- loopback, both sides staged, a few sizes, every latency test ------------------------------
for test in read write send; do
    for size in 2 4096 65536 1M; do
        name=${test}_lat_staged_$size
        if run $name 0 gdr-$test-lat --loopback --mem host-staged -s $size -n 20 --validate --csv "$OUT/$name.csv"; then
            pass "${test}_lat --mem host-staged -s $size --validate exits 0"
        fi
        check_staged_csv $name "$OUT/$name.csv" host-staged host-staged 20 yes
    done
done
expect_in write_lat_staged_2 "Staging"
if grep -q ",write_imm_completion," "$OUT/write_lat_staged_2.csv"; then
    pass "write_lat on staged memory waits for WRITE_WITH_IMM completions"
else
    fail "write_lat on staged memory waits for WRITE_WITH_IMM completions" "$(cat "$OUT/write_lat_staged_2.csv")"
fi

# --- server and client: one side staged, the other host ----------------------------------------
# lat_pair TEST NAME SERVER_MEM CLIENT_MEM SIZE N COPIES
lat_pair() {
    test=$1; name=$2; server_mem=$3; client_mem=$4; size=$5; n=$6; copies=$7
    next_port
    gdr-$test-lat -p $PORT --mem $server_mem -s $size -n $n --validate >"$OUT/${name}_server.log" 2>&1 &
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

# -D: the staged ping-pong ends on STOP like the host one.
if run send_lat_staged_duration 0 gdr-send-lat --loopback --mem host-staged -s 64 -D 1 --csv "$OUT/send_lat_staged_duration.csv"; then
    pass "send_lat --mem host-staged -D 1 exits 0"
fi

# --- gdr-send-bw ---------------------------------------------------------------------------------
# The receiver times from its first poll that found messages: enough of them that it sees more
# than one poll (with too few, all land before it looks and it times none: rx_iterations 0).
for case in 4096:200 1M:20; do
    size=${case%:*}; n=${case#*:}
    name=send_bw_staged_$size
    if run $name 0 gdr-send-bw --loopback --mem host-staged -s $size -n $n -t 16 -r 32 --validate --csv "$OUT/$name.csv"; then
        pass "send_bw --mem host-staged -s $size --validate exits 0"
    fi
    check_bw_csv $name "$OUT/$name.csv" 1 pass
    check_staged_csv $name "$OUT/$name.csv" host-staged host-staged $n yes
done

next_port
gdr-send-bw -p $PORT --mem host-staged -s 65536 -n 40 -q 2 --validate >"$OUT/send_bw_staged_server.log" 2>&1 &
server=$!
if run send_bw_staged_receiver 0 gdr-send-bw -p $PORT -s 65536 -n 40 -q 2 --validate --csv "$OUT/send_bw_staged_receiver.csv" 127.0.0.1; then
    pass "send_bw host client -> staged server, -q 2 --validate"
fi
wait $server || fail "send_bw staged server exits 0" "$(tail -5 "$OUT/send_bw_staged_server.log")"
check_staged_csv send_bw_staged_receiver "$OUT/send_bw_staged_receiver.csv" host host-staged 80 yes

next_port
gdr-send-bw -p $PORT -s 4096 -n 200 --validate >"$OUT/send_bw_staged_server2.log" 2>&1 &
server=$!
if run send_bw_staged_sender 0 gdr-send-bw -p $PORT --mem host-staged -s 4096 -n 200 --validate --csv "$OUT/send_bw_staged_sender.csv" 127.0.0.1; then
    pass "send_bw staged client -> host server, --validate (host ring checks every payload)"
fi
wait $server || fail "send_bw host server exits 0" "$(tail -5 "$OUT/send_bw_staged_server2.log")"
check_staged_csv send_bw_staged_sender "$OUT/send_bw_staged_sender.csv" host-staged host 200 yes

# A timed run: the sender's copies ahead stop with the clock, the receiver finds the end.
if run send_bw_staged_duration 0 gdr-send-bw --loopback --mem host-staged -s 4096 -D 1 --csv "$OUT/send_bw_staged_duration.csv"; then
    pass "send_bw --mem host-staged -D 1 exits 0"
fi
check_bw_csv send_bw_staged_duration "$OUT/send_bw_staged_duration.csv" 1 off

run send_bw_staged_bidirectional 2 gdr-send-bw --loopback --mem host-staged -b -n 5 \
    && expect_in send_bw_staged_bidirectional "drop -b/--bidirectional"
