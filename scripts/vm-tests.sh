#!/bin/sh
# Integration tests that need an RDMA device: run inside the Soft-RoCE VM by scripts/test.sh
#   scripts/softroce.sh run -- scripts/vm-tests.sh
# Runs every bench binary for real over rxe0 (loopback and server/client, several sizes, with
# --validate), checks the CSV and JSON they write, and checks that bad input fails cleanly.
# Ends with "N passed, N failed" and exits non-zero if anything failed.
# Iteration counts are small on purpose: under TCG the VM moves ~100 MB/s.
set -u
cd "$(dirname "$0")/.."
OUT=${VM_TEST_OUT:-/tmp/gdrperf-vm-tests}
rm -rf "$OUT"; mkdir -p "$OUT"
PASSED=0; FAILED=0; FAILURES=""
PORT=19000

pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); FAILURES="$FAILURES\n  $1"; echo "FAIL - $1"; shift; for line in "$@"; do echo "       $line"; done; }
next_port() { PORT=$((PORT + 1)); }

# run NAME EXPECTED_EXIT CMD...: runs CMD with output in $OUT/NAME.log, checks the exit code and
# that nothing panicked.
run() {
    name=$1; expected=$2; shift 2
    # A hung command must fail its test, not the whole suite: each gets VM_TEST_TIMEOUT seconds.
    timeout "${VM_TEST_TIMEOUT:-300}" "$@" >"$OUT/$name.log" 2>&1
    status=$?
    if grep -q "panicked\|RUST_BACKTRACE" "$OUT/$name.log"; then
        fail "$name" "panicked:" "$(tail -5 "$OUT/$name.log")"; return 1
    fi
    if [ "$status" != "$expected" ]; then
        fail "$name" "exit $status, expected $expected" "$(tail -8 "$OUT/$name.log")"; return 1
    fi
    return 0
}

# expect_in NAME TEXT: the log of NAME contains TEXT.
expect_in() {
    if grep -qF -- "$2" "$OUT/$1.log"; then pass "$1: says '$2'"; else fail "$1: says '$2'" "$(tail -5 "$OUT/$1.log")"; fi
}

# wait_for_log FILE TEXT [SECONDS]: waits until FILE contains TEXT (default at most 60 s; a
# loaded 2-core host can take that long to start a process in the VM). The condition to order
# on, instead of a fixed sleep: a server's "waiting for a client on" line says it listens.
# Returns non-zero if TEXT never came.
wait_for_log() {
    polls=0; limit=$(( ${3:-60} * 5 ))
    while ! grep -qF -- "$2" "$1" 2>/dev/null; do
        [ $polls -ge $limit ] && return 1
        polls=$((polls + 1)); sleep 0.2
    done
    return 0
}

# listening_server LOG: the bench server writing LOG is listening (its "waiting for a client" line).
listening_server() { wait_for_log "$1" "waiting for a client on"; }

# turned_away NAME PID TEXT: the server PID (its log $OUT/NAME.log) turned a client away naming
# TEXT and keeps waiting for the right one (a stranger cannot end it); then ends the server.
turned_away() {
    wait_for_log "$OUT/$1.log" "$3" 30
    # The server says it keeps waiting after it has told why it turned the client away.
    wait_for_log "$OUT/$1.log" "still waiting for the client" 10
    if grep -qF -- "$3" "$OUT/$1.log" && grep -qF "still waiting for the client" "$OUT/$1.log" && kill -0 "$2" 2>/dev/null; then
        pass "$1: turned the client away ('$3') and keeps waiting"
    else
        fail "$1: turned the client away ('$3') and keeps waiting" "$(tail -5 "$OUT/$1.log")"
    fi
    kill "$2" 2>/dev/null; wait "$2" 2>/dev/null
    return 0
}

