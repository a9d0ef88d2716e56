#!/usr/bin/env bash
# FSDP2 host study on 2 GPUs of one host (calibrate/fsdp16_configs.txt): the width sweep at the probe's shape, the
# probe pair (calibrate/host7_configs.txt) and four FSDP2 rows of blind set 9, one VM, one call.
# Writes $OUT/train_steps.jsonl (every row), train.log, host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit" | head -4; } > "$OUT/host.txt" 2>&1
bash calibrate/device/blind_x2.sh calibrate/host7_configs.txt h7-fsdp2 h7-fsdp2-4mb
mv "$OUT/train.log" "$OUT/train-probe.log"
bash calibrate/device/blind_x2.sh calibrate/fsdp16_configs.txt hs-fsdp2-h1024 hs-fsdp2-h2048 hs-fsdp2-h3072
mv "$OUT/train.log" "$OUT/train-sweep.log"
bash calibrate/device/blind_x2.sh calibrate/blind9_configs.txt rg-fsdp2 gv-fsdp2 w7-fsdp2 d7-fsdp2
