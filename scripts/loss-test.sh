#!/usr/bin/env bash
# NIC counters under packet loss, from the host, with the release binaries built:
#
#   scripts/loss-test.sh [OUT_DIR] [LOSS] [ITERS] [REPEATS]   # defaults: .cache/loss 2% 500 3
#   NETEM_EXTRA="duplicate 2%" scripts/loss-test.sh ...       # more netem options after the loss
#
# Boots the two Soft-RoCE VMs (scripts/softroce.sh pair), drops LOSS of what leaves gdrvm1's
# eth0 (tc netem) and runs gdrperf's gdr-write-bw and perftest's ib_write_bw at 64 KiB, one way
# and both ways (scripts/softroce/loss.sh). Then it writes OUT_DIR/counter-deltas.txt (the
# hw_counters and eth0 counters that moved, per case and VM), puts a header (command, commit,
# machine, date) on top of every log, and checks:
#   - the loss was applied and rxe's error counters moved in the gdrperf cases;
#   - gdrperf's client with --max-nic-errors 0 either ran and failed the threshold (exit 1, a
#     software-device note and a FAIL line naming the NIC error counters) or stopped with an error line;
#   - its CSV row (if any) has nic_errors > 0.
# (With LOSS 0%, for NETEM_EXTRA's duplicates or reordering alone, these are listed, not judged.)
# perftest's runs, and REPEATS alternating runs of the two-host suite's write_bw_bidir case
# (-q 2 -b --validate) in both tools, are recorded for comparison, not judged: their exit codes
# and error lines are listed. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
REPO=$(pwd -P)
OUT=${1:-$REPO/.cache/loss}; LOSS=${2:-2%}; ITERS=${3:-500}; REPEATS=${4:-3}
case $OUT in /*) ;; *) OUT=$REPO/$OUT ;; esac
# Resolved (no trailing slash, no "..", links followed), so "$PWD/" or "x/.." is the repository
# itself and is refused: OUT_DIR is removed and made afresh below.
OUT=$(realpath -m -- "$OUT")
case $OUT in "$REPO"/*) ;; *) echo "OUT_DIR must be inside the repository, not the repository itself (the VMs see it over 9p)" >&2; exit 2 ;; esac
if [ -n "$(git -C "$REPO" ls-files -- "$OUT" 2>/dev/null | head -1)" ]; then
    echo "OUT_DIR $OUT holds tracked files; name a new folder (default .cache/loss)" >&2; exit 2
fi
# Only a folder this script made (it leaves a marker) is removed; anything else is refused.
MARKER=.made-by-loss-test
if [ -e "$OUT" ] && [ ! -f "$OUT/$MARKER" ]; then
    echo "OUT_DIR $OUT exists and was not made by scripts/loss-test.sh; remove it yourself or name a new folder" >&2; exit 2
fi
PASSED=0; FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; shift; for line in "$@"; do printf '       %s\n' "$line"; done; }

rm -rf "$OUT" && mkdir -p "$OUT" && : >"$OUT/$MARKER"
case ${NETEM_EXTRA:-} in *\'*) echo "NETEM_EXTRA must not hold a quote" >&2; exit 2 ;; esac
vm_command="NETEM_EXTRA='${NETEM_EXTRA:-}' scripts/softroce/loss.sh $OUT $LOSS $ITERS $REPEATS"
command="scripts/softroce.sh pair --timeout 900 -- \"$vm_command\""
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
scripts/softroce.sh pair --timeout 900 -- "$vm_command" >"$OUT/pair.log" 2>&1
status=$?
cat "$OUT/pair.log"
[ $status = 0 ] && pass "both VMs ran the loss cases" || fail "both VMs ran the loss cases" "softroce.sh pair exit $status"

commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates benches scripts 2>/dev/null || echo "+dirty")
kernel=$(cat "$OUT/uname.gdrvm1.txt" 2>/dev/null)
header() {
    printf '# command: NETEM_EXTRA="%s" scripts/loss-test.sh %s %s %s (runs: %s)\n' "${NETEM_EXTRA:-}" "${OUT#"$REPO"/}" "$LOSS" "$ITERS $REPEATS" "$command"
    printf '# commit: %s\n# machine: two QEMU TCG VMs (scripts/softroce.sh pair), Soft-RoCE rxe0 on virtio eth0, %s; host %s\n' \
        "$commit" "guest: ${kernel:-unknown}" "$(uname -srm)"
    printf '# date: %s\n' "$started"
}

# counter-deltas.txt: per case and VM, every counter that moved (after - before).
{
    header
    echo "# case vm counter delta (only counters that moved; hw_counters of rxe0 port 1, eth0_* from /sys/class/net/eth0/statistics)"
    for before in "$OUT"/*.before; do
        base=${before%.before}; vm=${base##*.}; name=${base%.*}; name=${name##*/}
        awk -v name="$name" -v vm="$vm" 'NR == FNR { b[$1] = $2; next } ($2 - b[$1]) != 0 { printf "%s %s %s %d\n", name, vm, $1, $2 - b[$1] }' \
            "$before" "$base.after" 2>/dev/null
    done
} >"$OUT/counter-deltas.txt"
for log in "$OUT"/*.log; do
    [ -f "$log" ] || continue
    { header; cat "$log"; } >"$log.tmp" && mv "$log.tmp" "$log"
done
echo "--- counter deltas"; grep -v '^#' "$OUT/counter-deltas.txt"

grep -q "exit 0" "$OUT/netem.log" 2>/dev/null && grep -q "netem.*loss" "$OUT/netem.log" &&
    pass "netem loss $LOSS on gdrvm1's eth0" || fail "netem loss $LOSS on gdrvm1's eth0" "$(cat "$OUT/netem.log" 2>/dev/null)"

moved() {  # CASE: the rxe error counters that moved in CASE, either VM
    awk -v name="$1" '$1 == name && $3 ~ /seq_err|retry|rnr|duplicate|out_of|_err$/ { print $2 ":" $3 "+" $4 }' "$OUT/counter-deltas.txt" | tr '\n' ' '
}
# Without loss (LOSS 0%, only NETEM_EXTRA's duplicates or reordering) a run need not move an
# error counter (a duplicate only moves duplicate_request), so gdrperf's cases are listed, not judged.
judged="gdrperf_write_bw gdrperf_write_bw_bidir"; listed=""
case $LOSS in 0 | 0% | 0.0% | 0.00%) listed=$judged; judged="" ;; esac
for name in $judged; do
    errors=$(moved $name)
    [ -n "$errors" ] && pass "$name: rxe error counters moved ($errors)" || fail "$name: rxe error counters moved" "none moved"
    code=$(cat "$OUT/$name.client.status" 2>/dev/null || echo none)
    log=$OUT/$name.client.log
    if [ "$code" = 1 ] && grep -q "^note: NIC error counters moved on rxe0 port 1 during .*software device" "$log" && grep -q "^FAIL: 65536 bytes: NIC error counters moved [0-9]* times\{0,1\}, more than the 0 allowed" "$log"; then
        pass "$name: --max-nic-errors 0 fails the run (exit 1, the software-device note and FAIL lines)"
    elif [ "$code" != 0 ] && [ "$code" != none ] && grep -qi "error" "$log"; then
        pass "$name: the run stopped with an error (exit $code): $(grep -i error "$log" | tail -1)"
    else
        fail "$name: --max-nic-errors 0 fails the run or it stops with a clear error" "exit $code" "$(tail -4 "$log" 2>/dev/null)"
    fi
    if [ -f "$OUT/$name.csv" ]; then
        nic_errors=$(python3 -c 'import csv, sys; print(next(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))["nic_errors"])' "$OUT/$name.csv" 2>&1)
        [ "${nic_errors:-0}" -gt 0 ] 2>/dev/null && pass "$name: CSV nic_errors $nic_errors" || fail "$name: CSV nic_errors > 0" "got '$nic_errors'"
    fi
done
listed_statuses=""
for name in $listed; do listed_statuses="$listed_statuses $OUT/$name.client.status"; done
for status in $listed_statuses "$OUT"/perftest_*.client.status "$OUT"/ci_*.client.status; do
    [ -f "$status" ] || continue    # (no ci_* cases with REPEATS 0)
    name=${status%.client.status}; name=${name##*/}
    echo "info - $name: client exit $(cat "$status"), server exit $(cat "$OUT/$name.server.status" 2>/dev/null || echo none); error counters: $(moved "$name")"
    grep -hiE "error|fail|invalid|can't produce" "$OUT/$name.client.log" "$OUT/$name.server.log" 2>/dev/null | grep -v '^#' | sed 's/^/       /' | head -4
done
echo "$PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
