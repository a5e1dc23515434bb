#!/usr/bin/env bash
# Two-host integration tests over Soft-RoCE: two QEMU VMs, each with its own kernel and rxe0 on
# its own virtio NIC, joined by a virtual link (scripts/softroce.sh pair). Run by scripts/test.sh
# after the one-VM tests, from the host, with the release binaries built:
#
#   scripts/two-host-tests.sh
#
# 1. Benches across the link (scripts/softroce/two-host-benches.sh): server in gdrvm0, client in
#    gdrvm1, host memory, --validate: write bandwidth (sweep, and 2 QPs both ways), read latency,
#    send/recv bandwidth, write and send latency (those that are built). Checked: both sides exit
#    0, the rows, the data check, both host names in every row, the GID taken from the client's
#    interface address (::ffff:192.0.2.11), the bytes on eth0. GDRPERF_SKIP_BENCHES=1 skips it
#    and 1a (to repeat the later parts alone).
# 1a. -R (scripts/vm-tests.d/24-rdma-cm.sh) in gdrvm0, where rxe0 sits on eth0: every bench
#    connected through rdma_cm, loopback and two processes, perftest's -R beside it.
# 1b. Loss (scripts/loss-test.sh, short form): netem drops 2% of gdrvm1's eth0 egress; checked:
#    rxe's error counters move and gdr-write-bw --max-nic-errors 0 fails (exit 1, WARNING and
#    FAIL lines), one way and both ways; GDRPERF_SKIP_LOSS=1 skips it.
# 1c. Soak under loss (scripts/soak-loss-test.sh): `gdrperf accept --soak` across the link, clean
#    (PASS) and with netem loss switched on after interval 1 (intervals 3 and 4 marked, tied to rxe's
#    retry and sequence counters by name, FAIL, exit 1); GDRPERF_SKIP_SOAK_LOSS=1 skips it.
# 2. Slurm (scripts/softroce/slurm-vm.sh + two-host-slurm.sh): a real two-node cluster (Debian's
#    slurmctld, slurmd, munge) in the VMs; hostlists expanded by gdrperf and by scontrol compared;
#    `srun -N2 -n2 gdrperf slurm` (pairs: one row per pair), a ring with two tasks per node, a run
#    with a missing device (fails, names both nodes), scripts/slurm/acceptance.sbatch via sbatch;
#    a ring as it is, with gdrvm1's egress slowed by netem, and with both VMs' egress slowed
#    (the first and last twice), each judged with `gdrperf fleet judge --base` against the
#    first. The Debian root is built once into .cache/slurm-root (debootstrap, needs root and
#    the Debian mirror); GDRPERF_SKIP_SLURM=1 skips this part.
# Ends with "N passed, N failed"; the exit status is 1 if anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
OUT=$REPO/.cache/two-host    # inside the repository: the VMs see it over 9p
PASSED=0; FAILED=0; FAILURES=""

pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() {
    FAILED=$((FAILED + 1)); FAILURES="$FAILURES\n  $1"; echo "FAIL - $1"; shift
    for line in "$@"; do printf '       %s\n' "$line"; done
}
check() {  # NAME PROBLEMS: pass when PROBLEMS is empty
    if [ -z "$2" ]; then pass "$1"; else fail "$1" "$2"; fi
}

# check_rows NAME CSV ROWS: ROWS rows, validation pass, host gdrvm1 and peer_host gdrvm0 in each.
check_rows() {
    python3 - "$2" "$3" <<'EOF'
import csv, sys
path, want = sys.argv[1], int(sys.argv[2])
try:
    rows = list(csv.DictReader(line for line in open(path) if not line.startswith('#')))
except OSError as error:
    sys.exit(print(f"cannot read {path}: {error}"))
problems = [] if len(rows) == want else [f"{len(rows)} rows, expected {want}"]
for number, row in enumerate(rows, 1):
    for column, expected in (("validation", "pass"), ("host", "gdrvm1"), ("peer_host", "gdrvm0")):
        if row.get(column) != expected:
            problems.append(f"row {number}: {column} {row.get(column)!r}, expected {expected!r}")
print("; ".join(problems))
EOF
}

