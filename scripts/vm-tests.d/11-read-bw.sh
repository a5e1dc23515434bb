# gdr-read-bw over rxe0 (RDMA READ bandwidth): sourced by scripts/vm-tests.sh (helpers: run, pass,
# fail, expect_in, check_bw_csv, next_port; outputs under $OUT). About a minute under TCG.

# read_column FILE NAME: the values of column NAME, one per row, space-separated.
read_column() {
    awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
        { printf "%s%s", sep, $c; sep = " " }' "$1"
}

# The loopback sweep, timed run, staged runs on both sides and lanes: benches/tests/
# simulated_bandwidth.rs (read_bw_sweep_timed_and_staged_runs_check_and_name_their_rows) and
# simulated_nic.rs (every_bandwidth_bench_runs_two_lanes_and_checks_each). Here the two-process
# runs, and -o against the device's max_qp_rd_atom.

# --- two processes, several QPs, both directions, -o within the device's bound -----------------
next_port
gdr-read-bw -p $PORT -s 65536 -n 50 -q 2 -b -o 4 --validate >"$OUT/read_server.log" 2>&1 &
server=$!
listening_server "$OUT/read_server.log"
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

# --- staged memory: a staged reader copies each landed message in (timed, copy_time_s > 0); a
# staged server copies its payload out once per size, before the clock ---------------------------
next_port
gdr-read-bw -p $PORT -s 1M -n 30 -q 2 --validate >"$OUT/read_staged_server.log" 2>&1 &
server=$!
listening_server "$OUT/read_staged_server.log"
if run read_bw_staged_reader 0 gdr-read-bw -p $PORT --mem host-staged -s 1M -n 30 -q 2 --validate \
        --csv "$OUT/read_staged_reader.csv" 127.0.0.1; then
    pass "read_bw staged reader -> host server, -q 2 --validate"
fi
wait $server || fail "read_bw host server exits 0" "$(tail -5 "$OUT/read_staged_server.log")"
check_bw_csv read_bw_staged_reader "$OUT/read_staged_reader.csv" 1 pass
copy=$(read_column "$OUT/read_staged_reader.csv" copy_time_s)
awk -v c="$copy" 'BEGIN { exit !(c > 0) }' && pass "read_bw staged reader: copy_time_s $copy > 0" \
    || fail "read_bw staged reader: copy_time_s > 0" "copy_time_s=$copy"

