#!/usr/bin/env bash
# Boot a throw-away QEMU VM with Soft-RoCE (rdma_rxe as `rxe0` on `lo`) and run a
# command in it, so RDMA code can be exercised on machines with no RDMA NIC.
#
#   scripts/softroce.sh run [--timeout SECS] [--mem MB] -- 'CMD'
#   scripts/softroce.sh pair [--timeout SECS] [--mem MB] -- 'CMD0' ['CMD1']
#   scripts/softroce.sh prepare          # only build the cached kernel + initramfs
#   scripts/softroce.sh shell [--mem MB] # interactive busybox shell (Ctrl-A x quits)
#
# Inside the VM: the repository is mounted read-write at the same absolute path
# (9p), cwd is the repository root, PATH starts with /opt/gdrperf/bin (copies of
# $REPO/target/release/gdr*, built by the caller beforehand, in the VM's memory), then
# $REPO/target/release, and holds Debian's perftest, ibverbs-utils, `rdma` and `tc`
# (with sch_netem loaded, for packet loss on the link);
# GDRPERF_SOFTROCE=1. CMD runs under busybox sh; its stdout and stderr come out on
# this script's stdout and its exit status becomes ours.
# Exit status: CMD's; 124 on timeout (default 900 s); 125 on any set-up failure.
#
# `pair` boots two VMs, each with its own kernel and its own virtio NIC, joined by one virtual
# Ethernet link; rxe0 is bound to that NIC (not to lo), so GIDs come from a real interface
# address, the out-of-band exchange crosses a network and RoCE v2 packets cross a link. VM 0
# runs CMD0, VM 1 runs CMD1 (default: CMD0 again), with GDRPERF_VM_INDEX (0/1), GDRPERF_VM_HOST,
# GDRPERF_VM_IP, GDRPERF_PEER_HOST and GDRPERF_PEER_IP set; both resolve each other's names.
# Their output comes out prefixed "vm0| " and "vm1| "; the exit status is VM 0's if non-zero,
# else VM 1's (124/125 as above if either VM timed out or failed to start).
# Addresses: the link is a QEMU UDP socket netdev between two ports of 127.0.0.1, so the host
# only ever carries loopback datagrams; the guests use 192.0.2.10 and 192.0.2.11 from
# 192.0.2.0/24 (TEST-NET-1, RFC 5737: reserved for documentation, routed nowhere). Nothing a
# guest sends can leave this machine.
#
# Only qemu-system-x86 is installed on the host (if missing). The guest's kernel,
# busybox and RDMA userland come from `apt-get download` + `dpkg -x` into
# $REPO/.cache/softroce, which is reused until this script or its inputs change.
# TCG is used on purpose: KVM hangs at boot on the machines this was written for.
set -eEuo pipefail
trap 'echo "softroce: error: set-up step failed: $BASH_COMMAND" >&2; exit 125' ERR

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
HERE="$REPO/scripts/softroce"
CACHE="$REPO/.cache/softroce"
# Guest userland packages. The kernel package is resolved from linux-image-amd64.
# The libraries are listed so that nothing depends on what the host has installed.
PACKAGES="busybox-static perftest ibverbs-utils ibverbs-providers libibverbs1 librdmacm1
  libibumad3 libpci3 libudev1 zlib1g iproute2 libmnl0 libbsd0 libmd0 libcap2
  libnl-3-200 libnl-route-3-200 libbpf1 libelf1 libxtables12"
# Loaded in this order (plus their dependencies). crc32_generic is not a declared
# dependency of rdma_rxe, yet without it rxe fails to "init crc32 algorithm".
# sch_netem lets a test drop packets on the pair's link (`tc qdisc ... netem loss`).
MODULES="crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe rdma_ucm
  virtio_pci virtio_net netfs 9pnet 9pnet_virtio 9p sch_netem"
SET_UP_FAILED=125

