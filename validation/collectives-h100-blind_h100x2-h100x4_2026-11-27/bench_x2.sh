#!/bin/bash
# The collective bench (six NCCL ops, 1 KiB - 4 GiB, CUDA-graph timed) on every GPU of a lent host, for a
# blind check of the collective model on hardware whose collectives were never measured, committed first:
#   python validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/collective_blind.py predict -t dgx-h100 --gpus 2 --also hgx-h200 -o validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json
#   bash validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/bench_x2.sh                      # rows to $OUT/bench-graph.jsonl, NCCL init log, topology
#   python validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/collective_blind.py compare validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json $OUT/bench-graph.jsonl
# NVLink multicast stays off (NVLS is not modelled from these rows).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-out}; mkdir -p "$OUT"
n=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/gpus.txt"
nvidia-smi topo -m > "$OUT/topo-m.txt" 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())" > "$OUT/versions.txt" 2>&1
t0=$(date +%s)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout -k 10 480 python3 -m torch.distributed.run --standalone \
  --nproc-per-node "$n" -m clustersim calibrate bench -o "$OUT/bench-graph.jsonl" --sizes 1KiB:4GiB:x2 \
  --no-gemm --no-hbm --no-progress > "$OUT/bench.log" 2>&1
echo "bench x$n rc=$? ($(( $(date +%s) - t0 )) s), $(wc -l < "$OUT/bench-graph.jsonl") rows"
grep -h "p2p channels\|coll channels" "$OUT/bench.log" | head -2
