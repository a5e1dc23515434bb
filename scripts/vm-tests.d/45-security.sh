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
listening_server "$OUT/secret_server.log"
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
    run "$1" 0 gdr-write-bw -p $PORT -n 5 -s 4096 --timeout "${2:-3}" --token "$SECRET" 127.0.0.1 && pass "$1: served"
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
# One at a time, the first silent one would hold the server for its 30 s --timeout. Four of
# them hold this address's handshake slots (HANDSHAKES_PER_SOURCE) for 2 s (PROOF_PATIENCE), the
# fifth is told busy; so is this client, which connects again until it is served (--timeout 10).
# The decision is "served" itself (exit 0 within the client's 3 s); how long it took depends on
# the VM's load and is printed, not judged (a time compared with a bound failed under load).
timed_client silent 10
echo "#    silent: the client took $client_cs cs behind 5 silent connections (alone: $alone_cs cs)"
wait $server
for pid in $silent; do kill "$pid" 2>/dev/null; done
for pid in $silent; do wait "$pid" 2>/dev/null; done

# --- a server without a token on every address says so, once; a bound one does not -----------
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 >"$OUT/open_server.log" 2>&1 &
server=$!
listening_server "$OUT/open_server.log"
run open_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 127.0.0.1 && pass "open_client: measures"
wait $server
expect_in open_server "gdr-write-bw: no token, and every address of this host listens"
if [ "$(grep -c "no token" "$OUT/open_server.log")" = 1 ]; then pass "open_server: says it once"; else fail "open_server: says it once" "$(cat "$OUT/open_server.log")"; fi
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 --bind 127.0.0.1 >"$OUT/bound_server.log" 2>&1 &
server=$!
listening_server "$OUT/bound_server.log"
run bound_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 127.0.0.1 && pass "bound_client: measures"
wait $server
if grep -q "no token" "$OUT/bound_server.log"; then fail "bound_server: no warning when bound to one address" "$(cat "$OUT/bound_server.log")"; else pass "bound_server: no warning when bound to one address"; fi

# --- a stranger knocking while a --concurrent server admits its lanes is turned away ----------
next_port
# Three lanes of 16 MiB buffers: setting up a lane takes the client long enough (allocation and
# registration under TCG) for knocks to land between the lanes.
LANES="--concurrent -d rxe0,rxe0,rxe0 -s 16777216 -n 3 --timeout 60"
gdr-write-bw -p $PORT $LANES >"$OUT/lanes_knocked_server.log" 2>&1 &
server=$!
listening_server "$OUT/lanes_knocked_server.log"
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
    fail "lanes_knocked: the run completes with strangers knocking" "client $client_status, server $server_status" "$(tail -3 "$OUT/lanes_knocked_server.log")"
fi
if grep -q "turned away 127.0.0.1:[0-9]* (connection [0-9]*): lane [12]:" "$OUT/lanes_knocked_server.log"; then
    pass "lanes_knocked: a stranger between the lanes was turned away"
else
    fail "lanes_knocked: a stranger between the lanes was turned away" "$(grep -c 'turned away' "$OUT/lanes_knocked_server.log") turned away, none while admitting lanes 1 and 2"
fi

# ============================================================================================
# The control channel against hostile peers, each case run as a real peer would (busybox nc, a real client, a real
# `gdrperf slurm`): what a hostile or broken peer can no longer do before it proved anything.
# ============================================================================================

