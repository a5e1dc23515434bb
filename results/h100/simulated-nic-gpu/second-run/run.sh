#!/bin/bash
# GPU host run over the simulated NIC: what results/h100/simulated-nic-gpu did not show.
R=$PWD; B=$R/.gpu/bin
O=/tmp/out; rm -rf $O; mkdir -p $O/csv $O/accept
export GDRPERF_SIMULATED_NIC=rate=100
nvidia-smi --query-gpu=name,pci.bus_id,uuid,driver_version --format=csv | tee $O/card.txt
date -u +%FT%TZ | tee $O/date.txt
step() { echo; echo "### $*"; "$@"; echo "### exit $?"; }
cd $O/csv
step $B/gdr-atomic-bw --loopback -d simulated0 --mem cuda --validate --csv cuda-atomic-bw.csv
step $B/gdr-atomic-bw --loopback -d simulated0 --mem cuda-staged --validate --csv staged-atomic-bw.csv
step $B/gdr-atomic-lat --loopback -d simulated0 --mem cuda-staged --validate --csv staged-atomic-lat.csv
# several lanes on one GPU
step $B/gdr-write-bw --loopback --concurrent -d simulated0 --mem cuda --gpu 0 -s 1M --validate --csv lane1-cuda-write-bw.csv
step $B/gdr-write-bw --loopback --concurrent -d simulated0,simulated0 --mem cuda --gpu 0 -a --validate --csv lanes-cuda-write-bw.csv
step $B/gdr-write-bw --loopback --concurrent -d simulated0,simulated0 --mem cuda-staged --gpu 0 -a --validate --csv lanes-staged-write-bw.csv
step $B/gdr-read-bw --loopback --concurrent -d simulated0,simulated0,simulated0,simulated0 --mem cuda --gpu 0 -s 1M --validate --csv lanes4-cuda-read-bw.csv
# several QPs on GPU memory
step $B/gdr-write-bw --loopback -d simulated0 --mem cuda -q 4 -a --validate --csv qp4-cuda-write-bw.csv
step $B/gdr-send-bw --loopback -d simulated0 --mem cuda-staged -q 4 -a --validate --csv qp4-staged-send-bw.csv
# Prometheus file
step $B/gdr-write-bw --loopback -d simulated0 --mem cuda -s 1M --validate --prom $O/cuda-write-bw.prom
# accept with a profile that has GPU rows
cd $O
sed -e 's/^name = "softroce-smoke"/name = "gpu-smoke"/' \
    -e 's/^host = { value = "0.01Gb\/s"/cuda = { value = "0.01Gb\/s"/' \
    -e 's/^host = { value = "10ms"/cuda = { value = "10ms"/' $R/profiles/softroce-smoke.toml > $O/gpu-smoke.toml
# the same thresholds for cuda-staged rows
sed -i -e 's/^\(cuda = { value = "0.01Gb\/s".*\)$/\1\n"cuda-staged" = { value = "0.01Gb\/s", source = "smoke test, no document" }/' \
       -e 's/^\(cuda = { value = "10ms".*\)$/\1\n"cuda-staged" = { value = "10ms", source = "smoke test, no document" }/' $O/gpu-smoke.toml
cat $O/gpu-smoke.toml | grep -n 'cuda'
step $B/gdrperf accept --profile $O/gpu-smoke.toml -d simulated0 --mem cuda,cuda-staged --dry-run
step $B/gdrperf accept --profile $O/gpu-smoke.toml -d simulated0 --mem cuda,cuda-staged --out $O/accept
ls -la $O/accept
