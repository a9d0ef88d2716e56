#!/usr/bin/env bash
# The 2 MiB all_reduce point on 2 ranks (30.5 us, 4 MiB 35.3: above every fitted line, docs/calibration.md): the
# bench's CUDA-graph timing at 1-8 MiB in 256 KiB steps for all_reduce, all_gather, reduce_scatter and broadcast, with
# NCCL's per-call choice (NCCL_DEBUG_SUBSYS=TUNING: algorithm, protocol, channels). Writes $OUT/bench.jsonl,
# tuning.txt, bench.log.gz.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-out}; mkdir -p "$OUT"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout -k 10 300 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
  -m clustersim calibrate bench -o "$OUT/bench.jsonl" --sizes 1MiB:8MiB:+256KiB --modes nccl \
  --ops all_reduce,all_gather,reduce_scatter,broadcast --no-gemm --no-hbm --no-progress > /tmp/bench.log 2>&1 < /dev/null
echo "bench rc=$?, $(wc -l < "$OUT/bench.jsonl") rows"
grep -E "\[0\] NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast): " /tmp/bench.log | sed 's/.*NCCL INFO //' | sort -u \
  > "$OUT/tuning.txt"
gzip -c /tmp/bench.log > "$OUT/bench.log.gz"
grep -c . "$OUT/tuning.txt"
python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("kind") == "collective" and r.get("group") is None]
for op in ("all_reduce", "broadcast"):
    print(op, " ".join(f"{r['size_bytes'] / 2**20:g}:{r['time_us']:.1f}" for r in sorted(
        (r for r in rows if r["op"] == op), key=lambda r: r["size_bytes"])))
PY
