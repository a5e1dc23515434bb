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

# check_hgrm NAME FILE COUNT: an HdrHistogram percentile table with COUNT samples whose values
# and percentiles never decrease.
check_hgrm() {
    name=$1; file=$2; count=$3
    if [ ! -s "$file" ]; then fail "$name: $(basename "$file") written" "missing $file"; return; fi
    problems=$(awk -v count="$count" '
        /Value +Percentile +TotalCount/ { header = 1; next }
        /Total count/ { total = $NF; gsub(/[^0-9]/, "", total) }
        /^ *[0-9]/ { rows++; if ($1 + 0 < value + 0 || $2 + 0 < quantile + 0) print "row " rows " decreases"; value = $1; quantile = $2 }
        END { if (!header) print "no header"; if (rows < 2) print "only " rows " rows"; if (total != count) print "Total count " total ", expected " count }' "$file")
    if [ -z "$problems" ]; then pass "$name: $(basename "$file") holds $count samples, monotone"; else fail "$name: $(basename "$file")" "$problems"; fi
}

# check_json NAME FILE ROWS: metadata and ROWS latency results.
check_lat_json() {
    if grep -q '"gdrperf_version"' "$2" && [ "$(grep -c '"t_typical_us"' "$2")" = "$3" ] && [ "$(grep -c '"p99_99_us"' "$2")" = "$3" ]; then
        pass "$1: json has metadata and $3 latency results"
    else
        fail "$1: json has metadata and $3 latency results" "$(head -c 400 "$2")"
    fi
}

# --- loopback sweeps with data check, every test ------------------------------------------------
for test in read write send; do
    binary=gdr-$test-lat
    if run ${test}_lat_sweep 0 $binary --loopback -a -n 20 --validate --csv "$OUT/${test}_lat.csv" \
            --json "$OUT/${test}_lat.json" --hdr-dir "$OUT/${test}_lat_hdr"; then
        pass "${test}_lat loopback -a --validate exits 0"
    fi
    check_lat_csv ${test}_lat_sweep "$OUT/${test}_lat.csv" 23 20 pass
    check_lat_json ${test}_lat_sweep "$OUT/${test}_lat.json" 23
    for size in 2 4096 8388608; do
        check_hgrm ${test}_lat_sweep "$OUT/${test}_lat_hdr/${test}_lat-${size}B.hgrm" 20
    done
    if [ "$(ls "$OUT/${test}_lat_hdr"/*.hdr 2>/dev/null | wc -l)" = 23 ]; then pass "${test}_lat: 23 V2 histograms"; else fail "${test}_lat: 23 V2 histograms" "$(ls "$OUT/${test}_lat_hdr")"; fi
    expect_in ${test}_lat_sweep "t_typical[usec]"
done
# perftest's inline default (ctx_set_max_inline): 0 on a device it does not know, rxe among them.
for test in write send; do
    expect_in ${test}_lat_sweep ": 0 (perftest's default on a device it does not know"
    if csv_awk "$OUT/${test}_lat.csv" '$col["inline_size"] != 0 { bad++ } END { exit !(col["inline_size"] && !bad) }'; then
        pass "${test}_lat on rxe inlines nothing by default (inline_size 0, as perftest)"
    else
        fail "${test}_lat on rxe inlines nothing by default" "$(head -3 "$OUT/${test}_lat.csv")"
    fi
done
if grep -q ",poll_last_byte," "$OUT/write_lat.csv"; then pass "write_lat polls the last byte on host memory"; else fail "write_lat polls the last byte on host memory" "$(head -2 "$OUT/write_lat.csv")"; fi

# --- the WRITE_WITH_IMM path GPU memory takes, on host memory ---------------------------------
if run write_lat_imm 0 gdr-write-lat --loopback --write-with-imm -s 4096 -n 50 --validate --csv "$OUT/write_lat_imm.csv"; then
    pass "write_lat --write-with-imm --validate exits 0"
fi
check_lat_csv write_lat_imm "$OUT/write_lat_imm.csv" 1 50 pass
if grep -q ",write_imm_completion," "$OUT/write_lat_imm.csv"; then pass "write_lat --write-with-imm waits for completions"; else fail "write_lat --write-with-imm waits for completions" "$(cat "$OUT/write_lat_imm.csv")"; fi

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

# --- duration mode: intervals over time -------------------------------------------------------
if run write_lat_duration 0 gdr-write-lat --loopback -s 8 -D 2 --hlog "$OUT/duration.hlog" --hlog-interval 0.5 \
        --csv "$OUT/write_lat_duration.csv"; then
    pass "write_lat -D 2 exits 0"
fi
check_lat_csv write_lat_duration "$OUT/write_lat_duration.csv" 1 0 off
intervals=$(grep -c "^Tag=8B," "$OUT/duration.hlog" 2>/dev/null || echo 0)
if [ "$intervals" -ge 3 ] && [ "$intervals" -le 5 ]; then pass "write_lat -D 2 --hlog-interval 0.5 logs $intervals intervals"; else fail "write_lat -D 2 logs 4 intervals" "found $intervals"; fi

# --- Ctrl-C: the size under way stops, exit 130; a server stopped this way ends its client ------
gdr-write-lat --loopback -s 8 -D 120 >"$OUT/write_lat_interrupt.log" 2>&1 &
pid=$!
# Interrupt once the size is under way (its table header is out), not after a guessed delay.
wait_for_log "$OUT/write_lat_interrupt.log" "#bytes" || fail "write_lat_interrupt: measuring started" "$(tail -3 "$OUT/write_lat_interrupt.log")"
kill -INT $pid; wait $pid; status=$?
if [ $status = 130 ]; then pass "write_lat -D 120 stops on SIGINT with exit 130"; else fail "write_lat stops on SIGINT with exit 130" "exit $status" "$(tail -3 "$OUT/write_lat_interrupt.log")"; fi
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

# --- acceptance thresholds apply to latency rows (the median by default) -----------------------
run lat_threshold_fail 1 gdr-read-lat --loopback -n 20 --max-lat 1ns && expect_in lat_threshold_fail "missed the acceptance thresholds"
if run lat_threshold_pass 0 gdr-write-lat --loopback -n 20 --max-lat 1000ms --lat-pct 99.9; then pass "write_lat --max-lat 1000ms --lat-pct 99.9 passes"; fi
next_port
gdr-write-lat -p $PORT -n 5 --write-with-imm >"$OUT/lat_mismatch_server.log" 2>&1 &
server=$!
run lat_mismatch 2 gdr-write-lat -p $PORT -n 5 127.0.0.1 && expect_in lat_mismatch "it has --write-with-imm, this side no --write-with-imm"
turned_away lat_mismatch_server $server "it has no --write-with-imm, this side --write-with-imm"
