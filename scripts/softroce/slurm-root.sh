#!/usr/bin/env bash
# Build (once) the Debian root that the two-host Soft-RoCE VMs chroot into to run a real Slurm
# cluster: slurmctld, slurmd, srun/scontrol and munge from Debian 12, plus the RDMA userland the
# gdrperf binaries need (libibverbs + the rxe provider).
#
#   scripts/softroce/slurm-root.sh        # prints the root's path; builds it if missing or stale
#
# The root lives in $REPO/.cache/slurm-root (git-ignored) and is shared by both VMs over 9p;
# each VM mounts tmpfs over the directories a daemon writes (/run, /var/spool, /var/log, ...),
# so the shared tree stays read-mostly. Needs root (debootstrap) and the Debian mirror.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
ROOT="$REPO/.cache/slurm-root"
SUITE=bookworm
PACKAGES="slurmd,slurmctld,slurm-client,munge,libibverbs1,ibverbs-providers,iproute2,procps"
KEY=$(echo "$SUITE $PACKAGES" | sha256sum | cut -c1-16)

say() { echo "slurm-root: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "$(cat "$ROOT.key" 2>/dev/null)" = "$KEY" ] && [ -x "$ROOT/usr/sbin/slurmd-wlm" ]; then
    echo "$ROOT"; exit 0
fi
command -v debootstrap >/dev/null || {
    say "installing debootstrap (apt-get)"
    as_root apt-get install -y -q --no-install-recommends debootstrap >&2
}
# The mirror this machine's apt already uses (it may be a local proxy or snapshot).
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
# deb822 sources first, then a classic sources.list.
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$MIRROR" ] || { say "no Debian mirror found in this machine's apt sources: set MIRROR=URL"; exit 1; }
say "debootstrap $SUITE into $ROOT (once; a few minutes)"
as_root rm -rf "$ROOT.partial" "$ROOT" "$ROOT.key"
as_root debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT.partial" "$MIRROR" >"$REPO/.cache/slurm-root.log" 2>&1 ||
    { say "debootstrap failed, see $REPO/.cache/slurm-root.log"; exit 1; }
# One munge key for the whole (two-node) cluster: both VMs read this same file.
as_root dd if=/dev/urandom of="$ROOT.partial/etc/munge/munge.key" bs=1024 count=1 status=none
as_root chmod 400 "$ROOT.partial/etc/munge/munge.key"
as_root chroot "$ROOT.partial" chown munge:munge /etc/munge/munge.key
# Mount points of what each VM supplies itself (its /etc/hosts, tmpfs for state).
as_root touch "$ROOT.partial/etc/hosts"
as_root mkdir -p "$ROOT.partial/var/lib/slurm" "$ROOT.partial/var/spool" "$ROOT.partial$REPO"
as_root rm -rf "$ROOT.partial"/var/cache/apt/archives/*.deb
as_root mv "$ROOT.partial" "$ROOT"
echo "$KEY" >"$ROOT.key"
echo "$ROOT"
