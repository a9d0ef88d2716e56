#!/usr/bin/env bash
# Round 8 of the drift probe: both ranks under Nsight Compute in step (application replay: every pass reruns the
# whole two-process program, so no rank replays a kernel alone), one all_gather / broadcast kernel each at 16 MiB
# and 1 GiB: NVLink bytes out / in / protocol, DRAM bytes, kernel time. Writes $OUT/ncu3-*.txt, $OUT/probe8.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
M=gpu__time_duration.sum,nvltx__bytes.sum,nvlrx__bytes.sum,nvltx__bytes_data_protocol.sum,dram__bytes_read.sum,dram__bytes_write.sum
for run in "all_gather 16" "all_gather 1024" "broadcast 16" "broadcast 1024"; do
  set -- $run
  timeout -k 5 100 ncu --replay-mode application --clock-control none --cache-control none --target-processes all \
    --kernel-name "regex:(AllGather|Broadcast)" --launch-skip 20 --launch-count 1 --metrics "$M" \
    python3 -m torch.distributed.run --standalone --nproc-per-node 2 validation/probes/collective-startup-drift/coll_drift.py --sweep "$2" \
    --ops "$1" --tag ncu > "$OUT/ncu3-$1-$2.txt" 2>&1
  echo "ncu3 $1-$2 rc=$?" | tee -a "$OUT/probe8.log"
done
for f in "$OUT"/ncu3-*.txt; do echo "== $f"; grep -E "passes|Device|^\s+(gpu__|nvl|dram)" "$f" | head -16; done
