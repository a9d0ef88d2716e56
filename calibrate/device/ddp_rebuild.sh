#!/usr/bin/env bash
# DDP's bucket rebuild and the NCCL watchdog (docs/validation.md 6q), and eager attention's kernels by shape, on
# one GPU. Writes $OUT/ddp_rebuild.jsonl (default settings, then TORCH_NCCL_AVOID_RECORD_STREAMS=0),
# $OUT/attention_bmm.jsonl and $OUT/probe.log.
#   bash calibrate/device/ddp_rebuild.sh
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print(torch.__version__)'; } | tee "$OUT/probe.log"
timeout -k 5 240 python3 -m torch.distributed.run --standalone --nproc-per-node 1 calibrate/device/ddp_rebuild.py --trials 48 \
  > "$OUT/ddp_rebuild.jsonl" 2>> "$OUT/probe.log"; echo "ddp_rebuild default rc=$?" | tee -a "$OUT/probe.log"
TORCH_NCCL_AVOID_RECORD_STREAMS=0 timeout -k 5 180 python3 -m torch.distributed.run --standalone --nproc-per-node 1 \
  calibrate/device/ddp_rebuild.py --trials 24 >> "$OUT/ddp_rebuild.jsonl" 2>> "$OUT/probe.log"
echo "ddp_rebuild record_stream rc=$?" | tee -a "$OUT/probe.log"
grep summary "$OUT/ddp_rebuild.jsonl" | tee -a "$OUT/probe.log"
timeout -k 5 240 python3 calibrate/device/attention_bmm.py > "$OUT/attention_bmm.jsonl" 2>> "$OUT/probe.log"
echo "attention_bmm rc=$? $(wc -l < "$OUT/attention_bmm.jsonl") rows" | tee -a "$OUT/probe.log"
grep -E '"s": 2048, "d": 128' "$OUT/attention_bmm.jsonl" | head -30
