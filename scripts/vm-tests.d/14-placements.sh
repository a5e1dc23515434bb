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

# --- in turn ----------------------------------------------------------------------------------
# In loopback (two kinds in one CSV and the JSON's sections; fresh QPs per round of -d LIST with
# receives posted again; staged and plain memory in one run of every two-sided test): benches/
# tests/simulated_bandwidth.rs, placements_in_turn_each_get_fresh_queue_pairs_and_checked_rows.
# A server with one placement serves each of the client's in turn; each side chooses its own.
next_port
gdr-write-bw -p $PORT -s 4096 -n 40 --validate >"$OUT/rounds_server.log" 2>&1 &
server=$!
listening_server "$OUT/rounds_server.log"
if run rounds_pair 0 gdr-write-bw -p $PORT --mem host,host-staged -s 4096 -n 40 --validate --csv "$OUT/rounds_pair.csv" 127.0.0.1; then
    pass "host server, client --mem host,host-staged"
fi
wait $server && pass "rounds_pair: server exits 0" || fail "rounds_pair: server exits 0" "$(tail -3 "$OUT/rounds_server.log")"
expect_column rounds_pair "$OUT/rounds_pair.csv" mem_local "host host-staged"
expect_column rounds_pair "$OUT/rounds_pair.csv" mem_remote "host host"

# Lists that cannot pair up: both sides say why, in the same words.
next_port
gdr-write-bw -p $PORT -d rxe0,rxe0 -s 4096 -n 10 >"$OUT/rounds_mismatch_server.log" 2>&1 &
server=$!
listening_server "$OUT/rounds_mismatch_server.log"
run rounds_mismatch 2 gdr-write-bw -p $PORT -d rxe0,rxe0,rxe0 -s 4096 -n 10 127.0.0.1 && expect_in rounds_mismatch "pair up in order"
wait $server; status=$?
if [ $status = 2 ] && grep -q "list 2 and 3 memory placements" "$OUT/rounds_mismatch_server.log"; then
    pass "rounds_mismatch: the server exits 2 naming both lists"
else
    fail "rounds_mismatch: the server exits 2 naming both lists" "exit $status" "$(tail -2 "$OUT/rounds_mismatch_server.log")"
fi

# --- at once: lanes ----------------------------------------------------------------------------
# In loopback (a row per lane and the aggregate over the common interval, three lanes of
# gdr-send-bw, Ctrl-C in a concurrent sweep): simulated_bandwidth.rs,
# lanes_write_a_row_each_and_an_aggregate_over_the_common_interval and
# ctrl_c_in_a_concurrent_sweep_keeps_each_finished_size_with_its_lanes.
# A server with one placement runs it in every lane the client asks for.
next_port
gdr-write-bw -p $PORT --concurrent -s 64K -n 30 --validate >"$OUT/lanes_server.log" 2>&1 &
server=$!
listening_server "$OUT/lanes_server.log"
if run lanes_pair 0 gdr-write-bw -p $PORT --concurrent -d rxe0,rxe0 -s 64K -n 30 --validate --csv "$OUT/lanes_pair.csv" 127.0.0.1; then
    pass "server --concurrent (one placement), client two lanes"
fi
wait $server && pass "lanes_pair: server exits 0" || fail "lanes_pair: server exits 0" "$(tail -3 "$OUT/lanes_server.log")"
expect_column lanes_pair "$OUT/lanes_pair.csv" lane "0 1 all"

# --concurrent on one side only is a named mismatch, not a hang.
next_port
gdr-write-bw -p $PORT -s 4096 -n 10 >"$OUT/lanes_one_side_server.log" 2>&1 &
server=$!
listening_server "$OUT/lanes_one_side_server.log"
run lanes_one_side 2 gdr-write-bw -p $PORT --concurrent -d rxe0,rxe0 -s 4096 -n 10 127.0.0.1 && expect_in lanes_one_side "it has no --concurrent, this side --concurrent"
turned_away lanes_one_side_server $server "it has --concurrent, this side no --concurrent"

# A client whose second lane cannot start: both sides exit 2 at once, the server with its reason.
next_port
# "At once" is a decision, not a time: both sides get --timeout 60, so a server that did not hear
# the client's reason would wait 60 s; one that did ends well before, however loaded the host.
gdr-write-bw -p $PORT --concurrent -s 4096 -n 10 --timeout 60 >"$OUT/lanes_bad_server.log" 2>&1 &
server=$!
listening_server "$OUT/lanes_bad_server.log"
started=$(date +%s)
run lanes_bad 2 gdr-write-bw -p $PORT --concurrent -d rxe0,nosuch -s 4096 -n 10 --timeout 60 127.0.0.1 && expect_in lanes_bad "RDMA device 'nosuch' not found"
wait $server; status=$?; took=$(( $(date +%s) - started ))
if [ $status = 2 ] && [ $took -lt 50 ] && grep -q "reported an error: RDMA device 'nosuch' not found" "$OUT/lanes_bad_server.log"; then
    pass "lanes_bad: the server exits 2 at once with the client's reason"
else
    fail "lanes_bad: the server exits 2 at once with the client's reason" "exit $status after $took s" "$(tail -2 "$OUT/lanes_bad_server.log")"
fi

# --- the worked example of lanes: several threads, each with its own NIC context, QPs, buffers ---
if run example_several_gpus 0 target/release/examples/several_gpus --host 3 rxe0; then
    pass "examples/several_gpus runs three lanes at once (host memory here)"
fi
expect_in example_several_gpus "lane 2: host memory via rxe0"
expect_in example_several_gpus "data checked"
run example_several_gpus_bad 1 target/release/examples/several_gpus --host 2 nosuch && expect_in example_several_gpus_bad "lane 0: RDMA device 'nosuch' not found"
