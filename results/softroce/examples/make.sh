#!/bin/sh
# Remakes the example result files of this folder with the checked-out code, in the Soft-RoCE VM:
#   cargo build --release --workspace --bins
#   flock /tmp/gdrperf-vm.lock scripts/softroce.sh run --timeout 900 -- \
#       "GDRPERF_COMMIT=$(git rev-parse --short=12 HEAD) sh results/softroce/examples/make.sh"
# then, on the host, the plots (scripts/plot makes its matplotlib venv; titles and legends come
# from the files' metadata), as last drawn at commit 37901bc on branch leftovers:
#   E=results/softroce/examples
#   scripts/plot bw $E/write_bw-run1.json $E/write_bw-run2.json -o $E/write_bw.png
#   scripts/plot lat $E/read_lat-hdr/read_lat-2B.hgrm $E/read_lat-hdr/read_lat-4096B.hgrm $E/read_lat-hdr/read_lat-65536B.hgrm \
#       --run $E/read_lat-2.json --run $E/read_lat-4096.json --run $E/read_lat-65536.json --log-y -o $E/read_lat.png
#   scripts/plot compare $E/write_bw-run1.json $E/write_bw-run2.json -o $E/write_bw-run2-vs-run1.png
# Each JSON names its command (metadata.argv) and commit (metadata.git_commit); PROVENANCE.md
# names them for the files that cannot (CSV, .hgrm, .hdr, .png).
set -eu
cd "$(dirname "$0")/../../.."
dir=results/softroce/examples
for run in 1 2; do
    gdr-write-bw --loopback -a -n 50 -t 16 --csv $dir/write_bw-run$run.csv --json $dir/write_bw-run$run.json >/dev/null
done
rm -rf $dir/read_lat-hdr
for size in 2 4096 65536; do
    gdr-read-lat --loopback -s $size -n 5000 --hdr-dir $dir/read_lat-hdr --json $dir/read_lat-$size.json \
        --csv $dir/read_lat-$size.csv >/dev/null
done
echo "examples remade by commit ${GDRPERF_COMMIT:-unknown}"
