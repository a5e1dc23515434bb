# CPU placement, over rxe0 in the VM (-smp 2): sourced by scripts/vm-tests.sh
# (helpers: run, pass, fail, expect_in; outputs under $OUT).
#
# rxe0 is a software device: no device/numa_node, so by default a run says it has no NUMA
# information and stays unpinned. --cpu 1 pins the measuring thread, which shows in the
# kernel's view of the process while it runs, and in the CSV and JSON.

# csv_value FILE NAME: the first row's value of CSV column NAME.
csv_value() { awk -F, -v name="$2" '/^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } !rows++ { print $c }' "$1"; }

if run cpu_default 0 gdr-write-bw --loopback -s 4096 -n 20 --csv "$OUT/cpu_default.csv"; then
    pass "cpu_default: a run on rxe0 completes unpinned"
fi
expect_in cpu_default "not pinned (rxe0 has no NUMA node"
got="$(csv_value "$OUT/cpu_default.csv" cpu)|$(csv_value "$OUT/cpu_default.csv" numa_node)"
if [ "$got" = "none|" ]; then pass "cpu_default: csv cpu 'none', numa_node empty"; else fail "cpu_default: csv cpu 'none', numa_node empty" "got '$got'"; fi

# --cpu 1: the bench's affinity, read from /proc while it measures.
gdr-write-bw --loopback --cpu 1 -s 4096 -D 4 --csv "$OUT/cpu_one.csv" --json "$OUT/cpu_one.json" >"$OUT/cpu_one.log" 2>&1 &
bench=$!
tries=0
while ! grep -q "#bytes" "$OUT/cpu_one.log" && [ $tries -lt 100 ]; do tries=$((tries + 1)); sleep 0.2; done
allowed=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/$bench/status 2>/dev/null)
threads=$(cat /proc/$bench/task/*/status 2>/dev/null | awk '/^Cpus_allowed_list/ { print $2 }' | sort -u | tr '\n' ' ')
wait $bench; status=$?
if [ "$allowed" = 1 ]; then pass "cpu_one: /proc/PID/status says Cpus_allowed_list 1 while it runs"; else fail "cpu_one: /proc/PID/status says Cpus_allowed_list 1 while it runs" "got '$allowed' (threads: $threads)" "$(tail -3 "$OUT/cpu_one.log")"; fi
echo "       (all threads: $threads)"
if [ "$status" = 0 ]; then pass "cpu_one: exits 0"; else fail "cpu_one: exits 0" "exit $status" "$(tail -3 "$OUT/cpu_one.log")"; fi
expect_in cpu_one "CPU 1 (--cpu 1)"
got=$(csv_value "$OUT/cpu_one.csv" cpu)
if [ "$got" = 1 ]; then pass "cpu_one: csv cpu '1' (numa_node '$(csv_value "$OUT/cpu_one.csv" numa_node)')"; else fail "cpu_one: csv cpu '1'" "got '$got'"; fi
if grep -q '"cpu": {' "$OUT/cpu_one.json" && grep -q '"reason": "--cpu 1"' "$OUT/cpu_one.json"; then
    pass "cpu_one: json metadata has the placement"
else
    fail "cpu_one: json metadata has the placement" "$(grep -A6 '"cpu"' "$OUT/cpu_one.json" | head -8)"
fi

run cpu_absent 2 gdr-write-bw --loopback --cpu 7 -s 4096 -n 5 && expect_in cpu_absent "CPU placement: --cpu 7: CPU 7 not available to this process (it may use 0-1)"
run cpu_no_node 2 gdr-write-bw --loopback --numa-node 3 -s 4096 -n 5 && expect_in cpu_no_node "--numa-node 3: no such NUMA node"
