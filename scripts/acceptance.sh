#!/usr/bin/env bash
# Does this node pass? Runs `gdrperf accept` from this checkout, results in the repository's
# layout (results/<machine-label>/acceptance-<date>/):
#
#   scripts/acceptance.sh --profile ndr-400g              # built-in: gdrperf accept --help lists them
#   scripts/acceptance.sh --profile ./my-cluster.toml --mem host,cuda
#   MACHINE_LABEL=dgx-07 scripts/acceptance.sh --profile ndr-400g
#   scripts/acceptance.sh --profile hdr-200g --dry-run    # print the plan only
#
# For every GPU and the NIC `gdrperf doctor` pairs it with: loopback write bandwidth and read
# latency in host, cuda and cuda-staged memory, held against the profile's thresholds (each
# value's source is in profiles/*.toml). Prints a table and writes summary.csv, summary.json and
# every bench's result files. A node without a GPU gets SKIP rows for the GPU modes.
# Exit status: 0 all rows pass (or skip), 1 a row missed its threshold, 2 a row could not be
# measured (bench missing or failing, no NIC) or bad arguments. Build first:
#   cargo build --release --workspace
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

if [ -x "$REPO/target/release/gdrperf" ]; then
    GDRPERF="$REPO/target/release/gdrperf"   # the gdr-* benches are found beside it
elif command -v gdrperf >/dev/null; then
    GDRPERF=$(command -v gdrperf)
else
    echo "acceptance.sh: no gdrperf binary: run 'cargo build --release --workspace' in $REPO first" >&2
    exit 2
fi

# Results go into the repository's layout unless --out is given (or only a plan is asked for).
args=("$@")
case " $* " in
    *" --out "* | *" --out="* | *" --dry-run "* | *" -h "* | *" --help "*) ;;
    *)
        label=${MACHINE_LABEL:-$(hostname -s)}
        args+=(--out "$REPO/results/$label/acceptance-$(date -u +%Y-%m-%dT%H%M%SZ)")
        ;;
esac
exec "$GDRPERF" accept "${args[@]}"
