#!/usr/bin/env bash
# Collective drift probe on two GPUs (validation/probes/collective-startup-drift/coll_drift.py): every call of a 300 ms back-to-back run
# after 300 ms of idle, with SM clock / power sampled every 5 ms. Writes $OUT/coll_drift.jsonl, $OUT/clocks.csv,
# $OUT/probe.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'; } | tee "$OUT/probe.log"
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader -lms 5 \
  > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout -k 5 400 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
  > "$OUT/coll_drift.jsonl" 2>> "$OUT/probe.log"
echo "coll_drift rc=$?" | tee -a "$OUT/probe.log"
kill $smi 2>/dev/null
grep -E "MiB:" "$OUT/probe.log"
