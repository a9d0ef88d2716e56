#!/usr/bin/env bash
# Blind set 6 (issue 14, 2-GPU overheads) and the compute/communication overlap probe, on 2 GPUs of one host.
# Predictions were committed before this ran: calibrate/raw/blind6/predictions.json (calibrate/blind6_configs.txt).
# Usage on the lent machine:  bash calibrate/device/blind6_x2.sh PART   (PART: a = overlap probe + rg/ac rows,
# b = b2/gv rows). Rows go to $OUT/train_steps.jsonl and $OUT/overlap.jsonl; logs to $OUT/train.log and
# $OUT/overlap.log (the device returns at most 8 files: the 2026-11-26 run wrote 9 and lost train_steps.jsonl;
# calibrate/raw/blind6/train_steps.jsonl was rebuilt from the logs' summary lines).
set -u
part=${1:-a}
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ "$part" = a ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 calibrate/device/overlap_probe.py \
    -o "$OUT/overlap.jsonl" > "$OUT/overlap.log" 2>&1; echo "overlap rc=$?"; tail -n 12 "$OUT/overlap.log"
  names="rg-single rg-ddp2 rg-fsdp2 rg-pp2-interleaved rg-pp2-1f1b ac-ddp2 ac-fsdp2 rg-tp2 rg-pp2-gpipe"
else
  names="b2-single b2-ddp2 b2-fsdp2 gv-single gv-ddp2 gv-fsdp2 gv-pp2-interleaved"
fi
# the training rows: the generic blind-set runner (same launcher, steps, suffix and summary)
# shellcheck disable=SC2086
bash calibrate/device/blind_x2.sh calibrate/blind6_configs.txt $names
