#!/usr/bin/env bash
# One call on a GPU box: the calibration bench (collectives, GEMM, HBM, launch, communicator
# start-up, NCCL's own tuning table) and the reference training steps, all written under OUTDIR.
#
#   bash calibrate/device_suite.sh OUTDIR            # uses every visible GPU
#
# Knobs: SIZES (default 1KiB:4GiB:x2), TRAIN=0 to skip training, PROTO_SWEEP=0 to skip the
# forced-protocol all_reduce sweeps, PYTHON (default python3).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): on shared hosts it can take GPUs out of service.
set -u
OUT=${1:?usage: device_suite.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/.." && pwd)
PYTHON=${PYTHON:-python3}
SIZES=${SIZES:-1KiB:4GiB:x2}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT/logs"
NGPU=$("$PYTHON" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
echo "device_suite: $NGPU GPU(s); sizes $SIZES"
t0=$(date +%s)
step() { echo "== $(( $(date +%s) - t0 ))s: $*"; }

if [ "$NGPU" -ge 2 ]; then
  step "bench: all operations on $NGPU ranks"
  timeout 330 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" -m clustersim calibrate bench \
    -o "$OUT/bench.jsonl" --sizes "$SIZES" --no-progress >"$OUT/logs/bench.log" 2>&1 || echo "bench failed rc=$?"
  step "NCCL tuning table and graph"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,ENV NCCL_GRAPH_DUMP_FILE="$OUT/logs/nccl_graph.xml" \
    timeout 90 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" -m clustersim calibrate bench \
    -o "$OUT/logs/tuning_probe.jsonl" --ops all_reduce --sizes 1KiB:1MiB:x32 --modes nccl --no-gemm --no-hbm --no-launch \
    --no-progress >"$OUT/logs/nccl_debug.log" 2>&1 || echo "tuning probe failed rc=$?"
  if [ "${PROTO_SWEEP:-1}" = 1 ]; then
    for ap in Ring:LL Ring:LL128 Ring:Simple Tree:Simple; do
      a=${ap%%:*}; p=${ap##*:}
      step "all_reduce forced $a/$p"
      timeout 60 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" -m clustersim calibrate bench \
        -o "$OUT/bench_forced.jsonl" --ops all_reduce --sizes 1KiB:256MiB:x4 --modes nccl --nccl-algo "$a" --nccl-proto "$p" \
        --no-gemm --no-hbm --no-launch --no-progress >>"$OUT/logs/bench_forced.log" 2>&1 || echo "forced $a/$p failed rc=$?"
    done
  fi
else
  step "bench: compute only (one GPU)"
  timeout 200 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 1 -m clustersim calibrate bench \
    -o "$OUT/bench.jsonl" --ops none --no-progress >"$OUT/logs/bench.log" 2>&1 || echo "bench failed rc=$?"
fi
if [ "${TRAIN:-1}" = 1 ]; then
  step "reference training steps"
  bash "$REPO/calibrate/gpu_suite.sh" "$OUT/train" 2>&1 | tail -40
fi
step "done"
ls -la "$OUT" "$OUT/train" 2>/dev/null | head -30
"$PYTHON" - "$OUT" <<'PY'
import json, sys, collections, pathlib
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for f in out.glob("bench*.jsonl") for l in open(f) if l.strip()]
c = collections.Counter((r.get("kind"), r.get("op"), r.get("mode")) for r in rows)
for k, v in sorted(c.items(), key=str): print("rows", k, v)
for r in rows:
    if r.get("kind") == "collective" and r.get("mode") == "nccl" and r.get("size_bytes") in (2**20, 2**30) and not r.get("algorithm"):
        print(f"{r['op']:15s} {r['size_bytes']:>11d} {r['time_us']:10.1f} us busbw {r.get('busbw_GBps', 0):7.1f}")
PY
