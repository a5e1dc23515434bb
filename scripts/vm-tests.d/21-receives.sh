# Every bench that consumes the peer's receives (gdr-send-bw's SENDs, gdr-write-bw's WRITE WITH
# IMMEDIATE into a staged receiver) in the mixed placements (host server and host-staged client,
# and back), which need two processes: the sender holds a credit per posted receive, so no
# receiver-not-ready (RNR) NAK may be counted, and no figure may exceed what the link carries.
# The loopback placements (host:host, host-staged:host-staged, -b, -r 8) are decided over the
# simulated NIC with rnr_retry=0, where any RNR fails the run (benches/tests/simulated_bandwidth.rs,
# credits_keep_every_send_on_a_posted_receive_in_every_loopback_placement).
# Sourced by scripts/vm-tests.sh (helpers: run, pass, fail, next_port; outputs under $OUT).
#
# The counters are read around each run from sysfs (a loopback port counts both ends).

COUNTERS=/sys/class/infiniband/rxe0/ports/1/hw_counters
RNR_COUNTERS="rcvd_rnr_err send_rnr_err rnr_nak_retry_err out_of_seq_request rcvd_seq_err"

# rnr_sum: the sum of the RNR and sequence counters now.
rnr_sum() {
    total=0
    for counter in $RNR_COUNTERS; do
        [ -r "$COUNTERS/$counter" ] && total=$((total + $(cat "$COUNTERS/$counter")))
    done
    echo $total
}

# The link's rate in Gb/s (rxe reports its netdev's speed).
LINK_GBIT=$(awk '{ print $1 }' /sys/class/infiniband/rxe0/ports/1/rate 2>/dev/null)

# under_link NAME CSV: no bandwidth figure of any row exceeds the link's rate.
under_link() {
    over=$(awk -F, -v link="$LINK_GBIT" '
        /^#/ { next } !header++ { for (i = 1; i <= NF; i++) if ($i ~ /^(bw|rx)_(peak|avg)_gbit_s$/) c[i] = $i; next }
        { for (i in c) if ($i != "" && $i + 0 > link + 0) print c[i] "=" $i }' "$2")
    if [ -n "$LINK_GBIT" ] && [ -z "$over" ]; then pass "$1: no figure above the link's $LINK_GBIT Gb/s"
    else fail "$1: no figure above the link's ${LINK_GBIT:-?} Gb/s" "$over"; fi
}

# listening PORT: waits up to 60 s for a socket listening on PORT (a staged server with -q 4 at
# 1 MiB registers half a GiB first, which under TCG can take longer than a client's 10 s).
listening() {
    hex=$(printf ':%04X ' "$1")
    for _ in $(seq 300); do
        cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" { print $2 " " }' | grep -q "$hex" && return 0
        sleep 0.2
    done
    return 1
}

# pair NAME SERVER_MEM CLIENT_MEM BINARY ARGS...: server and client over rxe0, no RNR counted.
pair() {
    name=$1; server_mem=$2; client_mem=$3; binary=$4; shift 4
    next_port
    before=$(rnr_sum)
    $binary -p $PORT --mem "$server_mem" "$@" >"$OUT/${name}_server.log" 2>&1 &
    server=$!
    listening $PORT
    if run "$name" 0 $binary -p $PORT --mem "$client_mem" "$@" --csv "$OUT/$name.csv" 127.0.0.1; then
        wait $server && pass "$name: both sides exit 0" || fail "$name: server exits 0" "$(tail -3 "$OUT/${name}_server.log")"
        moved=$(( $(rnr_sum) - before ))
        if [ "$moved" = 0 ]; then pass "$name: no RNR or sequence counter moved"
        else fail "$name: no RNR or sequence counter moved" "moved by $moved: $(grep -h nic_counters -A0 "$OUT/$name.csv" | head -1)" "$(tail -2 "$OUT/$name.csv")"; fi
        under_link "$name" "$OUT/$name.csv"
    else
        kill $server 2>/dev/null; wait $server 2>/dev/null
    fi
}

for placement in host-staged:host host:host-staged; do
    server_mem=${placement%%:*}; client_mem=${placement##*:}
    for size in 4K 1M; do
        for test in write_bw send_bw; do
            binary=gdr-$(echo $test | tr _ -)
            pair "credits_${test}_${server_mem}_${client_mem}_$size" "$server_mem" "$client_mem" $binary -s $size -n 200
        done
    done
    for size in 1M; do
        for test in write_bw send_bw; do
            binary=gdr-$(echo $test | tr _ -)
            pair "credits_${test}_q4_${server_mem}_${client_mem}_$size" "$server_mem" "$client_mem" $binary -s $size -n 100 -q 4
        done
    done
done

# -D (a timed run, counted per message in the middle window): the same placements, the staged
# receiver of write_bw aside (refused below). Six runs of 2 s under TCG.
for placement in host-staged:host host:host-staged; do
    server_mem=${placement%%:*}; client_mem=${placement##*:}
    for size in 4K 1M; do
        pair "credits_D_send_bw_${server_mem}_${client_mem}_$size" "$server_mem" "$client_mem" gdr-send-bw -s $size -D 2
        case $server_mem in host-staged) continue ;; esac
        pair "credits_D_write_bw_${server_mem}_${client_mem}_$size" "$server_mem" "$client_mem" gdr-write-bw -s $size -D 2
    done
done

# Staged refusals: decided by both sides from the two memories right after the
# hellos, in the same words, so that neither waits for the other nor prints a banner first.
# refused NAME TEXT SERVER_ARGS -- CLIENT_ARGS
refused() {
    name=$1; text=$2; shift 2
    server_args=""
    while [ "$1" != "--" ]; do server_args="$server_args $1"; shift; done
    shift
    next_port
    timeout 60 gdr-write-bw -p $PORT $server_args >"$OUT/${name}_server.log" 2>&1 &
    server=$!
    listening $PORT
    run "$name" 2 gdr-write-bw -p $PORT "$@" 127.0.0.1 && expect_in "$name" "$text"
    wait $server; status=$?
    if [ $status = 2 ] && grep -qF -- "$text" "$OUT/${name}_server.log"; then
        pass "$name: the server exits 2 at once, in the same words"
    else
        fail "$name: the server exits 2 at once, in the same words" "exit $status" "$(tail -2 "$OUT/${name}_server.log")"
    fi
    if grep -q "BW peak" "$OUT/$name.log" "$OUT/${name}_server.log"; then
        fail "$name: refused before any banner" "$(grep -l "BW peak" "$OUT/$name.log" "$OUT/${name}_server.log")"
    else
        pass "$name: refused before any banner"
    fi
}
refused refuse_staged_client_b "staged memory runs one direction at a time" -b -s 4K -n 10 -- -b --mem host-staged -s 4K -n 10
refused refuse_staged_server_b "staged memory runs one direction at a time" -b --mem host-staged -s 4K -n 10 -- -b -s 4K -n 10
refused refuse_staged_receiver_D "a staged receiver counts the messages it copies" --mem host-staged -s 4K -D 2 -- -s 4K -D 2
