#!/usr/bin/env bash
# Round 5 of the drift probe: is the drift in how the SMs move data over NVLink? The same sweep (coll_drift.py --sweep)
# with NCCL's P2P transport reading instead of writing (NCCL_P2P_READ_ENABLE=1), with the copy engines doing the
# P2P copies (NCCL_P2P_USE_CUDA_MEMCPY=1), and with LL128 forced (another flag scheme), against the default.
# Writes $OUT/sweep5.jsonl, $OUT/probe5.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
run() {  # TAG ENV...
  tag=$1; shift
  env "$@" timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
    --sweep 16,64,256,1024 --ops all_gather,all_reduce,broadcast --tag "$tag" >> "$OUT/sweep5.jsonl" 2>> "$OUT/probe5.log"
  echo "sweep $tag rc=$?" | tee -a "$OUT/probe5.log"
}
run default X=1
run p2pread NCCL_P2P_READ_ENABLE=1
run cememcpy NCCL_P2P_USE_CUDA_MEMCPY=1
run ll128 NCCL_PROTO=LL128
grep "MiB:" "$OUT/probe5.log"
