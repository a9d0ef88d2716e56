#!/usr/bin/env bash
# Second call (2026-12-02, after the blind MoE rows missed): the expert loop as training runs it (autograd on,
# forward and forward + backward per expert: the moe_loop_fwd / moe_loop_fwd_bwd rows of the experts class).
#   bash validation/probes/fp8-and-moe-kernels/run_loop_h200.sh
set -u
OUT=${OUT:?set OUT}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
timeout -k 10 300 python3 -m torch.distributed.run --standalone --nproc-per-node 1 -m clustersim \
  calibrate bench --ops none --no-gemm --no-hbm --no-launch --kernels --kernel-classes experts \
  -o "$OUT/kernels-experts-loop.jsonl" --no-progress > "$OUT/bench-experts-loop.log" 2>&1 || echo "bench failed rc=$?"
tail -2 "$OUT/bench-experts-loop.log"
python3 - "$OUT" <<'PY'
import json, sys
for l in open(sys.argv[1] + "/kernels-experts-loop.jsonl"):
    r = json.loads(l)
    if r.get("name", "").startswith("moe_loop"):
        print(f"{r['op']:44s} {r['time_us']:9.1f} us/expert")
PY
