#!/bin/sh
# Staged write_bw against staged send_bw at 4 KiB, alternating in one Soft-RoCE VM boot (issue 25:
# with credits, the staged WRITE stream no longer waits out receiver-not-ready timers and must
# reach at least 0.9 of the staged SEND stream). Command, from the repository root, after
# `cargo build --release --workspace --bins --examples` (normal profile):
#
#   scripts/softroce.sh run --timeout 1500 -- 'results/softroce/staged-credits/run.sh'
#
# Each run writes its JSON here (metadata: git commit, argv, host, date; the rows carry the NIC
# counters the size moved); summary.md is made from them (its header says how).
# Written at commit e974eba (branch placements); each JSON's metadata names the commit it ran.
set -u
HERE=${HERE:-results/softroce/staged-credits}
mkdir -p "$HERE"
ROUNDS=${ROUNDS:-8}
for round in $(seq $ROUNDS); do
    for test in write_bw send_bw; do
        binary=gdr-$(echo $test | tr _ -)
        $binary --loopback -d rxe0 --mem host-staged -s 4096 -n 10000 \
            --json "$HERE/$test-$round.json" >"/tmp/$test-$round.log" 2>&1 ||
            { echo "$test round $round: exit $?"; tail -3 "/tmp/$test-$round.log"; }
    done
done
