# The README's first section, word for word, and the compare proof of issue 23: sourced by
# scripts/vm-tests.sh (helpers: run, pass, fail, expect_in; outputs under $OUT).
#
# The commands are read from the README itself (the first ```sh block under "## First run"), so
# the test follows the text as it stands. The build line is skipped: the VM already has the
# release binaries on PATH. Each command runs in a fresh folder (where the README's relative
# file names land) with `scripts` pointing at the checkout's, and must exit 0 and print what the
# README says it prints.
first_hour=$OUT/first-hour
mkdir -p "$first_hour"
ln -sfn "$PWD/scripts" "$first_hour/scripts"
readme_commands() {
    awk '/^## First run/ { section = 1 } section && /^```sh/ { block = 1; next }
         block && /^```/ { exit } block { print }' README.md
}
# What the README says each command shows (in the order of the block).
expected_1="BW average[MiB/sec]"     # gdr-write-bw --loopback -s 64K: perftest's table
expected_2="BW average[MiB/sec]"     # the sweep
expected_3="wrote bw.png"            # scripts/plot bw
step=0
readme_commands | grep -v '^cargo build' >"$first_hour/commands"
while IFS= read -r command; do
    step=$((step + 1))
    # (run() sets $name and $expected itself: this loop keeps its own.)
    eval "says=\${expected_$step:-}"
    step_name=readme_step_$step
    case $command in
        scripts/plot*)
            # The VM has neither bash nor Python: the plot step is drawn on the host from this
            # run's bw.json (results/softroce/first-hour/make-plots.sh), and tested there by
            # scripts/plot-tests.sh.
            if ! command -v bash >/dev/null || ! command -v python3 >/dev/null; then
                echo "skip - README step $step ($command): no bash/python3 in the VM; drawn on the host"
                continue
            fi ;;
    esac
    if run "$step_name" 0 sh -c "cd '$first_hour' && $command" </dev/null; then
        pass "README step $step exits 0: $command"
    fi
    [ -n "$says" ] && expect_in "$step_name" "$says"
done <"$first_hour/commands"
if [ "$step" = 3 ]; then pass "README's first section has the 3 commands this test knows"; else
    fail "README's first section has the 3 commands this test knows" "found $step: $(cat "$first_hour/commands")"; fi
expect_in readme_step_1 "65536"
if [ "$(grep -c '^write_bw,' "$first_hour/bw.csv" 2>/dev/null)" = 23 ] && grep -q '"results"' "$first_hour/bw.json"; then
    pass "README step 2 wrote bw.csv (23 sizes) and bw.json"
else
    fail "README step 2 wrote bw.csv (23 sizes) and bw.json" "$(ls "$first_hour")"
fi

# The acceptance lines of the README's next section.
if run readme_accept 0 sh -c "cd '$first_hour' && gdrperf accept --profile softroce-smoke"; then
    pass "gdrperf accept --profile softroce-smoke exits 0 (by name)"
fi
expect_in readme_accept "results written to acceptance-"
if ls -d "$first_hour"/acceptance-*/summary.csv >/dev/null 2>&1; then pass "accept wrote ./acceptance-HOST-DATE/summary.csv"; else
    fail "accept wrote ./acceptance-HOST-DATE/summary.csv" "$(ls "$first_hour")"; fi

# --- compare: identical sweeps give no REGRESSION; a real drop does, with its evidence -------
# Five runs a side, alternating, so that drift in the VM's load falls on both sides alike.
proof=$OUT/compare-proof
mkdir -p "$proof"
# One size per run, 5 runs a side, alternating. 2-byte messages: per-message cost dominates,
# so a TX depth of 1 (one message in flight) is a real drop; at 64 KiB rxe under TCG is bound by
# its copies and -t 1 costs little (-7.7%, p = 0.65 in a first run of this test).
for round in 1 2 3 4 5; do
    for side in a:128 b:128 deep:128 shallow:1; do
        gdr-write-bw --loopback -s 2 -n 2000 -t "${side#*:}" --json "$proof/${side%:*}-$round.json" >/dev/null 2>&1 ||
            fail "compare proof: run ${side%:*} $round" "exit $?"
    done
done
list() { echo "$proof/$1-1.json,$proof/$1-2.json,$proof/$1-3.json,$proof/$1-4.json,$proof/$1-5.json"; }
run compare_identical 0 gdrperf compare --base "$(list a)" --new "$(list b)" && pass "compare of identical sweeps (5 vs 5) exits 0"
if grep -q REGRESSION "$OUT/compare_identical.log"; then fail "identical sweeps: no REGRESSION" "$(grep REGRESSION "$OUT/compare_identical.log")"; else
    pass "identical sweeps: no REGRESSION"; fi
expect_in compare_identical "no significant regression (Mann-Whitney p < 0.05 and beyond 5%) in 1 rows, 5 vs 5 runs"
run compare_drop 1 gdrperf compare --base "$(list deep)" --new "$(list shallow)" && pass "compare of -t 128 vs -t 1 exits 1"
expect_in compare_drop "REGRESSION p=0.004 (5 vs 5 runs)"
expect_in compare_drop "parameters differ: tx_depth: base 128, new 1"
cp "$OUT/compare_identical.log" "$OUT/compare_drop.log" "$proof/" 2>/dev/null
