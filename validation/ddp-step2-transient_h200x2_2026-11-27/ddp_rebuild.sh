#!/usr/bin/env bash
# DDP's bucket rebuild: when the first bucket set leaves the GPU (docs/validation.md 6q), on one GPU and, where
# there are two, on two. Round 1 (one GPU) also timed eager attention's kernels (attention_bmm.py).
# Writes $OUT/ddp_rebuild.jsonl (rank 0's rows and each run's summary) and $OUT/probe.log.
#   bash validation/ddp-step2-transient_h200x2_2026-11-27/ddp_rebuild.sh          # pause sweep and (between, poll) modes
#   BMM=1 bash validation/ddp-step2-transient_h200x2_2026-11-27/ddp_rebuild.sh    # also attention_bmm.py -> $OUT/attention_bmm.jsonl
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print(torch.__version__)'; } | tee "$OUT/probe.log"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
run() {  # NPROC ARGS...
  n=$1; shift
  timeout -k 5 240 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" validation/ddp-step2-transient_h200x2_2026-11-27/ddp_rebuild.py "$@" \
    >> "$OUT/ddp_rebuild.jsonl" 2>> "$OUT/probe.log"
  echo "ddp_rebuild nproc=$n $* rc=$?" | tee -a "$OUT/probe.log"
}
run 1 --trials 27 --modes
if [ "$gpus" -ge 2 ]; then run 2 --trials 24; run 2 --trials 27 --modes; fi
grep summary "$OUT/ddp_rebuild.jsonl" | tee -a "$OUT/probe.log"
if [ -n "${BMM:-}" ]; then
  timeout -k 5 240 python3 validation/probes/attention-bmm-by-shape/attention_bmm.py > "$OUT/attention_bmm.jsonl" 2>> "$OUT/probe.log"
  echo "attention_bmm rc=$?" | tee -a "$OUT/probe.log"
fi
