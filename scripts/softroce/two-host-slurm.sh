#!/bin/bash
# The Slurm half of scripts/two-host-tests.sh, submitted from gdrvm0 inside the two-node cluster
# that scripts/softroce/slurm-vm.sh starts (runs in the Debian root: bash, srun, sbatch, scontrol):
#
#   scripts/softroce.sh pair -- 'scripts/softroce/slurm-vm.sh SHARED bash scripts/softroce/two-host-slurm.sh SHARED'
#
# Leaves in SHARED, for the host to judge:
#   hostnames/N.{scontrol,gdrperf}  the same hostlists expanded by scontrol and by gdrperf
#   pairs/                          srun -N2 -n2 gdrperf slurm (pairs schedule), write bandwidth
#   ring/                           srun -N2 --ntasks-per-node=2, ring schedule: 2 servers per node
#   broken/                         the pairs run again with a device that does not exist
#   sbatch/                         scripts/slurm/acceptance.sbatch submitted with sbatch --wait
#   base/, oneway/, slowed/         the same ring three times: as it is, with gdrvm1's eth0
#                                   egress slowed by netem (gdrvm1 sending), and with both VMs'
#                                   egress slowed (the link both ways); netem.log says what tc did;
#   base-again/, slowed-again/      the base and the slowed ring once more (four rows a side)
#   *.status, *.log                 exit status and output of each run
set -u
SHARED=$1
mkdir -p "$SHARED/hostnames"

# Hostlists with zero padding, lists in brackets, several brackets, repeats, and the job's own.
lists=("gdrvm[0-1]" "node[01-04,07],gpu-a[1-2]" "node[8-10]" "node[08-10]" "n[009-011]" "n[1-02]"
       "r[1-2]n[3,5]" "x[1-3]y[1-2]z[5]" "x[1-2]y[1-2]z[1-2]" "a[1-2]b[1-2]c[1-2]d[1-2]" "b,a1,a1" "a b")
for index in "${!lists[@]}"; do
    printf '%s\n' "${lists[$index]}" >"$SHARED/hostnames/$index.list"
    scontrol show hostnames "${lists[$index]}" >"$SHARED/hostnames/$index.scontrol" 2>&1
    gdrperf slurm hostnames "${lists[$index]}" >"$SHARED/hostnames/$index.gdrperf" 2>&1
done
# Inside a job: the variable srun sets, expanded both ways on a compute node.
srun -N2 -n2 bash -c 'scontrol show hostnames "$SLURM_JOB_NODELIST" >"$0/job.$SLURM_PROCID.scontrol"; gdrperf slurm hostnames >"$0/job.$SLURM_PROCID.gdrperf"' \
    "$SHARED/hostnames"

run() {  # NAME COMMAND...: output in NAME.log, exit status in NAME.status
    local name=$1; shift
    echo "== $name: $*"
    "$@" >"$SHARED/$name.log" 2>&1
    echo $? >"$SHARED/$name.status"
    tail -n 6 "$SHARED/$name.log"
}

export GDRPERF_TOKEN=e2b7094c5fa13d86c0e4b2a9f7d1365b  # 128 bits, as tokens must be (both VMs share it)
run pairs srun -N2 -n2 gdrperf slurm --out "$SHARED/pairs" -- gdr-write-bw -s 64K -n 20 --validate --timeout 60
run ring srun -N2 --ntasks-per-node=2 gdrperf slurm --schedule ring --pair-by node --out "$SHARED/ring" -- \
    gdr-write-bw -s 4K -n 20 --validate --timeout 60
# A broken bench on both nodes (no such device): the run must fail and name both nodes.
run broken srun -N2 -n2 gdrperf slurm --out "$SHARED/broken" -- gdr-write-bw -s 4K -n 5 -d mlx5_9 --timeout 10
# The acceptance example as a user submits it, on host memory (these VMs have no GPU).
GDRPERF_OUT="$SHARED/sbatch" GDRPERF_MEM_ARGS="" GDRPERF_BENCH_ARGS="-s 64K -n 20 --validate --timeout 60" \
    run sbatch sbatch --wait --nodes=2 --ntasks-per-node=1 --gres=none --output="$SHARED/sbatch.job.log" scripts/slurm/acceptance.sbatch
# What two nodes can tell against an earlier job: one ring as it is, then with gdrvm1's egress
# slowed (netem rate, as scripts/loss-test.sh applies netem loss; a deep queue so that the rate,
# not drops, slows it), then with both VMs' egress slowed. tc runs as a job step on each node.
# The base and the slowed ring run twice: the judge reads both jobs' files as one (four rows a
# side). From two rows the class's noise comes from one difference between the directions,
# which under TCG alone reaches 50 % (a base of 0.118 and 0.079 Gb/s gave noise 60 %), and a
# class 80 % slower was then not sure at the judge's alpha (z -3.05 against -3.29). 10 Mb/s is
# a sixth of what a pair carries here even while the host is busy (0.06 Gb/s), so the drop stays
# far beyond the noise between runs.
netem() {  # NODE ARGS...: tc qdisc ARGS on NODE's eth0
    local node=$1; shift
    srun -N1 -n1 -w "$node" tc qdisc "$@" >>"$SHARED/netem.log" 2>&1
    echo "$node: tc qdisc $*: exit $?" >>"$SHARED/netem.log"
}
# One pair a direction, at most 1 MiB in flight (-t 16 x 64 KiB): rxe has no congestion control,
# and two pairs with 8 MiB each (-t 128) in netem's queue at 10 Mb/s crawled for minutes
# (--timeout counts progress, and completions kept trickling in).
ring_bw() {  # NAME: the ring of write bandwidth, host memory
    run "$1" srun -N2 -n2 gdrperf slurm --schedule ring --out "$SHARED/$1" -- \
        gdr-write-bw -s 64K -n 100 -t 16 --timeout 120
}
: >"$SHARED/netem.log"
ring_bw base
ring_bw base-again
netem gdrvm1 add dev eth0 root netem rate 10mbit limit 100000
ring_bw oneway
netem gdrvm0 add dev eth0 root netem rate 10mbit limit 100000
ring_bw slowed
ring_bw slowed-again
netem gdrvm1 del dev eth0 root
netem gdrvm0 del dev eth0 root
exit 0
