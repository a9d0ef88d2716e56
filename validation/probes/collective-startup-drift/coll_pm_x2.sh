#!/usr/bin/env bash
# Round 10 of the drift probes (docs/calibration.md, "What the drift is"): Nsight Compute's PM sampling, counters
# over time inside one NCCL kernel, in one pass if it can (rounds 6-8: counter sets needing three passes hang, since
# ncu replays one rank's kernel while its peer waits). Rank 0 under ncu, rank 1 plain; all_gather and broadcast at
# 1 GiB on two GPUs (one kernel each, ~2-3 ms). Writes $OUT/probe10.log, queries.txt, pm-*.txt, pm-*.csv.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 MASTER_ADDR=127.0.0.1 WORLD_SIZE=2
OUT=${OUT:-out}; mkdir -p "$OUT"
{ ncu --version; ncu --list-sections; ncu --query-metrics-collection pmsampling --query-metrics --chip gh100 2>&1 | head -400; } \
  > "$OUT/queries.txt" 2>&1
grep -ciE "nvl" "$OUT/queries.txt"
port=29700
pair() {  # OP MIB NAME NCU-ARGS...
  op=$1; mib=$2; name=$3; shift 3; port=$((port + 1))
  MASTER_PORT=$port RANK=1 LOCAL_RANK=1 timeout -k 5 100 python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" --ops "$op" \
    --tag pm > /dev/null 2>> "$OUT/probe10.log" &
  MASTER_PORT=$port RANK=0 LOCAL_RANK=0 timeout -k 5 100 ncu --clock-control none --target-processes all \
    --kernel-name "regex:(AllGather|Broadcast)" --launch-skip 20 --launch-count 1 -o "/tmp/$name" -f "$@" \
    python3 validation/probes/collective-startup-drift/coll_drift.py --sweep "$mib" --ops "$op" --tag pm > "/tmp/$name.log" 2>&1
  echo "ncu $name rc=$?" | tee -a "$OUT/probe10.log"
  grep -E "==PROF==|==WARNING==|==ERROR==|passes" "/tmp/$name.log" | head -8 | tee -a "$OUT/probe10.log"
  wait
  if [ -f "/tmp/$name.ncu-rep" ]; then
    ncu -i "/tmp/$name.ncu-rep" --page details --print-details all > "$OUT/pm-$name.txt" 2>&1
    ncu -i "/tmp/$name.ncu-rep" --page raw --csv --print-metric-instances values > "$OUT/pm-$name.csv" 2>&1
    ls -la "/tmp/$name.ncu-rep" "$OUT/pm-$name.csv" | tee -a "$OUT/probe10.log"
  fi
}
pair all_gather 1024 ag-1g --section PmSampling
pair broadcast 1024 bc-1g --section PmSampling
pair all_gather 1024 ag-1g-warps --section PmSampling_WarpStates
grep -h -iE "sampl|nvl" "$OUT"/pm-ag-1g.txt | head -30
