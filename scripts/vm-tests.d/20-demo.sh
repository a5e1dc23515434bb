# The README's two commands in order: what scripts/demo.sh writes must pass the provenance rule
# that scripts/test.sh's `cargo test` applies to everything under results/. Runs the demo's own
# command (scripts/lib/demo.sh, fewer iterations) and the result_provenance test binary on its
# folder (built by test.sh: cargo test --release -p gdrperf-report --test result_provenance --no-run).
# Sourced by scripts/vm-tests.sh. Helpers: run, pass, fail.

. scripts/lib/demo.sh
mkdir -p "$OUT/demo"
demo_command=$(DEMO_ITERATIONS=5 demo_command "$OUT/demo")
demo_header "$OUT/demo" "$demo_command" "Soft-RoCE VM of scripts/vm-tests.sh"
if run demo 0 sh -c "$demo_command >>'$OUT/demo/write_bw.txt'"; then
    pass "demo's command writes write_bw.txt, .csv and .json"
else
    tail -5 "$OUT/demo/write_bw.txt"
fi
# One signalled completion a size at -n 5: still a peak at every size, as perftest.
peak_in_every_row demo "$OUT/demo/write_bw.csv" 23
provenance_test=$(ls -t target/release/deps/result_provenance-* 2>/dev/null | grep -v '\.d$' | head -1)
if [ -z "$provenance_test" ]; then
    fail "demo's files pass result_provenance" "no target/release/deps/result_provenance-* (cargo test --release -p gdrperf-report --test result_provenance --no-run)"
elif GDRPERF_PROVENANCE_DIR="$OUT/demo" "$provenance_test" >"$OUT/demo_provenance.log" 2>&1; then
    pass "demo's files pass result_provenance ($(ls "$OUT/demo" | tr '\n' ' '))"
else
    fail "demo's files pass result_provenance" "$(grep -A12 'result files that name' "$OUT/demo_provenance.log" | head -14)"
fi
if grep -q "^ Git commit *: [0-9a-f]\{40\}" "$OUT/demo/write_bw.txt" && grep -q "^# git_commit: [0-9a-f]\{40\}" "$OUT/demo/write_bw.csv"; then
    pass "demo's console and CSV name the 40-digit commit"
else
    fail "demo's console and CSV name the 40-digit commit" "$(grep -i commit "$OUT/demo/write_bw.txt" "$OUT/demo/write_bw.csv")"
fi
