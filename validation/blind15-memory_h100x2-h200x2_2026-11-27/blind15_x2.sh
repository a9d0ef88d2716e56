#!/usr/bin/env bash
# Blind set 15 (memory of FSDP2 and pipeline shapes; issue 14, 2026-11-27) and NCCL's memory outside the caching
# allocator, step by step (validation/probes/nccl-memory-outside-allocator/nccl_memory.py), on the GPUs of one host (2 expected; the H200 rows by name,
# -h100 on H100). Writes $OUT/train_steps.jsonl, train.log, host.txt, nccl_memory.jsonl, nccl_memory.txt, and with
# DIAG=1 (the default) three FSDP2 rows of blind set 9 under $OUT/diag. The 2x H200 run: DIAG=0.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; nvidia-smi; } > "$OUT/host.txt" 2>&1
n=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
export NCCL_NVLS_ENABLE=0
timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" validation/probes/nccl-memory-outside-allocator/nccl_memory.py \
  -o "$OUT/nccl_memory.jsonl" > "$OUT/nccl_memory.txt" 2>&1 < /dev/null
tail -12 "$OUT/nccl_memory.txt"
bash validation/launchers/blind_x2.sh validation/blind15-memory_h100x2-h200x2_2026-11-27/configs.txt f15-fsdp2-v128k f15-fsdp2-h4096 f15-pp2-interleaved-v4 \
  f15-pp2-1f1b-m12
# not blind: three FSDP2 rows of blind set 9 again, now with every rank's optimizer host window
# (train_gpt.py optimizer_host_s_ranks): where the FSDP2 step's tail after the host's last issue comes from
if [ "${DIAG:-1}" = 1 ]; then
  OUT=$OUT/diag bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt w7-fsdp2 d7-fsdp2 rg-fsdp2
fi
