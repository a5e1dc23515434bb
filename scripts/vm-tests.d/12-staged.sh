# The staged path of gdr-write-bw (payload copied through a registered bounce buffer), run with
# the hidden host-staged memory: the same engine code as cuda-staged, with memcpy in place of
# CUDA copies, so it is tested on a machine without a GPU. The receiving side hears of every
# message (write with immediate) and copies it on; --validate checks the payload, not the bounce.

if run staged_loopback 0 gdr-write-bw --loopback --mem host-staged -a -n 20 -t 16 --validate --csv "$OUT/staged.csv"; then
    pass "write_bw --mem host-staged on both sides, -a --validate"
fi
check_bw_csv staged_loopback "$OUT/staged.csv" 23 pass
if csv_awk "$OUT/staged.csv" '$col["mem_local"] != "host-staged" || $col["mem_remote"] != "host-staged" { bad = 1 } END { exit bad || !col["mem_remote"] }'; then
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
if csv_awk "$OUT/staged.csv" '$col["iterations"] != 20 { bad = 1 } END { exit bad || !col["iterations"] }'; then
    pass "staged rows count 20 measured messages (warm-up excluded)"
else
    fail "staged rows count 20 measured messages (warm-up excluded)" "$(cut -d, -f1-3 "$OUT/staged.csv" | head -5)"
fi

# --- the bounce ring: each message in flight has bytes of its own -----------------------------
# Staged on both sides, a deep queue of messages: every message carries its index (--validate
# stamps it) and is checked as it is copied in, in its own slot of the ring.
if run staged_ring 0 gdr-write-bw --loopback --mem host-staged -s 65536 -n 400 -t 64 --validate --csv "$OUT/staged_ring.csv"; then
    pass "write_bw host-staged both sides, -t 64 -n 400 --validate: every message intact in its own slot"
fi
check_bw_csv staged_ring "$OUT/staged_ring.csv" 1 pass
# The shared bounce buffer gdrperf had before the ring (GDRPERF_TEST_SHARED_BOUNCE: every message
# into the same bytes, no credits) fails the same check: a message is copied in holding another's.
export GDRPERF_TEST_SHARED_BOUNCE=1
if run staged_shared_bounce 1 gdr-write-bw --loopback --mem host-staged -s 65536 -n 400 -t 64 --validate; then
    expect_in staged_shared_bounce "carries the stamp of message"
fi
unset GDRPERF_TEST_SHARED_BOUNCE
if run send_bw_staged_ring 0 gdr-send-bw --loopback --mem host-staged -s 65536 -n 400 -t 64 -r 64 --validate --csv "$OUT/send_bw_staged_ring.csv"; then
    pass "send_bw host-staged both sides, -t 64 -r 64 -n 400 --validate: every message intact in its own slot"
fi

# A staged sender's ring slots each send the plain pattern to memory that checks it whole.
next_port
gdr-send-bw -p $PORT -s 65536 -n 100 -t 32 --validate >"$OUT/send_staged_sender_server.log" 2>&1 &
server=$!
if run send_bw_staged_sender 0 gdr-send-bw -p $PORT --mem host-staged -s 65536 -n 100 -t 32 --validate 127.0.0.1; then
    pass "send_bw staged client -> host server, --validate"
fi
wait $server || fail "send_bw host server of a staged client exits 0" "$(tail -5 "$OUT/send_staged_sender_server.log")"

# Placements in turn, host then host-staged, each checked.
for test in write send; do
    if run ${test}_bw_mixed 0 gdr-$test-bw --loopback --mem host,host-staged -s 4096 -n 100 --validate --csv "$OUT/${test}_bw_mixed.csv"; then
        pass "${test}_bw --mem host,host-staged --validate: both rounds pass"
    fi
    check_bw_csv ${test}_bw_mixed "$OUT/${test}_bw_mixed.csv" 2 pass
done
