# What a peer on the fabric, or a reader of shared results, can get: sourced by
# scripts/vm-tests.sh (helpers: run, pass, fail, expect_in, next_port; outputs under $OUT).
# See docs/security.md for what each case defends.

# 128 random bits as hex, the form `gdrperf token` prints (weaker tokens are refused).
SECRET=9d4b62e0f1a7c3858e2b0d6f4a1c7e93

# no_secret NAME PATH...: no file under PATH (recursively) holds $SECRET; at least one file exists.
no_secret() {
    name=$1; shift
    count=$(find "$@" -type f 2>/dev/null | wc -l)
    holders=$(grep -rlF -- "$SECRET" "$@" 2>/dev/null)
    if [ "$count" -gt 0 ] && [ -z "$holders" ]; then
        pass "$name: none of $count written files holds the token"
    else
        fail "$name: no written file holds the token" "$count files; holding it: $holders"
    fi
}

# --- the token is never written down: bench files, console, accept summary, Slurm plan/status -
mkdir -p "$OUT/secret/hdr"
run secret_bw 0 gdr-write-bw --loopback -n 5 -a --token "$SECRET" \
    --csv "$OUT/secret/bw.csv" --json "$OUT/secret/bw.json" && pass "secret_bw: --token VALUE run exits 0"
run secret_lat 0 gdr-read-lat --loopback -n 5 -s 64 "--token=$SECRET" --hdr-dir "$OUT/secret/hdr" \
    --csv "$OUT/secret/lat.csv" --json "$OUT/secret/lat.json" && pass "secret_lat: --token=VALUE run exits 0"
if grep -qF -- '"<redacted>"' "$OUT/secret/bw.json" && grep -qF -- '"--token=<redacted>"' "$OUT/secret/lat.json"; then
    pass "secret: the JSON argv keeps --token with its value redacted"
else
    fail "secret: the JSON argv keeps --token with its value redacted" "$(grep -A3 argv "$OUT/secret/bw.json")"
fi
# A server given the token through the environment, a client on the command line.
next_port
GDRPERF_TOKEN=$SECRET gdr-send-bw -p $PORT -n 5 --json "$OUT/secret/send_server.json" >"$OUT/secret_server.log" 2>&1 &
secret_server=$!
run secret_client 0 gdr-send-bw -p $PORT -n 5 --token "$SECRET" --csv "$OUT/secret/send.csv" \
    --json "$OUT/secret/send.json" 127.0.0.1 && pass "secret_client: token by flag against token by env exits 0"
wait $secret_server
export GDRPERF_TOKEN=$SECRET
run secret_accept 0 gdrperf accept --profile profiles/softroce-smoke.toml --out "$OUT/secret/accept" &&
    pass "secret_accept: accept with GDRPERF_TOKEN set exits 0"