# connected_at_least N: N connections to the server on $PORT are established (/proc/net/tcp
# state 01, the server's port as the local one). Returns non-zero if they never were.
connected_at_least() {
    port_hex=$(printf ':%04X' $PORT)
    polls=0
    while [ "$(awk -v port="$port_hex" '$4 == "01" && index($2, port) { n++ } END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)" -lt "$1" ]; do
        [ $polls -ge 300 ] && return 1
        polls=$((polls + 1)); sleep 0.2
    done
    return 0
}
# backlog_empty: the server on $PORT has accepted every connection made so far (the accept
# queue of its listening socket, rx_queue of state 0A in /proc/net/tcp, is empty).
backlog_empty() {
    port_hex=$(printf ':%04X' $PORT)
    polls=0
    while [ "$(awk -v port="$port_hex" '$4 == "0A" && index($2, port) { split($5, queue, ":"); if (queue[2] != "00000000") n++ } END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)" != 0 ]; do
        [ $polls -ge 300 ] && return 1
        polls=$((polls + 1)); sleep 0.2
    done
    return 0
}
# vm_hwm PID: the peak resident memory of process PID so far, in kB.
vm_hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
ESC=$(printf '\033')
BEL=$(printf '\007')

# --- 64 tricklers cannot hold the handshake: each is cut off at the handshake's deadline -----
# A trickler sends the 4-byte prefix of a 1000-byte message (under the 4 KiB cap before the
# proof, so the server reads on), then one byte every 150 ms: under the server's 200 ms read
# slice, so a read loop that looked at its deadline only after a silent slice would wait the
# whole 150 s the message takes. 64 of them from one address: 4 hold that address's handshake
# slots (HANDSHAKES_PER_SOURCE), the other 60 are told "busy" and closed at once (issue 44), so
# the listen backlog stays empty.
# `read -t` on a FIFO nobody writes is the 150 ms pause without a fork (64 loops of `sleep`
# would be 400 forks a second under TCG).
mkfifo "$OUT/never.fifo"
exec 8<>"$OUT/never.fifo"
trickle() { printf '\000\000\003\350'; while printf x 2>/dev/null; do read -t 0.15 _ <&8; done; }
next_port
GDRPERF_TOKEN=$SECRET gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 60 >"$OUT/trickle_server.log" 2>&1 &
server=$!
listening_server "$OUT/trickle_server.log"
tricklers=""
for _ in $(seq 64); do trickle | nc 127.0.0.1 $PORT >/dev/null 2>&1 & tricklers="$tricklers $!"; done
if connected_at_least 4 && backlog_empty; then
    pass "trickle: 64 tricklers are connected and accepted (or told busy)"
else
    fail "trickle: 64 tricklers are connected and accepted (or told busy)" "$(grep -c . /proc/net/tcp) sockets"
fi
# The client, from the tricklers' address, is told busy and connects again every 200 ms. With
# the deadline it gets a slot once the first trickler is cut off (2 s, PROOF_PATIENCE); without,
# after 150 s: far past its --timeout 30.
run trickle_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 30 --token "$SECRET" 127.0.0.1 &&
    pass "trickle_client: served behind 64 tricklers within its --timeout"
wait $server; server_status=$?
# A refusal is named only while the server still waits for its client (once admitted, handshakes
# still under way end unreported), and a trickler is cut off 2 s after it connected: a named
# trickler shows the client was admitted only after the tricklers had held every slot that long.
if [ "$server_status" = 0 ] && grep -q "turned away 127.0.0.1:[0-9]* (connection 1): peer 127.0.0.1:[0-9]* sent only [0-9]* of a message's 1000 bytes in 2 s while waiting for the client's proof: cut off at the deadline" "$OUT/trickle_server.log"; then
    pass "trickle_server: cut tricklers off at the handshake's deadline and named them, then served the client"
else
    fail "trickle_server: cut tricklers off at the handshake's deadline and named them, then served the client" "exit $server_status" "$(grep 'turned away' "$OUT/trickle_server.log" | head -3)"
fi
for pid in $tricklers; do kill "$pid" 2>/dev/null; done
for pid in $tricklers; do wait "$pid" 2>/dev/null; done
exec 8>&-

