#!/bin/bash
# Per-operator GPU time of one training step (reference/profile_step.py) for the one-GPU configurations
# of validation/blind3_h200-h100_2026-11-24/configs.txt whose name matches $1, plus the GPU-bound reference shape.
# Rows go to $OUT/ops.jsonl.    bash validation/blind3_h200-h100_2026-11-24/profile_ops.sh '^b3-[a-z0-9-]+$'
set -u
sel=${1:-^b3-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
{ echo "rg-single scenarios/ref-single.yaml model.hidden=2048 model.ffn_hidden=8192 training.micro_batch=4 training.global_batch=16"
  grep -v '^#' validation/blind3_h200-h100_2026-11-24/configs.txt; } | while read -r id scen sets; do
  [ -n "$id" ] || continue
  [[ $id =~ $sel || $id == rg-single ]] || continue
  [[ $id =~ h100$ ]] && continue
  a=""; for kv in $sets; do a="$a --set $kv"; done
  timeout -k 5 120 python3 reference/profile_step.py "$scen" $a --run-id "$id" -o "$OUT/ops.jsonl" 2>>"$OUT/profile.log" \
    || echo "$id failed rc=$?"
done