# csv_awk FILE PROGRAM [-v NAME=VALUE ...]: awk PROGRAM over the data rows of the results CSV
# FILE, its leading "# key: value" lines skipped and its header read into col[NAME] = index, so
# that every check reads columns by name ($col["bytes"]), as output/columns.rs asks readers to
# (columns may be added anywhere). With -v need="a b c" it first prints "missing column X" for
# each named column the header lacks. The options come last so that there can be any number.
csv_awk() {
    csv_file=$1; csv_program=$2; shift 2
    awk -F, "$@" '
        /^#/ { next }
        !csv_header++ {
            for (i = 1; i <= NF; i++) col[$i] = i
            needed_count = split(need, needed, " ")
            for (k = 1; k <= needed_count; k++) if (!(needed[k] in col)) print "missing column " needed[k]
            next
        }
        '"$csv_program" "$csv_file"
}

# peak_in_every_row NAME FILE ROWS: every one of the ROWS data rows of bandwidth CSV FILE has a
# peak (bw_peak_mib_s positive) and no "no peak" note: perftest prints a peak for every size.
peak_in_every_row() {
    problems=$(csv_awk "$2" '
        { n++; if (!($col["bw_peak_mib_s"] + 0 > 0)) print "row " n " (" $col["bytes"] " B) has no peak: " $col["peak_note"] }
        END { if (n != rows) print "expected " rows " rows, found " n }' -v rows="$3" -v need="bytes bw_peak_mib_s peak_note")
    if [ -z "$problems" ]; then pass "$1: a peak in each of the $3 rows"; else fail "$1: a peak in every row" "$problems"; fi
}

# check_bw_csv NAME FILE ROWS: header has our columns, ROWS data rows, every number positive and
# finite (the peak may be empty), validation column as expected.
check_bw_csv() {
    name=$1; file=$2; rows=$3; validation=$4
    if [ ! -s "$file" ]; then fail "$name: csv written" "missing $file"; return; fi
    problems=$(csv_awk "$file" '
        {
            n++
            split("bytes iterations bw_peak_mib_s bw_avg_mib_s bw_peak_gbit_s bw_avg_gbit_s msg_rate_mpps", figures, " ")
            for (k = 1; k <= 7; k++) {
                v = $col[figures[k]]
                # The peak is empty where too few completions define one.
                if (figures[k] ~ /^bw_peak_/ && v == "") continue
                if (!(v + 0 > 0) || v ~ /nan|inf/) print "row " n " " figures[k] " not positive: " v
            }
            if ($col["validation"] != want) print "row " n " validation " $col["validation"] " not " want
        }
        END { if (n != rows) print "expected " rows " rows, found " n }' -v rows="$rows" -v want="$validation" \
        -v need="test bytes iterations bw_peak_mib_s bw_avg_mib_s bw_peak_gbit_s bw_avg_gbit_s msg_rate_mpps validation")
    if [ -z "$problems" ]; then pass "$name: csv has $rows rows of positive numbers, validation $validation"; else fail "$name: csv" "$problems"; fi
}

echo "# gdrperf VM integration tests on $(hostname), $(date)"
rdma link 2>/dev/null | head -3

# Each file of scripts/vm-tests.d holds one family's tests, sourced in name order so they
# share the helpers above and one VM boot. VM_TESTS=PATTERN runs only files matching it;
# several patterns, space-separated ("10 23 40"), run the files matching any.
# Each family's line says when it started and the suite's seconds so far; the family's own time
# is printed after it, so that a slow family can be found in CI's log.
SUITE_START=$(date +%s)
for part in scripts/vm-tests.d/*.sh; do
    chosen=""
    for pattern in ${VM_TESTS:-""}; do case $part in *$pattern*) chosen=1 ;; esac; done
    [ -n "$chosen" ] || [ -z "${VM_TESTS:-}" ] || continue
    part_start=$(date +%s)
    echo "# $part (at $(date -u +%H:%M:%S), $((part_start - SUITE_START)) s into the suite)"
    . "$part"
    echo "# $part took $(($(date +%s) - part_start)) s"
done
echo "# the suite took $(($(date +%s) - SUITE_START)) s"

printf "\nfailed tests:$FAILURES\n" | { [ "$FAILED" -gt 0 ] && cat || true; }
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
