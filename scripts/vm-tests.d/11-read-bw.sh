# gdr-read-bw over rxe0 (RDMA READ bandwidth): sourced by scripts/vm-tests.sh (helpers: run, pass,
# fail, expect_in, check_bw_csv, next_port; outputs under $OUT). About a minute under TCG.

# read_column FILE NAME: the values of column NAME, one per row, space-separated.
read_column() {
    awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
        { printf "%s%s", sep, $c; sep = " " }' "$1"
}

# --- loopback sweep with data check: the reader checks what landed ---------------------------
if run read_bw_sweep 0 gdr-read-bw --loopback -a -n 20 -t 16 -Q 4 --validate --csv "$OUT/read_sweep.csv"; then
    pass "read_bw loopback -a --validate exits 0"
fi
check_bw_csv read_bw_sweep "$OUT/read_sweep.csv" 23 pass
expect_in read_bw_sweep "RDMA_Read BW Test"
expect_in read_bw_sweep "server -> client (the client reads)"
[ "$(read_column "$OUT/read_sweep.csv" test | tr ' ' '\n' | sort -u)" = read_bw ] \
    && pass "read_bw rows are named read_bw" || fail "read_bw rows are named read_bw" "$(head -3 "$OUT/read_sweep.csv")"

# --- two processes, several QPs, both directions, -o within the device's bound -----------------
next_port
gdr-read-bw -p $PORT -s 65536 -n 50 -q 2 -b -o 4 --validate >"$OUT/read_server.log" 2>&1 &
server=$!
if run read_bw_pair 0 gdr-read-bw -p $PORT -s 65536 -n 50 -q 2 -b -o 4 --validate --csv "$OUT/read_pair.csv" 127.0.0.1; then
    pass "read_bw server/client -q 2 -b -o 4 --validate exits 0"
fi
wait $server && pass "read_bw server exits 0" || fail "read_bw server exits 0" "$(tail -5 "$OUT/read_server.log")"
check_bw_csv read_bw_pair "$OUT/read_pair.csv" 1 pass
expect_in read_bw_pair "Outstanding reads     : 4"

# -o above max_qp_rd_atom is lowered to it with a message (perftest's rule), and the run goes on.
if run read_bw_outs_lowered 0 gdr-read-bw --loopback -s 4096 -n 50 -o 100000; then
    expect_in read_bw_outs_lowered "-o/--outs 100000 is above the device's max_qp_rd_atom"
fi

# --- timed run ----------------------------------------------------------------------------------
if run read_bw_duration 0 gdr-read-bw --loopback -s 4096 -D 2 --csv "$OUT/read_duration.csv"; then
    pass "read_bw -D 2 exits 0"
fi
check_bw_csv read_bw_duration "$OUT/read_duration.csv" 1 off

# --- staged memory: a staged reader copies each landed message in (timed, copy_time_s > 0); a
# staged server copies its payload out once per size, before the clock ---------------------------
next_port
gdr-read-bw -p $PORT -s 1M -n 30 -q 2 --validate >"$OUT/read_staged_server.log" 2>&1 &
server=$!
if run read_bw_staged_reader 0 gdr-read-bw -p $PORT --mem host-staged -s 1M -n 30 -q 2 --validate \
        --csv "$OUT/read_staged_reader.csv" 127.0.0.1; then
    pass "read_bw staged reader -> host server, -q 2 --validate"
fi
wait $server || fail "read_bw host server exits 0" "$(tail -5 "$OUT/read_staged_server.log")"
check_bw_csv read_bw_staged_reader "$OUT/read_staged_reader.csv" 1 pass
copy=$(read_column "$OUT/read_staged_reader.csv" copy_time_s)
awk -v c="$copy" 'BEGIN { exit !(c > 0) }' && pass "read_bw staged reader: copy_time_s $copy > 0" \
    || fail "read_bw staged reader: copy_time_s > 0" "copy_time_s=$copy"

if run read_bw_staged_both 0 gdr-read-bw --loopback --mem host-staged -s 65536 -n 400 -t 64 --validate \
        --csv "$OUT/read_staged_both.csv"; then
    pass "read_bw host-staged both sides, -t 64 -n 400 --validate: every message checked in its slot"
fi
check_bw_csv read_bw_staged_both "$OUT/read_staged_both.csv" 1 pass
[ "$(read_column "$OUT/read_staged_both.csv" mem_remote)" = host-staged ] \
    && pass "read_bw staged rows name host-staged" || fail "read_bw staged rows name host-staged" "$(head -3 "$OUT/read_staged_both.csv")"

# A staged reader is timed under -D too (nothing to count at the server).
if run read_bw_staged_duration 0 gdr-read-bw --loopback --mem host-staged -s 65536 -D 2; then
    pass "read_bw host-staged -D 2 exits 0"
fi
run read_bw_staged_bidirectional 2 gdr-read-bw --loopback --mem host-staged -b -n 5 \
    && expect_in read_bw_staged_bidirectional "drop -b/--bidirectional"

# --- --concurrent: two lanes at once, with their aggregate row ----------------------------------
if run read_bw_lanes 0 gdr-read-bw --loopback --concurrent -d rxe0,rxe0 -s 64K -n 60 --validate --csv "$OUT/read_lanes.csv"; then
    pass "read_bw --concurrent, two lanes"
fi
check_bw_csv read_bw_lanes "$OUT/read_lanes.csv" 3 pass
[ "$(read_column "$OUT/read_lanes.csv" lane)" = "0 1 all" ] \
    && pass "read_bw lanes 0 1 all" || fail "read_bw lanes 0 1 all" "$(read_column "$OUT/read_lanes.csv" lane)"
