# Sourced by scripts/demo.sh and scripts/test.sh: installs what building gdrperf needs on a
# Debian 12 machine (Ubuntu untested), only what is missing (cmake, clang: sideway builds rdma-core's headers
# and runs bindgen; libibverbs1 so that the binaries reach the verbs layer and say "no RDMA
# device" rather than a missing library; python3 for the plot scripts).
#   ensure_build_packages            what `cargo build` needs
#   ensure_build_packages lints      also rustfmt and clippy (test.sh's checks), jq, promtool, dpkg-dev,
#                                    qemu-system-x86 and debootstrap

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_build_packages() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v clang >/dev/null || missing+=(clang)
    ldconfig -p | grep -q 'libclang[-.0-9]*\.so' || missing+=(libclang-dev)
    command -v cc >/dev/null || missing+=(build-essential)
    command -v python3 >/dev/null || missing+=(python3)
    # jq: scripts/perftest-dropin-tests.sh reads the --out_json files as field scripts do.
    [ "${1:-}" = lints ] && { command -v jq >/dev/null || missing+=(jq); }
    # promtool: scripts/prometheus-tests.sh checks the --prom files as Prometheus would.
    [ "${1:-}" = lints ] && { command -v promtool >/dev/null || missing+=(prometheus); }
    # dpkg-shlibdeps: scripts/package-deb.sh derives the package's Depends with it.
    [ "${1:-}" = lints ] && { command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev); }
    # qemu (scripts/softroce.sh) and debootstrap (scripts/softroce/slurm-root.sh) would each run
    # apt-get themselves; test.sh runs the two side by side, so both are installed here first.
    [ "${1:-}" = lints ] && { command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86); }
    [ "${1:-}" = lints ] && { command -v debootstrap >/dev/null || missing+=(debootstrap); }
    ldconfig -p | grep -q 'libibverbs\.so\.1' || missing+=(libibverbs1 ibverbs-providers)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "$(basename "$0"): installing ${missing[*]}" >&2
        as_root apt-get update -q
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    command -v cargo >/dev/null || { echo "$(basename "$0"): cargo not found: install Rust (https://rustup.rs)" >&2; exit 2; }
    [ "${1:-}" = lints ] || return 0
    for component in rustfmt clippy; do
        local probe=fmt
        [ "$component" = clippy ] && probe=clippy
        if ! cargo "$probe" --version >/dev/null 2>&1; then
            command -v rustup >/dev/null || { echo "$(basename "$0"): cargo $probe missing and no rustup to add $component" >&2; exit 2; }
            echo "$(basename "$0"): adding the $component component" >&2
            rustup component add "$component"
        fi
    done
}
