# -R (QPs connected through rdma_cm, as perftest's -R) on every bench: sourced by
# scripts/vm-tests.sh (helpers: run, pass, fail, expect_in, turned_away, check_bw_csv, next_port;
# outputs under $OUT). Needs the rdma_ucm module and librdmacm (both in the VM image).
#
# rdma_cm resolves routes only through a real interface: with rxe0 on lo (the one-VM suite) its
# route resolution fails with ENODEV, perftest's -R as well. So the connecting cases run where
# rxe0 sits on a NIC, VM 0 of `scripts/softroce.sh pair` (its address $GDRPERF_VM_IP):
#   scripts/softroce.sh pair -- 'VM_TESTS=24-rdma-cm scripts/vm-tests.sh' true
# On lo the family checks that -R fails there at once with rdma_cm's reason (no hang). Both
# check that -R on one side only is refused by name, and -T/--tclass as perftest has them. Where it
# connects: a stranger's rdma_cm requests are all refused while the real client runs (issue 44),
# -R -T sets rdma_cm's ToS, and -R -x says which GID rdma_cm used.

# rdma_cm_pair NAME BENCH ARGS...: BENCH -R as server and client, two processes over the VM's
# address, both exit 0; the client's header says how the QPs were connected (the server prints
# no header).
rdma_cm_pair() {
    name=$1; bench=$2; shift 2
    next_port
    $bench -R -p $PORT "$@" >"$OUT/${name}_server.log" 2>&1 &
    server=$!
    if run "$name" 0 $bench -R -p $PORT "$@" --csv "$OUT/$name.csv" "$GDRPERF_VM_IP"; then
        pass "$bench -R server/client $*: client exits 0"
    fi
    # A server whose client failed would wait for the next one: give it a few seconds, no more.
    tries=0; while kill -0 $server 2>/dev/null && [ $tries -lt 50 ]; do tries=$((tries + 1)); sleep 0.2; done
    kill $server 2>/dev/null; wait $server; status=$?
    if [ $status = 0 ]; then pass "$bench -R server exits 0"; else fail "$bench -R server exits 0" "exit $status" "$(tail -5 "$OUT/${name}_server.log")"; fi
    expect_in "$name" "rdma_cm (-R): "
}

# perftest_pair NAME TOOL ARGS...: perftest's own -R, server and client, for comparison.
perftest_pair() {
    name=$1; tool=$2; shift 2
    next_port
    $tool -R -p $PORT "$@" >"$OUT/${name}_server.log" 2>&1 &
    server=$!
    # perftest's server writes nothing until it exits (its stdout is a file): wait for its rdma_cm
    # listener instead ('rdma res show cm_id', state LISTEN on this port), at most 60 s.
    tries=0
    while ! rdma res show cm_id 2>/dev/null | grep LISTEN | grep -q ":$PORT\( \|\$\)" &&
        kill -0 $server 2>/dev/null && [ $tries -lt 300 ]; do tries=$((tries + 1)); sleep 0.2; done
    if run "$name" 0 $tool -R -p $PORT "$@" "$GDRPERF_VM_IP"; then pass "$tool -R pair exits 0"; fi
    tries=0; while kill -0 $server 2>/dev/null && [ $tries -lt 50 ]; do tries=$((tries + 1)); sleep 0.2; done
    kill $server 2>/dev/null; wait $server
}

rdma_cm_netdev=$(rdma link 2>/dev/null | sed -n 's/^link rxe0\/1 .* netdev \([^ ]*\).*/\1/p')
if [ "$rdma_cm_netdev" = lo ]; then
    if run rdma_cm_on_lo 2 gdr-write-bw -R --loopback -s 4096 -n 10 --timeout 20; then
        pass "-R with rxe0 on lo fails (exit 2), no hang"
    fi
    expect_in rdma_cm_on_lo "rdma_cm: rdma_resolve_route"
