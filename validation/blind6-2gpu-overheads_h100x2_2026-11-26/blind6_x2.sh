#!/usr/bin/env bash
# Blind set 6 (issue 14, 2-GPU overheads) and the compute/communication overlap probe, on 2 GPUs of one host.
# Predictions were committed before this ran: validation/blind6-2gpu-overheads_h100x2_2026-11-26/predictions.json (validation/blind6-2gpu-overheads_h100x2_2026-11-26/configs.txt).
# Usage on the lent machine:  bash validation/blind6-2gpu-overheads_h100x2_2026-11-26/blind6_x2.sh PART   (PART: a = overlap probe + rg/ac rows,
# b = b2/gv rows). Rows go to $OUT/train_steps.jsonl and $OUT/overlap.jsonl; logs to $OUT/train.log and
# $OUT/overlap.log (the device returns at most 8 files: the 2026-11-26 run wrote 9 and lost train_steps.jsonl;
# validation/blind6-2gpu-overheads_h100x2_2026-11-26/train_steps.jsonl was rebuilt from the logs' summary lines).
set -u
part=${1:-a}
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ "$part" = a ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/compute-beside-collectives/overlap_probe.py \
    -o "$OUT/overlap.jsonl" > "$OUT/overlap.log" 2>&1; echo "overlap rc=$?"; tail -n 12 "$OUT/overlap.log"
  names="rg-single rg-ddp2 rg-fsdp2 rg-pp2-interleaved rg-pp2-1f1b ac-ddp2 ac-fsdp2 rg-tp2 rg-pp2-gpipe"
else
  names="b2-single b2-ddp2 b2-fsdp2 gv-single gv-ddp2 gv-fsdp2 gv-pp2-interleaved"
fi
# the training rows: the generic blind-set runner (same launcher, steps, suffix and summary)
# shellcheck disable=SC2086
bash validation/launchers/blind_x2.sh validation/blind6-2gpu-overheads_h100x2_2026-11-26/configs.txt $names
