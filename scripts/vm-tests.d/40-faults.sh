# Faults, interruption and the exchange's guard, over rxe0: sourced by scripts/vm-tests.sh
# (helpers: run, pass, fail, expect_in, next_port; outputs under $OUT).
#
# A benchmark used for acceptance must never hang a campaign, never lose what it measured and
# never hand its memory keys to whoever connects. Each case below starts a real server and
# client, breaks something on purpose, and checks the exit status, the message, the time it
# took and what the result files kept. Sweeps use -a -D 1 so that every size takes a second
# under TCG and a fault lands inside a size, not between two.

SWEEP="-a -D 1 --warmup 4"
# Tokens of 128 random bits (the benches refuse weaker ones): the server's, and a wrong one.
TOKEN=7f3a9c01d2e84b56a0c4e1f29b3d5c68
WRONG_TOKEN=c41e07b9a2d35f8e61a0b7c92d4e3f15

# rows FILE: data rows of a CSV file (0 when missing).
rows() { if [ -f "$1" ]; then echo $(( $(grep -vc '^#' "$1") - 1 )); else echo 0; fi; }

# wait_rows FILE N: waits up to 60 s until FILE has N data rows.
wait_rows() {
    waited=0
    while [ "$(rows "$1")" -lt "$2" ]; do
        waited=$((waited + 1)); [ $waited -gt 300 ] && return 1
        sleep 0.2
    done
}

# wait_exit PID SECONDS: waits for PID (a child) at most SECONDS; sets $status and $took.
# Returns 1 (after killing it) if it was still running.
wait_exit() {
    started=$(date +%s); waited=0
    while kill -0 "$1" 2>/dev/null; do
        waited=$((waited + 1))
        if [ $waited -gt $(($2 * 5)) ]; then kill -9 "$1" 2>/dev/null; wait "$1"; status=hung; took=$2; return 1; fi
        sleep 0.2
    done
    wait "$1"; status=$?; took=$(( $(date +%s) - started ))
}

# reap PID...: ends what is left of a case (never a bare `wait`, which would hang on a survivor).
reap() { for pid in "$@"; do kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done; return 0; }

# check_status NAME EXPECTED LOG: pass if $status is EXPECTED and LOG shows no panic.
check_status() {
    if grep -q "panicked\|RUST_BACKTRACE" "$3"; then fail "$1: no panic" "$(tail -5 "$3")"; return; fi
    if [ "$status" = "$2" ]; then pass "$1: exits $2 (after ${took:-?} s)"; else fail "$1: exits $2" "exit $status" "$(tail -5 "$3")"; fi
}

# csv_intact NAME FILE MIN: FILE has at least MIN data rows, every line with the header's
# number of fields (no row cut in half), and fewer than the 23 of a whole sweep.
csv_intact() {
    n=$(rows "$2")
    broken=$(awk -F, '/^#/ { next } !fields { fields = NF; next } NF != fields { print "line " NR " has " NF " fields" }' "$2" 2>/dev/null)
    if [ "$n" -ge "$3" ] && [ "$n" -lt 23 ] && [ -z "$broken" ]; then
        pass "$1: csv keeps the $n sizes finished before"
    else
        fail "$1: csv keeps the sizes finished before" "$n rows (want $3..22) $broken"
    fi
}

# start_pair NAME [SERVER OPTIONS] -- [CLIENT OPTIONS]: a server and a client of gdr-write-bw on
# a fresh port, client CSV in $OUT/NAME.csv; sets $server and $client.
start_pair() {
    name=$1; shift
    server_options=""; while [ "$1" != "--" ]; do server_options="$server_options $1"; shift; done; shift
    next_port
    gdr-write-bw -p $PORT $SWEEP $server_options >"$OUT/${name}_server.log" 2>&1 &
    server=$!
    listening_server "$OUT/${name}_server.log"
    gdr-write-bw -p $PORT $SWEEP "$@" --csv "$OUT/$name.csv" --json "$OUT/$name.json" 127.0.0.1 >"$OUT/$name.log" 2>&1 &
    client=$!
}

