#!/usr/bin/env bash
# The collective bench on 3 GPUs of a 4-GPU host (six ops, 1 KiB - 4 GiB), then the blind rank-scaling comparison
# against validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json (committed before this ran). Writes $OUT/bench3.jsonl,
# bench3.log.gz, host.txt.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader; nvidia-smi topo -m
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())"; } > "$OUT/host.txt" 2>&1
head -3 "$OUT/host.txt"
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0,1,2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout -k 10 330 python3 -m torch.distributed.run \
  --standalone --nproc-per-node 3 -m clustersim calibrate bench -o "$OUT/bench3.jsonl" --sizes 1KiB:4GiB:x2 \
  --no-gemm --no-hbm --no-progress > /tmp/bench3.log 2>&1 < /dev/null
echo "bench x3 rc=$? ($(( $(date +%s) - t0 )) s), $(wc -l < "$OUT/bench3.jsonl" 2>/dev/null) rows"
gzip -c /tmp/bench3.log > "$OUT/bench3.log.gz"
python3 validation/collectives-3rank-blind_h200x4_2026-11-27/rank_scaling_blind.py compare validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json "$OUT/bench3.jsonl" 2>&1 | head -40
