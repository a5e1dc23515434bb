#!/usr/bin/env bash
# Builds gdrperf's Debian package from release binaries already built, for nodes without Rust:
#
#   cargo build --release --workspace --bins
#   scripts/package-deb.sh [BINARY_FOLDER] [OUT_FOLDER]    # prints the .deb's path
#
# The package `gdrperf` holds /usr/bin/gdrperf and every bench binary (one per file of
# benches/src/bin/), the acceptance profiles (also built into gdrperf) under
# /usr/share/gdrperf/profiles, and the README and license under /usr/share/doc/gdrperf. Its
# Depends come from dpkg-shlibdeps (dpkg-dev) over the binaries; libibverbs and the user-space
# providers are Recommends: the binaries load libibverbs when they open a device, and say "no
# RDMA device" without it. Built with dpkg-deb alone (no cargo-deb: nothing to compile or
# download), owner root. BINARY_FOLDER defaults to target/release, OUT_FOLDER to target/debian.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${1:-target/release}
OUT=${2:-target/debian}
say() { echo "package-deb: $*" >&2; }

VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$VERSION" ] || { say "no [workspace.package] version in Cargo.toml"; exit 1; }
ARCH=$(dpkg --print-architecture)
BINARIES=(gdrperf)
for source in benches/src/bin/*.rs; do BINARIES+=("$(basename "$source" .rs)"); done
for binary in "${BINARIES[@]}"; do
    [ -x "$BIN/$binary" ] || { say "$BIN/$binary is not built (cargo build --release --workspace --bins)"; exit 1; }
done
command -v dpkg-shlibdeps >/dev/null || { say "dpkg-shlibdeps is missing (apt-get install dpkg-dev)"; exit 1; }

STAGE=$(mktemp -d /tmp/gdrperf-deb.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/gdrperf_${VERSION}_$ARCH
install -d -m 0755 "$ROOT/DEBIAN" "$ROOT/usr/bin" "$ROOT/usr/share/doc/gdrperf" "$ROOT/usr/share/gdrperf/profiles"
for binary in "${BINARIES[@]}"; do
    install -m 0755 "$BIN/$binary" "$ROOT/usr/bin/$binary"
    strip --strip-unneeded "$ROOT/usr/bin/$binary" 2>/dev/null || true
done
install -m 0644 profiles/*.toml "$ROOT/usr/share/gdrperf/profiles/"
install -m 0644 README.md "$ROOT/usr/share/doc/gdrperf/README.md"
cat >"$ROOT/usr/share/doc/gdrperf/copyright" <<TEXT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: gdrperf
License: $(sed -n '/^\[workspace.package\]/,/^\[/s/^license *= *"\(.*\)"/\1/p' Cargo.toml)
TEXT

# dpkg-shlibdeps reads debian/control from the working folder: a minimal one in the stage.
mkdir -p "$STAGE/debian"
printf 'Source: gdrperf\n\nPackage: gdrperf\nArchitecture: any\n' >"$STAGE/debian/control"
DEPENDS=$(cd "$STAGE" && dpkg-shlibdeps -O "${BINARIES[@]/#/$ROOT/usr/bin/}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$DEPENDS" ] || { say "dpkg-shlibdeps found no dependency"; exit 1; }
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
cat >"$ROOT/DEBIAN/control" <<TEXT
Package: gdrperf
Version: $VERSION
Architecture: $ARCH
Maintainer: gdrperf developers <gdrperf@localhost>
Installed-Size: $SIZE
Depends: $DEPENDS
Recommends: libibverbs1, ibverbs-providers
Section: net
Priority: optional
Description: GPUDirect RDMA benchmarks, perftest-style
 gdr-write-bw, gdr-read-bw, gdr-send-bw, gdr-write-lat, gdr-read-lat, gdr-send-lat and
 gdr-atomic-lat measure RDMA bandwidth and latency between host or GPU memories (GPUDirect
 RDMA, or staged through host memory) with perftest's flags; gdrperf doctor says whether a node
 can do GPUDirect RDMA, gdrperf accept holds every GPU and NIC against an acceptance profile.
 CUDA is loaded at run time when present.
TEXT
mkdir -p "$OUT"
DEB=$OUT/gdrperf_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zgzip --build "$ROOT" "$DEB.partial" >/dev/null
mv "$DEB.partial" "$DEB"
say "built $DEB (Depends: $DEPENDS)"
echo "$DEB"
