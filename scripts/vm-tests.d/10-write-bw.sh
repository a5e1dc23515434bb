# gdr-write-bw over rxe0: sourced by scripts/vm-tests.sh (helpers: run, pass, fail, expect_in, csv_awk,
# check_bw_csv, next_port; outputs under $OUT).

# The loopback sweeps (checked, and the README's), their CSV and JSON: benches/tests/
# simulated_bandwidth.rs (write_bw_sweeps_keep_every_size_with_a_peak_in_csv_and_json). Here
# one checked size on the device, which the header names.
if run write_bw_loopback 0 gdr-write-bw --loopback -s 65536 -n 20 --validate --csv "$OUT/loopback.csv"; then
    pass "write_bw loopback --validate exits 0"
fi
check_bw_csv write_bw_loopback "$OUT/loopback.csv" 1 pass
expect_in write_bw_loopback "rxe0"

# --- server and client processes, several QPs, bidirectional, Gb/s ----------------------------
next_port
gdr-write-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate >"$OUT/server.log" 2>&1 &
server=$!
listening_server "$OUT/server.log"
if run write_bw_client 0 gdr-write-bw -p $PORT -s 65536 -n 50 -q 2 -b --validate --report-gbits \
        --csv "$OUT/client.csv" 127.0.0.1; then
    pass "write_bw server/client -q 2 -b --validate exits 0"
fi
wait $server; status=$?
if [ $status = 0 ]; then pass "write_bw server exits 0"; else fail "write_bw server exits 0" "exit $status" "$(tail -5 "$OUT/server.log")"; fi
check_bw_csv write_bw_client "$OUT/client.csv" 1 pass
expect_in write_bw_client "BW average[Gb/sec]"
# -b: the server reports too, as perftest's servers do: its own table with one perftest row
# (five fields, both directions' sum, its own iteration count), its CSV and perftest's JSON.
next_port
gdr-write-bw -p $PORT -s 65536 -n 50 -b --csv "$OUT/server_reports.csv" --out_json \
    --out_json_file "$OUT/server_reports.json" >"$OUT/server_reports_server.log" 2>"$OUT/server_reports_server.err" &
server=$!
wait_for_log "$OUT/server_reports_server.err" "waiting for a client on"
run server_reports 0 gdr-write-bw -p $PORT -s 65536 -n 50 -b --out_json --out_json_file "$OUT/server_reports_client.json" 127.0.0.1
wait $server; status=$?
rows=$(awk '$1 == 65536 && NF == 5 && $2 == 50' "$OUT/server_reports_server.log" | wc -l)
csv_rows=$(csv_awk "$OUT/server_reports.csv" '$col["bytes"] == 65536 && $col["bidirectional"] == "true" { n++ } END { print n + 0 }')
if [ $status = 0 ] && [ "$rows" = 1 ] && [ "$csv_rows" = 1 ] && tail -1 "$OUT/server_reports_server.log" | grep -q '^-----' \
    && grep -q '"test": "RDMA_Write_Bidirectional_BW_Test"' "$OUT/server_reports.json" "$OUT/server_reports_client.json"; then
    pass "server_reports: the -b server prints its perftest row and closing rule, writes its CSV and --out_json"
else
    fail "server_reports: the -b server prints its perftest row and closing rule, writes its CSV and --out_json" \
        "exit $status, $rows table rows, $csv_rows CSV rows" "$(tail -4 "$OUT/server_reports_server.log")"
fi

# Duration mode (-D 3 -f 1, its window): simulated_bandwidth.rs,
# write_bw_duration_averages_over_the_window_between_its_margins.

# --- perftest's spellings, --tclass and -S reach the QP ---------------------------------
# --tclass 106 (perftest's GRH traffic class; its -T is rdma_cm's ToS, with -R: 24-rdma-cm) is read back from the QP's address with ibv_query_qp (rxe keeps the address vector it
# was given) and lands in the traffic_class column; perftest's --report_gbits and -F are taken.
if run write_bw_tclass 0 gdr-write-bw --loopback -s 4096 -n 20 --tclass 106 -S 0 --report_gbits -F --csv "$OUT/tclass.csv"; then
    pass "write_bw with perftest's --tclass 106 -S 0 --report_gbits -F exits 0"
