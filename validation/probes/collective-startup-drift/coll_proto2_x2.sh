#!/usr/bin/env bash
# Round 13 of the drift probes (docs/calibration.md, "What the drift is"), two GPUs: the emulated Simple protocol of
# rounds 11-12 (validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu) with the own chunk's copy in the send pass (OWN=1, as NCCL's
# out-of-place all_gather), at 16 MiB-4 GiB: does it stretch the start-up over milliseconds as NCCL's all_gather's
# drift is (marginal bus GB/s still rising from 1 to 4 GiB)? Writes $OUT/proto2.jsonl.gz, proto2.txt.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/proto2.txt"
nvcc -O3 -arch=sm_90 -o /tmp/p2p_proto validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu || exit 3
r=/tmp/proto2_rows.jsonl; : > $r
run() { timeout -k 2 60 /tmp/p2p_proto "$@" >> $r 2>> "$OUT/proto2.txt" || echo "failed or hung: $*" | tee -a "$OUT/proto2.txt"; }
run bi 24 1024 1024 4 1 3 1
run bi 24 4096 1024 4 1 3 1
run bi 24 4096 1024 4 1 3 0
run bi 8 1024 1024 4 1 3 1
run bi 24 16 170 4 1 3 1
run bi 24 64 680 4 1 3 1
run bi 24 256 1024 4 1 3 1
python3 validation/probes/nvlink-store-ramp/p2p_ramp/summarize.py $r >> "$OUT/proto2.txt" 2>&1
gzip -c $r > "$OUT/proto2.jsonl.gz"
grep -E "^proto" "$OUT/proto2.txt" | grep " 2 0->1"
