#!/usr/bin/env bash
# Round 9 of the drift probes (docs/calibration.md, "What the drift is"), on a 4-GPU host (H200 or H100):
#  1. p2p_ramp.cu: plain SM stores to a peer over NVLink, without NCCL, rate per time window of one kernel
#     (uni 0->1 and bi 0<->1 at 8 / 16 / 24 / 32 blocks, bi into a 4 MiB window per block as NCCL's FIFO,
#     a 3- and a 4-GPU ring, two pairs, a local copy);
#  2. NCCL all_reduce / broadcast / all_gather at 1-8 MiB in half-MiB steps on 2 ranks, NCCL's own protocol and
#     Simple forced (the 2 MiB all_reduce point sits 4.6 us above every fitted line);
#  3. the collective bench on 3 ranks (six ops, 1 KiB - 4 GiB): the blind rank-scaling check, predictions in
#     validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json, committed before this ran.
# Writes $OUT/host.txt, p2p_ramp.jsonl.gz, p2p_ramp.txt, sweep.jsonl, sweep.log, bench3.jsonl, bench3.log.gz.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-out}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader; nvidia-smi topo -m
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())"; } > "$OUT/host.txt" 2>&1
head -5 "$OUT/host.txt"
t0=$(date +%s)
nvcc -O3 -arch=sm_90 -o /tmp/p2p_ramp validation/probes/nvlink-store-ramp/p2p_ramp/p2p_ramp.cu || exit 3
r=/tmp/p2p_rows.jsonl; : > $r
run() { timeout -k 2 30 "$@" >> $r 2>> "$OUT/p2p_ramp.txt" || echo "failed: $*" | tee -a "$OUT/p2p_ramp.txt"; }
for b in 8 16 24 32; do CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp bi $b 1024 256 0 3; done
CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp uni 24 1024 256 0 3
CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp uni 8 1024 256 0 3
CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp bi 24 1024 256 4096 3
CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp bi 24 64 64 0 3
CUDA_VISIBLE_DEVICES=0,1,2 run /tmp/p2p_ramp ring 24 1024 256 0 3
run /tmp/p2p_ramp ring 24 1024 256 0 3
run /tmp/p2p_ramp pairs 24 1024 256 0 3
CUDA_VISIBLE_DEVICES=0,1 run /tmp/p2p_ramp local 24 1024 256 0 3
python3 validation/probes/nvlink-store-ramp/p2p_ramp/summarize.py $r >> "$OUT/p2p_ramp.txt" 2>&1
gzip -c $r > "$OUT/p2p_ramp.jsonl.gz"
grep -E "^(bi|uni|ring|pairs|local) " "$OUT/p2p_ramp.txt" | grep " 2 [0-9]->" | head -24
echo "p2p done ($(( $(date +%s) - t0 )) s)"
sweep=1,1.5,2,2.5,3,3.5,4,5,6,8
for proto in default Simple; do
  if [ $proto = default ]; then unset NCCL_PROTO; else export NCCL_PROTO=$proto; fi
  CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
    validation/probes/collective-startup-drift/coll_drift.py --sweep $sweep --ops all_reduce,broadcast,all_gather --tag "proto=$proto" \
    >> "$OUT/sweep.jsonl" 2>> "$OUT/sweep.log" < /dev/null || echo "sweep $proto failed" | tee -a "$OUT/sweep.log"
done
unset NCCL_PROTO
grep -E "MiB:" "$OUT/sweep.log" | grep all_reduce
echo "sweep done ($(( $(date +%s) - t0 )) s)"
CUDA_VISIBLE_DEVICES=0,1,2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout -k 10 330 python3 -m torch.distributed.run \
  --standalone --nproc-per-node 3 -m clustersim calibrate bench -o "$OUT/bench3.jsonl" --sizes 1KiB:4GiB:x2 \
  --no-gemm --no-hbm --no-progress > /tmp/bench3.log 2>&1 < /dev/null
echo "bench x3 rc=$? ($(( $(date +%s) - t0 )) s), $(wc -l < "$OUT/bench3.jsonl" 2>/dev/null) rows"
gzip -c /tmp/bench3.log > "$OUT/bench3.log.gz"
grep -h "p2p channels\|coll channels" /tmp/bench3.log | head -2
python3 validation/collectives-3rank-blind_h200x4_2026-11-27/rank_scaling_blind.py compare validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json "$OUT/bench3.jsonl" 2>&1 \
  | grep -v "^RAMP" | head -40
