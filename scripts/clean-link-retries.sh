#!/bin/sh
# Does Soft-RoCE retransmit on a clean link, and does gdrperf make it retransmit more than
# perftest? Runs inside the Soft-RoCE VM, 5 alternating rounds of 500 RDMA WRITEs of 64 KiB:
# ib_write_bw (two processes), gdr-write-bw (two processes), gdr-write-bw --loopback, printing how
# far rxe0's completer_retry_err and duplicate_request counters moved in each. Run it as
#   cargo build --release --bins
#   scripts/softroce.sh run -- "sh scripts/clean-link-retries.sh"
# Result: results/softroce/clean-link-retries.txt (why profiles/softroce-smoke.toml allows some).
c() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/completer_retry_err; }
d() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/duplicate_request; }
P=19600
for i in 1 2 3 4 5; do
  P=$((P+1)); a=$(c); b=$(d)
  ib_write_bw -d rxe0 -x 1 -p $P -s 65536 -n 500 >/dev/null 2>&1 & sleep 1
  ib_write_bw -d rxe0 -x 1 -p $P -s 65536 -n 500 127.0.0.1 >/dev/null 2>&1; wait
  echo "perftest two processes: completer_retry_err +$(( $(c) - a )) duplicate_request +$(( $(d) - b ))"
  P=$((P+1)); a=$(c); b=$(d)
  gdr-write-bw -p $P -s 65536 -n 500 >/dev/null 2>&1 & sleep 1
  gdr-write-bw -p $P -s 65536 -n 500 127.0.0.1 >/dev/null 2>&1; wait
  echo "gdrperf two processes:  completer_retry_err +$(( $(c) - a )) duplicate_request +$(( $(d) - b ))"
  a=$(c); b=$(d)
  gdr-write-bw --loopback -s 65536 -n 500 >/dev/null 2>&1
  echo "gdrperf --loopback:     completer_retry_err +$(( $(c) - a )) duplicate_request +$(( $(d) - b ))"
done
