#!/usr/bin/env bash
# GEMM wave sweep on one GPU (validation/probes/gemm-partial-wave/wave_sweep.py; docs/validation.md 3e). Writes $OUT/wave_sweep.jsonl
# and $OUT/wave.log.
#   bash validation/probes/gemm-partial-wave/wave_sweep.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 -c 'import torch; print(torch.__version__)'; } | tee "$OUT/wave.log"
timeout -k 5 400 python3 validation/probes/gemm-partial-wave/wave_sweep.py > "$OUT/wave_sweep.jsonl" 2>> "$OUT/wave.log"
echo "wave_sweep rc=$? $(wc -l < "$OUT/wave_sweep.jsonl") rows" | tee -a "$OUT/wave.log"
awk 'NR % 6 == 0' "$OUT/wave_sweep.jsonl" | cut -c1-120
