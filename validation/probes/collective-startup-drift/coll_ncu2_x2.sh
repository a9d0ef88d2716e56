#!/usr/bin/env bash
# Round 7 of the drift probe: round 6 with counters that fit one pass (no kernel replay, so no hang against the
# unprofiled peer): NVLink bytes out, in, and out as protocol, and the kernel time, rank 0 under Nsight Compute
# (caches left alone), all_gather and broadcast at 16 MiB and 1 GiB. Writes $OUT/ncu2-*.txt, $OUT/probe7.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 MASTER_ADDR=127.0.0.1 WORLD_SIZE=2
OUT=${OUT:-out}; mkdir -p "$OUT"
M=gpu__time_duration.sum,nvltx__bytes.sum,nvlrx__bytes.sum,nvltx__bytes_data_protocol.sum
port=29700
for op in all_gather broadcast; do
  for mib in 16 1024; do
    port=$((port + 1))
    MASTER_PORT=$port RANK=1 LOCAL_RANK=1 timeout -k 5 60 python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" \
      --ops "$op" --tag ncu > /dev/null 2>> "$OUT/probe7.log" &
    MASTER_PORT=$port RANK=0 LOCAL_RANK=0 timeout -k 5 60 ncu --clock-control none --cache-control none \
      --target-processes all --kernel-name "regex:(AllGather|Broadcast)" --launch-skip 20 --launch-count 5 \
      --metrics "$M" python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" --ops "$op" --tag ncu \
      > "$OUT/ncu2-$op-$mib.txt" 2>&1
    echo "ncu2 $op-$mib rc=$?" | tee -a "$OUT/probe7.log"
    wait
  done
done
for f in "$OUT"/ncu2-*.txt; do echo "== $f"; grep -E "passes|^\s+(gpu__|nvl)" "$f" | head -12; done
