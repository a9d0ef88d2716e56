#!/usr/bin/env bash
# Host interference probe on 2 GPUs of one host (validation/probes/host-interference/host_interference.py), twice; then the FSDP2
# d7 / hs-h2048 pair once more with the CPU counters. Writes $OUT/host_interference.jsonl, host.txt, train_steps.jsonl.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; lscpu | head -20; nvidia-smi -q | grep -iE "product name" | head -2; } > "$OUT/host.txt" 2>&1
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
for calls in ${CALLS_LIST:-4000 4000}; do
  echo "== $calls launches per round"
  CALLS=$calls timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
    validation/probes/host-interference/host_interference.py 2>&1 | grep -E "wall|Error|error"
done
