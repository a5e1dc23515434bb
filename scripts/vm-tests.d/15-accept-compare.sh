# gdrperf accept and gdrperf compare over rxe0, on real bench runs: sourced by scripts/vm-tests.sh
# after 10-write-bw.sh (named 15-* to run right after it). Helpers: run, pass, fail, expect_in.

# --- accept: the smoke profile passes on Soft-RoCE ---------------------------------------------
# By name: every file of profiles/ is built in.
if run accept_smoke 0 gdrperf accept --profile softroce-smoke --out "$OUT/accept"; then
    pass "accept --profile softroce-smoke exits 0"
fi
expect_in accept_smoke "overall: PASS (2 pass, 0 fail, 0 skip, 0 error)"
expect_in accept_smoke "results written to $OUT/accept/"
if [ "$(grep -c ',PASS,' "$OUT/accept/summary.csv" 2>/dev/null)" = 2 ] && grep -q '"overall": "pass"' "$OUT/accept/summary.json"; then
    pass "accept writes summary.csv and summary.json with 2 PASS rows"
else
    fail "accept writes summary.csv and summary.json with 2 PASS rows" "$(cat "$OUT/accept/summary.csv" 2>&1)"
fi

# --- accept: a threshold the link cannot meet fails with exit 1 and says by how much ---------
# A custom profile is a file away; GPU modes on a node without GPU are SKIP, not FAIL.
cat >"$OUT/too-fast.toml" <<'PROFILE'
name = "too-fast"
description = "the full port rate, which Soft-RoCE under TCG cannot reach"
[bandwidth]
test = "write_bw"
size = 65536
iterations = 200
source = "vm test"
min_bw.host = { value = "100%", source = "vm test" }
min_bw.cuda = { value = "100%", source = "vm test" }
PROFILE
run accept_fail 1 gdrperf accept --profile "$OUT/too-fast.toml" --out "$OUT/accept-fail" &&
    pass "accept exits 1 when a size misses its threshold"
expect_in accept_fail "65536 bytes: BW average"
expect_in accept_fail "% of the 2.5 Gb/s port)"
expect_in accept_fail "no NVIDIA GPU found by gdrperf doctor"
expect_in accept_fail "overall: FAIL (0 pass, 1 fail, 1 skip, 0 error)"

# --- compare: real runs joined per size ------------------------------------------------------
# A sweep of its own over rxe0, the command 10-write-bw ran before its loopback checks moved to
# the simulated NIC's tests (-n 20: against accept's 200 the iterations differ by -90%).
if run compare_sweep 0 gdr-write-bw --loopback -a -n 20 -t 16 -Q 4 --validate \
        --csv "$OUT/sweep.csv" --json "$OUT/sweep.json"; then
    pass "write_bw loopback -a -n 20 -t 16 -Q 4 --validate for compare exits 0"
fi
run compare_same 0 gdrperf compare "$OUT/sweep.json" "$OUT/sweep.csv" && pass "compare of a run with itself exits 0"
expect_in compare_same "no change beyond 5% in 23 compared rows"
run compare_join 0 gdrperf compare "$OUT/sweep.json" "$OUT/accept/write_bw-host-rxe0.json" --tolerance 10000% &&
    pass "compare joins the one common size"
expect_in compare_join "only in base (22)"
# Single runs carry no measure of the noise: a change beyond the tolerance is named, never judged.
run compare_fewer 0 gdrperf compare "$OUT/accept-fail/write_bw-host-rxe0.json" "$OUT/sweep.json" --metric iterations &&
    pass "compare of single runs names a change but no regression (--metric iterations: 200 then 20)"
expect_in compare_fewer "-90.0%  UNDECIDED: beyond the tolerance, single run: cannot tell from noise"
run compare_missing 2 gdrperf compare "$OUT/sweep.json" "$OUT/nonexistent.json" && expect_in compare_missing "cannot read"
