#!/bin/sh
# The field's perftest parsers over the committed stdout and --out_json files of both tools
# (results/softroce/perftest-dropin, captured in one Soft-RoCE boot by its capture.sh with the
# same command lines, only the binary's name changed): awk on the #bytes rows (NF, $4, $NF),
# `tail -2 | head -1` for the last row, and jq's `.results.BW_average`, `.results.t_avg`,
# `.results.tps_average`, `.test_info.test`. Run by scripts/test.sh (no device needed); needs jq
# (Debian's jq package) and says so if it is missing. Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
DIR=results/softroce/perftest-dropin
PASSED=0; FAILED=0; seen=""
pass() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; shift; for line in "$@"; do echo "       $line"; done; }
command -v jq >/dev/null || { echo "perftest-dropin-tests: jq is missing (apt-get install jq)" >&2; exit 1; }

# rows FILE: the table rows a perftest parser takes: lines after a #bytes header up to a rule.
rows() { awk '/#bytes/ { table = 1; next } /^-+$/ { table = 0 } table && NF' "$1"; }
# shape FILE: "rows NF-set" of its table, e.g. "1 5".
shape() { rows "$1" | awk '{ n++; seen[NF] = 1 } END { s = ""; for (f in seen) s = s f; print n + 0, s }'; }

# table NAME FIELDS: both tools' stdout for NAME have the same number of rows, each FIELDS fields,
# numbers where perftest has them, and the last row right above the closing rule.
table() {
    for side in client server; do
        ours=$DIR/gdr-$1.$side.out theirs=$DIR/ib-$1.$side.out
        [ -f "$theirs" ] || { fail "$1 $side: no perftest log $theirs"; continue; }
        if ! grep -q '#bytes' "$theirs"; then
            # perftest's ib_read_lat server prints no table (the READs are the client's): no row
            # from gdrperf's either.
            if [ -z "$(rows "$ours")" ]; then pass "$1 $side: no row, as perftest's"; else fail "$1 $side: no row, as perftest's" "$(rows "$ours" | head -2)"; fi
            continue
        elif [ $side = server ] && [ "$(rows "$theirs" | wc -l)" = 1 ] && [ "$(rows "$ours" | wc -l)" -gt 1 ]; then
            # perftest's server prints the last size of a sweep only; gdrperf's prints each.
            if [ "$(rows "$ours" | tail -1 | awk '{ print $1, NF }')" = "$(rows "$theirs" | awk '{ print $1, NF }')" ]; then
                pass "$1 $side: the last row as perftest's only row ($(rows "$theirs" | awk '{ print $1 }') bytes, $2 fields), every size before it"
            else
                fail "$1 $side: the last row as perftest's only row" "$(rows "$ours" | tail -1)" "$(rows "$theirs")"
            fi
        elif [ "$(shape "$ours")" = "$(shape "$theirs")" ] && [ "$(shape "$ours" | cut -d' ' -f2)" = "$2" ]; then
            pass "$1 $side: $(shape "$ours" | cut -d' ' -f1) row(s) of $2 fields in both tools"
        else
            fail "$1 $side: same rows and fields as perftest" "gdrperf: $(shape "$ours"), perftest: $(shape "$theirs")"
        fi
        numbers=$(rows "$ours" | awk '{ for (i = 1; i <= NF; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) bad++ } END { print bad + 0 }')
        [ "$numbers" = 0 ] && pass "$1 $side: every field a number" || fail "$1 $side: every field a number" "$(rows "$ours" | head -3)"
        last=$(tail -2 "$ours" | head -1 | awk '{ print NF }'); rule=$(tail -1 "$ours")
        case $rule in ---*) ok=1 ;; *) ok=0 ;; esac
        if [ "$ok" = 1 ] && [ "$last" = "$2" ]; then pass "$1 $side: tail -2 | head -1 is the last row"; else fail "$1 $side: tail -2 | head -1 is the last row" "$(tail -2 "$ours")"; fi
    done
}
table write_bw 5
table write_bw_sweep 5
table write_bw_bidir 5
table send_bw 5
table read_lat 9
table send_lat_duration 4

