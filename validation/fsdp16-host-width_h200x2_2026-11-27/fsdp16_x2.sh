#!/usr/bin/env bash
# FSDP2 host study on 2 GPUs of one host (validation/fsdp16-host-width_h200x2_2026-11-27/configs.txt): the width sweep at the probe's shape, the
# probe pair (validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt) and four FSDP2 rows of blind set 9, one VM, one call.
# Writes $OUT/train_steps.jsonl (every row), train.log, host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; } > "$OUT/host.txt" 2>&1
bash validation/launchers/blind_x2.sh validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2 h7-fsdp2-4mb
mv "$OUT/train.log" "$OUT/train-probe.log"
bash validation/launchers/blind_x2.sh validation/fsdp16-host-width_h200x2_2026-11-27/configs.txt hs-fsdp2-h1024 hs-fsdp2-h2048 hs-fsdp2-h3072
mv "$OUT/train.log" "$OUT/train-sweep.log"
bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt rg-fsdp2 gv-fsdp2 w7-fsdp2 d7-fsdp2