# took PART: how long PART took (bash's SECONDS since the last call), so that CI's log shows where
# the suite's time goes.
part_started=$SECONDS
took() { echo "== $1 took $((SECONDS - part_started)) s"; part_started=$SECONDS; }

rm -rf "$OUT" && mkdir -p "$OUT"

# --- 1. benches across the link -----------------------------------------------------------------
benches_across_the_link() {
echo "== two VMs, benches across the link"
mkdir -p "$OUT/benches"
scripts/softroce.sh pair --timeout 1500 -- "scripts/softroce/two-host-benches.sh $OUT/benches"
status=$?
check "both VMs ran the bench cases (softroce.sh pair exit $status)" "$([ $status = 0 ] || echo "exit $status")"

declare -A ROWS=([write_bw_sweep]=23 [write_bw_bidir]=1 [read_lat]=1 [send_bw]=1 [write_lat]=1 [send_lat]=1)
ran=0
for name in write_bw_sweep write_bw_bidir read_lat send_bw write_lat send_lat; do
    dir=$OUT/benches
    if [ -f "$dir/$name.skipped" ]; then echo "skip - $name: $(cat "$dir/$name.skipped")"; continue; fi
    ran=$((ran + 1))
    for side in server client; do
        code=$(cat "$dir/$name.$side.status" 2>/dev/null || echo none)
        check "$name: $side exits 0" "$([ "$code" = 0 ] || { echo "exit $code"; tail -n 5 "$dir/$name.$side.log" 2>/dev/null; })"
    done
    check "$name: ${ROWS[$name]} rows, validation pass, host gdrvm1, peer_host gdrvm0" "$(check_rows "$name" "$dir/$name.csv" "${ROWS[$name]}")"
    check "$name: the client's GID is the RoCE v2 GID of its interface address ::ffff:192.0.2.11" \
        "$(python3 -c 'import json, sys; gid = json.load(open(sys.argv[1]))["metadata"].get("gid") or ""
print("" if "::ffff:192.0.2.11" in gid and "RoCE v2" in gid else f"gid {gid!r}")' "$dir/$name.json" 2>&1)"
done
check "write bandwidth, read latency and send/recv all ran" \
    "$(for name in write_bw_sweep read_lat send_bw; do [ -f "$OUT/benches/$name.skipped" ] && echo "$name skipped"; done)"
# The sweep alone moves 16 MiB x 6 from gdrvm1 to gdrvm0: RoCE v2 packets on the link, not on lo.
read -r tx_before _ <"$OUT/benches/eth0.gdrvm1.before" 2>/dev/null
read -r tx_after _ <"$OUT/benches/eth0.gdrvm1.after" 2>/dev/null
sent=$(( ${tx_after:-0} - ${tx_before:-0} ))
check "gdrvm1 sent $((sent >> 20)) MiB over eth0 (at least 96 MiB)" "$([ "$sent" -ge $((96 << 20)) ] || echo "only $sent bytes")"
took "benches across the link"

# --- 1a. -R: the rdma_cm family in gdrvm0, whose rxe0 sits on a NIC (on lo rdma_cm finds no route)
echo "== -R through rdma_cm in gdrvm0 (scripts/vm-tests.d/24-rdma-cm.sh)"
scripts/softroce.sh pair --timeout 900 -- \
    "VM_TEST_OUT=$OUT/rdma-cm VM_TESTS=24-rdma-cm scripts/vm-tests.sh" true >"$OUT/rdma-cm.log" 2>&1
status=$?
grep -E '^vm0\| (ok|FAIL) ' "$OUT/rdma-cm.log" | sed 's/^vm0| /       /'
check "-R family in gdrvm0: $(grep -o '[0-9]* passed, [0-9]* failed' "$OUT/rdma-cm.log" | tail -n 1) (exit $status)" \
    "$([ $status = 0 ] || grep -A3 'FAIL' "$OUT/rdma-cm.log" | head -n 12)"
took "-R in gdrvm0"
}
if [ "${GDRPERF_SKIP_BENCHES:-0}" = 1 ]; then
    echo "== benches across the link and -R skipped (GDRPERF_SKIP_BENCHES=1)"
