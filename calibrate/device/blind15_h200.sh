#!/usr/bin/env bash
# Blind set 15 on 2x H200 (the H200 rows of calibrate/blind15_configs.txt, predicted and committed in e756f67 before
# any run) and the NCCL memory probe on the H200 (calibrate/device/nccl_memory.py). Writes $OUT/train_steps.jsonl,
# train.log, host.txt, nccl_memory.jsonl, nccl_memory.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; nvidia-smi; } > "$OUT/host.txt" 2>&1
n=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
export NCCL_NVLS_ENABLE=0
timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" calibrate/device/nccl_memory.py \
  -o "$OUT/nccl_memory.jsonl" > "$OUT/nccl_memory.txt" 2>&1 < /dev/null
tail -12 "$OUT/nccl_memory.txt"
bash calibrate/device/blind_x2.sh calibrate/blind15_configs.txt f15-fsdp2-v128k f15-fsdp2-h4096 f15-pp2-interleaved-v4 \
  f15-pp2-1f1b-m12
