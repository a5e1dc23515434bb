# gdr-send-bw over rxe0: sourced by scripts/vm-tests.sh (helpers: run, pass, fail, expect_in, csv_awk,
# check_bw_csv, next_port; outputs under $OUT).

# check_rx_columns NAME FILE [WINDOW_SECONDS]: the receiver's columns are there, positive, and its
# message count equals the sender's. With a window (-D: perftest's middle window, a quarter of
# the duration cut at each end, on each side's own clock) both sides count only their window:
# each side's average must be its count over exactly the window's length (within 1%), and
# the two counts must agree within a quarter (the windows are equally long, offset by the time
# the first message takes to arrive).
check_rx_columns() {
    problems=$(awk -F, -v window="${3:-}" '
        /^#/ { next }
        !header++ { for (i = 1; i <= NF; i++) col[$i] = i; if (!("rx_bw_avg_mib_s" in col)) print "no rx_bw_avg_mib_s column"; next }
        {
            row++
            if (!($col["rx_bw_avg_mib_s"] + 0 > 0)) print "row " row ": receiver bandwidth " $col["rx_bw_avg_mib_s"]
            if (window == "" && $col["rx_iterations"] != $col["iterations"]) print "row " row ": receiver counted " $col["rx_iterations"] ", sender " $col["iterations"]
            if (window != "") {
                rx = $col["rx_iterations"] + 0; tx = $col["iterations"] + 0
                if (!(rx * 4 >= tx * 3 && tx * 4 >= rx * 3)) print "row " row ": receiver counted " rx " in its -D window, sender " tx " in its"
                over = $col["rx_bw_avg_mib_s"] * 1048576 * window / $col["bytes"]
                if (!(over > rx * 0.99 && over < rx * 1.01)) print "row " row ": receiver average " $col["rx_bw_avg_mib_s"] " MiB/s is not its " rx " messages over " window " s"
                over = $col["bw_avg_mib_s"] * 1048576 * window / $col["bytes"]
                if (!(over > tx * 0.99 && over < tx * 1.01)) print "row " row ": sender average " $col["bw_avg_mib_s"] " MiB/s is not its " tx " messages over " window " s"
            }
        }' "$2")
    if [ -z "$problems" ]; then pass "$1: receiver figures present, counts agree"; else fail "$1: receiver figures" "$problems"; fi
}

# In loopback (the checked sweep with the receiver's figures, inline sends, a timed run's
# windows, Ctrl-C on a bidirectional stream): benches/tests/simulated_bandwidth.rs,
# send_bw_receiver_counts_what_the_sender_sent_checked_inline_and_timed. Here two processes.

# --- server and client, several QPs, both directions, inline ------------------------------------
next_port
gdr-send-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate >"$OUT/send_bw_server.log" 2>&1 &
server=$!
listening_server "$OUT/send_bw_server.log"
if run send_bw_client 0 gdr-send-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate --csv "$OUT/send_bw_client.csv" 127.0.0.1; then
    pass "send_bw server/client -q 2 -b --validate exits 0"
fi
wait $server; status=$?
if [ $status = 0 ]; then pass "send_bw server exits 0"; else fail "send_bw server exits 0" "exit $status" "$(tail -5 "$OUT/send_bw_server.log")"; fi
check_bw_csv send_bw_client "$OUT/send_bw_client.csv" 1 pass
check_rx_columns send_bw_client "$OUT/send_bw_client.csv"
if csv_awk "$OUT/send_bw_client.csv" '{ n = $col["iterations"]; exit } END { exit !(n == 200) }'; then pass "send_bw -q 2 -b counts 2 x 2 x 50 messages"; else fail "send_bw -q 2 -b counts 200 messages" "$(cat "$OUT/send_bw_client.csv")"; fi

# --- bad input ------------------------------------------------------------------------------------
run send_bw_rx_depth 2 gdr-send-bw --loopback -r 0 && expect_in send_bw_rx_depth "-r/--rx-depth must be between 1 and 16384"
run send_bw_inline_big 2 gdr-send-bw --loopback -I 100000 && expect_in send_bw_inline_big "-I/--inline-size 100000"
next_port
gdr-send-bw -p $PORT -n 5 -s 4096 >"$OUT/send_bw_mismatch_server.log" 2>&1 &
server=$!
listening_server "$OUT/send_bw_mismatch_server.log"
# The CQ moderation follows -n below -t (perftest's rule), so the effective -Q differs with it.
run send_bw_mismatch 2 gdr-send-bw -p $PORT -n 7 -s 4096 127.0.0.1 && expect_in send_bw_mismatch "it has -Q 5 -n 5, this side -Q 7 -n 7"
turned_away send_bw_mismatch_server $server "it has -Q 7 -n 7, this side -Q 5 -n 5"
