#!/bin/bash
# GPU placement resolution on the H200 (no RDMA NIC): the plan is built with CUDA before any device is opened.
B=${BIN_DIR:-.carry}   # the folder holding gdr-write-bw and gdr-send-bw
run() { echo "## $*"; timeout 120 "$@" 2>&1 | tail -6; echo "exit=${PIPESTATUS[0]}"; }
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
run $B/gdr-write-bw --loopback --mem host,cuda,cuda-staged --gpu all -s 64K -n 10
run $B/gdr-write-bw --loopback --mem cuda --gpu 0,1 -s 64K -n 10
run $B/gdr-write-bw --loopback --mem cuda,cuda-staged --gpu all -s 64K -n 10 -d auto
run $B/gdr-write-bw --loopback --concurrent --mem cuda --gpu all -s 64K -n 10
run $B/gdr-send-bw --loopback --concurrent --mem cuda --gpu 0,3 -s 64K -n 10
run $B/gdr-write-bw --loopback --mem cuda --gpu-bus-id 0000:00:06.0 --gdr peermem -s 64K -n 10
