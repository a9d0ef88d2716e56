#!/usr/bin/env bash
# First vs warm NCCL all_reduce after a 0.5 s kernel on 1, 2 and 4 ranks of one host (issue 15, the Monte-Carlo
# pi exercise's efficiency): rows to $OUT/first_collective.jsonl, summary to stdout.
#   bash validation/probes/first-collective-cost/first_collective.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
ng=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
for n in 1 2 4; do
  [ "$n" -le "$ng" ] || continue
  timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node $n validation/probes/first-collective-cost/first_collective.py \
    -o "$OUT/first_collective.jsonl" 2>&1 | grep -E "^world|Error|error" | head -8
done
