# Path ceilings. On rxe0 itself every bandwidth row says it has no hardware ceiling.
# Then each side reads a fixture machine's sysfs (GDRPERF_PATH_SYSFS_ROOT; the trees come from
# gdrperf-doctor-fixtures' write_fixture example, pair 0's NIC renamed rxe0): the client a healthy
# DGX H100-like node, the server the same with its NIC trained at x8. The server's facts must
# cross the handshake into the client's row: ceiling 230.46 Gb/s (32 GT/s x 8 x 128/130 x
# 256/280), limited by the server's link, the server's x8 link named as the peer's cause; and
# `gdrperf explain` must say the same from the client's JSON.

if run ceiling_rxe 0 gdr-write-bw --loopback -s 65536 -n 20 --csv "$OUT/ceiling_rxe.csv"; then
    pass "write_bw on rxe0 exits 0"
fi
expect_in ceiling_rxe "no hardware ceiling (software device): rxe0 (rxe)"
# ... ceiling_limited_by, pct_of_ceiling (empty), ceiling_causes (empty), peak_events_not_stored,
# traffic_class 0, service_level 0, peak_note (empty: no ceiling to be above), then the
# identities: nic_node_guid (rxe0's, checked below), gpu_local_uuid (empty: host memory), and
# relaxed_ordering (asked: perftest's default).
if grep -q ',no hardware ceiling (software device),,,[0-9][0-9]*,0,0,,[0-9a-f:]*,,asked$' "$OUT/ceiling_rxe.csv"; then
    pass "ceiling_rxe: the row has no ceiling and no percentage"
else
    fail "ceiling_rxe: the row has no ceiling and no percentage" "$(tail -1 "$OUT/ceiling_rxe.csv")"
fi
guid=$(cat /sys/class/infiniband/rxe0/node_guid 2>/dev/null)
row_guid=$(csv_awk "$OUT/ceiling_rxe.csv" '{ g = $col["nic_node_guid"] } END { print g }')
if [ -n "$guid" ] && [ "$row_guid" = "$guid" ]; then
    pass "ceiling_rxe: nic_node_guid is rxe0's sysfs node_guid ($guid)"
else
    fail "ceiling_rxe: nic_node_guid is rxe0's sysfs node_guid" "sysfs '$guid', row '$row_guid'"
fi

fixtures="$OUT/ceiling-fixtures"
if target/release/examples/write_fixture dgx-h100 "$fixtures/healthy" rxe0 \
        && target/release/examples/write_fixture dgx-h100-nic-at-x8 "$fixtures/x8" rxe0; then
    pass "fixture trees written"
else
    fail "fixture trees written" "write_fixture failed"
fi

next_port
GDRPERF_PATH_SYSFS_ROOT="$fixtures/x8" gdr-write-bw -p $PORT -s 65536 -n 50 >"$OUT/ceiling_server.log" 2>&1 &
server=$!
listening_server "$OUT/ceiling_server.log"
if run ceiling_client 0 env GDRPERF_PATH_SYSFS_ROOT="$fixtures/healthy" gdr-write-bw -p $PORT -s 65536 -n 50 \
        --report-gbits --csv "$OUT/ceiling_client.csv" --json "$OUT/ceiling_client.json" 127.0.0.1; then
    pass "write_bw server/client on fixture facts exits 0"
fi
wait $server
expect_in ceiling_client "230.46 Gb/s (server NIC PCIe 32 GT/s x8)"
expect_in ceiling_client "cause: server (peer): rxe0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16"
if grep -q '230.4[0-9]*,server NIC PCIe 32 GT/s x8,[0-9.e-]*,"server (peer): rxe0 (0000:18:00.0) trained at PCIe 32 GT/s x8' "$OUT/ceiling_client.csv"; then
    pass "ceiling_client: the csv row carries the server's ceiling and cause"
else
    fail "ceiling_client: the csv row carries the server's ceiling and cause" "$(tail -1 "$OUT/ceiling_client.csv")"
fi
# One judgement: the measuring side's run header names an x8 link of its own as a
# finding in the words the client's cause above quotes, and `gdrperf doctor` on the same tree
# says them too (exit 1: a warning). A write_bw server prints no header (the client measures),
# so the header is read from a loopback run whose one device sits on the x8 tree.
x8_link="rxe0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16"
if run ceiling_finding 0 env GDRPERF_PATH_SYSFS_ROOT="$fixtures/x8" gdr-write-bw --loopback -s 65536 -n 20; then
    if grep -F "warn pcie-link: $x8_link" "$OUT/ceiling_finding.log" | grep -q "^ *Finding"; then
        pass "ceiling_finding: the header's Finding line names the x8 link"
    else
        fail "ceiling_finding: the header's Finding line names the x8 link" "$(grep -F Finding "$OUT/ceiling_finding.log")"
    fi
fi
run ceiling_doctor 1 gdrperf doctor --strict --no-cuda --sysfs-root "$fixtures/x8" \
    && expect_in ceiling_doctor "WARN  pcie-link: $x8_link"
run ceiling_explain 1 gdrperf explain "$OUT/ceiling_client.json" \
    && expect_in ceiling_explain "(server NIC PCIe 32 GT/s x8): SHORT"
expect_in ceiling_explain "cause: server (peer): rxe0 (0000:18:00.0) trained at PCIe 32 GT/s x8"

# A staged server: its copies in, timed at set-up (TCG memcpy, far below the x8 link), bound the
# client's row, named as the server's; --min-bw's FAIL line lists the causes under it.
next_port
GDRPERF_PATH_SYSFS_ROOT="$fixtures/x8" gdr-write-bw -p $PORT --mem host-staged -s 65536 -n 50 >"$OUT/ceiling_staged_server.log" 2>&1 &
server=$!
listening_server "$OUT/ceiling_staged_server.log"
run ceiling_staged 1 env GDRPERF_PATH_SYSFS_ROOT="$fixtures/healthy" gdr-write-bw -p $PORT -s 65536 -n 50 \
    --report-gbits --min-bw 1000Gb/s --csv "$OUT/ceiling_staged.csv" 127.0.0.1 && pass "ceiling_staged: --min-bw 1000Gb/s exits 1"
wait $server
if grep -q ',server staged copies [0-9.]* Gb/s,' "$OUT/ceiling_staged.csv"; then
    pass "ceiling_staged: the server's copies bound the client's row"
else
    fail "ceiling_staged: the server's copies bound the client's row" "$(tail -1 "$OUT/ceiling_staged.csv")"
fi
if grep -A1 '^FAIL: 65536 bytes: BW average' "$OUT/ceiling_staged.log" | grep -q '^    cause: '; then
    pass "ceiling_staged: the FAIL line lists the causes under it"
else
    fail "ceiling_staged: the FAIL line lists the causes under it" "$(grep -A2 '^FAIL' "$OUT/ceiling_staged.log")"
fi