# --- the server dies (kill -9) mid-sweep: the client names it and the size, keeps its rows -----
start_pair kill_server --
if wait_rows "$OUT/kill_server.csv" 2; then
    kill -9 $server
    wait_exit $client 12; check_status kill_server 2 "$OUT/kill_server.log"
    expect_in kill_server "with peer softroce (127.0.0.1:$PORT)"
    # Not a key problem: whatever RDMA error followed, the message says the peer went away.
    expect_in kill_server "peer 127.0.0.1:$PORT closed the connection"
    if grep -qE "at [0-9]+ bytes with peer" "$OUT/kill_server.log"; then pass "kill_server: names the size"; else fail "kill_server: names the size" "$(tail -3 "$OUT/kill_server.log")"; fi
    csv_intact kill_server "$OUT/kill_server.csv" 2
    if grep -q '"status": "failed"' "$OUT/kill_server.json" && grep -q 'closed the connection' "$OUT/kill_server.json"; then
        pass "kill_server: json records the failure"
    else
        fail "kill_server: json records the failure" "$(tail -8 "$OUT/kill_server.json")"
    fi
else
    fail "kill_server: sweep started" "$(tail -5 "$OUT/kill_server.log")"; kill -9 $server $client
fi
reap $server $client

# --- the client dies (kill -9) mid-sweep: the passive server names it and the size -----------
start_pair kill_client --
if wait_rows "$OUT/kill_client.csv" 2; then
    kill -9 $client
    wait_exit $server 12; check_status kill_client_server 2 "$OUT/kill_client_server.log"
    expect_in kill_client_server "closed the connection while waiting for the client to finish the size"
    if grep -qE "at [0-9]+ bytes with peer softroce \(127\.0\.0\.1:[0-9]+\)" "$OUT/kill_client_server.log"; then
        pass "kill_client: the server names the size and the peer"
    else
        fail "kill_client: the server names the size and the peer" "$(tail -3 "$OUT/kill_client_server.log")"
    fi
    csv_intact kill_client "$OUT/kill_client.csv" 2
else
    fail "kill_client: sweep started" "$(tail -5 "$OUT/kill_client.log")"; kill -9 $server $client
fi
reap $server $client

# --- SIGINT to the client: drain, keep the rows, exit 130; a second client is turned away -----
start_pair sigint --
if wait_rows "$OUT/sigint.csv" 2; then
    # One client per run: a second one hears that the server is busy (not with whom).
    run busy 2 gdr-write-bw -p $PORT -n 5 127.0.0.1 && pass "busy: a second client exits 2"
    expect_in busy "busy: this server is already serving a client"
    kill -INT $client
    wait_exit $client 10; check_status sigint 130 "$OUT/sigint.log"
    expect_in sigint "stopped by SIGINT at"
    csv_intact sigint "$OUT/sigint.csv" 2
    # The exit message says how many sizes finished: the CSV and the JSON hold exactly those.
    finished=$(sed -n 's/.*stopped by SIGINT at [0-9]* bytes, \([0-9]*\) of 23 sizes finished.*/\1/p' "$OUT/sigint.log")
    json_rows=$(grep -c '"bw_avg_mib_s"' "$OUT/sigint.json")
    if [ -n "$finished" ] && [ "$finished" = "$(rows "$OUT/sigint.csv")" ] && [ "$finished" = "$json_rows" ]; then
        pass "sigint: csv and json hold the $finished finished sizes"
    else
        fail "sigint: csv and json hold the finished sizes" "message says '$finished', csv $(rows "$OUT/sigint.csv"), json $json_rows"
    fi
    grep -q '"status": "interrupted"' "$OUT/sigint.json" && pass "sigint: json says interrupted" || fail "sigint: json says interrupted" "$(tail -8 "$OUT/sigint.json")"
    wait_exit $server 10; check_status sigint_server 2 "$OUT/sigint_server.log"
    expect_in sigint_server "the client was stopped by SIGINT"
else
    fail "sigint: sweep started" "$(tail -5 "$OUT/sigint.log")"; kill -9 $server $client
fi
reap $server $client

# --- SIGTERM to the client: 143 ------------------------------------------------------------------
start_pair sigterm --
if wait_rows "$OUT/sigterm.csv" 2; then
    kill -TERM $client
    wait_exit $client 10; check_status sigterm 143 "$OUT/sigterm.log"
    expect_in sigterm "stopped by SIGTERM"
    csv_intact sigterm "$OUT/sigterm.csv" 2
else
    fail "sigterm: sweep started" "$(tail -5 "$OUT/sigterm.log")"; kill -9 $client
fi
reap $server $client

