#!/usr/bin/env bash
# The DDP step-2 memory transient (docs/validation.md 6c, 6g): is it ProcessGroupNCCL keeping the first
# iteration's bucket tensors alive (TORCH_NCCL_AVOID_RECORD_STREAMS=1, the default: a collective's tensors are
# stashed in its Work and released when the watchdog thread reaps it) while DDP's bucket rebuild allocates new
# buckets at the start of the second iteration? rg-ddp2 and w7-ddp2 (blind set 9's -h100 rows on H100), three
# runs each with the default and three with TORCH_NCCL_AVOID_RECORD_STREAMS=0 (record_stream instead of stashing).
# Every row records the allocator peak of each step (peak_memory_bytes_per_step_rank0).
#   bash validation/ddp-step2-transient_h200x2_2026-11-27/ddp_transient.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
for i in 1 2 3; do
  RUN_TAG=-stash$i bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt rg-ddp2 w7-ddp2
  TORCH_NCCL_AVOID_RECORD_STREAMS=0 RUN_TAG=-record$i bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt rg-ddp2 w7-ddp2
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run_id']:32s} " + " ".join(f"{b / 2**30:.2f}" for b in r.get("peak_memory_bytes_per_step_rank0") or []))
PY
