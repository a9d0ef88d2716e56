#!/usr/bin/env bash
# Blind set 6 (issue 14, 2-GPU overheads) and the compute/communication overlap probe, on 2 GPUs of one host.
# Predictions were committed before this ran: calibrate/raw/blind6/predictions.json (calibrate/blind6_configs.txt).
# Usage on the lent machine:  bash calibrate/device/blind6_x2.sh PART   (PART: a = overlap probe + rg/ac rows,
# b = b2/gv rows). Rows go to $OUT/train_steps.jsonl and $OUT/overlap.jsonl; logs to $OUT/train.log and
# $OUT/overlap.log (the device returns at most 8 files: the 2026-11-26 run wrote 9 and lost train_steps.jsonl;
# calibrate/raw/blind6/train_steps.jsonl was rebuilt from the logs' summary lines).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
part=${1:-a}
OUT=${OUT:-out}; mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
suffix=""; case "$gpu" in *H100*) suffix="-h100";; esac
echo "GPU: $gpu (run ids take suffix '$suffix')"
[ "$part" = a ] && nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
if [ "$part" = a ]; then
  timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 calibrate/device/overlap_probe.py \
    -o "$OUT/overlap.jsonl" > "$OUT/overlap.log" 2>&1; echo "overlap rc=$?"; tail -n 12 "$OUT/overlap.log"
  names="rg-single rg-ddp2 rg-fsdp2 rg-pp2-interleaved rg-pp2-1f1b ac-ddp2 ac-fsdp2 rg-tp2 rg-pp2-gpipe"
else
  names="b2-single b2-ddp2 b2-fsdp2 gv-single gv-ddp2 gv-fsdp2 gv-pp2-interleaved"
fi
for name in $names; do
  line=$(grep -E "^$name " calibrate/blind6_configs.txt | head -1)
  set -- $line; shift; scenario=$1; shift
  sets=""; n=1
  for kv in "$@"; do sets="$sets --set $kv"; done
  case "$scenario" in *single*) n=1;; *) n=2;; esac
  start=$(date +%s)
  timeout -k 5 90 python3 -m torch.distributed.run --standalone --nproc-per-node $n calibrate/train_gpt.py "$scenario" \
    $sets --steps 8 --warmup 3 --run-id "$name$suffix" -o "$OUT/train_steps.jsonl" >> "$OUT/train.log" 2>&1
  echo "$name$suffix rc=$? $(( $(date +%s) - start )) s"
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r.get('run_id'):24s} {r.get('status'):6s} {1e3 * (r.get('step_time_s') or 0):8.1f} ms "
          f"peak {(r.get('peak_memory_bytes') or 0) / 2**30:6.2f} GiB")
PY
