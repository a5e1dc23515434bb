# NIC counters per size, over rxe0: sourced by scripts/vm-tests.sh (helpers: run, pass,
# fail, expect_in; outputs under $OUT). Soft-RoCE has hw_counters (sent_pkts, rcvd_seq_err,
# completer_retry_err, ...). Under QEMU TCG rxe's retransmit timer fires now and then even on
# loopback (seen: completer_retry_err +2, duplicate_request +21 in a 200-message 64 KiB run),
# so the run is judged by what its counters say: moved error counters must show in nic_errors,
# the software device's end-of-run note and, with --max-nic-errors 0, a FAIL line and exit 1;
# none moved must pass.
# Loss on a link is the two-VM case (not in this suite).

# nic_value FILE NAME: the first row's value of CSV column NAME.
nic_value() { awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } !rows++ { print $c }' "$1"; }

timeout 300 gdr-write-bw --loopback -s 64K -n 200 --max-nic-errors 0 --csv "$OUT/nic_run.csv" --json "$OUT/nic_run.json" >"$OUT/nic_run.log" 2>&1
status=$?
counters=$(nic_value "$OUT/nic_run.csv" nic_counters)
errors=$(nic_value "$OUT/nic_run.csv" nic_errors)
retries=$(nic_value "$OUT/nic_run.csv" nic_retransmissions)
echo "       (exit $status, nic_errors '$errors', nic_counters '$counters')"
case "$counters" in
    *sent_pkts=*) pass "nic_run: nic_counters lists the counters that moved" ;;
    *) fail "nic_run: nic_counters lists the counters that moved" "got '$counters'" "$(tail -3 "$OUT/nic_run.log")" ;;
esac
if grep -q '"nic_counters": "' "$OUT/nic_run.json"; then pass "nic_run: json rows carry the deltas"; else fail "nic_run: json rows carry the deltas" "$(head -c 300 "$OUT/nic_run.json")"; fi
if [ "$errors" = 0 ]; then
    if [ $status = 0 ] && ! grep -q "NIC error counters moved" "$OUT/nic_run.log"; then pass "nic_run: no error counter moved: no warning, --max-nic-errors 0 passes"; else fail "nic_run: a clean run passes" "exit $status" "$(tail -3 "$OUT/nic_run.log")"; fi
elif [ -n "$errors" ] && [ "$errors" -ge "${retries:-0}" ]; then
    # rxe is a software device: one line at the end that says so and names the measured
    # baseline, no WARNING under the size.
    if [ $status = 1 ] && grep -q "^note: NIC error counters moved on rxe0 port 1 during 1 of 1 sizes (.*): rxe0 is a software device (rxe).*results/softroce/clean-link-retries.txt" "$OUT/nic_run.log" &&
        ! grep -q "^WARNING: NIC error counters" "$OUT/nic_run.log" && grep -q "^FAIL: 65536 bytes: NIC error counters moved $errors times\{0,1\}, more than the 0 allowed" "$OUT/nic_run.log"; then
        pass "nic_run: $errors error counts (retransmissions $retries): the software-device note, a FAIL line, exit 1"
    else
        fail "nic_run: moved error counters warn and fail --max-nic-errors 0" "exit $status" "$(tail -4 "$OUT/nic_run.log")"
    fi
else
    fail "nic_run: nic_errors is a count at least nic_retransmissions" "nic_errors '$errors', nic_retransmissions '$retries'"
fi
