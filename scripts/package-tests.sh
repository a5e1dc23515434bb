#!/usr/bin/env bash
# The Debian package (scripts/package-deb.sh) installed into a clean Debian 12 root and run
# there, as on a node without Rust: the root is the two-host tests' debootstrap root
# (scripts/softroce/slurm-root.sh: built once into .cache/slurm-root, reused), seen through an
# overlay mount so that the install never changes the cached root (a copy where overlayfs is
# not available). Checked: dpkg installs it (its Depends satisfied by the root's libraries),
# `gdrperf --version`, `gdr-write-bw --help`, `gdrperf doctor`'s documented exit codes (0 on a
# fixture DGX-like tree with --no-cuda, 1 on the same with --strict, 2 for a --sysfs-root
# without sys/), and a purge that leaves no binary behind.
#
#   scripts/package-tests.sh [BINARY_FOLDER]     (default target/release; needs root)
#
# Run by scripts/test.sh after the release build (binaries and examples: the fixture tree comes
# from gdrperf-doctor-fixtures' write_fixture example). A few seconds once the root is cached.
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${1:-target/release}
PASSED=0; FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; shift; for line in "$@"; do echo "       $line"; done; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
[ -x "$BIN/examples/write_fixture" ] || { echo "package-tests: $BIN/examples/write_fixture is not built (cargo build --release --workspace --bins --examples)" >&2; exit 1; }

SCRATCH=$(mktemp -d /tmp/gdrperf-package-tests.XXXXXX)
MOUNTED=""
cleanup() {
    [ -n "$MOUNTED" ] && as_root umount "$MOUNTED"
    as_root rm -rf "$SCRATCH"
}
trap cleanup EXIT

DEB=$(scripts/package-deb.sh "$BIN" "$SCRATCH") || { echo "package-tests: scripts/package-deb.sh failed" >&2; exit 1; }
pass "package built: $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"
CLEAN=$(scripts/softroce/slurm-root.sh) || { echo "package-tests: no Debian root (scripts/softroce/slurm-root.sh)" >&2; exit 1; }

ROOT=$SCRATCH/root
mkdir -p "$ROOT" "$SCRATCH/upper" "$SCRATCH/work"
if as_root mount -t overlay overlay -o "lowerdir=$CLEAN,upperdir=$SCRATCH/upper,workdir=$SCRATCH/work" "$ROOT" 2>/dev/null; then
    MOUNTED=$ROOT
else
    echo "package-tests: no overlayfs here: copying the root" >&2
    as_root cp -a "$CLEAN/." "$ROOT/"
fi
# in_root CMD...: CMD in the root, with a node's plain environment (no cargo, no repository).
in_root() { as_root chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

if in_root sh -c 'command -v gdrperf || command -v cargo || command -v rustc'; then
    fail "the root has no gdrperf and no Rust before the install"
else
    pass "the root has no gdrperf and no Rust before the install"
fi
cp "$DEB" "$ROOT/tmp/gdrperf.deb"
if out=$(in_root dpkg -i /tmp/gdrperf.deb 2>&1); then pass "dpkg -i: installed, dependencies met"; else fail "dpkg -i" "$out"; fi
# The binaries expected: gdrperf and one per bench source, the list package-deb.sh installs from.
expected=(gdrperf)
for source in benches/src/bin/*.rs; do expected+=("$(basename "$source" .rs)"); done
listed=$(in_root dpkg -L gdrperf 2>&1 | grep '^/usr/bin/gdr' | sed 's|^/usr/bin/||' | sort | tr '\n' ' ')
wanted=$(printf '%s\n' "${expected[@]}" | sort | tr '\n' ' ')
[ "$listed" = "$wanted" ] && pass "dpkg -L: gdrperf and $(( ${#expected[@]} - 1 )) bench binaries in /usr/bin" \
    || fail "dpkg -L: the binaries in /usr/bin are $wanted" "$listed"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
out=$(in_root gdrperf --version 2>&1) && case $out in *"$version"*) true ;; *) false ;; esac \
    && pass "gdrperf --version: $out" || fail "gdrperf --version names $version" "$out"
out=$(in_root gdr-write-bw --help 2>&1) && case $out in *Usage:*--prom*) true ;; *) false ;; esac \
    && pass "gdr-write-bw --help" || fail "gdr-write-bw --help" "$(printf '%s\n' "$out" | tail -3)"

# gdrperf doctor's exit codes (gdrperf doctor --help): a fixture node's tree written into the root.
"$BIN/examples/write_fixture" dgx-h100 "$SCRATCH/fixture" >/dev/null 2>&1 && as_root cp -a "$SCRATCH/fixture" "$ROOT/tmp/dgx" \
    || fail "fixture tree written"
doctor() {  # EXPECTED WHAT ARGUMENTS...
    local expected=$1 what=$2; shift 2
    out=$(in_root gdrperf doctor "$@" 2>&1); code=$?
    [ "$code" = "$expected" ] && pass "gdrperf doctor $*: exit $expected ($what)" \
        || fail "gdrperf doctor $*: exit $expected ($what)" "exit $code" "$(printf '%s\n' "$out" | tail -3)"
}
doctor 0 "no FAIL on a DGX-like tree" --no-cuda --sysfs-root /tmp/dgx
doctor 1 "its WARN (CUDA not asked) counts with --strict" --no-cuda --strict --sysfs-root /tmp/dgx
doctor 2 "nothing to examine" --sysfs-root /tmp/nothing-here

if out=$(in_root dpkg --purge gdrperf 2>&1) && ! in_root sh -c 'ls /usr/bin/gdr* /usr/share/gdrperf' >/dev/null 2>&1; then
    pass "dpkg --purge leaves no binary or profile"
else
    fail "dpkg --purge leaves no binary or profile" "$out"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