say() { echo "softroce: $*" >&2; }
die() { say "error: $*"; exit "$SET_UP_FAILED"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

usage() {
    sed -n '5,8p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2
    exit 2
}

# The two VMs of `pair`: host names and TEST-NET-1 addresses (see the header).
PAIR_HOSTS=(gdrvm0 gdrvm1)
PAIR_ADDRESSES=(192.0.2.10 192.0.2.11)

# QEMU is the one thing installed on the host (CI starts from a bare Debian 12).
ensure_qemu() {
    command -v qemu-system-x86_64 >/dev/null && return
    say "installing qemu-system-x86 (apt-get)"
    { as_root apt-get update -q && as_root apt-get install -y -q --no-install-recommends qemu-system-x86; } \
        >"$CACHE/apt.log" 2>&1 || die "apt-get install qemu-system-x86 failed, see $CACHE/apt.log"
}

# Download the guest's .deb files once; a changed package list downloads again.
download_packages() {
    local key debs="$CACHE/debs"
    key=$(echo $PACKAGES | sha256sum | cut -c1-16)
    [ "$(cat "$debs/.key" 2>/dev/null)" = "$key" ] && return
    rm -rf "$debs" && mkdir -p "$debs"
    # A bare CI image has no package lists yet.
    apt-cache show busybox-static >/dev/null 2>&1 || as_root apt-get update -q >"$CACHE/apt.log" 2>&1 ||
        die "apt-get update failed, see $CACHE/apt.log"
    local kernel
    kernel=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    [ -n "$kernel" ] || die "cannot resolve linux-image-amd64 to a versioned kernel package (apt-cache depends)"
    # Stale package lists name versions the mirror has dropped: update once and retry.
    (cd "$debs" && apt-get download $kernel $PACKAGES) >"$CACHE/apt.log" 2>&1 ||
        { as_root apt-get update -q && (cd "$debs" && apt-get download $kernel $PACKAGES); } >>"$CACHE/apt.log" 2>&1 ||
        die "apt-get download failed, see $CACHE/apt.log"
    echo "$key" >"$debs/.key"
}

# Print the paths of the shared libraries that the given ELF files need,
# resolved against the extracted packages first, then the host (glibc & co).
needed_libraries() {
    local root=$1; shift
    { LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" ldd "$@" 2>/dev/null || true; } |
        awk '/=> not found/ {print "MISSING " $1; next}
             / => \// {print $3; next}
             /^\t\// {print $1}' | sort -u
}

# Host-built binaries that will run in the VM (they are reached through the
# mount, only their libraries must be in the initramfs).
workspace_binaries() {
    local f
    for f in /bin/sh "$REPO"/target/release/gdr*; do
        if [ -f "$f" ] && [ -x "$f" ]; then echo "$f"; fi
    done
}

# Echo the kernel modules to load, dependencies first, as paths relative to
# lib/modules/<version>. Reads `depends=` from each .ko's .modinfo section with
# tr+sed, since kmod's modinfo may not be on the host.
module_load_order() {
    local moddir=$1 path name
    declare -A ko seen
    while read -r path; do
        name=$(basename "$path" .ko); ko[${name//-/_}]=$path
    done < <(cd "$moddir" && find kernel -name '*.ko')
    resolve() {
        local m=${1//-/_} dep
        [ -n "${seen[$m]:-}" ] && return; seen[$m]=1
        if [ -z "${ko[$m]:-}" ]; then
            grep -q "/${m}.ko\$" "$moddir/modules.builtin" && return
            die "kernel module $m is neither in the package nor built in"
        fi
        for dep in $(tr '\0' '\n' <"$moddir/${ko[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do
            resolve "$dep"
        done
        echo "${ko[$m]}"
    }
    for name in $MODULES; do resolve "$name"; done
}

# Assemble vmlinuz + initramfs from the downloaded packages.
build_image() {
    local work=$1 root="$1/root" img="$1/initramfs" lib f
    for f in "$CACHE"/debs/*.deb; do dpkg-deb -x "$f" "$root"; done
    local moddir=("$root"/lib/modules/*)
    [ -d "${moddir[0]}" ] || die "no kernel modules in the kernel package"

    mkdir -p "$img"/{bin,sbin,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu/libibverbs,lib64,etc/softroce}
    mkdir -p "$img"/{dev,proc,sys,tmp,run,root,mnt,etc/libibverbs.d,usr/lib/modules}
    ln -s usr/lib "$img/lib"   # merged /usr, as on Debian 12
    cp "$root/bin/busybox" "$img/bin/busybox" && ln -s busybox "$img/bin/sh"
    cp "$HERE/init" "$img/init" && chmod 755 "$img/init"

    # iproute2's tc (busybox's has no netem) for the loss test (scripts/softroce/loss.sh).
    local tools=("$root"/usr/bin/ib_* "$root"/usr/bin/ibv_* "$root/usr/bin/rdma" "$root/sbin/tc")
    cp "${tools[@]}" "$img/usr/bin/"
    local rxe="$root/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
    cp "$rxe" "$img/usr/lib/x86_64-linux-gnu/libibverbs/"
    cp "$root/etc/libibverbs.d/rxe.driver" "$img/etc/libibverbs.d/"

    # Libraries: everything ldd names for the tools, the rxe provider (dlopen'ed
    # by libibverbs) and the workspace binaries (which dlopen libibverbs.so.1).
    local libs
    libs=$(needed_libraries "$root" "${tools[@]}" "$rxe" $(workspace_binaries)
           echo "$root/usr/lib/x86_64-linux-gnu/libibverbs.so.1")
    if grep -q '^MISSING' <<<"$libs"; then die "libraries not found: $(grep '^MISSING' <<<"$libs" | tr '\n' ' ')"; fi
    for lib in $libs; do
        case $lib in
            */ld-linux-x86-64.so.2) cp -L "$lib" "$img/lib64/" ;;
            *) cp -L "$lib" "$img/usr/lib/x86_64-linux-gnu/" ;;
        esac
    done

    local order
    order=$(module_load_order "${moddir[0]}")
    for f in $order; do cp "${moddir[0]}/$f" "$img/usr/lib/modules/"; done
    basename -a $order >"$img/etc/softroce/modules"

    echo 'root:x:0:0:root:/root:/bin/sh' >"$img/etc/passwd"
    echo 'root:x:0:' >"$img/etc/group"
    printf '127.0.0.1\tlocalhost softroce\n::1\tlocalhost\n' >"$img/etc/hosts"

    # Uncompressed: unpacking gzip under TCG costs more than reading the bytes.
    (cd "$img" && find . | "$root/bin/busybox" cpio -o -H newc -R 0:0 >"$work/initrd.cpio" 2>/dev/null)
    cp "${root}"/boot/vmlinuz-* "$work/vmlinuz"
}

# Make sure $CACHE/{vmlinuz,initrd.cpio} match this script, the init script,
# the packages and the libraries today's workspace binaries need.
prepare() {
    mkdir -p "$CACHE/run"
    ensure_qemu
    exec 9>"$CACHE/lock"
    flock 9    # a second invocation waits here while the first one builds
    # Forget run folders left behind by runs that were killed outright.
    find "$CACHE/run" -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
    download_packages
    local key
    key=$({ cat "${BASH_SOURCE[0]}" "$HERE/init" "$CACHE/debs/.key"
            ldd $(workspace_binaries) 2>/dev/null | awk '/=>/ {print $1}' | sort -u; } | sha256sum | cut -c1-16)
    if [ "$(cat "$CACHE/image.key" 2>/dev/null)" != "$key" ] || [ ! -f "$CACHE/initrd.cpio" ]; then
        say "building the VM image in $CACHE (once)"
        local work="$CACHE/build"   # we hold the lock: no other build is using it
        rm -rf "$work" && mkdir -p "$work"
        build_image "$work"
        mv "$work/vmlinuz" "$CACHE/vmlinuz" && mv "$work/initrd.cpio" "$CACHE/initrd.cpio"
        rm -rf "$work"
        echo "$key" >"$CACHE/image.key"
    fi
    exec 9>&-
}

# The QEMU command line of one VM into the array QEMU. $1 = run folder, $2 = run|shell,
# $3 = memory in MB; further arguments are extra kernel parameters.
qemu_command() {
    local run=$1 mode=$2 mem=$3; shift 3
    case $REPO in *[[:space:]\"\\]*) die "the repository path must not contain spaces, quotes or backslashes: $REPO" ;; esac
    QEMU=(qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m "$mem" -nodefaults -no-user-config
        -display none -no-reboot -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.cpio"
        -append "console=ttyS1 quiet loglevel=3 panic=-1 SOFTROCE_REPO=$REPO SOFTROCE_RUN=$(basename "$run") SOFTROCE_MODE=$mode $*"
        -chardev "file,id=log,path=$run/console.log"
        -virtfs "local,path=$REPO,mount_tag=repo,security_model=none,multidevs=remap")
}

# The VM's exit status from its run folder: the command's status, or a set-up failure with
# the logs. $1 = run folder, $2 = QEMU's exit status, $3 = memory (for the hint), $4 = label.
vm_status() {
    local run=$1 rc=$2 mem=$3 label=${4:-the VM} status
    if [ ! -f "$run/status" ]; then
        say "error: $label stopped before the command finished (qemu exit $rc); its log:"
        tail -n 30 "$run/qemu.log" "$run/console.log" >&2 2>/dev/null || true
        [ -s "$run/console.log" ] || say "(no kernel output at all: too little memory for --mem $mem?)"
        return "$SET_UP_FAILED"
    fi
    status=$(cat "$run/status")
    [[ $status =~ ^[0-9]+$ ]] || { say "error: unreadable status '$status' from $label"; return "$SET_UP_FAILED"; }
    return "$status"
}

# Copies of the release binaries (gdr*), debug info stripped, into the run folder $1/bin: the
# VM copies them into its memory at boot and runs them from there (init). Run from the 9p mount,
# every process start pages the binary in over 9p: measured in one boot under TCG, five
# `gdr-write-bw --version` took 8.2 s from the mount and 1.9 s from memory, five short loopback
# runs 20.2 s and 4.1 s (results/build-vm/test-time.md). Stripped (line tables only: 34 MB to
# 4 MB), the copy is quick; the binaries are otherwise the same files, and a panic still says so.
stage_binaries() {
    local folder=$1/bin file
    mkdir -p "$folder"
    for file in "$REPO"/target/release/gdr*; do
        [ -f "$file" ] && [ -x "$file" ] || continue
        objcopy --strip-debug "$file" "$folder/$(basename "$file")" 2>/dev/null || cp "$file" "$folder/"
    done
}

# Boot the VM. $1 = run|shell, $2 = memory in MB, $3 = timeout in seconds (run only).
boot() {
    local mode=$1 mem=$2 seconds=${3:-0}
    qemu_command "$RUN" "$mode" "$mem"
    local qemu=("${QEMU[@]}")
    local rc=0
    if [ "$mode" = shell ]; then
        # Serial and QEMU monitor share the terminal: Ctrl-A x quits, Ctrl-C reaches the guest.
        "${qemu[@]}" -chardev stdio,id=con,mux=on,signal=off -serial chardev:con -mon chardev=con \
            -serial chardev:log || rc=$?
    else
        # --foreground: stay in our process group so that ^C on a terminal reaches QEMU.
        timeout --foreground -k 10 "$seconds" "${qemu[@]}" -chardev stdio,id=con,signal=off -serial chardev:con \
            -serial chardev:log </dev/null 2>"$RUN/qemu.log" || rc=$?
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            say "timed out after $seconds s; killed the VM"
            exit 124
        fi
    fi
    local status=0
    vm_status "$RUN" "$rc" "$mem" || status=$?
    exit "$status"
}

# Two UDP ports of 127.0.0.1 that nothing listens on, for the link between the VMs.
free_udp_ports() {
    local used first
    used=$(ss -Hlun 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
    for _ in $(seq 1 50); do
        first=$((20000 + RANDOM % 40000))
        if ! grep -qx -e "$first" -e "$((first + 1))" <<<"$used"; then echo "$first $((first + 1))"; return; fi
    done
    die "no two free UDP ports found on 127.0.0.1"
}

# Boot the two VMs of `pair` and wait for both. $1 = memory, $2 = timeout, $3/$4 = commands.
boot_pair() {
    local mem=$1 seconds=$2 ports port_text pids=() index
    port_text=$(free_udp_ports)
    read -r -a ports <<<"$port_text"
    for index in 0 1; do
        local run=${RUNS[$index]} peer=$((1 - index))
        qemu_command "$run" run "$mem" SOFTROCE_INDEX=$index \
            SOFTROCE_HOSTNAME=${PAIR_HOSTS[$index]} SOFTROCE_IP=${PAIR_ADDRESSES[$index]} \
            SOFTROCE_PEER_HOST=${PAIR_HOSTS[$peer]} SOFTROCE_PEER_IP=${PAIR_ADDRESSES[$peer]}
        # The link: each VM sends UDP datagrams to the other's port on 127.0.0.1.
        QEMU+=(-netdev "socket,id=link,udp=127.0.0.1:${ports[$peer]},localaddr=127.0.0.1:${ports[$index]}"
            -device "virtio-net-pci,netdev=link,mac=52:54:00:00:02:1$index")
        timeout -k 10 "$seconds" "${QEMU[@]}" -chardev stdio,id=con,signal=off -serial chardev:con \
            -serial chardev:log </dev/null 2>"$run/qemu.log" > >(sed -u "s/^/vm$index| /") &
        pids+=($!)
    done
    trap 'say "interrupted"; kill "${pids[@]}" 2>/dev/null; wait; exit 130' INT TERM
    local rcs=() statuses=()
    for index in 0 1; do
        local rc=0
        wait "${pids[$index]}" || rc=$?
        rcs+=("$rc")
    done
    wait   # the output filters
    for index in 0 1; do
        if [ "${rcs[$index]}" = 124 ] || [ "${rcs[$index]}" = 137 ]; then
            say "vm$index timed out after $seconds s; killed it"
            statuses+=(124)
        else
            local status=0
            vm_status "${RUNS[$index]}" "${rcs[$index]}" "$mem" "vm$index" || status=$?
            statuses+=("$status")
        fi
    done
    say "vm0 exit ${statuses[0]}, vm1 exit ${statuses[1]}"
    if [ "${statuses[0]}" != 0 ]; then exit "${statuses[0]}"; fi
    exit "${statuses[1]}"
}

main() {
    local action=${1:-} mem=2048 seconds=900
    [ $# -gt 0 ] && shift
    while [ $# -gt 0 ]; do
        case $1 in
            --timeout) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--timeout needs a positive number of seconds"
                       seconds=$2; shift 2 ;;
            --mem) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--mem needs a size in MB"
                   mem=$2; shift 2 ;;
            --) shift; break ;;
            *) say "unknown argument: $1"; usage ;;
        esac
    done
    case $action in
        prepare) prepare ;;
        run|shell)
            [ "$action" = run ] && [ $# -eq 0 ] && { say "run needs a command after --"; usage; }
            prepare
            RUN=$(mktemp -d "$CACHE/run/XXXXXXXX")
            trap 'rm -rf "$RUN"' EXIT
            trap 'say "interrupted"; exit 130' INT TERM
            printf '%s\n' "$*" >"$RUN/cmd"
            stage_binaries "$RUN"
            boot "$action" "$mem" "$seconds" ;;
        pair)
            [ $# -ge 1 ] && [ $# -le 2 ] || { say "pair needs one or two commands after --"; usage; }
            prepare
            RUNS=("$(mktemp -d "$CACHE/run/XXXXXXXX")" "$(mktemp -d "$CACHE/run/XXXXXXXX")")
            trap 'rm -rf "${RUNS[@]}"' EXIT
            trap 'say "interrupted"; exit 130' INT TERM
            printf '%s\n' "$1" >"${RUNS[0]}/cmd"
            printf '%s\n' "${2:-$1}" >"${RUNS[1]}/cmd"
            # Stripped once; the second VM's run folder gets hard links to the same files.
            stage_binaries "${RUNS[0]}"
            cp -rl "${RUNS[0]}/bin" "${RUNS[1]}/bin"
            boot_pair "$mem" "$seconds" ;;
        *) usage ;;
    esac
}

main "$@"
