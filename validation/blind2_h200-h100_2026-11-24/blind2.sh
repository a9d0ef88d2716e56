#!/bin/bash
# Runs the training configurations of validation/blind2_h200-h100_2026-11-24/configs.txt whose name matches $1 (and not $2)
# on the lent GPU machine; step rows go to $OUT/train_steps.jsonl, the log to $OUT/train.log.
#   bash validation/blind2_h200-h100_2026-11-24/blind2.sh '^(rg|gv)-' 'h100'      # the 1- and 2-GPU H200 rows
#   bash validation/blind2_h200-h100_2026-11-24/blind2.sh 'h100$'                  # the H100 rows
set -u
include=${1:-.}; exclude=${2:-^$}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/gpus.txt
python3 tools/heldout.py --configs validation/blind2_h200-h100_2026-11-24/configs.txt commands > /tmp/cmds.txt
while read -r line; do
  id=$(sed -E 's/.*--run-id ([^ ]+).*/\1/' <<<"$line")
  [[ $id =~ $include ]] || continue
  [[ $id =~ $exclude ]] && continue
  t0=$(date +%s)
  eval "timeout -k 5 90 $line" >> $OUT/train.log 2>&1
  rc=$?
  printf '%-20s rc=%d %4d s\n' "$id" "$rc" "$(( $(date +%s) - t0 ))" | tee -a $OUT/runs.txt
done < /tmp/cmds.txt
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/train_steps.jsonl"):
    r = json.loads(l)
    print(f"{r.get('run_id'):20s} {r.get('status'):6s} {1e3 * r.get('step_time_s', 0):8.1f} ms  {r.get('gpu')}")
PY