# --- SIGINT to the server: 130 there, the client names the server's reason and keeps its rows --
start_pair sigint_at_server --
if wait_rows "$OUT/sigint_at_server.csv" 2; then
    kill -INT $server
    wait_exit $server 10; check_status sigint_at_server_server 130 "$OUT/sigint_at_server_server.log"
    wait_exit $client 10; check_status sigint_at_server 2 "$OUT/sigint_at_server.log"
    expect_in sigint_at_server "the server was stopped by SIGINT"
    csv_intact sigint_at_server "$OUT/sigint_at_server.csv" 2
else
    fail "sigint_at_server: sweep started" "$(tail -5 "$OUT/sigint_at_server.log")"; kill -9 $server $client
fi
reap $server $client

# --- two SIGINTs in a row: out at once, still 130 -------------------------------------------------
start_pair double_sigint --
if wait_rows "$OUT/double_sigint.csv" 2; then
    kill -INT $client; kill -INT $client
    wait_exit $client 5; check_status double_sigint 130 "$OUT/double_sigint.log"
else
    fail "double_sigint: sweep started" "$(tail -5 "$OUT/double_sigint.log")"; kill -9 $client
fi
reap $server $client

# --- loopback: Ctrl-C (130) and SIGTERM (143) keep the finished sizes, every engine, and an
# error completion mid-size names the size: benches/tests/simulated_nic.rs and
# simulated_latency.rs (docs/simulated-nic.md names the tests).

# --- the other engines: Ctrl-C keeps their finished sizes, a dead server is named -------------
for bench in gdr-send-bw gdr-read-lat gdr-write-lat gdr-send-lat; do
    command -v $bench >/dev/null || continue
    tag=$(echo $bench | sed 's/^gdr-//; s/-/_/g')
    next_port
    $bench -p $PORT $SWEEP >"$OUT/${tag}_sigint_server.log" 2>&1 &
    server=$!
    $bench -p $PORT $SWEEP --csv "$OUT/${tag}_sigint.csv" 127.0.0.1 >"$OUT/${tag}_sigint.log" 2>&1 &
    client=$!
    if wait_rows "$OUT/${tag}_sigint.csv" 2; then
        kill -INT $client
        wait_exit $client 10; check_status ${tag}_sigint 130 "$OUT/${tag}_sigint.log"
        csv_intact ${tag}_sigint "$OUT/${tag}_sigint.csv" 2
        wait_exit $server 15; check_status ${tag}_sigint_server 2 "$OUT/${tag}_sigint_server.log"
        expect_in ${tag}_sigint_server "the client was stopped by SIGINT"
    else
        fail "${tag}_sigint: sweep started" "$(tail -5 "$OUT/${tag}_sigint.log")"
    fi
    reap $server $client
    next_port
    $bench -p $PORT $SWEEP >"$OUT/${tag}_kill_server_server.log" 2>&1 &
    server=$!
    $bench -p $PORT $SWEEP --csv "$OUT/${tag}_kill_server.csv" 127.0.0.1 >"$OUT/${tag}_kill_server.log" 2>&1 &
    client=$!
    if wait_rows "$OUT/${tag}_kill_server.csv" 2; then
        kill -9 $server
        wait_exit $client 12; check_status ${tag}_kill_server 2 "$OUT/${tag}_kill_server.log"
        if grep -qE "at [0-9]+ bytes with peer softroce" "$OUT/${tag}_kill_server.log"; then
            pass "${tag}_kill_server: names the size and the peer"
        else
            fail "${tag}_kill_server: names the size and the peer" "$(tail -3 "$OUT/${tag}_kill_server.log")"
        fi
        csv_intact ${tag}_kill_server "$OUT/${tag}_kill_server.csv" 2
    else
        fail "${tag}_kill_server: sweep started" "$(tail -5 "$OUT/${tag}_kill_server.log")"
    fi
    reap $server $client
done

# --- a ping-pong cut short by Ctrl-C under -n: the server blames the stop, not a miscount -----
# -n 2000: two sizes' rows come in seconds under TCG (at -n 20000 they took over a minute on a
# loaded host and the check gave up), and every later size still takes long enough that the
# signal lands inside the sweep (an 8 MiB round trip is about 0.3 s here).
if command -v gdr-write-lat >/dev/null; then
    next_port
    gdr-write-lat -p $PORT -a -n 2000 >"$OUT/write_lat_iterations_server.log" 2>&1 &
    server=$!
    listening_server "$OUT/write_lat_iterations_server.log"
    gdr-write-lat -p $PORT -a -n 2000 --csv "$OUT/write_lat_iterations.csv" 127.0.0.1 >"$OUT/write_lat_iterations.log" 2>&1 &
    client=$!
    if wait_rows "$OUT/write_lat_iterations.csv" 2; then
        kill -INT $client
        wait_exit $client 10; check_status write_lat_iterations 130 "$OUT/write_lat_iterations.log"
        wait_exit $server 10; check_status write_lat_iterations_server 2 "$OUT/write_lat_iterations_server.log"
        expect_in write_lat_iterations_server "the client was stopped by SIGINT"
    else
        fail "write_lat_iterations: sweep started" "$(tail -5 "$OUT/write_lat_iterations.log")"
    fi
    reap $server $client