# The figure a parser takes ($4: BW average) is a positive number in both tools.
for name in write_bw send_bw; do
    for tool in gdr ib; do
        value=$(rows "$DIR/$tool-$name.client.out" | awk 'NR == 1 { print $4 }')
        awk -v v="$value" 'BEGIN { exit !(v + 0 > 0) }' && pass "$tool $name: \$4 is the average ($value)" || fail "$tool $name: \$4 is the average" "'$value'"
    done
done

# jq: the keys field scripts read, from both tools' files, and the same test names.
jq_number() { jq -e "$2 | numbers" "$1" >/dev/null 2>&1; }
for pair in "write_bw .results.BW_average" "write_bw_sweep .results.BW_average" "write_bw_bidir .results.BW_average" \
    "send_bw .results.BW_average" "read_lat .results.t_avg" "read_lat .results.percentile_99" \
    "send_lat_duration .results.t_avg" "send_lat_duration .results.tps_average"; do
    set -- $pair
    # The test name is compared once a test, with its first key.
    case " $seen " in *" $1 "*) first_key= ;; *) first_key=$2; seen="${seen:-} $1" ;; esac
    for side in client server; do
        for tool in gdr ib; do
            file=$DIR/$tool-$1.$side.json
            if [ ! -s "$file" ]; then
                [ $tool = ib ] && echo "skip - $tool $1 $side: perftest wrote no --out_json file here" && continue
                fail "$tool $1 $side: $file exists"; continue
            fi
            if [ $tool = gdr ] && [ ! -s "$DIR/ib-$1.$side.json" ] && [ -s "$DIR/ib-$1.$side.out" ]; then
                # perftest's side wrote no report (ib_read_lat's server): gdrperf's has no results.
                if [ "$(jq -c '[.results, .all_results]' "$file")" = '[{},[]]' ]; then
                    pass "gdr $1 $side: no results, where perftest writes no report"
                else
                    fail "gdr $1 $side: no results, where perftest writes no report" "$(jq -c .results "$file")"
                fi
                continue
            fi
            if [ $tool = ib ] && ! jq . "$file" >/dev/null 2>&1; then
                # Debian 12's perftest 6.06 writes keys without quotes (test_info: {): not JSON.
                echo "skip - ib $1 $side: this perftest's --out_json file is not JSON ($(sed -n 2p "$file"))"; continue
            fi
            if jq_number "$file" "$2"; then pass "$tool $1 $side: jq $2 is a number ($(jq "$2" "$file"))"; else fail "$tool $1 $side: jq $2 is a number" "$(head -c 300 "$file")"; fi
        done
        ours=$DIR/gdr-$1.$side.json theirs=$DIR/ib-$1.$side.json
        if [ -s "$theirs" ] && [ "$2" = "$first_key" ]; then
            # perftest's test name, read as text (this perftest's file is not JSON everywhere).
            name=$(sed -n 's/^ *"*test"*: *"\{0,1\}\([A-Za-z_]*\)"\{0,1\},\{0,1\} *$/\1/p' "$theirs" | head -1)
            if [ "$(jq -r .test_info.test "$ours")" = "$name" ]; then
                pass "$1 $side: test_info.test as perftest's ($name)"
            else
                fail "$1 $side: test_info.test as perftest's" "$(jq -r .test_info.test "$ours") vs '$name'"
            fi
        fi
    done
done
# Every size of a sweep is kept (perftest keeps the last one only), the last one under results.
sizes=$(jq '.all_results | length' "$DIR/gdr-write_bw_sweep.client.json")
last=$(jq '.all_results[-1] == .results' "$DIR/gdr-write_bw_sweep.client.json")
rows_out=$(rows "$DIR/gdr-write_bw_sweep.client.out" | wc -l)
if [ "$sizes" = "$rows_out" ] && [ "$sizes" -gt 1 ] && [ "$last" = true ]; then
    pass "write_bw_sweep: all_results holds every size ($sizes), results the last"
else
    fail "write_bw_sweep: all_results holds every size, results the last" "$sizes sizes, $rows_out rows, last $last"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
