#!/usr/bin/env bash
# A waiting NCCL collective beside compute (validation/probes/collective-resident-beside-compute/coll_resident.py), 2 GPUs; $OUT/coll_resident.jsonl.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi -q | grep -iE "product name|power limit" | head -4; } > "$OUT/host.txt" 2>&1
timeout -k 5 240 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-resident-beside-compute/coll_resident.py \
  2> "$OUT/coll_resident.log" | grep '^{' > "$OUT/coll_resident.jsonl"
cat "$OUT/coll_resident.jsonl"
tail -3 "$OUT/coll_resident.log"
