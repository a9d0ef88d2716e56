#!/usr/bin/env bash
# One call on a GPU box: the reference training steps, then the calibration bench (collectives,
# GEMM, HBM, launch, communicator start-up), then NCCL's own tuning table. Every file is written
# straight into OUTDIR (flat), so a run stopped half-way still leaves what it measured.
#
#   bash calibrate/device_suite.sh OUTDIR            # uses every visible GPU
#
# Knobs: SIZES (default 1KiB:4GiB:x2), TRAIN=0 skips training, BENCH=0 skips the bench,
# STEPS/WARMUP (training), PYTHON (default python3).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on shared hosts it can take GPUs out of service.
set -u
OUT=${1:?usage: device_suite.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/.." && pwd)
PYTHON=${PYTHON:-python3}
SIZES=${SIZES:-1KiB:4GiB:x2}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
NGPU=$("$PYTHON" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
echo "device_suite: $NGPU GPU(s); sizes $SIZES"
t0=$(date +%s)
step() { echo "== $(( $(date +%s) - t0 ))s: $*"; }
launch() { "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" "$@"; }

if [ "${TRAIN:-1}" = 1 ]; then
  step "reference training steps"
  TIMEOUT=${TRAIN_TIMEOUT:-100} bash "$REPO/calibrate/gpu_suite.sh" "$OUT/train" >"$OUT/train.log" 2>&1
  cp "$OUT/train/train_steps.jsonl" "$OUT/train_steps.jsonl" 2>/dev/null
  tail -12 "$OUT/train.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  if [ "$NGPU" -ge 2 ]; then
    step "bench: all operations on $NGPU ranks"
    timeout -k 10 "${BENCH_TIMEOUT:-240}" "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" \
      -m clustersim calibrate bench -o "$OUT/bench.jsonl" --sizes "$SIZES" --no-progress >"$OUT/bench.log" 2>&1 \
      || echo "bench failed rc=$?"
    step "NCCL tuning table"
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING timeout -k 5 45 "$PYTHON" -m torch.distributed.run --standalone \
      --nproc-per-node "$NGPU" -m clustersim calibrate bench -o "$OUT/tuning_probe.jsonl" --ops all_reduce --sizes 1KiB:1MiB:x32 \
      --modes nccl --no-gemm --no-hbm --no-launch --no-progress >"$OUT/nccl_debug.log" 2>&1 || echo "tuning probe failed rc=$?"
  else
    step "bench: compute only (one GPU)"
    timeout -k 10 200 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 1 -m clustersim calibrate bench \
      -o "$OUT/bench.jsonl" --ops none --no-progress >"$OUT/bench.log" 2>&1 || echo "bench failed rc=$?"
  fi
fi
step "done"
"$PYTHON" - "$OUT" <<'PY'
import json, sys, collections, pathlib
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for f in out.glob("bench*.jsonl") for l in open(f) if l.strip()]
c = collections.Counter((r.get("kind"), r.get("op"), r.get("mode")) for r in rows)
for k, v in sorted(c.items(), key=str): print("rows", k, v)
for r in rows:
    if r.get("kind") == "collective" and r.get("mode") == "nccl" and r.get("size_bytes") in (2**20, 2**30):
        print(f"{r['op']:15s} {r['size_bytes']:>11d} {r['time_us']:10.1f} us busbw {r.get('busbw_GBps') or 0:7.1f}")
PY
