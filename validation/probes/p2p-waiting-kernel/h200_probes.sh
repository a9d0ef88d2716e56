#!/usr/bin/env bash
# The p2p residency probe (2 GPUs) and the clock-window probe (1 GPU) on a lent H200 host, for hgx-h200's own
# p2p_wait_table and clock_window_ms (2026-11-27). Writes $OUT/p2p_resident.jsonl, $OUT/clock_idle.jsonl,
# $OUT/clocks.csv, $OUT/host.txt.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
{ date -u; nproc; nvidia-smi -q | grep -iE "product name|power limit|max clocks" | head -8; } > "$OUT/host.txt" 2>&1
for rep in 1 2; do
  CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
    validation/probes/p2p-waiting-kernel/p2p_resident.py 2> "$OUT/p2p_resident.err" | sed "s/^{/{\"rep\": $rep, /" >> "$OUT/p2p_resident.jsonl"
  echo "p2p_resident rep $rep rc=$?"
done
cat "$OUT/p2p_resident.jsonl"
CUDA_VISIBLE_DEVICES=0 bash validation/probes/clock-idle-window/clock_idle.sh
