#!/usr/bin/env bash
# Blind set 12 on a lent 4x H100 host (issue 14, 2026-11-27), then the p2p residency probe again (send side).
# Writes $OUT/train_steps.jsonl, $OUT/train.log, $OUT/host.txt, $OUT/p2p_resident.jsonl.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi topo -m; nvidia-smi -q | grep -iE "product name|power limit|max clocks" | head -20; } > "$OUT/host.txt" 2>&1
bash validation/launchers/blind_x2.sh validation/blind12-4gpu_h100x4_2026-11-27/configs.txt b2-single b2-ddp4 b2-fsdp4 gv-single gv-ddp4 gv-fsdp4 \
  gv-pp4-interleaved w7-single w7-ddp4 w7-fsdp4 d7-single d7-pp4-1f1b d7-pp4-interleaved rg-pp2-dp2-interleaved
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
  validation/probes/p2p-waiting-kernel/p2p_resident.py 2> "$OUT/p2p_resident.err" >> "$OUT/p2p_resident.jsonl"
echo "p2p_resident rc=$?"; cat "$OUT/p2p_resident.jsonl"
