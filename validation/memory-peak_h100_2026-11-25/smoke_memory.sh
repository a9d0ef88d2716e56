#!/bin/bash
# One call on a one-GPU machine (2026-11-25): (1) a GPU smoke run of the restructured bench
# (clustersim/calibration/bench/ after the split of bench.py: graph timing, HBM, launch, kernel
# classes, sustained/duty sweeps) and (2) the reference training program on memory-relevant shapes,
# each row now with max_memory_allocated, max_memory_reserved and the device memory in use
# (CUDA context and workspaces), for the memory model of issue 14.
#   bash validation/memory-peak_h100_2026-11-25/smoke_memory.sh h100
set -u
gpu=${1:?usage: smoke_memory.sh h200|h100}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"
topo=""; [ "$gpu" = h100 ] && topo="--set cluster.topology=dgx-h100"
t0=$(date +%s)
timeout -k 5 200 python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m clustersim.calibration.bench \
  -o "$OUT/bench-smoke.jsonl" --quick --kernels > "$OUT/bench.log" 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s rows=$(wc -l < "$OUT/bench-smoke.jsonl")" | tee -a "$OUT/runs.txt"
runone() {  # id, then train_gpt.py arguments
  local id=$1; shift
  local t=$(date +%s)
  timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 1 reference/train_gpt.py "$@" $topo \
    --steps 6 --warmup 2 --run-id "$id-$gpu" -o "$OUT/train_steps.jsonl" >> "$OUT/train.log" 2>&1
  printf '%-24s rc=%d %4d s (at %d s)\n' "$id" "$?" "$(( $(date +%s) - t ))" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/runs.txt"
}
ref=scenarios/ref-single.yaml
gb="--set model.hidden=2048 --set model.ffn_hidden=8192 --set training.micro_batch=4 --set training.global_batch=16"
runone mem-gb-single $ref $gb
runone mem-vocab256k $ref --set model.vocab=256000 --set training.micro_batch=2 --set training.global_batch=4
runone mem-3b-mb2 $ref --set model.layers=24 --set model.hidden=3072 --set model.heads=24 --set model.ffn_hidden=12288 --set training.micro_batch=2 --set training.global_batch=4
runone mem-recompute $ref $gb --set training.recompute=full
runone mem-seq8k $ref --set model.seq_len=8192 --set training.micro_batch=1 --set training.global_batch=2
runone mem-llama-gqa $ref --set model.layers=12 --set model.hidden=3072 --set model.heads=24 --set model.kv_heads=8 --set model.ffn_hidden=8192 --set model.mlp=swiglu --set model.norm=rmsnorm --set model.position_embedding=rope --set model.vocab=32000 --set training.micro_batch=2 --set training.global_batch=8
runone mem-eager $ref --set model.attention=eager --set training.micro_batch=2 --set training.global_batch=4
python3 - <<'PY'
import json, os
G = 2**30
for l in open(os.environ["OUT"] + "/train_steps.jsonl"):
    r = json.loads(l)
    if r.get("status") != "ok":
        print(r.get("run_id"), r.get("status"), str(r.get("error"))[:80]); continue
    print(f"{r['run_id']:22s} {1e3 * r['step_time_s']:8.1f} ms  alloc {r['peak_memory_bytes'] / G:6.2f} GiB  "
          f"reserved {r['peak_reserved_bytes'] / G:6.2f}  in use {r['device_used_bytes'] / G:6.2f}")
PY
