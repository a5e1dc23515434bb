#!/usr/bin/env bash
# All of gdrperf's tests, from a fresh clone of a Debian/Ubuntu machine:
#   ./scripts/test.sh
# 1. installs the build's system packages if missing (cmake, clang: sideway builds rdma-core's
#    headers and runs bindgen; libibverbs1 so that the host tests reach the verbs layer and see
#    "no RDMA device" rather than a missing library), 2. checks formatting (`cargo fmt --check`)
#    and lints (`cargo clippy --all-targets -D warnings`, `cargo doc` with warnings as errors:
#    broken doc links), then runs the unit and integration
#    tests (`cargo test`),
# 3. builds the release binaries and runs the integration tests that need an RDMA device inside
#    a Soft-RoCE VM (scripts/softroce.sh installs QEMU itself; nothing else is installed).
# No RDMA NIC or GPU is needed. Exit status is non-zero if anything failed.
# GDRPERF_SKIP_VM=1 skips step 3 (for a quick loop while editing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_build_packages() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v clang >/dev/null || missing+=(clang)
    ldconfig -p | grep -q 'libclang[-.0-9]*\.so' || missing+=(libclang-dev)
    command -v cc >/dev/null || missing+=(build-essential)
    command -v python3 >/dev/null || missing+=(python3)
    ldconfig -p | grep -q 'libibverbs\.so\.1' || missing+=(libibverbs1 ibverbs-providers)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "test.sh: installing ${missing[*]}" >&2
        as_root apt-get update -q
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    command -v cargo >/dev/null || { echo "test.sh: cargo not found: install Rust (https://rustup.rs)" >&2; exit 2; }
    for component in rustfmt clippy; do
        local probe=fmt
        [ "$component" = clippy ] && probe=clippy
        if ! cargo "$probe" --version >/dev/null 2>&1; then
            command -v rustup >/dev/null || { echo "test.sh: cargo $probe missing and no rustup to add $component" >&2; exit 2; }
            echo "test.sh: adding the $component component" >&2
            rustup component add "$component"
        fi
    done
}

ensure_build_packages
echo "== cargo fmt --check (rustfmt.toml), cargo clippy -D warnings ([workspace.lints]), cargo doc -D warnings"
cargo fmt --all --check || { echo "test.sh: formatting differs: run 'cargo fmt --all'" >&2; exit 1; }
rustfmt --edition 2021 --config-path rustfmt.toml --check fuzz/fuzz_targets/*.rs \
    || { echo "test.sh: fuzz targets need formatting: rustfmt --config-path rustfmt.toml fuzz/fuzz_targets/*.rs" >&2; exit 1; }
cargo clippy --workspace --all-targets --quiet -- -D warnings 2>&1
# The library is read as a tutorial: its doc links must resolve.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet 2>&1
echo "== cargo test (unit and integration tests, no device needed)"
cargo test --workspace --quiet 2>&1
echo "== cargo build --release (binaries and examples for the VM)"
cargo build --release --workspace --bins --examples --quiet 2>&1
# The VM's completion-error test provokes bad rkeys and dead peers through the verbs layer directly.
cargo test --release -p gdrperf --test completion_errors --no-run --quiet 2>&1
echo "== plot scripts on the committed example results (matplotlib from PyPI into .cache/plot-venv)"
scripts/plot-tests.sh

if [ "${GDRPERF_SKIP_VM:-0}" = 1 ]; then
    echo "== VM tests skipped (GDRPERF_SKIP_VM=1)"
    exit 0
fi
echo "== integration tests over Soft-RoCE (QEMU VM)"
scripts/softroce.sh run --timeout 1500 -- scripts/vm-tests.sh
echo "== two-host tests over Soft-RoCE (two QEMU VMs on a virtual link; Slurm in them)" && scripts/two-host-tests.sh
