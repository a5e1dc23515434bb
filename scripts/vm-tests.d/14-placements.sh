# Several memory placements in one run, one after the other (--mem LIST, -d LIST) or all at once
# (--concurrent), over rxe0: sourced by scripts/vm-tests.sh (helpers: run, pass, fail,
# expect_in, check_bw_csv, next_port; outputs under $OUT).
#
# Without a GPU here, the placements are host memory, the staged path (host-staged) and
# devices listed twice (-d rxe0,rxe0: two lanes or rounds, each with its own device context,
# QPs and buffers). GPU placements go through the same code: only the buffer differs.

# column FILE NAME: the values of CSV column NAME, one per line.
column() { awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$1"; }

# expect_column NAME FILE COLUMN "V1 V2 ...": the column's values, in order.
expect_column() {
    got=$(column "$2" "$3" | tr '\n' ' ' | sed 's/ $//')
    if [ "$got" = "$4" ]; then pass "$1: $3 is '$4'"; else fail "$1: $3 is '$4'" "got '$got'"; fi
}

# --- in turn: two memory kinds, one CSV ------------------------------------------------------
if run rounds_loopback 0 gdr-write-bw --loopback --mem host,host-staged -s 64K -n 40 --validate \
        --csv "$OUT/rounds.csv" --json "$OUT/rounds.json"; then
    pass "write_bw --mem host,host-staged: one run"
fi
check_bw_csv rounds_loopback "$OUT/rounds.csv" 2 pass
expect_column rounds_loopback "$OUT/rounds.csv" mem_local "host host-staged"
expect_column rounds_loopback "$OUT/rounds.csv" mem_remote "host host-staged"
expect_in rounds_loopback "Placements            : 2 in turn: local [host, host-staged]"
if grep -q '"sections"' "$OUT/rounds.json" && grep -q '"placements"' "$OUT/rounds.json" && grep -q '"status": "complete"' "$OUT/rounds.json"; then
    pass "rounds_loopback: json keeps the second placement's metadata and says the run completed"
else
    fail "rounds_loopback: json keeps the second placement's metadata and says the run completed" "$(head -c 300 "$OUT/rounds.json")"
fi

# A server with one placement serves each of the client's in turn; each side chooses its own.
next_port
gdr-write-bw -p $PORT -s 4096 -n 40 --validate >"$OUT/rounds_server.log" 2>&1 &
server=$!
if run rounds_pair 0 gdr-write-bw -p $PORT --mem host,host-staged -s 4096 -n 40 --validate --csv "$OUT/rounds_pair.csv" 127.0.0.1; then
    pass "host server, client --mem host,host-staged"
fi
wait $server && pass "rounds_pair: server exits 0" || fail "rounds_pair: server exits 0" "$(tail -3 "$OUT/rounds_server.log")"
expect_column rounds_pair "$OUT/rounds_pair.csv" mem_local "host host-staged"
expect_column rounds_pair "$OUT/rounds_pair.csv" mem_remote "host host"

# Receives posted once per connection must be posted again on the next round's new QPs.
for test in send_bw write_lat send_lat; do
    binary=gdr-$(echo $test | tr _ -)
    if run rounds_$test 0 $binary --loopback -d rxe0,rxe0 -s 4096 -n 40 --validate --csv "$OUT/rounds_$test.csv"; then
        pass "$test -d rxe0,rxe0: two rounds on fresh QPs"
    fi
    rows=$(column "$OUT/rounds_$test.csv" bytes | wc -l)
    [ "$rows" = 2 ] && pass "rounds_$test: 2 rows" || fail "rounds_$test: 2 rows" "$rows rows"
done

# Staged and plain memory in one run of every two-sided test.
for test in send_bw write_lat send_lat read_lat; do
    binary=gdr-$(echo $test | tr _ -)
    if run mixed_$test 0 $binary --loopback --mem host-staged,host -s 4096 -n 200 --validate --csv "$OUT/mixed_$test.csv"; then
        pass "$test --mem host-staged,host in one run"
    fi
    expect_column mixed_$test "$OUT/mixed_$test.csv" mem_local "host-staged host"
done

# Lists that cannot pair up: both sides say why, in the same words.
next_port
gdr-write-bw -p $PORT -d rxe0,rxe0 -s 4096 -n 10 >"$OUT/rounds_mismatch_server.log" 2>&1 &
server=$!
run rounds_mismatch 2 gdr-write-bw -p $PORT -d rxe0,rxe0,rxe0 -s 4096 -n 10 127.0.0.1 && expect_in rounds_mismatch "pair up in order"
wait $server; status=$?
if [ $status = 2 ] && grep -q "list 2 and 3 memory placements" "$OUT/rounds_mismatch_server.log"; then
    pass "rounds_mismatch: the server exits 2 naming both lists"
else
    fail "rounds_mismatch: the server exits 2 naming both lists" "exit $status" "$(tail -2 "$OUT/rounds_mismatch_server.log")"
fi

# --- at once: lanes, a row per lane and the aggregate -----------------------------------------
if run lanes_write 0 gdr-write-bw --loopback --concurrent -d rxe0,rxe0 -s 64K -n 60 --validate --csv "$OUT/lanes_write.csv"; then
    pass "write_bw --concurrent, two lanes"
fi
check_bw_csv lanes_write "$OUT/lanes_write.csv" 3 pass
expect_column lanes_write "$OUT/lanes_write.csv" lane "0 1 all"
expect_column lanes_write "$OUT/lanes_write.csv" iterations "60 60 120"
expect_in lanes_write "Lanes                 : 2 at once"
# The aggregate is all lanes' bytes over the common wall interval (docs/methodology.md), here
# the longest lane's elapsed time (the lanes start each size together); it never exceeds the sum
# of the lanes' rates.
if awk -F, '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { n++; bw[n] = $c["bw_avg_mib_s"]; t[n] = $c["elapsed_s"]; b[n] = $c["iterations"] * $c["bytes"] }
        END { wall = (t[1] > t[2]) ? t[1] : t[2]; want = (b[1] + b[2]) / wall / 1048576
              d = (want - bw[3]) / want
              exit !(d < 1e-4 && d > -1e-4 && bw[3] <= bw[1] + bw[2] + 1e-6) }' "$OUT/lanes_write.csv"; then
    pass "lanes_write: the aggregate row is all lanes' bytes over the common wall interval"
else
    fail "lanes_write: the aggregate row is all lanes' bytes over the common wall interval" \
        "$(cut -d, -f1-5 "$OUT/lanes_write.csv")"
fi

if run lanes_send 0 gdr-send-bw --loopback --concurrent -d rxe0,rxe0,rxe0 -s 64K -n 30 --validate --csv "$OUT/lanes_send.csv"; then
    pass "send_bw --concurrent, three lanes"
fi
expect_column lanes_send "$OUT/lanes_send.csv" lane "0 1 2 all"
expect_column lanes_send "$OUT/lanes_send.csv" validation "pass pass pass pass"

# A server with one placement runs it in every lane the client asks for.
next_port
gdr-write-bw -p $PORT --concurrent -s 64K -n 30 --validate >"$OUT/lanes_server.log" 2>&1 &
server=$!
if run lanes_pair 0 gdr-write-bw -p $PORT --concurrent -d rxe0,rxe0 -s 64K -n 30 --validate --csv "$OUT/lanes_pair.csv" 127.0.0.1; then
    pass "server --concurrent (one placement), client two lanes"
fi
wait $server && pass "lanes_pair: server exits 0" || fail "lanes_pair: server exits 0" "$(tail -3 "$OUT/lanes_server.log")"
expect_column lanes_pair "$OUT/lanes_pair.csv" lane "0 1 all"

# --concurrent on one side only is a named mismatch, not a hang.
next_port
gdr-write-bw -p $PORT -s 4096 -n 10 >"$OUT/lanes_one_side_server.log" 2>&1 &
server=$!
run lanes_one_side 2 gdr-write-bw -p $PORT --concurrent -d rxe0,rxe0 -s 4096 -n 10 127.0.0.1 && expect_in lanes_one_side "it has no --concurrent, this side --concurrent"
turned_away lanes_one_side_server $server "it has --concurrent, this side no --concurrent"

# A client whose second lane cannot start: both sides exit 2 at once, the server with its reason.
next_port
# "At once" is a decision, not a time: both sides get --timeout 60, so a server that did not hear
# the client's reason would wait 60 s; one that did ends well before, however loaded the host.
gdr-write-bw -p $PORT --concurrent -s 4096 -n 10 --timeout 60 >"$OUT/lanes_bad_server.log" 2>&1 &
server=$!
started=$(date +%s)
run lanes_bad 2 gdr-write-bw -p $PORT --concurrent -d rxe0,nosuch -s 4096 -n 10 --timeout 60 127.0.0.1 && expect_in lanes_bad "RDMA device 'nosuch' not found"
wait $server; status=$?; took=$(( $(date +%s) - started ))
if [ $status = 2 ] && [ $took -lt 50 ] && grep -q "reported an error: RDMA device 'nosuch' not found" "$OUT/lanes_bad_server.log"; then
    pass "lanes_bad: the server exits 2 at once with the client's reason"
else
    fail "lanes_bad: the server exits 2 at once with the client's reason" "exit $status after $took s" "$(tail -2 "$OUT/lanes_bad_server.log")"
fi

# Ctrl-C in a concurrent sweep: exit 130, every lane stops, finished sizes kept with their aggregate.
gdr-write-bw --loopback --concurrent -d rxe0,rxe0 -a -D 1 --warmup 4 --csv "$OUT/lanes_int.csv" --json "$OUT/lanes_int.json" >"$OUT/lanes_int.log" 2>&1 &
pid=$!
waited=0
while [ "$(column "$OUT/lanes_int.csv" lane 2>/dev/null | grep -c all)" -lt 2 ] && [ $waited -lt 300 ]; do sleep 0.2; waited=$((waited + 1)); done
kill -INT $pid
waited=0
while kill -0 $pid 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.2; waited=$((waited + 1)); done
if kill -0 $pid 2>/dev/null; then
    kill -9 $pid; wait $pid; fail "lanes_int: stops within 20 s of SIGINT" "$(tail -3 "$OUT/lanes_int.log")"
else
    wait $pid; status=$?
    [ $status = 130 ] && pass "lanes_int: SIGINT exits 130" || fail "lanes_int: SIGINT exits 130" "exit $status" "$(tail -3 "$OUT/lanes_int.log")"
    all=$(column "$OUT/lanes_int.csv" lane | grep -c all)
    lanes=$(column "$OUT/lanes_int.csv" lane | grep -vc all)
    if [ "$all" -ge 2 ] && [ "$lanes" -ge $((2 * all)) ]; then
        pass "lanes_int: csv keeps $all finished sizes with their lanes"
    else
        fail "lanes_int: csv keeps finished sizes" "$all aggregate rows, $lanes lane rows"
    fi
    if grep -q '"status": "interrupted"' "$OUT/lanes_int.json" && grep -q 'stopped by SIGINT' "$OUT/lanes_int.json"; then
        pass "lanes_int: json says the run was interrupted"
    else
        fail "lanes_int: json says the run was interrupted" "$(tail -8 "$OUT/lanes_int.json")"
    fi
fi

# --- the worked example of lanes: several threads, each with its own NIC context, QPs, buffers ---
if run example_several_gpus 0 target/release/examples/several_gpus --host 3 rxe0; then
    pass "examples/several_gpus runs three lanes at once (host memory here)"
fi
expect_in example_several_gpus "lane 2: host memory via rxe0"
expect_in example_several_gpus "data checked"
run example_several_gpus_bad 1 target/release/examples/several_gpus --host 2 nosuch && expect_in example_several_gpus_bad "lane 0: RDMA device 'nosuch' not found"
