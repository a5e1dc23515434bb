#!/bin/sh
# Two lanes on one GPU, each with a NIC of its own, over the simulated NIC (issue 43 item 2):
# gdr-write-bw and gdr-send-bw with --concurrent -d simulated0,simulated1 --gpu 0,0 on GPU memory
# (cuda) and staged GPU memory (cuda-staged), each checked (--validate) and written to a CSV.
#
# Usage: lanes-run.sh BIN_DIR OUT_DIR
#   BIN_DIR  the folder of the bench binaries (the lead's .gpu/bin: stripped release builds)
#   OUT_DIR  where the CSVs and card.txt go (created; files of an earlier run are overwritten)
# Settings (environment):
#   LANES_MEMORY  the memory kinds to run, in turn (default "cuda cuda-staged"); "host" runs the
#                 same steps on host memory without --gpu (the script's own check, on a machine
#                 without a GPU)
#   LANES_SIZES   the size flags (default "-a": the whole sweep, 2 B to 8 MiB)
#
# Prints each command before it runs and its exit status after; exits 1 if any step failed.
# gdr-send-bw refuses --validate on GPU memory (its check ring is host memory): its cuda step runs
# unchecked, as in results/h100/simulated-nic-gpu/; its cuda-staged and host steps are checked.
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 BIN_DIR OUT_DIR (LANES_MEMORY=\"cuda cuda-staged\" LANES_SIZES=-a)" >&2
    exit 2
fi
bin=$1
out=$2
memory=${LANES_MEMORY:-cuda cuda-staged}
sizes=${LANES_SIZES:--a}
for binary in gdr-write-bw gdr-send-bw; do
    if [ ! -x "$bin/$binary" ]; then
        echo "$0: $bin/$binary is missing or not executable" >&2
        exit 2
    fi
done
for kind in $memory; do
    case $kind in
        host | cuda | cuda-staged) ;;
        *)
            echo "$0: LANES_MEMORY lists '$kind': give cuda, cuda-staged or host" >&2
            exit 2
            ;;
    esac
done
mkdir -p "$out" || exit 2
export GDRPERF_SIMULATED_NIC=rate=100

if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,pci.bus_id,uuid,driver_version --format=csv | tee "$out/card.txt"
fi
date -u +%FT%TZ | tee "$out/date.txt"

failed=0
step() {
    echo
    echo "### $*"
    "$@"
    status=$?
    echo "### exit $status"
    [ "$status" -eq 0 ] || failed=$((failed + 1))
}

for kind in $memory; do
    gpu="--gpu 0,0"
    [ "$kind" = host ] && gpu=
    # $gpu and $sizes are word lists on purpose (empty, or a flag and its value).
    # shellcheck disable=SC2086
    step "$bin/gdr-write-bw" --loopback --concurrent -d simulated0,simulated1 --mem "$kind" $gpu \
        $sizes --validate --csv "$out/lanes-$kind-write-bw.csv"
    check=--validate
    [ "$kind" = cuda ] && check=
    # shellcheck disable=SC2086
    step "$bin/gdr-send-bw" --loopback --concurrent -d simulated0,simulated1 --mem "$kind" $gpu \
        $sizes $check --csv "$out/lanes-$kind-send-bw.csv"
done

echo
echo "### $failed step(s) failed"
[ "$failed" -eq 0 ]
