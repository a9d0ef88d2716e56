#!/bin/bash
# Measure the memory blind set (issue 14): every row of validation/memory-blind_h100_2026-11-25/configs.txt on ONE
# H100 80 GB, with reference/train_gpt.py (6 steps, 2 warm-up). The predictions were committed
# before this measurement (validation/memory-blind_h100_2026-11-25/predictions.json, commit 952edce).
#   bash validation/memory-blind_h100_2026-11-25/memory_blind.sh          (on the lent one-GPU H100; files under $OUT)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"
t0=$(date +%s)
grep '^mb-' validation/memory-blind_h100_2026-11-25/configs.txt | while read -r id scen rest; do
  sets=""; for kv in $rest; do sets="$sets --set $kv"; done
  t=$(date +%s)
  timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 1 reference/train_gpt.py \
    "$scen" $sets --steps 6 --warmup 2 --run-id "$id" -o "$OUT/train_steps.jsonl" >> "$OUT/train.log" 2>&1
  printf '%-20s rc=%d %4d s (at %d s)\n' "$id" "$?" "$(( $(date +%s) - t ))" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/runs.txt"
done
python3 - <<'PY'
import json, os
G = 2**30
pred = {p["name"]: p for p in json.load(open("validation/memory-blind_h100_2026-11-25/predictions.json"))}
print(f"{'run':20s} {'step ms':>8s} {'alloc GiB':>9s} {'pred GiB':>8s} {'err':>6s} {'reserved':>8s} {'in use':>7s}")
for l in open(os.environ["OUT"] + "/train_steps.jsonl"):
    r = json.loads(l)
    if r.get("status") != "ok":
        print(r.get("run_id"), r.get("status"), str(r.get("error"))[:80]); continue
    p = pred[r["run_id"]]["predicted_peak_allocated_bytes"]
    m = r["peak_memory_bytes"]
    print(f"{r['run_id']:20s} {1e3 * r['step_time_s']:8.1f} {m / G:9.2f} {p / G:8.2f} {100 * (p / m - 1):+5.1f}% "
          f"{r['peak_reserved_bytes'] / G:8.2f} {r['device_used_bytes'] / G:7.2f}")
PY