elif [ -n "${GDRPERF_VM_IP:-}" ]; then
    for bench in gdr-write-bw gdr-send-bw; do
        name=rdma_cm_loop_${bench#gdr-}
        if run "$name" 0 $bench -R --loopback -q 2 -s 4096 -n 50 --validate --csv "$OUT/$name.csv"; then
            pass "$bench -R --loopback -q 2 --validate exits 0"
        fi
        check_bw_csv "$name" "$OUT/$name.csv" 1 pass
        expect_in "$name" "rdma_cm (-R): 2 connection(s) to $GDRPERF_VM_IP"
        rdma_cm_pair rdma_cm_pair_${bench#gdr-} $bench -q 2 -s 65536 -n 50 --validate
    done
    # gdr-read-bw comes with branch `reshape`: it runs here once built.
    for bench in gdr-read-lat gdr-write-lat gdr-send-lat gdr-read-bw; do
        command -v $bench >/dev/null || continue
        name=rdma_cm_loop_${bench#gdr-}
        if run "$name" 0 $bench -R --loopback -s 64 -n 200 --validate; then
            pass "$bench -R --loopback --validate exits 0"
        fi
        expect_in "$name" "rdma_cm (-R): 1 connection(s) to $GDRPERF_VM_IP"
        rdma_cm_pair rdma_cm_pair_${bench#gdr-} $bench -s 64 -n 200
    done
    # --concurrent: each lane's QPs through their own cm ids (two lanes on rxe0, two QPs each).
    if run rdma_cm_lanes 0 gdr-write-bw -R --loopback --concurrent -d rxe0,rxe0 -q 2 -s 64K -n 30 --validate --csv "$OUT/rdma_cm_lanes.csv"; then
        pass "write_bw -R --concurrent, two lanes of two QPs"
    fi
    check_bw_csv rdma_cm_lanes "$OUT/rdma_cm_lanes.csv" 3 pass # lane 0, lane 1, all
    perftest_pair rdma_cm_perftest ib_write_bw -s 65536 -n 200
    perftest_pair rdma_cm_perftest_lat ib_send_lat -s 64 -n 200

    # A fabric stranger (issue 44): rdma_cm connection requests without the run's secret, sent
    # from before the server starts until it exits. The server listens only once its client is
    # admitted over TCP and accepts only that client's requests: the real client runs (4 QPs,
    # SENDs checked), every stranger's request is rejected, none accepted. A server that took
    # the first requester accepted the stranger (exit 3) and the real run failed.
    next_port
    gdr-send-bw -R -p $PORT -q 4 -s 4096 -n 50 --validate >"$OUT/rdma_cm_stranger_server.log" 2>&1 &
    server=$!
    target/release/examples/rdma_cm_stranger "$GDRPERF_VM_IP" $PORT $server >"$OUT/rdma_cm_stranger.log" 2>&1 &
    stranger=$!
    # The stranger knocks first: its first answer (no listener yet) comes before the client starts.
    wait_for_log "$OUT/rdma_cm_stranger.log" "request 1:" 60
    if run rdma_cm_stranger_client 0 gdr-send-bw -R -p $PORT -q 4 -s 4096 -n 50 --validate "$GDRPERF_VM_IP"; then
        pass "send_bw -R -q 4 runs while a stranger sends rdma_cm requests"
    fi
    expect_in rdma_cm_stranger_client "rdma_cm (-R): 4 connection(s) to $GDRPERF_VM_IP"
    tries=0; while kill -0 $server 2>/dev/null && [ $tries -lt 50 ]; do tries=$((tries + 1)); sleep 0.2; done
    kill $server 2>/dev/null; wait $server; status=$?
    if [ $status = 0 ]; then pass "send_bw -R server with a stranger knocking exits 0"; else fail "send_bw -R server with a stranger knocking exits 0" "exit $status" "$(tail -5 "$OUT/rdma_cm_stranger_server.log")"; fi
    wait $stranger; status=$?
    if [ $status = 0 ] && grep -q "requests, .* rejected by gdrperf, 0 accepted" "$OUT/rdma_cm_stranger.log"; then
        pass "rdma_cm_stranger: every request refused, none accepted ($(tail -1 "$OUT/rdma_cm_stranger.log"))"
    else
        fail "rdma_cm_stranger: every request refused, none accepted" "exit $status" "$(grep -v 'no listener' "$OUT/rdma_cm_stranger.log" | tail -5)"
    fi
    # What the server said of the requests it rejected while listening (a stranger's request lands
    # in that window by chance, so this is shown, not asserted; rdma_cm_admission's unit tests
    # check the decision).
    echo "       server rejected $(grep -c 'rejected an rdma_cm connection request' "$OUT/rdma_cm_stranger_server.log") stranger request(s) while listening"

    # -T with -R is rdma_cm's ToS (rdma_set_option RDMA_OPTION_ID_TOS), as perftest: the QPs'
    # address vector reads back its traffic class.
    if run rdma_cm_tos 0 gdr-write-bw -R -T 106 --loopback -s 4096 -n 20 --csv "$OUT/rdma_cm_tos.csv"; then
        pass "write_bw -R -T 106 exits 0"
    fi
    expect_in rdma_cm_tos "type of service 106 (-T, rdma_cm's RDMA_OPTION_ID_TOS)"
    expect_in rdma_cm_tos "QP reads back traffic class 106"

    # -R -x N: taken, as perftest; rdma_cm picks the GID from the address and the run says which
    # (index 0 is rxe0's link-local GID, never the one of 192.0.2.x).
    if run rdma_cm_gid 0 gdr-write-bw -R -x 0 --loopback -s 4096 -n 10; then pass "write_bw -R -x 0 exits 0"; fi
    expect_in rdma_cm_gid "-x 0: with -R rdma_cm picks the GID from the address, as in perftest: it used GID"
    expect_in rdma_cm_gid "::ffff:$GDRPERF_VM_IP"
else
    fail "rdma_cm family: rxe0 is on '$rdma_cm_netdev', and no GDRPERF_VM_IP says its address" "$(rdma link)"
fi

# One side -R, the other not: a named mismatch in the parameter check, before any QP is
# connected, never a hang; the server keeps waiting for the right client.
next_port
gdr-write-bw -R -p $PORT -s 4096 -n 10 >"$OUT/rdma_cm_mismatch_server.log" 2>&1 &
server=$!
run rdma_cm_mismatch 2 gdr-write-bw -p $PORT -s 4096 -n 10 127.0.0.1 && expect_in rdma_cm_mismatch "it has -R, this side no -R"
turned_away rdma_cm_mismatch_server $server "it has no -R, this side -R"
next_port
gdr-send-lat -p $PORT -s 64 -n 10 >"$OUT/rdma_cm_mismatch2_server.log" 2>&1 &
server=$!
run rdma_cm_mismatch2 2 gdr-send-lat -R -p $PORT -s 64 -n 10 127.0.0.1 && expect_in rdma_cm_mismatch2 "it has no -R, this side -R"
turned_away rdma_cm_mismatch2_server $server "it has -R, this side no -R"

# -T is rdma_cm's ToS, valid only with -R (perftest exits without it); --tclass is the QPs'.
run rdma_cm_tos_without_r 2 gdr-write-bw -T 106 --loopback && expect_in rdma_cm_tos_without_r "valid only with -R"
run rdma_cm_tclass_with_r 2 gdr-write-bw -R --tclass 106 --loopback && expect_in rdma_cm_tclass_with_r "give the traffic class as -T/--tos"