else
    benches_across_the_link
fi

# --- 1b. packet loss on the link ------------------------------------------------------------------
if [ "${GDRPERF_SKIP_LOSS:-0}" = 1 ]; then
    echo "== loss skipped (GDRPERF_SKIP_LOSS=1)"
else
    echo "== two VMs, 2% packet loss on the link (scripts/loss-test.sh)"
    scripts/loss-test.sh "$OUT/loss" 2% 100 0 >"$OUT/loss.log" 2>&1
    status=$?
    grep -E '^(ok|FAIL|info) ' "$OUT/loss.log" | sed 's/^/       /'
    check "loss: counters move and --max-nic-errors 0 fails the run (scripts/loss-test.sh exit $status)" \
        "$([ $status = 0 ] || grep -A3 '^FAIL' "$OUT/loss.log" | head -n 12)"
    took "loss"
fi

# --- 1c. a soak with loss switched on mid-run ------------------------------------------------------
if [ "${GDRPERF_SKIP_SOAK_LOSS:-0}" = 1 ]; then
    echo "== soak under loss skipped (GDRPERF_SKIP_SOAK_LOSS=1)"
else
    echo "== two VMs, accept --soak clean and with 2% loss from interval 2 (scripts/soak-loss-test.sh)"
    scripts/soak-loss-test.sh "$OUT/soak-loss" >"$OUT/soak-loss.log" 2>&1
    status=$?
    grep -E '^(ok|FAIL|info) ' "$OUT/soak-loss.log" | sed 's/^/       /'
    check "soak: a clean soak passes; loss marks its intervals, ties them to the counters, fails (exit $status)" \
        "$([ $status = 0 ] || grep -A3 '^FAIL' "$OUT/soak-loss.log" | head -n 12)"
    took "soak under loss"
fi

# --- 2. Slurm inside the VMs ---------------------------------------------------------------------
if [ "${GDRPERF_SKIP_SLURM:-0}" = 1 ]; then
    echo "== Slurm skipped (GDRPERF_SKIP_SLURM=1)"
