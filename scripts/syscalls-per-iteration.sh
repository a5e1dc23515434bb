#!/bin/sh
# System calls per latency iteration, gdrperf against perftest: runs each
# latency tool's client under `strace -c -f` twice, with -n SHORT and -n LONG, and divides the
# difference of the counts by LONG - SHORT, so set-up and tear-down (connection, registration,
# calibration) cancel out and what is left is what one iteration costs. The server runs
# untraced. Runs inside the Soft-RoCE VM, which has no strace of its own: the image's inputs
# stay as they are, and the host's strace travels in the worktree with its libraries:
#   mkdir -p target/vmtools && cp /usr/bin/strace target/vmtools/ &&
#     cp -L $(ldd /usr/bin/strace | awk '/=> \// { print $3 }' | grep -v libc.so) target/vmtools/
#   cargo build --release --bins
#   flock /tmp/gdrperf-vm.lock scripts/softroce.sh run -- 'sh scripts/syscalls-per-iteration.sh'
# Prints, per tool and size, the calls per iteration of each system call that moved, then the
# total. Result: results/softroce/syscalls-per-iteration.txt.
set -eu
# Scratch files in a private folder (mktemp), never a fixed /tmp name another user could plant.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
TOOLS=${SYSCALL_TOOLS:-"write_lat read_lat"}
SIZES=${SYSCALL_SIZES:-"2 4096"}
SHORT=${SYSCALL_SHORT:-1000}
LONG=${SYSCALL_LONG:-6000}
here=$(pwd)
STRACE="env LD_LIBRARY_PATH=$here/target/vmtools $here/target/vmtools/strace"
PORT=19700

# counts FILE: "name calls" lines of a strace -c summary.
counts() { awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF, $4 }' "$1"; }

# traced TOOL SIZE N OUT: one run, client traced, its summary in OUT.
traced() {
    PORT=$((PORT + 1))
    case $1 in
        ib_*) server="$1 -d rxe0 -x 1 -p $PORT -s $2 -n $3"; client="$server 127.0.0.1" ;;
        gdr-read-lat) server="$1 -p $PORT -s $2 -n $3 --latency-span iteration"; client="$server 127.0.0.1" ;;
        *) server="$1 -p $PORT -s $2 -n $3 $GDR_FLAGS"; client="$server 127.0.0.1" ;;
    esac
    $server >/dev/null 2>&1 &
    sleep 1
    $STRACE -c -f -o "$4" $client >"$SCRATCH"/client.out 2>&1 || echo "  ($1 -s $2 -n $3 failed)"
    # The clock gdrperf's samples used: under strace its TSC calibration may give up (the
    # calibration's own clock reads are traced), and every stamp is then a clock_gettime.
    case $1 in gdr-*) echo "  $1 -s $2 -n $3: $(grep -m1 'Clock' "$SCRATCH"/client.out | sed 's/^ *//')" ;; esac
    wait || true
}

echo "# command: sh scripts/syscalls-per-iteration.sh (SHORT=$SHORT LONG=$LONG; client under strace -c -f)"
echo "# machine: Soft-RoCE rxe0 on lo in a QEMU TCG VM ($(nproc) vCPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)), kernel $(uname -r)"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); git commit: ${GDRPERF_COMMIT:-unknown}"
echo "# gdrperf flags: ${GDR_FLAGS:=-I 0 --latency-span iteration} (perftest's inline choice on rxe and its span; gdr-read-lat: the span alone)"
for test in $TOOLS; do
    for size in $SIZES; do
        for tool in ib_$test gdr-$(echo $test | tr _ -); do
            traced "$tool" "$size" "$SHORT" "$SCRATCH"/short.txt
            traced "$tool" "$size" "$LONG" "$SCRATCH"/long.txt
            { counts "$SCRATCH"/short.txt | sed 's/^/short /'; counts "$SCRATCH"/long.txt | sed 's/^/long /'; } | awk -v tool="$tool" -v size="$size" -v d=$((LONG - SHORT)) '
                $1 == "short" { short[$2] = $3; next }
                { long[$2] = $3 }
                END {
                    for (name in long) {
                        per = (long[name] - short[name]) / d
                        if (name == "total") total = per
                        else if (per >= 0.01) line = line sprintf(" %s=%.2f", name, per)
                    }
                    printf "%-14s %5s B: %.2f calls/iteration:%s\n", tool, size, total, line
                }'
        done
    done
done
