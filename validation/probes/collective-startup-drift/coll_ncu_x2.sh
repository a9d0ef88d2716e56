#!/usr/bin/env bash
# Round 6 of the drift probe: NVLink and memory counters of NCCL's kernel (Nsight Compute on rank 0, rank 1 plain),
# all_gather and broadcast at 16 MiB and 1 GiB on two GPUs: is the early slowness of a call visible as NVLink
# protocol overhead (flow control, responses) or memory traffic per user byte? Then a PM-sampling attempt (metrics
# over time inside one kernel). Writes $OUT/ncu-*.txt, $OUT/probe6.log.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 MASTER_ADDR=127.0.0.1 WORLD_SIZE=2
OUT=${OUT:-out}; mkdir -p "$OUT"
M=gpu__time_duration.sum,nvltx__bytes.sum,nvlrx__bytes.sum,nvltx__bytes_data_protocol.sum,nvlrx__bytes_data_protocol.sum
M=$M,nvltx__bytes_packet_request_data_user.sum,nvltx__bytes_packet_response_data_user.sum
M=$M,nvlrx__bytes_packet_request_data_user.sum,nvlrx__bytes_packet_response_data_user.sum,dram__bytes_read.sum,dram__bytes_write.sum
port=29600
pair() {  # OP MIB NAME NCU-ARGS...
  op=$1; mib=$2; name=$3; shift 3; port=$((port + 1))
  MASTER_PORT=$port RANK=1 LOCAL_RANK=1 timeout -k 5 200 python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" --ops "$op" \
    --tag ncu > /dev/null 2>> "$OUT/probe6.log" &
  MASTER_PORT=$port RANK=0 LOCAL_RANK=0 timeout -k 5 200 ncu --clock-control none --target-processes all \
    --kernel-name "regex:(AllGather|Broadcast)" --launch-skip 20 --launch-count 3 "$@" \
    python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" --ops "$op" --tag ncu > "$OUT/ncu-$name.txt" 2>&1
  echo "ncu $name rc=$?" | tee -a "$OUT/probe6.log"
  wait
}
for op in all_gather broadcast; do
  for mib in 16 1024; do pair "$op" "$mib" "$op-$mib" --metrics "$M"; done
done
pair all_gather 64 pm-all_gather-64 --section PmSampling
grep -h -E "passes|rc=" "$OUT"/ncu-*.txt "$OUT/probe6.log" | sort | uniq -c | head -20
for f in "$OUT"/ncu-all_gather-16.txt "$OUT"/ncu-broadcast-1024.txt; do echo "== $f"; grep -E "^\s+(gpu__|nvl|dram)" "$f" | head -24; done