# --- a 1 MiB hello in place of the proof costs the server under 2 MiB --------------------------
# The frame a stranger sends instead of a proof: a hello whose parameters are a 1 MiB JSON array
# of zeros. Read and parsed whole (as the exchange once did) it is 1 MiB of bytes and ~16 MiB of JSON
# values; refused from its 4-byte prefix (4 KiB before the proof) it costs nothing.
big_hello() {
    printf '\000\020\000\000'    # 1048576, big-endian
    awk 'BEGIN {
        head = "{\"Hello\":{\"version\":4,\"gdrperf_version\":\"0\",\"host\":\"stranger\",\"parameters\":["
        tail = "0]}}"
        n = 1048576 - length(head) - length(tail)
        if (n % 2) { head = head " "; n-- }
        zeros = "0,"; while (length(zeros) < n) zeros = zeros zeros
        printf "%s%s%s", head, substr(zeros, 1, n), tail
    }'
}
big_hello >"$OUT/big_hello.bin"
if [ "$(wc -c <"$OUT/big_hello.bin")" = 1048580 ]; then pass "big_hello: the frame is a 4-byte prefix and 1 MiB of JSON"; else fail "big_hello: frame size" "$(wc -c <"$OUT/big_hello.bin")"; fi
next_port
GDRPERF_TOKEN=$SECRET gdr-write-bw -p $PORT -n 5 -s 4096 --timeout 30 >"$OUT/big_hello_server.log" 2>&1 &
server=$!
listening_server "$OUT/big_hello_server.log"
hwm_before=$(vm_hwm $server)
timeout 60 nc 127.0.0.1 $PORT <"$OUT/big_hello.bin" >/dev/null 2>&1
wait_for_log "$OUT/big_hello_server.log" "turned away" 30
hwm_after=$(vm_hwm $server)
if grep -q "sent a 1048576-byte message while waiting for the client's proof; the limit there is 4096" "$OUT/big_hello_server.log"; then
    pass "big_hello_server: refused the 1 MiB hello from its length prefix, before the proof"
else
    fail "big_hello_server: refused the 1 MiB hello from its length prefix" "$(tail -3 "$OUT/big_hello_server.log")"
fi
if [ -n "$hwm_before" ] && [ -n "$hwm_after" ] && [ $((hwm_after - hwm_before)) -lt 2048 ]; then
    pass "big_hello_server: its peak memory grew by less than 2 MiB (VmHWM $hwm_before -> $hwm_after kB)"
else
    fail "big_hello_server: its peak memory grew by less than 2 MiB" "VmHWM $hwm_before -> $hwm_after kB"
fi
# And it still serves its client.
run big_hello_client 0 gdr-write-bw -p $PORT -n 5 -s 4096 --token "$SECRET" 127.0.0.1 &&
    pass "big_hello_client: the server serves its client after the stranger"
wait $server