fi
expect_in write_bw_tclass "QP reads back traffic class 106, service level 0"
expect_in write_bw_tclass "BW average[Gb/sec]"
expect_in write_bw_tclass "note: perftest's -F is ignored"
if csv_awk "$OUT/tclass.csv" '{ t = $col["traffic_class"]; s = $col["service_level"] } END { exit !(t == "106" && s == "0") }'; then
    pass "write_bw_tclass: the row's traffic_class is 106, service_level 0"
else
    fail "write_bw_tclass: the row's traffic_class is 106, service_level 0" "$(tail -1 "$OUT/tclass.csv")"
fi
# perftest's -l/--post_list on rxe: lists of 4 chained WRITEs per post call (the list's length
# per call is checked over the simulated NIC, benches/tests/perftest_dropin.rs).
run perftest_post_list 0 gdr-write-bw --loopback -l 4 -n 400 && expect_in perftest_post_list "Post List             : 4"

# --- the worked example ------------------------------------------------------------------------
# The client retries its connection for ten seconds (connect_with_retries): no ordering needed.
(target/release/examples/rdma_write 127.0.0.1 >"$OUT/example_client.log" 2>&1) &
if run example_rdma_write 0 target/release/examples/rdma_write; then pass "examples/rdma_write moves its message"; fi
wait
expect_in example_rdma_write "found \"written by the client's NIC"

# --- bad input: exit 2 and a message naming the problem ----------------------------------------
run bad_device 2 gdr-write-bw --loopback -d mlx5_9 -n 5 && expect_in bad_device "RDMA device 'mlx5_9' not found; devices present: rxe0"
run bad_port 2 gdr-write-bw --loopback -i 3 -n 5 && expect_in bad_port "port 3 of rxe0 does not exist"
run bad_gid 2 gdr-write-bw --loopback -x 77 -n 5 && expect_in bad_gid "GID index 77 of rxe0"
next_port
run no_server 2 gdr-write-bw -p $PORT --timeout 1 -n 5 127.0.0.1 && expect_in no_server "cannot reach the server at 127.0.0.1:$PORT"
# It said once, at the first refusal, that it retries and for how long.
expect_in no_server "gdr-write-bw: 127.0.0.1:$PORT: Connection refused (os error 111); retrying for up to 1 s (--timeout)"
if [ "$(grep -c retrying "$OUT/no_server.log")" = 1 ]; then pass "no_server: says it retries once"; else fail "no_server: says it retries once" "$(cat "$OUT/no_server.log")"; fi
next_port
gdr-write-bw -p $PORT -n 5 -t 64 >"$OUT/mismatch_server.log" 2>&1 &
server=$!
listening_server "$OUT/mismatch_server.log"
run mismatch 2 gdr-write-bw -p $PORT -n 5 -t 32 127.0.0.1 && # at 64 KiB both sides signal every request (perftest's rule), so -t alone differs.
expect_in mismatch "runs gdr-write-bw with other settings: it has -t 64, this side -t 32; give both sides the same flags"
turned_away mismatch_server $server "runs gdr-write-bw with other settings: it has -t 32, this side -t 64"
expect_in mismatch_server "gdr-write-bw: turned away 127.0.0.1:"

run no_cuda 2 gdr-write-bw --loopback --mem cuda -n 5 && expect_in no_cuda "libcuda.so not found"

# --- acceptance thresholds ---------------------------------------------------------------------
# Thresholds, perftest's -w/-y floors, --output and CQ moderation: simulated_bandwidth.rs,
# write_bw_thresholds_floors_and_moderation_decide_as_on_a_device. Here what needs the port's rate.
run threshold_percent 0 gdr-write-bw --loopback -s 65536 -n 50 --min-bw 1% && pass "threshold_percent: 1% of the rxe port rate passes"
