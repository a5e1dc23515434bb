# The staged path of gdr-write-bw (payload copied through a registered bounce buffer), run with
# the hidden host-staged memory: the same engine code as cuda-staged, with memcpy in place of
# CUDA copies, so it is tested on a machine without a GPU. The receiving side hears of every
# message (write with immediate) and copies it on; --validate checks the payload, not the bounce.

if run staged_loopback 0 gdr-write-bw --loopback --mem host-staged -a -n 20 -t 16 --validate --csv "$OUT/staged.csv"; then
    pass "write_bw --mem host-staged on both sides, -a --validate"
fi
check_bw_csv staged_loopback "$OUT/staged.csv" 23 pass
if awk -F, 'NR > 1 && ($0 !~ /host-staged,host-staged/) { bad = 1 } END { exit bad }' "$OUT/staged.csv"; then
    pass "staged rows name host-staged on both sides"
else
    fail "staged rows name host-staged on both sides" "$(head -3 "$OUT/staged.csv")"
fi

next_port
gdr-write-bw -p $PORT --mem host-staged -s 1M -n 30 -q 2 --validate >"$OUT/staged_server.log" 2>&1 &
if run staged_receiver 0 gdr-write-bw -p $PORT -s 1M -n 30 -q 2 --validate 127.0.0.1; then
    pass "host client -> staged server, -q 2 --validate"
fi
wait $! || fail "staged server exits 0" "$(tail -5 "$OUT/staged_server.log")"

next_port
gdr-write-bw -p $PORT -s 4096 -n 200 --validate >"$OUT/staged_server2.log" 2>&1 &
if run staged_sender 0 gdr-write-bw -p $PORT --mem host-staged -s 4096 -n 200 --validate 127.0.0.1; then
    pass "staged client -> host server, --validate"
fi
wait $! || fail "host server exits 0" "$(tail -5 "$OUT/staged_server2.log")"

run staged_bidirectional 2 gdr-write-bw --loopback --mem host-staged -b -n 5 && expect_in staged_bidirectional "drop -b/--bidirectional"
run staged_duration 2 gdr-write-bw --loopback --mem host-staged -D 1 && expect_in staged_duration "use -n/--iters, not -D"
# The staged receiver copies the warm-up too, but counts only the measured messages.
if awk -F, 'NR > 1 && $3 != 20 { bad = 1 } END { exit bad }' "$OUT/staged.csv"; then
    pass "staged rows count 20 measured messages (warm-up excluded)"
else
    fail "staged rows count 20 measured messages (warm-up excluded)" "$(cut -d, -f1-3 "$OUT/staged.csv" | head -5)"
fi
