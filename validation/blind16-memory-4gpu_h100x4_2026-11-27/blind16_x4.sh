#!/usr/bin/env bash
# Blind set 16 (the memory model on 4 GPUs; issue 14, 2026-11-27) and the NCCL memory probe on 4 ranks (the next and
# the previous rank are different peers there). Writes $OUT/train_steps.jsonl, train.log, host.txt,
# nccl_memory.jsonl, nccl_memory.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; nvidia-smi; } > "$OUT/host.txt" 2>&1
export NCCL_NVLS_ENABLE=0
timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node 4 validation/probes/nccl-memory-outside-allocator/nccl_memory.py \
  -o "$OUT/nccl_memory.jsonl" > "$OUT/nccl_memory.txt" 2>&1 < /dev/null
tail -12 "$OUT/nccl_memory.txt"
bash validation/launchers/blind_x2.sh validation/blind16-memory-4gpu_h100x4_2026-11-27/configs.txt f16-fsdp4-h4096 f16-fsdp4-v128k f16-pp4-interleaved-v3 \
  f16-pp4-1f1b-s4k f16-pp2-dp2-interleaved
