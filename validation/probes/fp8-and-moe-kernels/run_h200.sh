#!/usr/bin/env bash
# One call on one H200: the FP8 and MoE kernel classes of `calibrate bench --kernels`
# (clustersim/calibration/bench/fp8.py, experts.py), each class in its own process so that one
# failing leaves the other's rows. Rows go to $OUT (flat).
#   bash validation/probes/fp8-and-moe-kernels/run_h200.sh
set -u
OUT=${OUT:?set OUT}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv > "$OUT/nvidia-smi.txt" 2>&1
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])" > "$OUT/versions.txt"
for cls in fp8 experts; do
  echo "== $cls $(date +%T)"
  timeout -k 10 ${CLASS_TIMEOUT:-240} python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m clustersim \
    calibrate bench --ops none --no-gemm --no-hbm --no-launch --kernels --kernel-classes "$cls" \
    -o "$OUT/kernels-$cls.jsonl" --no-progress > "$OUT/bench-$cls.log" 2>&1 || echo "$cls failed rc=$?"
  tail -3 "$OUT/bench-$cls.log"
done
python3 - "$OUT" <<'PY'
import json, sys, pathlib
rows = [json.loads(l) for f in sorted(pathlib.Path(sys.argv[1]).glob("kernels-*.jsonl")) for l in open(f) if l.strip()]
k = [r for r in rows if r.get("kind") == "kernel"]
print(len(k), "kernel rows")
for r in k:
    if (r["name"].startswith("fp8_gemm") and r["tokens"] == 16384 and r["linear"] in ("fc1", "qkv")) or \
       (r["name"].startswith(("fp8_q", "fp8_t", "bf16_t")) and r["tokens"] == 16384 and r["hidden"] == 4096) or \
       (r["name"].startswith(("grouped", "gemm_n")) and r.get("tokens") in (64, 1024) and r.get("in_features") == 2048) or \
       r["name"] in ("moe_loop_host",) or r["name"].startswith("moe_r"):
        extra = f"{r.get('tflops', 0):7.1f} TF/s" if "tflops" in r else f"{r.get('bandwidth_GBps', 0):7.0f} GB/s"
        print(f"{r['op'][:58]:58s} {r['time_us']:9.1f} us {extra}")
PY
# smoke: the reference program's FP8 linears and MoE layers run (2 steps each, not a measurement)
S=validation/probes/fp8-and-moe-kernels/smoke.yaml
for set in "training.precision.params=fp8" "training.precision.params=fp8 training.precision.fp8_recipe=rowwise" \
           "model.moe={experts: 8, top_k: 2, expert_ffn_hidden: 512, implementation: loop}" \
           "model.moe={experts: 8, top_k: 2, expert_ffn_hidden: 512, implementation: grouped}"; do
  args=(); for kv in $set; do args+=(--set "$kv"); done
  case "$set" in model.moe*) args=(--set "$set");; esac
  timeout -k 5 120 python3 reference/train_gpt.py "$S" "${args[@]}" --steps 2 --warmup 1 -o "$OUT/smoke.jsonl" 2>&1 | tail -1
done
