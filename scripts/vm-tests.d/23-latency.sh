# gdr-read-lat, gdr-write-lat, gdr-send-lat over rxe0: sourced by scripts/vm-tests.sh (helpers:
# run, pass, fail, expect_in, csv_awk, next_port; outputs under $OUT). Iteration counts stay small: under
# TCG a round trip takes tens of microseconds.

# check_lat_csv NAME FILE ROWS ITERATIONS VALIDATION: our columns, ROWS rows, each with
# ITERATIONS samples (0: any positive count), times positive and finite, percentiles ordered
# (t_min <= t_typical <= p99 <= p99.9 <= p99.99 <= t_max, t_min <= t_avg <= t_max), stdev >= 0.
check_lat_csv() {
    name=$1; file=$2; rows=$3; iterations=$4; validation=$5
    if [ ! -s "$file" ]; then fail "$name: csv written" "missing $file"; return; fi
    problems=$(csv_awk "$file" '
        {
            n++
            # Every time positive and finite; the standard deviation may be 0.
            split("t_min_us t_max_us t_typical_us t_avg_us t_stdev_us p99_us p99_9_us p99_99_us", times, " ")
            for (k = 1; k <= 8; k++) { v = $col[times[k]]; if (v ~ /nan|inf/ || v == "" || (times[k] != "t_stdev_us" && !(v + 0 > 0)) || v + 0 < 0) print "row " n " " times[k] " not a positive time: " v }
            if (iters > 0 && $col["iterations"] != iters) print "row " n ": " $col["iterations"] " samples, expected " iters
            if (iters == 0 && !($col["iterations"] + 0 > 0)) print "row " n ": no samples"
            split("t_min_us t_typical_us p99_us p99_9_us p99_99_us t_max_us", order, " ")
            for (k = 1; k < 6; k++) if ($col[order[k]] + 0 > $col[order[k + 1]] + 0) print "row " n ": " order[k] " " $col[order[k]] " > " order[k + 1] " " $col[order[k + 1]]
            if ($col["t_avg_us"] + 0 < $col["t_min_us"] + 0 || $col["t_avg_us"] + 0 > $col["t_max_us"] + 0) print "row " n ": t_avg outside [t_min, t_max]"
            if ($col["validation"] != want) print "row " n " validation " $col["validation"] " not " want
        }
        END { if (n != rows) print "expected " rows " rows, found " n }' -v rows="$rows" -v iters="$iterations" -v want="$validation" \
        -v need="test bytes iterations t_min_us t_max_us t_typical_us t_avg_us t_stdev_us p99_us p99_9_us p99_99_us validation arrival percentile_source")
    if [ -z "$problems" ]; then pass "$name: csv has $rows rows, ordered percentiles, validation $validation"; else fail "$name: csv" "$problems"; fi
}

# In loopback (every test's checked sweep with its CSV, JSON, percentile tables and V2
# histograms; perftest's inline default on a device it does not know; how each waits for the
# message; WRITE_WITH_IMM; a timed run's interval log; thresholds; Ctrl-C): benches/tests/
# simulated_latency.rs (latency_sweeps_write_ordered_percentiles_tables_and_histograms,
# latency_files_listings_thresholds_and_ctrl_c). Here two processes.

# --- server and client processes, raw samples and interval log --------------------------------
for test in read write send; do
    next_port
    gdr-$test-lat -p $PORT -s 1024 -n 200 --validate >"$OUT/${test}_lat_server.log" 2>&1 &
    server=$!
    if run ${test}_lat_client 0 gdr-$test-lat -p $PORT -s 1024 -n 200 --validate --csv "$OUT/${test}_lat_client.csv" \
            --raw-samples "$OUT/${test}_lat_raw.txt" -H -U --hlog "$OUT/${test}_lat.hlog" 127.0.0.1; then
        pass "${test}_lat server/client --validate exits 0"
    fi
    wait $server; status=$?
    if [ $status = 0 ]; then pass "${test}_lat server exits 0"; else fail "${test}_lat server exits 0" "exit $status" "$(tail -5 "$OUT/${test}_lat_server.log")"; fi
    check_lat_csv ${test}_lat_client "$OUT/${test}_lat_client.csv" 1 200 pass
    lines=$(wc -l <"$OUT/${test}_lat_raw.txt" 2>/dev/null || echo 0)
    if [ "$(head -1 "$OUT/${test}_lat_raw.txt" 2>/dev/null)" = latency_ns ] && [ "$lines" = 201 ]; then
        pass "${test}_lat --raw-samples dumps 200 raw samples"
    else
        fail "${test}_lat --raw-samples dumps 200 raw samples" "$lines lines"
    fi
    # perftest's listings on stdout: -U all 200 in order, -H sorted less the two largest (198).
    listed=$(grep -c "^[0-9]*, [0-9.]*$" "$OUT/${test}_lat_client.log")
    if [ "$(grep -c "^#, usec$" "$OUT/${test}_lat_client.log")" = 2 ] && [ "$listed" = 398 ]; then
        pass "${test}_lat -U and -H list 200 and 198 samples in usec"
    else
        fail "${test}_lat -U and -H list 200 and 198 samples in usec" "$listed lines"
    fi
    if grep -q "^#\[StartTime" "$OUT/${test}_lat.hlog" 2>/dev/null && grep -q "^Tag=1024B," "$OUT/${test}_lat.hlog"; then
        pass "${test}_lat --hlog writes a tagged interval log"
    else
        fail "${test}_lat --hlog writes a tagged interval log" "$(head -c 300 "$OUT/${test}_lat.hlog" 2>&1)"
    fi
done

# --- Ctrl-C: a server stopped this way ends its client ------------------------------------------
next_port
gdr-send-lat -p $PORT -s 8 -D 120 >"$OUT/send_lat_interrupt_server.log" 2>&1 &
server=$!
gdr-send-lat -p $PORT -s 8 -D 120 127.0.0.1 >"$OUT/send_lat_interrupt_client.log" 2>&1 &
client=$!
# Both sides connected and measuring: the client has printed its table header.
wait_for_log "$OUT/send_lat_interrupt_client.log" "#bytes" || fail "send_lat_interrupt: measuring started" "$(tail -3 "$OUT/send_lat_interrupt_client.log")"
kill -INT $server; wait $server; server_status=$?
( sleep 30; kill -9 $client 2>/dev/null ) & watchdog=$!
wait $client; client_status=$?
kill $watchdog 2>/dev/null
if [ $server_status = 130 ] && [ $client_status = 2 ]; then
    pass "send_lat: SIGINT on the server ends both (130 there, 2 on the client)"
else
    fail "send_lat: SIGINT on the server ends both" "server $server_status, client $client_status" "$(tail -2 "$OUT/send_lat_interrupt_client.log")"
fi

# --- bad input: exit 2 and a message naming the problem ----------------------------------------
run read_lat_inline 2 gdr-read-lat --loopback -I 64 && expect_in read_lat_inline "unexpected argument '-I'"
run write_lat_qps 2 gdr-write-lat --loopback -q 2 && expect_in write_lat_qps "-q/--qp 2: latency tests time one message at a time"
run send_lat_raw_duration 2 gdr-send-lat --loopback -D 1 --raw-samples "$OUT/x" && expect_in send_lat_raw_duration "use them with -n"
run lat_server_files 2 gdr-send-lat --hdr-dir "$OUT/x" && expect_in lat_server_files "by the client"
run lat_bad_hlog 2 gdr-write-lat --loopback -n 5 --hlog /nonexistent/dir/x.hlog && expect_in lat_bad_hlog "/nonexistent/dir/x.hlog"

next_port
gdr-write-lat -p $PORT -n 5 --write-with-imm >"$OUT/lat_mismatch_server.log" 2>&1 &
server=$!
run lat_mismatch 2 gdr-write-lat -p $PORT -n 5 127.0.0.1 && expect_in lat_mismatch "it has --write-with-imm, this side no --write-with-imm"
turned_away lat_mismatch_server $server "it has no --write-with-imm, this side --write-with-imm"
