#!/usr/bin/env bash
# Pipeline diagnostics on a lent 4-GPU H100/H200 host (issue 14, 2026-11-27):
#   1. validation/probes/p2p-waiting-kernel/p2p_resident.py on GPUs 0-1: compute beside a waiting NCCL send / receive
#   2. one profiled step of blind set 8's 4-GPU 1F1B and interleaved rows, every rank (reference/step_trace.py)
# Writes $OUT/host.txt, $OUT/p2p_resident.jsonl, $OUT/trace.jsonl, $OUT/diag.log.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; export OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{ date -u; nproc; nvidia-smi topo -m; nvidia-smi -q | grep -iE "product name|power limit|max clocks" | head -20; } > "$OUT/host.txt" 2>&1
for rep in 1 2; do
  CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
    validation/probes/p2p-waiting-kernel/p2p_resident.py 2> "$OUT/p2p_resident.err" | sed "s/^{/{\"rep\": $rep, /" >> "$OUT/p2p_resident.jsonl"
  echo "p2p_resident rep $rep rc=$?" | tee -a "$OUT/diag.log"
done
cat "$OUT/p2p_resident.jsonl"
TRACE_NPROC=4 TRACE_ROWS="${TRACE_ROWS:-e8-pp4-1f1b e8-pp4-interleaved}" bash validation/probes/fsdp2-step-traces/diag8.sh trace
