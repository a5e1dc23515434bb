#!/usr/bin/env bash
# A soak with packet loss switched on mid-run, from the host, with
# the release binaries built:
#
#   scripts/soak-loss-test.sh [OUT_DIR]     # default .cache/soak-loss (inside the repository)
#
# Boots the two Soft-RoCE VMs (scripts/softroce.sh pair) and runs the same `gdrperf accept
# --soak` twice across their link (scripts/softroce/soak-loss.sh: gdrvm1 measures with --peer
# gdrvm0, gdrvm0 serves): once clean, once with `tc netem loss 2%` switched on in gdrvm1 once
# interval 1 has ended. Across a link, not in one VM: in loopback Soft-RoCE hands packets to
# itself inside the kernel, past any qdisc, so netem on lo never touches them (measured: lo's
# netem saw 79 packets while three loopback runs moved ~50000 each).
# Checks decisions only, never a bandwidth figure:
#   clean: accept exits 0, soak.json says pass with five intervals and no reason, the rows ran
#          across the link (peer_host gdrvm0);
#   lossy: netem went on after interval 1, accept exits 1 (FAIL, not an error), soak.json says
#          FAIL for the lane and the soak, marks intervals 3 and 4 (the loss on from their start),
#          ties each to the error counters that moved in it by name (rxe's sequence NAKs and
#          resends: rcvd_seq_err, completer_retry_err), and names neither interval 0 nor 1.
# Lists each interval's error counts of both runs. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
REPO=$(pwd -P)
OUT=$(realpath -m -- "${1:-$REPO/.cache/soak-loss}")
case $OUT in "$REPO"/.cache/?*) ;; *) echo "OUT_DIR must be a folder under $REPO/.cache (the VMs see it over 9p; it is removed and made afresh)" >&2; exit 2 ;; esac
rm -rf "$OUT" && mkdir -p "$OUT"

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
scripts/softroce.sh pair --timeout 900 -- "scripts/softroce/soak-loss.sh $OUT" >"$OUT/pair.log" 2>&1
status=$?
grep -E '^vm[01]\| ' "$OUT/pair.log"
echo "# scripts/soak-loss-test.sh at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates scripts profiles 2>/dev/null || echo +dirty), started $started, host $(uname -srm)"

python3 - "$OUT" "$status" <<'PYTHON'
import json, re, sys
from pathlib import Path

out, pair_status = Path(sys.argv[1]), sys.argv[2]
passed = failed = 0

def check(name, problem):
    global passed, failed
    if problem:
        failed += 1
        print(f"FAIL - {name}\n       {problem}")
    else:
        passed += 1
        print(f"ok   - {name}")

def text(path):
    try:
        return (out / path).read_text().strip()
    except OSError as error:
        return f"(missing: {error.filename})"

def soak(name):
    try:
        return json.loads((out / name / "soak.json").read_text())
    except (OSError, ValueError) as error:
        return {"error": str(error)}

check(f"both VMs ran both soaks (softroce.sh pair exit {pair_status})", None if pair_status == "0" else text("pair.log")[-1500:])
SEQUENCE = re.compile(r"(rcvd_seq_err|completer_retry_err|out_of_seq_request) \+\d+")

for name in ("clean", "lossy"):
    document = soak(name)
    lanes = document.get("lanes") or [{}]
    lane = lanes[0]
    stability = lane.get("stability", {})
    reasons = stability.get("reasons", [])
    intervals = lane.get("intervals", [])
    counts = ", ".join(f"{index}: {interval.get('nic_errors')}" for index, interval in enumerate(intervals))
    print(f"info - {name}: error counts per interval {{{counts}}}; serve exit {text(name + '.serve.status')}")
    crossed = [row.get("peer_host") for row in json.loads((out / name / "write_bw-host-rxe0.json").read_text()).get("results", [])] \
        if (out / name / "write_bw-host-rxe0.json").exists() else ["(no row file)"]
    check(f"{name}: the row ran across the link (peer_host gdrvm0)", None if crossed == ["gdrvm0"] else f"peer_host {crossed}")
    check(f"{name}: five intervals measured", None if len(intervals) == 5 and all(i.get("bandwidth_gbps") for i in intervals) else f"{document.get('error') or intervals}")
    client_status = text(name + ".client.status")
    if name == "clean":
        check("clean: accept --soak exits 0", None if client_status == "0" else f"exit {client_status}: {text('clean.client.log')[-800:]}")
        check("clean: soak.json says pass and gives no reason", None if document.get("stability") == "pass" and stability.get("verdict") == "pass" and not reasons
              else f"stability {document.get('stability')}, lane {stability.get('verdict')}, reasons {reasons}")
        continue
    netem = text("netem.log")
    check("lossy: netem loss 2% went on in gdrvm1 after interval 1", None if re.search(r"netem loss 2%: exit 0 after the line: +write_bw-host-rxe0 interval 1: ", netem) else netem)
    check("lossy: accept --soak exits 1 (a failed verdict, not an error)", None if client_status == "1" else f"exit {client_status}: {text('lossy.client.log')[-800:]}")
    check("lossy: soak.json says fail for the lane and the soak", None if document.get("stability") == "fail" and stability.get("verdict") == "fail"
          else f"stability {document.get('stability')}, lane {stability.get('verdict')}")
    marked = stability.get("marked", [])
    for index in (3, 4):
        check(f"lossy: interval {index} (the loss on from its start) is marked", None if index in marked else f"marked {marked}")
        tie = [reason for reason in reasons if reason.startswith(f"interval {index} (at ") and "NIC error counters moved by" in reason and SEQUENCE.search(reason)]
        counters = (intervals[index].get("nic_error_counters") or {}) if len(intervals) > index else {}
        named = [counter for counter in counters if SEQUENCE.search(f"{counter} +1")]
        check(f"lossy: interval {index} is tied to the counters that moved in it ({tie[0].split(': ', 2)[-1] if tie else 'none'})",
              None if tie and named else f"reasons {reasons}; counters {counters}")
    early = [reason for reason in reasons if re.match(r"interval [01] ", reason)]
    check("lossy: the intervals before the loss (0, 1) are named in no reason", None if not early else f"{early}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PYTHON
