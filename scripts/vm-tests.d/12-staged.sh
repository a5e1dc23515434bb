# The staged path of gdr-write-bw (payload copied through a registered bounce buffer), run with
# the hidden host-staged memory: the same engine code as cuda-staged, with memcpy in place of
# CUDA copies, so it is tested on a machine without a GPU. The receiving side hears of every
# message (write with immediate) and copies it on; --validate checks the payload, not the bounce.

# Loopback (both sides staged: the sweep, its rows, -b and -D refused, the bounce ring and the
# old shared bounce caught, gdr-send-bw's ring; placements in turn): benches/tests/
# simulated_bandwidth.rs (staged_write_bw_keeps_every_message_in_its_own_slot,
# placements_in_turn_each_get_fresh_queue_pairs_and_checked_rows). Here host and staged memory
# on the two sides of two processes.

next_port
gdr-write-bw -p $PORT --mem host-staged -s 1M -n 30 -q 2 --validate >"$OUT/staged_server.log" 2>&1 &
listening_server "$OUT/staged_server.log"
if run staged_receiver 0 gdr-write-bw -p $PORT -s 1M -n 30 -q 2 --validate 127.0.0.1; then
    pass "host client -> staged server, -q 2 --validate"
fi
wait $! || fail "staged server exits 0" "$(tail -5 "$OUT/staged_server.log")"

next_port
gdr-write-bw -p $PORT -s 4096 -n 200 --validate >"$OUT/staged_server2.log" 2>&1 &
listening_server "$OUT/staged_server2.log"
if run staged_sender 0 gdr-write-bw -p $PORT --mem host-staged -s 4096 -n 200 --validate 127.0.0.1; then
    pass "staged client -> host server, --validate"
fi
wait $! || fail "host server exits 0" "$(tail -5 "$OUT/staged_server2.log")"

# A staged sender's ring slots each send the plain pattern to memory that checks it whole.
next_port
gdr-send-bw -p $PORT -s 65536 -n 100 -t 32 --validate >"$OUT/send_staged_sender_server.log" 2>&1 &
listening_server "$OUT/send_staged_sender_server.log"
server=$!
if run send_bw_staged_sender 0 gdr-send-bw -p $PORT --mem host-staged -s 65536 -n 100 -t 32 --validate 127.0.0.1; then
    pass "send_bw staged client -> host server, --validate"
fi
wait $server || fail "send_bw host server of a staged client exits 0" "$(tail -5 "$OUT/send_staged_sender_server.log")"
