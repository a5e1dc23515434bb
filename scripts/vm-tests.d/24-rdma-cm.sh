# -R (QPs connected through rdma_cm, as perftest's -R) on every bench: sourced by
# scripts/vm-tests.sh (helpers: run, pass, fail, expect_in, turned_away, check_bw_csv, next_port;
# outputs under $OUT). Needs the rdma_ucm module and librdmacm (both in the VM image).
#
# rdma_cm resolves routes only through a real interface: with rxe0 on lo (the one-VM suite) its
# route resolution fails with ENODEV, perftest's -R as well. So the connecting cases run where
# rxe0 sits on a NIC, VM 0 of `scripts/softroce.sh pair` (its address $GDRPERF_VM_IP):
#   scripts/softroce.sh pair -- 'VM_TESTS=24-rdma-cm scripts/vm-tests.sh' true
# On lo the family checks that -R fails there at once with rdma_cm's reason (no hang). Both
# check that -R on one side only is refused by name, and that -R leaves the GID to rdma_cm.

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

# -R leaves the GID to rdma_cm: with -x it is refused up front.
run rdma_cm_gid 2 gdr-write-bw -R -x 1 --loopback && expect_in rdma_cm_gid "--gid-index"
