#!/usr/bin/env bash
# Tests of the plot scripts: each one run on the example result files committed under
# results/softroce/examples (made by real gdr-* runs in the Soft-RoCE VM) and, for the matrix,
# results/fleet/example (a simulated job: gdrperf fleet simulate --write, see its README),
# checking that a PNG is written, and that bad input fails with a message instead of a traceback.
#   scripts/plot-tests.sh
# matplotlib comes from PyPI into a virtual environment under .cache/plot-venv (git-ignored),
# made the first time; python3-venv is installed with apt-get if the machine lacks it.
# Ends with "N passed, N failed"; exit status non-zero if anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=.cache/plot-venv
EXAMPLES=results/softroce/examples
FLEET=results/fleet/example
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
PASSED=0; FAILED=0

# shellcheck source=scripts/plot-venv.sh
. scripts/plot-venv.sh

# png NAME FILE CMD...: CMD exits 0 and FILE is a non-empty PNG.
png() {
    local name=$1 file=$2; shift 2
    if ! "$@" >"$OUT/$name.log" 2>&1; then
        FAILED=$((FAILED + 1)); echo "FAIL - $name: exit $?"; tail -5 "$OUT/$name.log" | sed 's/^/       /'; return
    fi
    if [ -s "$file" ] && [ "$(head -c 8 "$file" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
        PASSED=$((PASSED + 1)); echo "ok   - $name: $(wc -c <"$file") byte PNG"
    else
        FAILED=$((FAILED + 1)); echo "FAIL - $name: $file is not a PNG"
    fi
}

# expect_line NAME TEXT: the log of the command run as NAME holds TEXT (what a plot says it drew).
expect_line() {
    if grep -qF -- "$2" "$OUT/$1.log"; then
        PASSED=$((PASSED + 1)); echo "ok   - $1: says '$2'"
    else
        FAILED=$((FAILED + 1)); echo "FAIL - $1: wanted '$2'"; tail -3 "$OUT/$1.log" | sed 's/^/       /'
    fi
}

# refuses NAME TEXT CMD...: CMD exits 2 (could not run or bad input, as every gdrperf tool),
# says TEXT in one line, shows no Python traceback.
refuses() {
    local name=$1 text=$2; shift 2
    "$@" >"$OUT/$name.log" 2>&1
    local status=$?
    if [ $status = 2 ] && grep -qF -- "$text" "$OUT/$name.log" && ! grep -q Traceback "$OUT/$name.log" \
        && [ "$(wc -l <"$OUT/$name.log")" -le 2 ]; then
        PASSED=$((PASSED + 1)); echo "ok   - $name: refused ($text)"
    else
        FAILED=$((FAILED + 1)); echo "FAIL - $name: exit $status, wanted a message with '$text'"; tail -5 "$OUT/$name.log" | sed 's/^/       /'
    fi
}

ensure_matplotlib
PY="$VENV/bin/python"
echo "# plot tests with matplotlib $("$PY" -c 'import matplotlib; print(matplotlib.__version__)')"

png plot_bw_two_runs "$OUT/bw.png" \
    "$PY" scripts/plot_bw.py "$EXAMPLES/write_bw-run1.json" "$EXAMPLES/write_bw-run2.csv" -o "$OUT/bw.png"
png plot_bw_peak_mib "$OUT/peak.png" \
    "$PY" scripts/plot_bw.py "$EXAMPLES/write_bw-run1.csv" --metric bw_peak_mib_s -o "$OUT/peak.png"
png plot_lat_overlaid "$OUT/lat.png" \
    "$PY" scripts/plot_lat.py "$EXAMPLES"/read_lat-hdr/*.hgrm --log-y -o "$OUT/lat.png"
png plot_lat_auto_axis "$OUT/lat-auto.png" \
    "$PY" scripts/plot_lat.py "$EXAMPLES"/read_lat-hdr/*.hgrm -o "$OUT/lat-auto.png"
png plot_compare_runs "$OUT/ratio.png" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/write_bw-run1.json" "$EXAMPLES/write_bw-run2.json" -o "$OUT/ratio.png"
png plot_compare_latency_runs "$OUT/lat-ratio.png" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/read_lat-2.json" "$EXAMPLES/read_lat-2.csv" -o "$OUT/lat-ratio.png"
png plot_matrix_with_findings "$OUT/matrix.png" \
    "$PY" scripts/plot_matrix.py "$FLEET/matrix.csv" --findings "$FLEET/fleet.json" -o "$OUT/matrix.png"
png plot_matrix_alone "$OUT/matrix-alone.png" \
    "$PY" scripts/plot_matrix.py "$FLEET/matrix.csv" -o "$OUT/matrix-alone.png"

refuses plot_bw_missing_column "no numeric 't_typical_us' column" \
    "$PY" scripts/plot_bw.py "$EXAMPLES/write_bw-run1.json" --metric t_typical_us -o "$OUT/x.png"
refuses plot_lat_not_hgrm "has no percentile rows" \
    "$PY" scripts/plot_lat.py "$EXAMPLES/write_bw-run1.csv" -o "$OUT/x.png"
refuses plot_compare_one_mode "--by mem needs the baseline" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/write_bw-run1.json" --by mem -o "$OUT/x.png"
refuses plot_compare_one_file "give BASE and NEW" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/write_bw-run1.json" -o "$OUT/x.png"
refuses plot_matrix_not_a_matrix "no column 'client_node'" \
    "$PY" scripts/plot_matrix.py "$EXAMPLES/write_bw-run1.csv" -o "$OUT/x.png"
refuses plot_matrix_findings_not_a_verdict "no 'findings' list" \
    "$PY" scripts/plot_matrix.py "$FLEET/matrix.csv" --findings "$FLEET/plan.json" -o "$OUT/x.png"

refuses plot_bw_missing_input "results/none.json: No such file or directory" \
    "$PY" scripts/plot_bw.py results/none.json -o "$OUT/x.png"
refuses plot_lat_missing_input "none.hgrm: No such file or directory" \
    "$PY" scripts/plot_lat.py "$OUT/none.hgrm" -o "$OUT/x.png"
refuses plot_compare_missing_input "none.json: No such file or directory" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/write_bw-run1.json" "$OUT/none.json" -o "$OUT/x.png"
refuses plot_matrix_missing_input "none.csv: No such file or directory" \
    "$PY" scripts/plot_matrix.py "$OUT/none.csv" -o "$OUT/x.png"
echo '{"something": 1}' >"$OUT/other.json"
refuses plot_compare_not_a_result "no 'results' list" \
    "$PY" scripts/plot_compare.py "$OUT/other.json" "$EXAMPLES/write_bw-run1.json" -o "$OUT/x.png"
echo '{"results": [' >"$OUT/cut.json"
refuses plot_bw_cut_json "cannot read the input: JSONDecodeError" \
    "$PY" scripts/plot_bw.py "$OUT/cut.json" -o "$OUT/x.png"
# A link planted at the output name is refused, never written through (every gdrperf writer's
# rule); what it points to is left as it was.
echo "not an image" >"$OUT/target.txt"
for kind in bw compare; do
    ln -sf "$OUT/target.txt" "$OUT/planted-$kind.png"
done
refuses plot_bw_planted_link "is a symbolic link; refusing to write through it" \
    "$PY" scripts/plot_bw.py "$EXAMPLES/write_bw-run1.json" -o "$OUT/planted-bw.png"
refuses plot_compare_planted_link "is a symbolic link; refusing to write through it" \
    "$PY" scripts/plot_compare.py "$EXAMPLES/write_bw-run1.json" "$EXAMPLES/write_bw-run2.json" -o "$OUT/planted-compare.png"
if [ "$(cat "$OUT/target.txt")" = "not an image" ]; then
    PASSED=$((PASSED + 1)); echo "ok   - plot_planted_link_target_untouched"
else
    FAILED=$((FAILED + 1)); echo "FAIL - plot_planted_link_target_untouched: the link's target was written"
fi
refuses plot_wrapper_unknown_kind "usage: scripts/plot bw|lat|compare|matrix" scripts/plot pie x.json -o "$OUT/x.png"

# decides NAME PYTHON: a decision of a plot script, asserted in Python (the scripts' folder on
# the path).
decides() {
    local name=$1 code=$2
    if (cd scripts && "../$PY" -c "$code") >"$OUT/$name.log" 2>&1; then
        PASSED=$((PASSED + 1)); echo "ok   - $name"
    else
        FAILED=$((FAILED + 1)); echo "FAIL - $name"; tail -5 "$OUT/$name.log" | sed 's/^/       /'
    fi
}
# Each plot script's --help ends with the exit-code contract, as every gdrperf tool's does.
for kind in bw lat compare matrix; do
    if "$PY" "scripts/plot_$kind.py" --help 2>&1 | tr '\n' ' ' | grep -q "exit codes, as every gdrperf tool's: 0 the image was written; 2 could not run"; then
        PASSED=$((PASSED + 1)); echo "ok   - plot_${kind}_help_states_the_exit_codes"
    else
        FAILED=$((FAILED + 1)); echo "FAIL - plot_${kind}_help_states_the_exit_codes"
    fi
done

decides plot_lat_axis_is_log_where_the_spread_needs_it "
from plot_lat import y_scale
assert y_scale('auto', [1.9, 2.0, 2.1, 35.0]) == 'log'
assert y_scale('auto', [1.9, 2.0, 2.1, 3.5]) == 'linear'
assert y_scale('linear', [1.0, 100.0]) == 'linear' and y_scale('log', [1.0, 1.1]) == 'log'
assert y_scale('auto', []) == 'linear'"

# gdrperf compare --junit read back by junitparser, the JUnit reader of Python CI tooling:
# three runs a side, the new 4 KiB runs 12.5% lower; a failure per regressed case naming the
# change, its interval and p, and exit 1.
GDRPERF=${GDRPERF:-}
for candidate in target/release/gdrperf target/debug/gdrperf; do
    [ -z "$GDRPERF" ] && [ -x "$candidate" ] && GDRPERF=$candidate
done
if [ -z "$GDRPERF" ]; then
    cargo build -q -p gdrperf-cli --bin gdrperf && GDRPERF=target/debug/gdrperf
fi
"$PY" -c 'import junitparser' 2>/dev/null || "$VENV/bin/pip" install -q junitparser >/dev/null 2>&1
for run in 1 2 3; do
    factor=$(( 99 + run ))
    printf 'test,bytes,bw_avg_gbit_s\nwrite_bw,4096,%s\nwrite_bw,65536,%s\n' "0.$((80 * factor))" "0.$((95 * factor))" >"$OUT/a$run.csv"
    printf 'test,bytes,bw_avg_gbit_s\nwrite_bw,4096,%s\nwrite_bw,65536,%s\n' "0.$((70 * factor))" "0.$((95 * factor))" >"$OUT/b$run.csv"
done
"$GDRPERF" compare --base "$OUT/a1.csv,$OUT/a2.csv,$OUT/a3.csv" --new "$OUT/b1.csv,$OUT/b2.csv,$OUT/b3.csv" \
    --junit "$OUT/compare.xml" >"$OUT/compare.log" 2>&1
status=$?
if [ $status = 1 ] && "$PY" - "$OUT/compare.xml" >"$OUT/junit.log" 2>&1 <<'PYTHON'
import sys
from junitparser import Failure, JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = [case for suite in xml for case in suite]
failures = [result for case in cases for result in case.result if isinstance(result, Failure)]
assert len(cases) == 3, [case.name for case in cases]
assert len(failures) == 2, [failure.message for failure in failures]
message = next(failure.message for failure in failures if "4096" in failure.message)
assert "-12.5%" in message and "interval" in message and "p=" in message, message
PYTHON
then
    PASSED=$((PASSED + 1)); echo "ok   - compare_junit_read_by_junitparser"
else
    FAILED=$((FAILED + 1)); echo "FAIL - compare_junit_read_by_junitparser: compare exit $status"
    tail -5 "$OUT/compare.log" "$OUT/junit.log" 2>/dev/null | sed 's/^/       /'
fi

# The compare plot draws gdrperf compare's --json as computed there: the same three runs a side
# (one line, its 95% interval band, the regressed 4096 B marked), and --by mem over three runs
# of three modes (two speed-up lines, each with its band). The script says what it drew.
"$GDRPERF" compare --base "$OUT/a1.csv,$OUT/a2.csv,$OUT/a3.csv" --new "$OUT/b1.csv,$OUT/b2.csv,$OUT/b3.csv" \
    --json "$OUT/compare.json" >"$OUT/compare-json.log" 2>&1
for run in 1 2 3; do
    { echo 'test,bytes,bw_avg_gbit_s,mem_local,gpu_local'
      for size in 4096 65536 1048576; do
          echo "write_bw,$size,9$run.$size,host,"; echo "write_bw,$size,8$((run * 2)).5,cuda,GPU0"; echo "write_bw,$size,4$((run + 4)).0,cuda-staged,GPU0"
      done; } >"$OUT/modes$run.csv"
done
"$GDRPERF" compare "$OUT/modes1.csv" "$OUT/modes2.csv" "$OUT/modes3.csv" --by mem --json "$OUT/modes.json" >"$OUT/modes-json.log" 2>&1
png plot_compare_repeated_runs "$OUT/repeated.png" \
    "$PY" scripts/plot_compare.py "$OUT/compare.json" -o "$OUT/repeated.png"
expect_line plot_compare_repeated_runs "1 lines, 1 interval bands; marked 1 regression, 0 undecided, 0 improvement"
png plot_compare_modes_repeated "$OUT/modes.png" "$PY" scripts/plot_compare.py "$OUT/modes.json" -o "$OUT/modes.png"
expect_line plot_compare_modes_repeated "2 lines, 2 interval bands"
refuses plot_compare_json_with_more "is plotted alone" \
    "$PY" scripts/plot_compare.py "$OUT/compare.json" "$EXAMPLES/write_bw-run1.json" -o "$OUT/x.png"
refuses plot_compare_repeated_result_files "for repeated runs, plot the --json file of gdrperf compare" \
    "$PY" scripts/plot_compare.py "$OUT/modes1.csv" "$OUT/modes2.csv" --by mem -o "$OUT/x.png"
decides plot_compare_draws_the_comparison_as_computed "
from plot_compare import mode_lines, run_lines
rows = [dict(test='write_bw', memory='cuda', gpu='GPU0', lane='', bytes=4096, metric='bw_avg_gbit_s',
             change=-0.125, interval=[0.8, 0.95], verdict='fail', finding='regression'),
        dict(test='write_bw', memory='cuda', gpu='GPU0', lane='', bytes=65536, metric='bw_avg_gbit_s',
             change=0.0, interval=None, verdict='pass', finding=None),
        dict(test='write_bw', memory='host', gpu='', lane='', bytes=4096, metric='bw_avg_gbit_s',
             change=-0.08, interval=[0.85, 1.01], verdict='undecided', finding=None),
        dict(test='write_bw', memory='host', gpu='', lane='', bytes=65536, metric='bw_avg_gbit_s',
             change=-0.2, interval=[0.7, 0.9], verdict='regression')]
lines = run_lines(dict(rows=rows, tolerance=0.05))
cuda = lines['write_bw cuda GPU0 (bw_avg_gbit_s)']
assert cuda[0] == (4096, 0.875, 0.8, 0.95, 'regression'), cuda
assert cuda[1][1] == 1.0 and cuda[1][2] != cuda[1][2] and cuda[1][4] == 'pass', cuda  # no interval: nan
host = lines['write_bw host (bw_avg_gbit_s)']
assert [point[4] for point in host] == ['undecided', 'regression'], host  # an older file's word still marks
modes = mode_lines(dict(modes=['host', 'cuda-staged', 'cuda'], baseline='cuda-staged', groups=[
    dict(test='write_bw', gpu='GPU0', bytes=4096, metric='bw_avg_gbit_s', speedups=[2.0, 1.0, 1.9],
         intervals=[[1.8, 2.2], None, None])]))
assert sorted(modes) == ['write_bw cuda GPU0', 'write_bw host GPU0'], modes  # the baseline left out
assert modes['write_bw host GPU0'][0][:4] == (4096, 2.0, 1.8, 2.2), modes"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
