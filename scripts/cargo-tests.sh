#!/usr/bin/env bash
# The workspace's unit and integration tests, built by cargo and run side by side:
#   scripts/cargo-tests.sh [JOBS]        (default 3 test binaries at a time)
# Run by scripts/test.sh with its release-profile settings in the environment; the same
# settings must be in force here, or cargo builds everything a second time.
#
# Why not `cargo test`: it runs its 65 test binaries one after another, and several of them
# mostly wait (gdrperf-cli's slurm tests: 37 s of wall time for 2 s of CPU, ranks polling their
# round files; the simulated NIC's paced transfers), so a 2-core machine sat half idle for a
# good part of the tests' 165 s (results/build-vm/test-time.md). cargo-nextest does this, but CI
# would have to compile it first (minutes, more than it saves) or fetch a binary from outside
# the Debian and crates.io mirrors. Each binary runs as cargo runs it: from its package's
# folder, with its own test threads; doc tests run after, through cargo.
#
# The tests' temporary files (fixture sysfs trees of about 1 300 files each, the Slurm tests'
# round files, CSVs) go to a folder in /dev/shm where it is a tmpfs: on the 2-core machine's disk
# creating a file took about 0.7 ms, and gdrperf-ceiling's findings test took 21 s there against
# 0.9 s on tmpfs (results/build-vm/test-time.md). TMPDIR is honoured by the tempfile crate.
#
# Prints one line per test binary (ok/FAIL, its package and target, cargo's "test result" line,
# seconds), then the whole log of each one that failed. Exit status 1 if any failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${1:-3}
command -v jq >/dev/null || { echo "cargo-tests: jq is missing (apt-get install jq)" >&2; exit 2; }
logs=$(mktemp -d /tmp/gdrperf-cargo-tests.XXXXXX)
scratch=""
trap 'rm -rf "$logs" ${scratch:+"$scratch"}' EXIT
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
    scratch=$(mktemp -d /dev/shm/gdrperf-cargo-tests.XXXXXX)
    export TMPDIR=$scratch
fi

# The test binaries cargo built: executable, package folder, target name and kind, one a line.
cargo test --release --workspace --no-run --quiet --message-format=json-render-diagnostics |
    jq -r 'select(.reason == "compiler-artifact" and .profile.test and .executable != null)
           | [.executable, (.manifest_path | sub("/Cargo.toml$"; "")), .target.name,
              (.target.kind | join(","))] | @tsv' >"$logs/binaries.tsv"
count=$(wc -l <"$logs/binaries.tsv")
[ "$count" -gt 0 ] || { echo "cargo-tests: cargo built no test binary" >&2; exit 1; }

# run_one LINE: one test binary from its package's folder; its output to a log, one line out.
run_one() {
    local executable folder target kind log started outcome result
    IFS=$'\t' read -r executable folder target kind <<<"$1"
    log=$logs/$(basename "$executable").log
    started=$SECONDS
    if (cd "$folder" && "$executable" -q) >"$log" 2>&1; then
        outcome=ok
    else
        outcome=FAIL
        echo "$log" >>"$logs/failed"
    fi
    result=$(grep -E '^test result' "$log" | tail -1)
    echo "$outcome $(basename "$folder") $target ($kind): ${result:-no result line} [$((SECONDS - started)) s]"
}
export -f run_one
export logs
xargs -d '\n' -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} <"$logs/binaries.tsv"

if [ -s "$logs/failed" ]; then
    while read -r log; do
        echo "---- $(basename "$log" .log) ----"
        cat "$log"
    done <"$logs/failed"
    echo "cargo-tests: $(wc -l <"$logs/failed") of $count test binaries failed" >&2
    exit 1
fi
echo "cargo-tests: $count test binaries passed"
cargo test --release --workspace --doc --quiet 2>&1
