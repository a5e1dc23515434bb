#!/usr/bin/env bash
# All of gdrperf's tests, from a fresh clone on a Debian 12 machine (Ubuntu is untested):
#   ./scripts/test.sh
# 1. installs the build's system packages if missing (scripts/lib/build-packages.sh, shared with
#    demo.sh), 2. checks formatting (`cargo fmt --check`)
#    and lints (`cargo clippy --all-targets -D warnings`, `cargo doc` with warnings as errors:
#    broken doc links) and the layering rules (scripts/module-graph.py --strict --layers
#    scripts/layers.toml: no import cycle, no arrow back up, each crate and each folder of the
#    core crate using only lower layers; after the script's own tests), then
#    runs the unit and integration tests (`cargo test --release` built, scripts/cargo-tests.sh
#    running the test binaries three at a time: one build for tests and VM),
# 3. builds the release binaries, checks the --prom files with promtool and the Debian package in a
#    clean Debian root (scripts/package-tests.sh: needs root and, once, the Debian mirror), and
#    runs the integration tests that need an RDMA device inside
#    a Soft-RoCE VM (scripts/softroce.sh installs QEMU itself; nothing else is installed).
# No RDMA NIC or GPU is needed. Exit status is non-zero if anything failed.
# GDRPERF_SKIP_VM=1 skips the VM tests of step 3 (for a quick loop while editing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# phase NAME: closes the phase under way with a line of how long it took (bash's SECONDS), then
# names the next, so that CI's log shows where test.sh's time goes (results/build-vm/test-time.md).
phase_name="" phase_started=$SECONDS
phase() {
    [ -z "$phase_name" ] || echo "== took $((SECONDS - phase_started)) s ($SECONDS s so far): $phase_name"
    phase_name=$1 phase_started=$SECONDS
    [ -z "$1" ] || echo "== $1"
}
# Also when a step fails (set -e ends the script): the failed phase's time and the total.
trap 'phase ""; echo "== test.sh took $SECONDS s"' EXIT

. scripts/lib/build-packages.sh
ensure_build_packages lints
phase "cargo fmt --check (rustfmt.toml), cargo clippy -D warnings ([workspace.lints]), cargo doc -D warnings"
cargo fmt --all --check || { echo "test.sh: formatting differs: run 'cargo fmt --all'" >&2; exit 1; }
rustfmt --edition 2021 --config-path rustfmt.toml --check fuzz/fuzz_targets/*.rs \
    || { echo "test.sh: fuzz targets need formatting: rustfmt --config-path rustfmt.toml fuzz/fuzz_targets/*.rs" >&2; exit 1; }
cargo clippy --workspace --all-targets --quiet -- -D warnings 2>&1
# The library is read as a tutorial: its doc links must resolve.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet 2>&1
phase "layering (scripts/module-graph.py): no import cycle, no arrow back up, crates and the core crate's folders in the layers scripts/layers.toml declares"
graph_tests=$(python3 scripts/module-graph-tests.py 2>&1) || { printf '%s\n' "$graph_tests" >&2; exit 1; }
echo "scripts/module-graph-tests.py: $(printf '%s\n' "$graph_tests" | grep -E '^Ran ') OK"
layering=$(python3 scripts/module-graph.py --strict --layers scripts/layers.toml 2>&1) ||
    { printf '%s\n' "$layering" | grep -E 'FAIL|cycle|loop:|back up' >&2; exit 1; }
# One build for the tests and the VM: the release profile without its fat LTO and single codegen
# unit (Cargo.toml says why it has them: latency loops under TCG), which cost minutes of a 2-core
# machine's link time and change no decision a test makes (the VM tests check exit statuses,
# messages and rows, never a speed), and with the dev profile's debug assertions and overflow
# checks, so the unit tests check what they check in a debug build. Dependencies compile once,
# not once for `cargo test` and again for the VM's binaries. Measured, this is no faster than a
# debug `cargo test` plus a release build (536 s against 526 s: results/build-vm/test-time.md), the
# tests over the simulated NIC being bound by its rate and their processes; it leaves one set of
# binaries, the ones the VM runs. Same code, same paths (target/release).
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
phase "cargo test --release (unit and integration tests, no device needed; the build the VM uses), three test binaries at a time"
# scripts/cargo-tests.sh builds them with `cargo test --no-run` and runs them side by side, their
# temporary files on tmpfs (it says why: they wait on polls and on file creation, not the CPU).
scripts/cargo-tests.sh
phase "cargo build --release (binaries and examples for the VM: built by the tests already)"
# cargo test built every bench binary (the integration tests run them) and every example (cargo
# test checks examples compile); this links what is left, if anything, with the same settings.
cargo build --release --workspace --bins --examples --quiet 2>&1
# The checks that need no VM: plot scripts (matplotlib from PyPI into .cache/plot-venv), the
# README's recipes, perftest's parsers (awk, jq) over both tools' logs and --out_json files, the
# --prom files through promtool, and the .deb installed and run in a clean Debian 12 root (the
# two-host tests' debootstrap root, built once and cached). They took about 100 s of an idle
# machine, much of it downloads, debootstrap and Python's start-up, so, unless the VM tests are
# skipped, they run beside the one-VM suite (niced below the VM) and their output is printed
# when it ends (results/build-vm/test-time.md). Every apt-get install they and the VM scripts
# would make was made above (ensure_build_packages), so no two of them wait on the dpkg lock.
host_checks() {
    set -e
    echo "-- plot scripts on the committed example results"
    scripts/plot-tests.sh
    echo "-- the README's recipes on the committed example files"
    scripts/readme-recipes.sh target/release
    echo "-- perftest's parsers over both tools' committed logs and --out_json files"
    scripts/perftest-dropin-tests.sh
    echo "-- --prom files (benches and accept over the simulated NIC) through promtool check metrics"
    scripts/prometheus-tests.sh target/release
    echo "-- the Debian package (scripts/package-deb.sh) installed and run in a clean Debian 12 root"
    scripts/package-tests.sh target/release
    echo "-- host checks took $SECONDS s"
}

if [ "${GDRPERF_SKIP_VM:-0}" = 1 ]; then
    phase "plot scripts, README recipes, perftest parsers, promtool, the Debian package"
    (SECONDS=0 && host_checks)
    echo "== VM tests skipped (GDRPERF_SKIP_VM=1)"
    exit 0
fi
host_log=$(mktemp /tmp/gdrperf-host-checks.XXXXXX)
nice -n 10 bash -c "$(declare -f host_checks); host_checks" >"$host_log" 2>&1 &
host_pid=$!
trap 'kill "$host_pid" 2>/dev/null || true; phase ""; echo "== test.sh took $SECONDS s"' EXIT
phase "integration tests over Soft-RoCE (QEMU VM); beside it, the checks that need no VM"
vm_status=0
scripts/softroce.sh run --timeout 1500 -- scripts/vm-tests.sh || vm_status=$?
host_status=0
wait "$host_pid" || host_status=$?
echo "== the checks beside the VM suite: plot scripts, README recipes, perftest parsers, promtool, the Debian package"
cat "$host_log"
rm -f "$host_log"
[ "$host_status" = 0 ] || { echo "test.sh: a check beside the VM suite failed (exit $host_status): see above" >&2; exit 1; }
[ "$vm_status" = 0 ] || { echo "test.sh: the VM suite failed (exit $vm_status)" >&2; exit 1; }
phase "two-host tests over Soft-RoCE (two QEMU VMs on a virtual link; Slurm in them)"
scripts/two-host-tests.sh
