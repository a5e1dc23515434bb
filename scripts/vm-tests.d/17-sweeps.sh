# Every binary's default -a sweep (default tx depth and CQ moderation) with -n 100 completes:
# gdr-write-bw once stopped at 4 MiB with "no completion progress for 10 s"
# because one signalled completion per 100 messages of 4 MiB took longer than that. Slow under
# TCG (a few minutes), so the files are kept small: sourced by scripts/vm-tests.sh.

for binary in gdr-write-bw gdr-send-bw; do
    name=$(echo "$binary" | tr - _)_default_sweep
    if run "$name" 0 $binary --loopback -d rxe0 -x 1 -a -n 100 --validate --csv "$OUT/$name.csv"; then
        pass "$binary --loopback -a -n 100 --validate completes"
    fi
    check_bw_csv "$name" "$OUT/$name.csv" 23 pass
done
# The latency sweeps time one message at a time (a round trip of 8 MiB is about 0.3 s here, and
# over 0.6 s on a loaded host): -n 20 proves the sweep completes in a fifth of -n 100's time, so
# the run's 300 s limit (VM_TEST_TIMEOUT) holds on a loaded 2-core host too. One latency bench
# here on rxe; every latency bench's checked -a sweep runs over the simulated NIC in cargo test
# (benches/tests/simulated_latency.rs, latency_sweeps_write_ordered_percentiles_tables_and_histograms).
for binary in gdr-write-lat; do
    name=$(echo "$binary" | tr - _)_default_sweep
    if run "$name" 0 $binary --loopback -d rxe0 -x 1 -a -n 20 --validate --csv "$OUT/$name.csv"; then
        pass "$binary --loopback -a -n 20 --validate completes"
    fi
done