fi

# --- the port is taken: a clear message before anything is measured ---------------------------
next_port
gdr-write-bw -p $PORT -n 5 >"$OUT/port_owner.log" 2>&1 &
owner=$!
wait_for_log "$OUT/port_owner.log" "waiting for a client on" || fail "port_owner: listening" "$(tail -3 "$OUT/port_owner.log")"
run port_in_use 2 gdr-write-bw -p $PORT -n 5 && expect_in port_in_use "cannot listen on 0.0.0.0:$PORT"
expect_in port_in_use "Address already in use"
# Background jobs of a script start with SIGINT ignored: TERM ends a server still waiting.
kill -TERM $owner; wait_exit $owner 5; reap $owner

# --- --bind: the server listens where told -------------------------------------------------------
next_port
gdr-write-bw -p $PORT -n 5 --bind 127.0.0.1 >"$OUT/bind_server.log" 2>&1 &
server=$!
listening_server "$OUT/bind_server.log"
run bind 0 gdr-write-bw -p $PORT -n 5 127.0.0.1 && pass "bind: a client reaches a server bound to 127.0.0.1"
wait_exit $server 10; check_status bind_server 0 "$OUT/bind_server.log"
expect_in bind_server "waiting for a client on 127.0.0.1:$PORT"

# --- unreachable host: a bounded wait and a clear message, no retry loop without end ---------
next_port
started=$(date +%s)
# 192.0.2.1: TEST-NET-1 (RFC 5737), routed nowhere; the VM has no network beyond lo anyway.
run unreachable 2 gdr-write-bw -p $PORT --timeout 2 -n 5 192.0.2.1 && expect_in unreachable "cannot reach the server at 192.0.2.1:$PORT within 2 s"
took=$(( $(date +%s) - started ))
# The decision is "gives up, no retry loop without end" (run's own limit is 300 s): a bound far
# above the 2 s asked for, so a loaded host cannot fail it, and far below run's limit.
if [ $took -le 60 ]; then pass "unreachable: gives up after the timeout (${took} s)"; else fail "unreachable: gives up after the timeout" "took $took s"; fi

# --- a different test on each side: refused at the exchange, both named -----------------------
if command -v gdr-send-bw >/dev/null; then
    next_port
    gdr-write-bw -p $PORT -n 5 >"$OUT/other_test_server.log" 2>&1 &
    server=$!
    listening_server "$OUT/other_test_server.log"
    run other_test 2 gdr-send-bw -p $PORT -n 5 127.0.0.1 && expect_in other_test "the server 127.0.0.1:$PORT runs gdr-write-bw, this is gdr-send-bw"
    turned_away other_test_server $server "runs gdr-send-bw, this is gdr-write-bw"
fi

# --- the token: matching secrets connect; a wrong or missing one sees no key and cannot end the
# server, which turns it away, names it, and keeps waiting for the right client ---------------
next_port
GDRPERF_TOKEN=$TOKEN gdr-write-bw -p $PORT -n 5 >"$OUT/token_server.log" 2>&1 &
server=$!
listening_server "$OUT/token_server.log"
run token_match 0 gdr-write-bw -p $PORT -n 5 --token $TOKEN 127.0.0.1 && pass "token: matching tokens measure"
wait_exit $server 10; check_status token_match_server 0 "$OUT/token_server.log"

next_port
gdr-write-bw -p $PORT -n 5 --token $TOKEN >"$OUT/token_wrong_server.log" 2>&1 &
server=$!
listening_server "$OUT/token_wrong_server.log"
run token_wrong 2 gdr-write-bw -p $PORT -n 5 --token $WRONG_TOKEN 127.0.0.1 && expect_in token_wrong "authentication with peer 127.0.0.1:$PORT failed: the server refused: wrong token"
# The same server run then serves the right client.
run token_after_wrong 0 gdr-write-bw -p $PORT -n 5 --token $TOKEN 127.0.0.1 && pass "token: after a wrong-token client, the right one measures"
wait_exit $server 10; check_status token_wrong_server 0 "$OUT/token_wrong_server.log"
expect_in token_wrong_server "turned away 127.0.0.1:"
expect_in token_wrong_server "wrong token: the client's proof does not match"

