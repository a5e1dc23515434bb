#!/bin/sh
# A two-node Slurm cluster inside the two VMs of `scripts/softroce.sh pair`, then one command
# submitted to it from VM 0:
#
#   scripts/softroce.sh pair -- 'scripts/softroce/slurm-vm.sh SHARED_DIR CMD'
#
# Both VMs run this script (busybox sh). Each chroots into the Debian root that
# scripts/softroce/slurm-root.sh built (.cache/slurm-root, shared over 9p) with tmpfs over every
# directory a daemon writes, starts munged and slurmd there; VM 0 (gdrvm0) also runs slurmctld,
# waits until both nodes are idle, runs CMD in the chroot (cwd: the repository, srun and scontrol
# on PATH, target/release first), and writes SHARED_DIR/done with CMD's status. VM 1 serves until
# that file appears. Daemon logs are copied to SHARED_DIR/logs-gdrvmN at the end.
# Exit status: CMD's on VM 0; 0 on VM 1 if its daemons started; 125 if the cluster did not come up.
set -u
SHARED=$1; shift
CMD=$*
REPO=$(pwd)
ROOT=$REPO/.cache/slurm-root
ME=$GDRPERF_VM_HOST
SET_UP_FAILED=125

say() { echo "slurm-vm($ME): $*"; }
fail() { say "error: $*"; copy_logs; exit $SET_UP_FAILED; }
in_root() { chroot "$ROOT" /usr/bin/env -i PATH="/opt/gdrperf/bin:$REPO/target/release:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/root "$@"; }
copy_logs() {
    mkdir -p "$SHARED/logs-$ME"
    cp -r "$ROOT/var/log/slurm" "$ROOT/var/log/munge" "$SHARED/logs-$ME/" 2>/dev/null
}

[ -x "$ROOT/usr/sbin/slurmd-wlm" ] || fail "no Slurm root at $ROOT: run scripts/softroce/slurm-root.sh on the host first"
mkdir -p "$SHARED" || fail "cannot create $SHARED"

# --- the chroot: the kernel's file systems, the repository, per-VM writable state -------------
for dir in proc sys dev; do mount --bind "/$dir" "$ROOT/$dir" || fail "cannot bind /$dir into the root"; done
mount --bind /dev/pts "$ROOT/dev/pts"
# slurmd (22.05) initialises its cgroup plugin even with proctrack/linuxproc: give it cgroup v2,
# without systemd (see cgroup.conf below).
mount -t cgroup2 none "$ROOT/sys/fs/cgroup" || fail "cannot mount cgroup2"
# What systemd would have made: the slice slurmd puts its scope in, controllers delegated.
mkdir -p "$ROOT/sys/fs/cgroup/system.slice"
for controller in cpuset cpu memory pids; do
    echo "+$controller" >"$ROOT/sys/fs/cgroup/cgroup.subtree_control" 2>/dev/null
    echo "+$controller" >"$ROOT/sys/fs/cgroup/system.slice/cgroup.subtree_control" 2>/dev/null
done
for dir in run tmp var/log var/spool var/lib/munge var/lib/slurm etc/slurm; do
    mkdir -p "$ROOT/$dir"
    mount -t tmpfs -o mode=755 tmpfs "$ROOT/$dir" || fail "cannot mount tmpfs on $ROOT/$dir"
done
chmod 1777 "$ROOT/tmp"
mkdir -p "$ROOT$REPO" && mount --bind "$REPO" "$ROOT$REPO" || fail "cannot bind the repository into the root"
# The VM's in-memory copies of the binaries (scripts/softroce/init), first on the jobs' PATH too.
mkdir -p "$ROOT/opt/gdrperf/bin" && mount --bind /opt/gdrperf/bin "$ROOT/opt/gdrperf/bin" || fail "cannot bind /opt/gdrperf/bin into the root"
# Both VMs' names, as init wrote them for this VM.
mount --bind /etc/hosts "$ROOT/etc/hosts" || fail "cannot bind /etc/hosts"

# --- munge: one key for both nodes (in the shared root), state and socket per VM --------------
mkdir -p "$ROOT/run/munge" "$ROOT/var/log/munge"
in_root chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 700 "$ROOT/var/lib/munge"
in_root setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged || fail "munged did not start"
in_root munge -n </dev/null | in_root unmunge >/dev/null || fail "munge cannot decode its own credential"

# --- Slurm: the same configuration on both nodes ---------------------------------------------
cat >"$ROOT/etc/slurm/slurm.conf" <<EOF
ClusterName=gdrperf
SlurmctldHost=gdrvm0(192.0.2.10)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# Emulated CPUs are slow: give every message and node check room.
MessageTimeout=60
SlurmdTimeout=600
SlurmctldTimeout=600
BatchStartTimeout=120
# The VMs' own address space; names resolve through /etc/hosts.
NodeName=gdrvm0 NodeAddr=192.0.2.10 CPUs=2 State=UNKNOWN
NodeName=gdrvm1 NodeAddr=192.0.2.11 CPUs=2 State=UNKNOWN
PartitionName=vm Nodes=gdrvm[0-1] Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$ROOT/etc/slurm/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
EOF
mkdir -p "$ROOT/var/log/slurm" "$ROOT/var/spool/slurmd" "$ROOT/var/spool/slurmctld"
ulimit -l unlimited
if [ "$ME" = gdrvm0 ]; then
    in_root /usr/sbin/slurmctld || fail "slurmctld did not start"
fi
in_root /usr/sbin/slurmd || fail "slurmd did not start"
say "munged, slurmd$( [ "$ME" = gdrvm0 ] && echo ', slurmctld') started"

if [ "$ME" != gdrvm0 ]; then
    # Serve until VM 0 is done (or gives up).
    waited=0
    while [ ! -f "$SHARED/done" ] && [ $waited -lt 1500 ]; do sleep 2; waited=$((waited + 2)); done
    [ -f "$SHARED/done" ] || say "VM 0 never said it was done"
    copy_logs
    exit 0
fi

# --- VM 0: wait for both nodes, run the command -----------------------------------------------
waited=0
while :; do
    idle=$(in_root sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle')
    [ "$idle" = 2 ] && break
    [ $waited -ge 300 ] && { in_root sinfo -N -l; echo 1 >"$SHARED/done"; fail "the two nodes were not both idle after 300 s"; }
    sleep 3; waited=$((waited + 3))
done
say "cluster up: $(in_root sinfo -h -N -o '%N:%t' | tr '\n' ' ')"
in_root sh -c "ulimit -l unlimited; cd '$REPO' && $CMD"
status=$?
echo "$status" >"$SHARED/done"
copy_logs
exit $status
