#!/usr/bin/env bash
# One call on one H200: the rows of configs.txt (reference/train_gpt.py, 10 steps after 3 warm-up steps each).
# Needs the pydantic wheels in .whl (the device image has none); rows to $OUT/train_steps.jsonl.
#   bash validation/fp8-moe-1gpu_h200_2026-12-02/run_h200.sh                          # round 1
#   CONFIGS=configs-r2.txt bash validation/fp8-moe-1gpu_h200_2026-12-02/run_h200.sh   # round 2
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
HERE=validation/fp8-moe-1gpu_h200_2026-12-02
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpus.txt"
python3 tools/heldout.py --configs $HERE/${CONFIGS:-configs.txt} commands > /tmp/cmds.txt
t0=$(date +%s)
while read -r line; do
  id=$(sed -E 's/.*--run-id ([^ ]+).*/\1/' <<<"$line")
  t=$(date +%s)
  eval "timeout -k 5 ${ROW_TIMEOUT:-90} $line" >> "$OUT/train.log" 2>&1
  printf '%-16s rc=%d %4d s (at %d s)\n' "$id" "$?" "$(( $(date +%s) - t ))" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/runs.txt"
done < /tmp/cmds.txt
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/train_steps.jsonl"):
    r = json.loads(l)
    print(f"{r.get('run_id'):16s} {r.get('status'):6s} {1e3 * r['step_time_s']:8.1f} ms  peak {r.get('peak_memory_bytes', 0) / 2**30:6.2f} GiB")
PY
