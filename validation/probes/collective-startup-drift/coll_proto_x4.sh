#!/usr/bin/env bash
# Round 12 of the drift probes (docs/calibration.md, "What the drift is"), on a 4-GPU host: the emulated Simple
# protocol of round 11 (validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu) as a ring on 2, 3 and 4 GPUs (each GPU sends to
# the next and receives from the previous), 24 and 8 channels: does the early slowness shrink with the ring's size,
# as the benches' drift does (2 ranks 290 -> 354 GB/s marginal, 4 ranks 330 -> 365)? Then NCCL's all_gather on 2, 3
# and 4 ranks at 16 MiB-1 GiB for reference. Writes $OUT/proto4.jsonl.gz, proto4.txt, nccl4.jsonl, nccl4.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/proto4.txt"
nvcc -O3 -arch=sm_90 -o /tmp/p2p_proto validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu || exit 3
r=/tmp/proto4_rows.jsonl; : > $r
run() { timeout -k 2 40 /tmp/p2p_proto "$@" >> $r 2>> "$OUT/proto4.txt" || echo "failed or hung: $*" | tee -a "$OUT/proto4.txt"; }
for g in 0,1 0,1,2 0,1,2,3; do
  export CUDA_VISIBLE_DEVICES=$g
  run ring 24 1024 1024 4 1
  run ring 8 1024 1024 4 1
done
# the slice NCCL's ring uses below one loop: size / (24 channels x ranks x 2 slices)
CUDA_VISIBLE_DEVICES=0,1 run ring 24 64 680 4 1
CUDA_VISIBLE_DEVICES=0,1,2 run ring 24 64 455 4 1
CUDA_VISIBLE_DEVICES=0,1,2,3 run ring 24 64 341 4 1
CUDA_VISIBLE_DEVICES=0,1 run ring 24 256 1024 4 1
CUDA_VISIBLE_DEVICES=0,1,2 run ring 24 256 1024 4 1
CUDA_VISIBLE_DEVICES=0,1,2,3 run ring 24 256 1024 4 1
unset CUDA_VISIBLE_DEVICES
python3 validation/probes/nvlink-store-ramp/p2p_ramp/summarize.py $r >> "$OUT/proto4.txt" 2>&1
gzip -c $r > "$OUT/proto4.jsonl.gz"
grep -E "^proto" "$OUT/proto4.txt" | grep " 2 0->1"
for n in 2 3 4; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout -k 5 120 python3 -m torch.distributed.run --standalone \
    --nproc-per-node $n validation/probes/collective-startup-drift/coll_drift.py --sweep 16,64,256,1024 --ops all_gather,all_reduce --tag "ranks=$n" \
    >> "$OUT/nccl4.jsonl" 2>> "$OUT/nccl4.log" < /dev/null
done
grep -E "MiB:" "$OUT/nccl4.log"