next_port
gdr-write-bw -p $PORT -n 5 --token $TOKEN >"$OUT/token_missing_server.log" 2>&1 &
server=$!
listening_server "$OUT/token_missing_server.log"
run token_missing 2 gdr-write-bw -p $PORT -n 5 127.0.0.1 && expect_in token_missing "the server requires a token and this client has none"
turned_away token_missing_server $server "the client refused"

next_port
gdr-write-bw -p $PORT -n 5 >"$OUT/token_one_sided_server.log" 2>&1 &
server=$!
listening_server "$OUT/token_one_sided_server.log"
run token_one_sided 2 gdr-write-bw -p $PORT -n 5 --token $TOKEN 127.0.0.1 && expect_in token_one_sided "this client has a token and the server has none"
turned_away token_one_sided_server $server "the client refused: this client has a token"

# What a stranger without the token receives: the challenge, then the refusal; no rkey. The
# server keeps waiting until --accept-timeout (12 s: the knock takes a second or two; every second of
# it is test time), then exits 2 saying whom it turned away.
if command -v nc >/dev/null; then
    next_port
    gdr-write-bw -p $PORT -n 5 --token $TOKEN --accept-timeout 12 >"$OUT/stranger_server.log" 2>&1 &
    server=$!
    # The stranger knocks once the server listens (its "waiting for a client" line), not after a
    # guessed second: before it, nc found no listener and the server turned nobody away.
    wait_for_log "$OUT/stranger_server.log" "waiting for a client on" || fail "stranger_server: listening" "$(tail -3 "$OUT/stranger_server.log")"
    # A proof with a made-up tag, framed as the protocol wants (4-byte length, JSON), in the
    # protocol version of this checkout (an older one is refused for its version, not its tag).
    protocol=$(sed -n 's/^pub const PROTOCOL_VERSION: u32 = \([0-9]*\);.*/\1/p' crates/gdrperf-exchange/src/protocol.rs)
    body='{"Proof":{"version":'$protocol',"nonce":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"tag":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}}'
    # nc's input stays open until the server has said it turned the stranger away and the refusal
    # has reached nc's output (conditions, at most 30 s each), so nc never hangs up before the reply.
    { printf "\\000\\000\\000\\$(printf %o ${#body})"; printf %s "$body"
      wait_for_log "$OUT/stranger_server.log" "turned away" 30; wait_for_log "$OUT/stranger.bin" "wrong token" 30; } |
        nc 127.0.0.1 $PORT >"$OUT/stranger.bin" 2>&1
    wait_exit $server 40; check_status stranger_server 2 "$OUT/stranger_server.log"
    expect_in stranger_server "no client was admitted on 0.0.0.0:$PORT within 12 s (--accept-timeout); 1 connection(s) turned away"
    if grep -q '"Challenge"' "$OUT/stranger.bin" && grep -q "wrong token" "$OUT/stranger.bin" && ! grep -qi 'rkey\|"Hello"' "$OUT/stranger.bin"; then
        pass "stranger: got the challenge and a refusal, no hello and no rkey"
    else
        fail "stranger: got the challenge and a refusal, no hello and no rkey" "$(tr -c ' -~' . <"$OUT/stranger.bin" | head -c 400)"
    fi
fi

# --- work completion errors: status, operation, size and a hint --------------------------------
completion_test=$(ls -t target/release/deps/completion_errors-* 2>/dev/null | grep -v '\.d$' | head -1)
if [ -n "$completion_test" ]; then
    if run completion_errors 0 "$completion_test" --test-threads 1 --nocapture; then pass "completion errors: 5 cases on rxe0"; fi
    expect_in completion_errors "checked: work completion error: remote access error"
    expect_in completion_errors "on RDMA READ of 512 bytes"
    # Memory opened as gdr-read-lat's server opens it (remote read only) takes no RDMA WRITE:
    # rxe's QP check answers "invalid request", its region check "remote access error".
    expect_in completion_errors "checked: work completion error: remote invalid request error (status 9"
else
    fail "completion errors" "not built: cargo test --release -p gdrperf --test completion_errors --no-run"
fi
