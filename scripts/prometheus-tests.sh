#!/bin/sh
# `--prom` (benches) and `gdrperf accept --prom` over the simulated NIC (-d simulated0, no device
# needed): each file passes `promtool check metrics` (Debian's prometheus package: format and
# lint, base units), holds one sample per series (promtool 2.42 does not check that) and the
# series the run made; a link at the path is refused and its target left alone.
#   scripts/prometheus-tests.sh [BINARY_FOLDER]     (default target/release)
# Run by scripts/test.sh after the release build (which installs promtool with the build's
# packages, scripts/lib/build-packages.sh). Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
BIN=${1:-target/release}
PASSED=0; FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; shift; for line in "$@"; do echo "       $line"; done; }
command -v promtool >/dev/null || { echo "prometheus-tests: promtool is missing (apt-get install prometheus)" >&2; exit 1; }
for binary in gdr-write-bw gdr-read-lat gdrperf; do
    [ -x "$BIN/$binary" ] || { echo "prometheus-tests: $BIN/$binary is not built (cargo build --release --workspace --bins)" >&2; exit 1; }
done
SCRATCH=$(mktemp -d /tmp/gdrperf-prometheus-tests.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

# check NAME FILE: promtool finds nothing to say, and no series has two samples.
check() {
    if out=$(promtool check metrics < "$2" 2>&1) && [ -z "$out" ]; then pass "$1: promtool check metrics"; else fail "$1: promtool check metrics" "$out"; fi
    twice=$(grep -v '^#' "$2" | sed 's/ [^ ]*$//' | sort | uniq -d)
    [ -z "$twice" ] && pass "$1: one sample per series" || fail "$1: one sample per series" "$twice"
}
# count FILE PATTERN: sample lines matching PATTERN (grep -E).
count() { grep -v '^#' "$1" | grep -cE "$2"; }

# The check itself fails on a file that breaks the rules (a unit in milliseconds, no help).
printf 'gdrperf_x_milliseconds 1\n' > "$SCRATCH/bad.prom"
if promtool check metrics < "$SCRATCH/bad.prom" >/dev/null 2>&1; then fail "promtool refuses a bad file"; else pass "promtool refuses a bad file"; fi

export GDRPERF_SIMULATED_NIC=1
unset GDRPERF_TOKEN

# One size, then a sweep: one bandwidth series a size, the run complete.
"$BIN/gdr-write-bw" --loopback -d simulated0 -s 4096 -n 100 --prom "$SCRATCH/write_bw.prom" >/dev/null 2>"$SCRATCH/err" \
    && pass "gdr-write-bw --prom: exit 0" || fail "gdr-write-bw --prom: exit 0" "$(tail -3 "$SCRATCH/err")"
check write_bw "$SCRATCH/write_bw.prom"
[ "$(count "$SCRATCH/write_bw.prom" '^gdrperf_bandwidth_bytes_per_second\{.*size_bytes="4096"')" = 1 ] \
    && pass "write_bw: the size's bandwidth in bytes per second" || fail "write_bw: the size's bandwidth" "$(cat "$SCRATCH/write_bw.prom")"
[ "$(count "$SCRATCH/write_bw.prom" '^gdrperf_run_status\{role="client",status="complete"\} 1$')" = 1 ] \
    && pass "write_bw: status complete" || fail "write_bw: status complete" "$(grep run_status "$SCRATCH/write_bw.prom")"

"$BIN/gdr-write-bw" --loopback -d simulated0 -a -n 20 --prom "$SCRATCH/sweep.prom" >/dev/null 2>"$SCRATCH/err" \
    || fail "gdr-write-bw -a --prom: exit 0" "$(tail -3 "$SCRATCH/err")"
check write_bw_sweep "$SCRATCH/sweep.prom"
sizes=$(count "$SCRATCH/sweep.prom" '^gdrperf_bandwidth_bytes_per_second\{')
[ "$sizes" = 23 ] && pass "write_bw -a: 23 sizes, one series each" || fail "write_bw -a: 23 sizes, one series each" "$sizes"

# A latency run: its seven statistics in seconds.
"$BIN/gdr-read-lat" --loopback -d simulated0 -s 8 -n 100 --prom "$SCRATCH/read_lat.prom" >/dev/null 2>"$SCRATCH/err" \
    && pass "gdr-read-lat --prom: exit 0" || fail "gdr-read-lat --prom: exit 0" "$(tail -3 "$SCRATCH/err")"
check read_lat "$SCRATCH/read_lat.prom"
[ "$(count "$SCRATCH/read_lat.prom" '^gdrperf_latency_seconds\{.*size_bytes="8"')" = 7 ] \
    && pass "read_lat: seven latency statistics" || fail "read_lat: seven latency statistics" "$(grep latency "$SCRATCH/read_lat.prom")"

# gdrperf accept: a verdict state set per row, the node's verdict and exit code.
"$BIN/gdrperf" accept --profile softroce-smoke -d simulated0 --mem host --bench-dir "$BIN" \
    --out "$SCRATCH/accept" --prom "$SCRATCH/accept.prom" >"$SCRATCH/accept.out" 2>&1
code=$?
check accept "$SCRATCH/accept.prom"
rows=$(count "$SCRATCH/accept.prom" '^gdrperf_accept_verdict\{.*\} 1$')
states=$(count "$SCRATCH/accept.prom" '^gdrperf_accept_verdict\{')
[ "$rows" -gt 0 ] && [ "$states" = $((rows * 4)) ] \
    && pass "accept: one verdict of four states for each of $rows rows" || fail "accept: one verdict of four a row" "$rows rows, $states states"
[ "$(count "$SCRATCH/accept.prom" "^gdrperf_accept_exit_code $code\$")" = 1 ] \
    && pass "accept: gdrperf_accept_exit_code is the exit code ($code)" || fail "accept: gdrperf_accept_exit_code is the exit code ($code)" "$(grep exit_code "$SCRATCH/accept.prom")"

# A link at the path: refused before measuring, its target untouched.
echo mine > "$SCRATCH/target"
ln -s "$SCRATCH/target" "$SCRATCH/link.prom"
if "$BIN/gdr-write-bw" --loopback -d simulated0 -s 4096 -n 10 --prom "$SCRATCH/link.prom" >/dev/null 2>"$SCRATCH/err"; then
    fail "a link at --prom is refused" "exit 0"
elif [ "$(cat "$SCRATCH/target")" = mine ] && grep -q 'symbolic link' "$SCRATCH/err"; then
    pass "a link at --prom is refused, its target untouched"
else
    fail "a link at --prom is refused, its target untouched" "$(tail -2 "$SCRATCH/err")"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