# --- a peer's host name and placements are printed and written cleaned and cut ----------------
# What a real peer controls and the other side prints or writes: its host name (the run header's
# Peer line, error messages, the CSV and JSON peer_host) and its placement labels, made of its -d
# device names (the Placements header line, the JSON peer_placements, and its own error when it
# cannot open that device, which it sends as its failure). The peer runs in a UTS namespace of
# its own whose host name carries ESC sequences (clear the screen, set the terminal title), a
# BEL and a newline that would fake a line of output. The kernel caps a host name at 64 bytes,
# so the long text is the peer's second -d entry: ESC, then 100000 characters (one argument
# holds at most 128 KiB, so a 1 MiB name cannot come from a real peer; the unit test
# gdrperf_exchange::tests::a_peers_hello_is_cleaned_and_cut_where_it_is_decoded sends one). The peer
# fails to open that device in round 2 and tells the other side why, naming it. The side that
# receives all this has a clean host name and clean arguments, so nothing it prints or writes
# may hold an ESC or BEL byte, a line starting with the faked text, or 1000 of the characters.
named_host() { name=$1; shift; unshare -u sh -c 'hostname "$1" && shift && exec "$@"' sh "$name" "$@"; }
evil_host=$(printf 'evil\033[2J\033]0;owned\007\nfake: line')
escaped_host='evil\u{1b}[2J\u{1b}]0;owned\u{7}\nfake: line'
long=$ESC[31m$(awk 'BEGIN { s = "N"; while (length(s) < 100000) s = s s; printf "%s", substr(s, 1, 100000) }')
thousand_n=$(awk 'BEGIN { s = "N"; while (length(s) < 1000) s = s s; printf "%s", substr(s, 1, 1000) }')
# harmless NAME FILE...: every FILE was written, and none holds an ESC or BEL byte, a line that
# starts with the faked text, or 1000 characters of the long name in a row.
harmless() {
    name=$1; shift
    missing=""; for file in "$@"; do [ -s "$file" ] || missing="$missing $file"; done
    raw=$(grep -lF -e "$ESC" -e "$BEL" "$@" 2>/dev/null)
    faked=$(grep -l '^fake: line' "$@" 2>/dev/null)
    uncut=$(grep -lF -- "$thousand_n" "$@" 2>/dev/null)
    if [ -z "$missing$raw$faked$uncut" ]; then
        pass "$name: no ESC, BEL, faked line or uncut name in the $# files printed and written"
    else
        fail "$name: no ESC, BEL, faked line or uncut name in what was printed and written" \
            "missing:$missing; raw ESC/BEL: $raw; faked line: $faked; uncut: $uncut"
    fi
}
mkdir -p "$OUT/peer_text"
# The server is the peer: the client prints its header and writes its CSV and JSON.
next_port
named_host "$evil_host" gdr-write-bw -p $PORT -n 5 -s 4096 -d "rxe0,$long" >"$OUT/peer_text/evil_server.log" 2>&1 &
server=$!
listening_server "$OUT/peer_text/evil_server.log"
gdr-write-bw -p $PORT -n 5 -s 4096 --csv "$OUT/peer_text/client.csv" --json "$OUT/peer_text/client.json" \
    127.0.0.1 >"$OUT/peer_text/client.log" 2>&1
wait $server
harmless peer_text_client "$OUT/peer_text/client.log" "$OUT/peer_text/client.csv" "$OUT/peer_text/client.json"
if grep -qF -- "$escaped_host" "$OUT/peer_text/client.log" && grep -qF -- "$escaped_host" "$OUT/peer_text/client.csv"; then
    pass "peer_text_client: the server's host name is printed and written escaped (\\u{1b}, \\u{7}, \\n)"
else
    fail "peer_text_client: the server's host name is printed and written escaped" "$(grep -h evil "$OUT/peer_text/client.log" "$OUT/peer_text/client.csv" | cut -c1-200 | head -3)"
fi
if grep -F 'host@\u{1b}[31mNNN' "$OUT/peer_text/client.log" | grep -q "more characters cut"; then
    pass "peer_text_client: the server's 100000-character placement is printed escaped and cut"
else
    fail "peer_text_client: the server's 100000-character placement is printed escaped and cut" "$(grep -h 'NNN' "$OUT/peer_text/client.log" | cut -c1-200 | head -3)"
fi
# In JSON a cleaned text's backslash is itself escaped: \u{1b} is written \\u{1b}.
if grep -q '"peer_host"' "$OUT/peer_text/client.json" 2>/dev/null &&
    grep -qF 'evil\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\nfake: line' "$OUT/peer_text/client.json" &&
    grep -q '"peer_placements"' "$OUT/peer_text/client.json" && grep -qF 'host@\\u{1b}[31mNNN' "$OUT/peer_text/client.json"; then
    pass "peer_text_client: the JSON holds the server's host name and placements escaped"
else
    fail "peer_text_client: the JSON holds the server's host name and placements escaped" "$(grep -h 'peer_host\|peer_placements' "$OUT/peer_text/client.json" 2>/dev/null | cut -c1-200)"
fi
# The client is the peer: the server prints what it says of it (it writes no result files).
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 >"$OUT/peer_text/server.log" 2>&1 &
server=$!
listening_server "$OUT/peer_text/server.log"
named_host "$evil_host" gdr-write-bw -p $PORT -n 5 -s 4096 -d "rxe0,$long" 127.0.0.1 >"$OUT/peer_text/evil_client.log" 2>&1
wait $server
harmless peer_text_server "$OUT/peer_text/server.log"
if grep -qF -- "$escaped_host" "$OUT/peer_text/server.log" && grep "reported an error" "$OUT/peer_text/server.log" | grep -F 'NNN' | grep -q "more characters cut"; then
    pass "peer_text_server: the client's host name and its failure naming the long device are printed escaped and cut"
else
    fail "peer_text_server: the client's host name and its failure are printed escaped and cut" "$(cut -c1-200 "$OUT/peer_text/server.log" | tail -4)"
fi

# --- a client asking for 10^5 lanes is refused -------------------------------------------------
# A real client lists as many placements as -d entries: 10^5 copies of rxe0, given as ten -d
# arguments (one argument holds at most 128 KiB). It does not refuse its own list; the server
# must. Its hello is then 1.2 MB, over the 1 MiB frame cap: refused from the prefix. 80000
# entries make a hello under the cap: refused by the count (placement::MAX_PAIRS, 64), before
# the server builds any second context, QP or buffer.
devices=$(seq 10000 | awk '{ printf "%s", (NR > 1 ? ",rxe0" : "rxe0") }')
next_port
gdr-write-bw -p $PORT -n 5 -s 4096 --bind 127.0.0.1 >"$OUT/lanes_refused_server.log" 2>&1 &
server=$!
listening_server "$OUT/lanes_refused_server.log"
run lanes_100000 2 gdr-write-bw -p $PORT -n 5 -s 4096 -d "$devices" -d "$devices" -d "$devices" -d "$devices" \
    -d "$devices" -d "$devices" -d "$devices" -d "$devices" -d "$devices" -d "$devices" 127.0.0.1
if grep -q "turned away 127.0.0.1:[0-9]* (connection 1): peer 127.0.0.1:[0-9]* sent a [0-9]*-byte message while waiting for the peer's hello; the limit there is 1048576" "$OUT/lanes_refused_server.log" &&
    kill -0 $server 2>/dev/null; then
    pass "lanes_100000: the server refused the 10^5-placement hello and keeps waiting"
else
    fail "lanes_100000: the server refused the 10^5-placement hello and keeps waiting" "$(tail -3 "$OUT/lanes_refused_server.log" | cut -c1-300)"
fi
run lanes_80000 2 gdr-write-bw -p $PORT -n 5 -s 4096 -d "$devices" -d "$devices" -d "$devices" -d "$devices" \
    -d "$devices" -d "$devices" -d "$devices" -d "$devices" 127.0.0.1
wait $server; server_status=$?
refusal="the peer lists 80000 memory placements and this side 1; at most 64 pair up (each round or lane builds QPs and registers memory)"
if [ "$server_status" != 0 ] && grep -qF "$refusal" "$OUT/lanes_refused_server.log" && grep -qF "$refusal" "$OUT/lanes_80000.log"; then
    pass "lanes_80000: the server refused 80000 placements by their count, and told the client"
else
    fail "lanes_80000: the server refused 80000 placements by their count, and told the client" "server exit $server_status" "$(tail -2 "$OUT/lanes_refused_server.log" | cut -c1-300)" "$(tail -2 "$OUT/lanes_80000.log" | cut -c1-300)"
fi

# --- a token of 8 characters is refused, with the fix named ---------------------------------
printf 's3cretTK\n' >"$OUT/weak.token"
chmod 600 "$OUT/weak.token"
next_port
run weak_token_flag 2 gdr-write-bw -p $PORT -n 5 -s 4096 --token s3cretTK &&
    expect_in weak_token_flag "a token needs 128" && expect_in weak_token_flag "gdrperf token" &&
    expect_in weak_token_flag "openssl rand -hex 16"
if grep -q "waiting for a client on" "$OUT/weak_token_flag.log"; then fail "weak_token_flag: never listens" "$(cat "$OUT/weak_token_flag.log")"; else pass "weak_token_flag: never listens"; fi
run weak_token_env 2 env GDRPERF_TOKEN=s3cretTK gdr-write-bw -p $PORT -n 5 -s 4096 127.0.0.1 &&
    expect_in weak_token_env "gdrperf token"
run weak_token_file 2 gdr-write-bw --loopback -n 5 -s 4096 --token-file "$OUT/weak.token" &&
    expect_in weak_token_file "gdrperf token"
made=$(gdrperf token)
if echo "$made" | grep -qx '[0-9a-f]\{32\}'; then pass "gdrperf token: prints 32 hex digits"; else fail "gdrperf token: prints 32 hex digits" "$made"; fi
run made_token 0 env GDRPERF_TOKEN="$made" gdr-write-bw --loopback -n 5 -s 4096 && pass "made_token: a token from gdrperf token is accepted"

# --- gdrperf slurm's children carry no token in their argv -----------------------------------
# Two ranks with --token on gdrperf slurm's command line; each bench child is read from /proc
# while it runs (-D 3: both live for seconds), found as a process whose argv[0] is the bench.
next_port
argv_rank() {
    SLURM_JOB_ID=78 SLURM_STEP_ID=0 SLURM_PROCID=$1 SLURM_NTASKS=2 SLURM_JOB_NODELIST='n[1-2]' \
    SLURM_TASKS_PER_NODE='1(x2)' SLURMD_NODENAME=n$(($1 + 1)) SLURM_LOCALID=0 \
    gdrperf slurm --peer-host 127.0.0.1 --base-port $PORT --out "$OUT/argv/slurm" -- \
        gdr-write-bw -D 3 -s 4096 --token "$SECRET" >"$OUT/argv_slurm$1.log" 2>&1
}
argv_rank 1 & rank_one=$!
argv_rank 0 & rank_zero=$!
children=""; leaked=""; handed=0; polls=0
while [ "$(echo $children | wc -w)" -lt 2 ] && [ $polls -lt 600 ] && { kill -0 $rank_zero 2>/dev/null || kill -0 $rank_one 2>/dev/null; }; do
    polls=$((polls + 1))
    for file in $(grep -l gdr-write-bw /proc/[0-9]*/cmdline 2>/dev/null); do
        pid=${file#/proc/}; pid=${pid%/cmdline}
        case " $children " in *" $pid "*) continue ;; esac
        args=$( { tr '\0' ' ' <"$file"; } 2>/dev/null)
        case ${args%% *} in *gdr-write-bw) ;; *) continue ;; esac
        children="$children $pid"
        case $args in *"$SECRET"*) leaked="$leaked $pid: $args" ;; esac
        { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "GDRPERF_TOKEN=$SECRET" && handed=$((handed + 1))
        echo "$pid: $args" >>"$OUT/argv_children.txt"
    done
    sleep 0.1
done
wait $rank_one; one_status=$?
wait $rank_zero; zero_status=$?
if [ "$(echo $children | wc -w)" = 2 ] && [ -z "$leaked" ]; then
    pass "slurm_argv: neither bench child's /proc/PID/cmdline holds the token"
else
    fail "slurm_argv: neither bench child's /proc/PID/cmdline holds the token" "children:$children" "leaked:$leaked"
fi
if [ "$handed" = 2 ] && [ "$one_status" = 0 ] && [ "$zero_status" = 0 ]; then
    pass "slurm_argv: both children got it in GDRPERF_TOKEN (/proc/PID/environ) and the step passes"
else
    fail "slurm_argv: both children got it in GDRPERF_TOKEN and the step passes" "$handed handed; ranks exit $zero_status, $one_status" "$(tail -3 "$OUT/argv_slurm0.log")"
fi
