#!/usr/bin/env bash
# Round 2 of the drift probe (validation/probes/collective-startup-drift/coll_drift.py --sweep): does the size drift of the ops with an own
# chunk follow NCCL's chunk and channel structure? The same points under NCCL's default, a 4x and a 1/4x
# NCCL_BUFFSIZE (chunks 4x / 1/4x) and 8 channels; then NCCL's own per-call choice (TUNING log) at every size.
# Writes $OUT/sweep.jsonl, $OUT/tuning.log, $OUT/probe.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
SIZES=1,4,16,64,256,1024
run() {  # TAG ENV... -- ARGS
  tag=$1; shift
  env "$@" timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
    --sweep $SIZES --ops all_gather,broadcast,all_reduce --tag "$tag" >> "$OUT/sweep.jsonl" 2>> "$OUT/probe.log"
  echo "sweep $tag rc=$?" | tee -a "$OUT/probe.log"
}
run default X=1
run buff16M NCCL_BUFFSIZE=16777216
run buff1M NCCL_BUFFSIZE=1048576
run ch8 NCCL_MIN_NCHANNELS=8 NCCL_MAX_NCHANNELS=8
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
  validation/probes/collective-startup-drift/coll_drift.py --once --sweep 0.0009765625,0.015625,0.25,1,2,4,16,64,256,1024,4096 \
  --ops all_gather,broadcast,all_reduce,reduce_scatter > /dev/null 2> "$OUT/tuning.log"
echo "tuning rc=$?" | tee -a "$OUT/probe.log"
grep -h "Bytes ->" "$OUT/tuning.log" | sed 's/.*INFO //' | sort | uniq -c | sort -k2,2 -k3n | tee -a "$OUT/probe.log" | head -60
grep "MiB:" "$OUT/probe.log" | awk '{print}' | column -t | head -80
