#!/usr/bin/env bash
# Round 3 of the drift probe: 8 channels remove the drift (round 2); where between 8 and 24 channels does it start,
# and does all_gather without its own-chunk copy (in place) drift? Then NCCL's per-call choice (TUNING log, stdout).
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
SIZES=16,64,256,1024
run() {  # TAG OPS ENV...
  tag=$1; ops=$2; shift 2
  env "$@" timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
    --sweep $SIZES --ops "$ops" --tag "$tag" >> "$OUT/sweep3.jsonl" 2>> "$OUT/probe3.log"
  echo "sweep $tag rc=$?" | tee -a "$OUT/probe3.log"
}
run default all_gather_inplace,all_gather X=1
run ch12 all_gather,all_reduce,all_gather_inplace NCCL_MIN_NCHANNELS=12 NCCL_MAX_NCHANNELS=12
run ch16 all_gather,all_reduce,all_gather_inplace NCCL_MIN_NCHANNELS=16 NCCL_MAX_NCHANNELS=16
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
  validation/probes/collective-startup-drift/coll_drift.py --once --sweep 0.0009765625,0.015625,0.25,1,2,4,16,64,256,1024,4096 \
  --ops all_gather,broadcast,all_reduce,reduce_scatter > "$OUT/tuning.log" 2>&1
echo "tuning rc=$?" | tee -a "$OUT/probe3.log"
grep -h "Bytes ->" "$OUT/tuning.log" | sed 's/.*INFO //' | sort | uniq -c | sort -k2,2 -k3n | head -60
grep "MiB:" "$OUT/probe3.log"
