#!/usr/bin/env bash
# Does the rank that waits at the step's end, spinning a CPU in torch.cuda.synchronize, slow the other rank's host?
# (issue 14, docs/validation.md 6l/6m.) FSDP2 rows whose slower rank issued 6-26% above the host probe, each run with
# CUDA's spinning wait and with a blocking event wait (train_gpt.py --sync blocking), alternated, on one VM.
# Writes $OUT/train_steps.jsonl and train.log.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
for round in 1 2; do
  RUN_TAG=-spin$round bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2
  TRAIN_EXTRA="--sync blocking" RUN_TAG=-block$round bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt d7-fsdp2 w7-fsdp2
done
