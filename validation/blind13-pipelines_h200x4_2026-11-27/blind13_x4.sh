#!/usr/bin/env bash
# Blind set 13 (pipeline configurations, 2 and 4 GPUs of one host; issue 14, 2026-11-27).
# Writes $OUT/train_steps.jsonl, $OUT/train.log, $OUT/host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi topo -m; nvidia-smi -q | grep -iE "product name|power limit" | head -8; } > "$OUT/host.txt" 2>&1
bash validation/launchers/blind_x2.sh validation/blind13-pipelines_h200x4_2026-11-27/configs.txt p13-rg-1f1b-m8 p13-rg-gpipe-m6 p13-rg-interleaved-m8 \
  p13-rg-interleaved-v3 p13-w7-1f1b p13-b2-interleaved p13-gv-pp4-1f1b p13-rg-pp4-interleaved-m16 p13-gv-pp2-dp2-1f1b