else
    echo "== a two-node Slurm cluster in the VMs"
    shared=$OUT/slurm
    if ! scripts/softroce/slurm-root.sh >/dev/null; then
        fail "the Debian root for Slurm is built (scripts/softroce/slurm-root.sh)"
    else
        scripts/softroce.sh pair --timeout 1500 -- \
            "scripts/softroce/slurm-vm.sh $shared bash scripts/softroce/two-host-slurm.sh $shared"
        status=$?
        check "the cluster came up and ran the jobs (softroce.sh pair exit $status)" \
            "$([ $status = 0 ] || { echo "exit $status"; tail -n 20 "$shared"/logs-gdrvm0/slurm/*.log 2>/dev/null; })"

        problems=""
        for list in "$shared"/hostnames/*.list; do
            base=${list%.list}
            cmp -s "$base.scontrol" "$base.gdrperf" ||
                problems="$problems $(cat "$list"): scontrol '$(tr '\n' ' ' <"$base.scontrol")' gdrperf '$(tr '\n' ' ' <"$base.gdrperf")';"
        done
        count=$(ls "$shared"/hostnames/*.list 2>/dev/null | wc -l)
        check "$count hostlists expand as scontrol show hostnames expands them" "$problems$([ "$count" -ge 10 ] || echo " only $count lists")"
        check "inside the job, SLURM_JOB_NODELIST expands alike on both nodes" \
            "$(for rank in 0 1; do cmp -s "$shared/hostnames/job.$rank.scontrol" "$shared/hostnames/job.$rank.gdrperf" && grep -qx gdrvm1 "$shared/hostnames/job.$rank.gdrperf" || echo "rank $rank differs or is missing"; done)"

        for run in pairs ring sbatch; do  # (broken is meant to fail: checked below)
            code=$(cat "$shared/$run.status" 2>/dev/null || echo none)
            check "$run: exits 0" "$([ "$code" = 0 ] || { echo "exit $code"; tail -n 12 "$shared/$run.log" "$shared/sbatch.job.log" 2>/dev/null; })"
        done
        # pairs: one pair (gdrvm0 serves gdrvm1), one row; ring with two tasks per node: both
        # directions x two local tasks = four pairs, one row each.
        check "pairs: one row for the one pair" "$(check_rows pairs "$shared/pairs/results.csv" 1)"
        check "pairs: the summary passes and names no node" \
            "$(grep -q '^FAILING NODES: none' "$shared/pairs/summary.txt" 2>/dev/null && grep -q '1 pairs: 1 passed, 0 failed' "$shared/pairs/summary.txt" || cat "$shared/pairs/summary.txt" 2>&1)"
        check "pairs: rank 0 judged the rows as a fleet and says what two nodes cannot tell" \
            "$(grep -q '^  cannot tell: 2 node(s): every row joins the same two ends' "$shared/pairs/fleet.txt" 2>/dev/null &&
               grep -q '^NAMED: ' "$shared/pairs/fleet.txt" && grep -q '"cannot_tell"' "$shared/pairs/fleet.json" ||
               cat "$shared/pairs/fleet.txt" "$shared/pairs.log" 2>&1 | tail -n 12)"
        check "ring: four pairs (two rounds x two tasks per node), four rows" \
            "$(python3 - "$shared/ring/results.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(line for line in open(sys.argv[1]) if not line.startswith('#')))
pairs = sorted((r["server_node"], r["client_node"], r["host"], r["peer_host"], r["validation"]) for r in rows)
want = sorted([("gdrvm0", "gdrvm1", "gdrvm1", "gdrvm0", "pass")] * 2 + [("gdrvm1", "gdrvm0", "gdrvm0", "gdrvm1", "pass")] * 2)
ports = {r["server_rank"] + "-" + r["client_rank"] for r in rows}
print("" if pairs == want and len(ports) == 4 else f"rows {pairs}, pairs {sorted(ports)}")
EOF
)"
        check "broken: a missing device fails the run (exit 1), names both nodes and the reason" \
            "$(code=$(cat "$shared/broken.status" 2>/dev/null); [ "$code" = 1 ] || echo "exit $code"
               grep -q '^FAILING NODES: gdrvm0 gdrvm1$' "$shared/broken/summary.txt" 2>/dev/null || echo "summary: $(cat "$shared/broken/summary.txt" 2>&1)"
               grep -q "RDMA device 'mlx5_9' not found" "$shared/broken/summary.txt" 2>/dev/null || echo "reason not in the summary")"
        check "sbatch example: one row per pair, summary passes" \
            "$(check_rows sbatch "$shared/sbatch/results.csv" 1)$(grep -q '^FAILING NODES: none' "$shared/sbatch/summary.txt" 2>/dev/null || echo ' no passing summary')"
        summary_status=0
        PATH="$REPO/target/release:$PATH" scripts/slurm/summary.sh "$shared/pairs" >"$OUT/summary-script.log" 2>&1 || summary_status=$?
        check "scripts/slurm/summary.sh reads the run on the host" "$([ $summary_status = 0 ] || cat "$OUT/summary-script.log")"

        # What two nodes can tell against an earlier job: the ring as it is (base), with gdrvm1's
        # egress slowed (oneway: gdrvm1 sending), with both VMs' egress slowed (slowed).
        for run in base base-again oneway slowed slowed-again; do
            code=$(cat "$shared/$run.status" 2>/dev/null || echo none)
            check "$run ring: exits 0" "$([ "$code" = 0 ] || { echo "exit $code"; tail -n 12 "$shared/$run.log" 2>/dev/null; })"
        done
        check "netem: tc added and removed the rate on both VMs (4 x exit 0)" \
            "$([ "$(grep -c ': exit 0$' "$shared/netem.log" 2>/dev/null)" = 4 ] || cat "$shared/netem.log" 2>&1)"
        # bw_of "RUN..." SENDER: the median bandwidth of the rows where SENDER was the client.
        bw_of() { python3 -c 'import csv, statistics, sys
rows = [float(r["bw_avg_gbit_s"]) for run in sys.argv[1].split()
        for r in csv.DictReader(l for l in open(sys.argv[3] + "/" + run + "/results.csv") if not l.startswith("#"))
        if r["client_node"] == sys.argv[2]]
print(statistics.median(rows) if rows else "none")' "$1" "$2" "$shared" 2>/dev/null || echo none; }
        base0=$(bw_of "base base-again" gdrvm0) base1=$(bw_of "base base-again" gdrvm1)
        oneway0=$(bw_of oneway gdrvm0) oneway1=$(bw_of oneway gdrvm1)
        echo "info bandwidth sent by gdrvm0 / gdrvm1 (Gb/s): base $base0 / $base1, oneway $oneway0 / $oneway1," \
            "slowed $(bw_of "slowed slowed-again" gdrvm0) / $(bw_of "slowed slowed-again" gdrvm1)"
        # What netem was to make: gdrvm1's sending slowed (under half its base), gdrvm0's kept at
        # least twice the share of its base that gdrvm1 kept. Not "over half of its own": TCG
        # alone moved one sender's rows 0.15 -> 0.06 Gb/s between two base jobs of one boot.
        check "oneway: gdrvm1 sent at under half its base rate, gdrvm0 at over twice gdrvm1's share of its base" \
            "$(python3 -c 'import sys; b0, b1, o0, o1 = map(float, sys.argv[1:])
print("" if o1 < b1 / 2 and o0 / b0 > 2 * o1 / b1 else "not the one-way slowdown netem was to make")' \
                "$base0" "$base1" "$oneway0" "$oneway1" 2>&1)"
        # Each judged against both base jobs read as one (four rows); slowed with its second job.
        for run in oneway slowed; do
            jobs=("$shared/$run/results.csv")
            [ "$run" = slowed ] && jobs+=("$shared/slowed-again/results.csv")
            "$REPO/target/release/gdrperf" fleet judge --base "$shared/base/results.csv" \
                --base "$shared/base-again/results.csv" --json "$shared/$run-judge.json" \
                "${jobs[@]}" >"$shared/$run-judge.txt" 2>&1
            echo $? >"$shared/$run-judge.status"
            sed 's/^/info '"$run"' judge: /' "$shared/$run-judge.txt"
        done
        cannot_tell='^  cannot tell: 2 node(s): every row joins the same two ends'
        check "slowed both ways: two nodes name no part, and against the base the class is slower (exit 1)" \
            "$([ "$(cat "$shared/slowed-judge.status")" = 1 ] && grep -q "$cannot_tell" "$shared/slowed-judge.txt" &&
               grep -q '^class .*: 4 rows, ' "$shared/slowed-judge.txt" && grep -q ', 4 rows then, 4 now, ' "$shared/slowed-judge.txt" &&
               grep -q '^NAMED: none' "$shared/slowed-judge.txt" && grep -q '^  class slower: ' "$shared/slowed-judge.txt" ||
               cat "$shared/slowed-judge.txt")"
        check "one way: two nodes name no part; the judge says it cannot tell which (exit 0 or 1)" \
            "$(code=$(cat "$shared/oneway-judge.status"); { [ "$code" = 0 ] || [ "$code" = 1 ]; } &&
               grep -q "$cannot_tell" "$shared/oneway-judge.txt" && grep -q '^NAMED: none' "$shared/oneway-judge.txt" ||
               cat "$shared/oneway-judge.txt")"
    fi
fi

[ "${GDRPERF_SKIP_SLURM:-0}" = 1 ] || took "Slurm"
echo "== the two-host suite took $SECONDS s"
printf "\nfailed tests:$FAILURES\n" | { [ "$FAILED" -gt 0 ] && cat || true; }
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
