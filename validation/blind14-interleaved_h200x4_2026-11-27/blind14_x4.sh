#!/usr/bin/env bash
# Blind set 14 (4-GPU interleaved pipelines; issue 14, 2026-11-27). Writes $OUT/train_steps.jsonl, train.log, host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; } > "$OUT/host.txt" 2>&1
bash validation/launchers/blind_x2.sh validation/blind14-interleaved_h200x4_2026-11-27/configs.txt p14-rg-pp4-v3 p14-gv-pp4-v2 p14-d7-pp4-v4 p14-b2-pp2-dp2-v2