unset GDRPERF_TOKEN
# gdrperf slurm on one node: two ranks as srun would start them, the real bench between them.
slurm_rank() {
    SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=$1 SLURM_NTASKS=2 SLURM_JOB_NODELIST='n[1-2]' \
    SLURM_TASKS_PER_NODE='1(x2)' SLURMD_NODENAME=n$(($1 + 1)) SLURM_LOCALID=0 \
    gdrperf slurm --peer-host 127.0.0.1 --base-port $PORT --out "$OUT/secret/slurm" -- \
        gdr-write-bw -n 5 -s 4096 --token "$SECRET" >"$OUT/secret_slurm$1.log" 2>&1
}
next_port
slurm_rank 1 & slurm_one=$!
slurm_rank 0; slurm_status=$?
wait $slurm_one
if [ "$slurm_status" = 0 ] && [ -f "$OUT/secret/slurm/plan.json" ] && ls "$OUT"/secret/slurm/status/*.json >/dev/null 2>&1; then
    pass "secret_slurm: a two-rank step with --token passes and writes plan and status"
else
    fail "secret_slurm: a two-rank step with --token passes and writes plan and status" "exit $slurm_status" "$(tail -5 "$OUT/secret_slurm0.log")"
fi
no_secret secret "$OUT/secret" "$OUT"/secret_*.log

# --- silent connections cost the real client nothing (handshakes run at once) ----------------
# uptime_cs: now, in hundredths of a second.
uptime_cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
# timed_client NAME: a token client against the server on $PORT; sets $client_cs (its run time).
timed_client() {
    started=$(uptime_cs)
    run "$1" 0 gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 3 --token "$SECRET" 127.0.0.1 && pass "$1: served"
    client_cs=$(( $(uptime_cs) - started ))
}
next_port
GDRPERF_TOKEN=$SECRET gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 30 >"$OUT/quiet_server.log" 2>&1 &
server=$!
listening_server "$OUT/quiet_server.log"
timed_client quiet
wait $server
alone_cs=$client_cs
next_port
GDRPERF_TOKEN=$SECRET gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 30 >"$OUT/silent_server.log" 2>&1 &
server=$!
listening_server "$OUT/silent_server.log"
silent=""
for i in 1 2 3 4 5; do sleep 20 | nc 127.0.0.1 $PORT >/dev/null 2>&1 & silent="$silent $!"; done
# Ordered by a condition: the five are connected (ESTABLISHED, state 01, on the server's port).
port_hex=$(printf ':%04X' $PORT)
for _ in $(seq 100); do
    [ "$(awk -v port="$port_hex" '$4 == "01" && index($2, port) { n++ } END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)" -ge 5 ] && break
    sleep 0.2
done
# One at a time, the first silent one would hold the server for its 30 s --timeout, and this
# client (--timeout 3) would give up waiting for its challenge.
timed_client silent
if [ "$client_cs" -le $((alone_cs + 100)) ]; then
    pass "silent: behind 5 silent connections the client took $client_cs cs (alone: $alone_cs cs)"
else
    fail "silent: behind 5 silent connections the client is served within a second" "$client_cs cs, alone $alone_cs cs"
fi
wait $server
for pid in $silent; do kill "$pid" 2>/dev/null; done
for pid in $silent; do wait "$pid" 2>/dev/null; done

# --- a server without a token on every address says so, once; a bound one does not -----------
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 >"$OUT/open_server.log" 2>&1 &
server=$!
run open_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 127.0.0.1 && pass "open_client: measures"
wait $server
expect_in open_server "gdr-write-bw: no token, and every address of this host listens"
if [ "$(grep -c "no token" "$OUT/open_server.log")" = 1 ]; then pass "open_server: says it once"; else fail "open_server: says it once" "$(cat "$OUT/open_server.log")"; fi
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 --bind 127.0.0.1 >"$OUT/bound_server.log" 2>&1 &
server=$!
run bound_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 127.0.0.1 && pass "bound_client: measures"
wait $server
if grep -q "no token" "$OUT/bound_server.log"; then fail "bound_server: no warning when bound to one address" "$(cat "$OUT/bound_server.log")"; else pass "bound_server: no warning when bound to one address"; fi

# --- a stranger knocking while a --concurrent server admits its lanes is turned away ----------
next_port
# Three lanes of 16 MiB buffers: setting up a lane takes the client long enough (allocation and
# registration under TCG) for knocks to land between the lanes.
LANES="--concurrent -d rxe0,rxe0,rxe0 -s 16777216 -n 3 --timeout 60"
gdr-write-bw -p $PORT $LANES >"$OUT/lanes_server.log" 2>&1 &
server=$!
gdr-write-bw -p $PORT $LANES --csv "$OUT/lanes_knocked.csv" 127.0.0.1 >"$OUT/lanes_knocked.log" 2>&1 &
client=$!
# Strangers that send a byte and hang up, one after the other, until the client is done: some
# land before lane 0, some between the lanes, the rest while the run measures.
knocks=0
while kill -0 $client 2>/dev/null && [ $knocks -lt 2000 ]; do
    printf x | nc 127.0.0.1 $PORT >/dev/null 2>&1; knocks=$((knocks + 1))
done
wait $client; client_status=$?
wait $server; server_status=$?
if [ "$client_status" = 0 ] && [ "$server_status" = 0 ]; then
    pass "lanes_knocked: the run completes with strangers knocking ($knocks knocks)"
else
    fail "lanes_knocked: the run completes with strangers knocking" "client $client_status, server $server_status" "$(tail -3 "$OUT/lanes_server.log")"
fi
if grep -q "turned away 127.0.0.1:[0-9]* (connection [0-9]*): lane [12]:" "$OUT/lanes_server.log"; then
    pass "lanes_knocked: a stranger between the lanes was turned away"
else
    fail "lanes_knocked: a stranger between the lanes was turned away" "$(grep -c 'turned away' "$OUT/lanes_server.log") turned away, none while admitting lanes 1 and 2"
fi
