#!/usr/bin/env bash
# Round 11 of the drift probes (docs/calibration.md, "What the drift is"), two GPUs: NCCL's Simple protocol emulated
# around plain NVLink stores (validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu: FIFO slots on the peer, fence, tail, copy-out,
# head), piece by piece, with the rate per time window of one kernel; then NCCL's own all_gather at 16 MiB-1 GiB on
# the same machine for reference. Writes $OUT/proto.jsonl.gz, proto.txt, nccl.jsonl, nccl.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2 | tee "$OUT/proto.txt"
nvcc -O3 -arch=sm_90 -o /tmp/p2p_proto validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu || exit 3
r=/tmp/proto_rows.jsonl; : > $r
run() { timeout -k 2 40 /tmp/p2p_proto "$@" >> $r 2>> "$OUT/proto.txt" || echo "failed or hung: $*" | tee -a "$OUT/proto.txt"; }
run bi 24 1024 1024 4 1      # NCCL-like all_gather on 24 channels: 1 MiB slices, 4 slots (4 MiB FIFO)
run bi 8 1024 1024 4 1
run bi 12 1024 1024 4 1
run bi 16 1024 1024 4 1
run bi 24 1024 1024 4 0      # no fence before the tail
run uni 24 1024 1024 4 1     # broadcast-like: one direction
run bi 24 1024 512 8 1
run bi 24 1024 256 8 1
run bi 24 16 170 4 1         # the slice NCCL uses below one loop (size / (24 channels x 2 ranks x 2 slices))
run bi 24 64 680 4 1
run bi 24 256 1024 4 1
python3 validation/probes/nvlink-store-ramp/p2p_ramp/summarize.py $r >> "$OUT/proto.txt" 2>&1
gzip -c $r > "$OUT/proto.jsonl.gz"
grep -E "^proto" "$OUT/proto.txt" | grep " 2 0->1" 
timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py \
  --sweep 16,64,256,1024 --ops all_gather,broadcast --tag nccl > "$OUT/nccl.jsonl" 2> "$OUT/nccl.log" < /dev/null
grep -E "MiB:" "$OUT/nccl.log"
