#!/usr/bin/env bash
# A blind set on 2 (or, where a row sets cluster.gpus=N, N) GPUs of one host: every configuration of CONFIGS (a calibrate/blind*_configs.txt file whose
# predictions were committed before), the H200 rows by name; on H100 the run ids take the -h100 suffix of the
# rows predicted for dgx-h100. Writes $OUT/train_steps.jsonl and $OUT/train.log (2 files: the device returns 8).
# NAME ... after CONFIGS: only those rows, in that order (default: every H200 row of the file).
# TRAIN_EXTRA: more train_gpt.py arguments for every row (e.g. "--cpu-affinity cores"); RUN_TAG: appended to the run ids.
#   bash validation/launchers/blind_x2.sh validation/blind7_h100x2_2026-11-26/configs.txt
#   TRAIN_EXTRA="--cpu-affinity cores" RUN_TAG=-cores bash validation/launchers/blind_x2.sh validation/blind9_h200x2_2026-11-26/configs.txt rg-fsdp2
set -u
configs=${1:?usage: blind_x2.sh CONFIGS [NAME ...]}
shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
suffix=""; case "$gpu" in *H100*) suffix="-h100";; esac
echo "GPU: $gpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l) (run ids take suffix '$suffix')" | tee "$OUT/train.log"
if [ $# -gt 0 ]; then printf '%s\n' "$@"; else grep -v '^#' "$configs" | awk 'NF && $1 !~ /-h100$/ {print $1}'; fi |
while read -r name; do
  line=$(grep -E "^$name$suffix " "$configs" | head -1)
  set -- $line; shift; scenario=$1; shift
  sets=""; for kv in "$@"; do sets="$sets --set $kv"; done
  case "$scenario" in *single*) n=1;; *) n=2;; esac
  case " $* " in *" cluster.gpus="*) n=$(printf '%s\n' "$@" | sed -n 's/^cluster.gpus=//p' | head -1);; esac
  start=$(date +%s)
  timeout -k 5 90 python3 -m torch.distributed.run --standalone --nproc-per-node $n reference/train_gpt.py "$scenario" \
    $sets --steps 8 --warmup 3 ${TRAIN_EXTRA:-} --run-id "$name$suffix${RUN_TAG:-}" -o "$OUT/train_steps.jsonl" \
    >> "$OUT/train.log" 2>&1 < /dev/null
  echo "$name$suffix${RUN_TAG:-} rc=$? $(( $(date +%s) - start )) s" | tee -a "$OUT/train.log"
done
python3 - "$OUT/train_steps.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    issue = [sorted(x)[len(x) // 2] * 1e3 for x in (r.get('host_issue_s_ranks') or [])]
    gcs = [1e3 * sum(x) / max(len(x), 1) for x in (r.get('gc_s_ranks') or [])]
    print(f"{r.get('run_id'):30s} {r.get('status'):6s} {1e3 * (r.get('step_time_s') or 0):8.1f} ms "
          f"peak {(r.get('peak_memory_bytes') or 0) / 2**30:6.2f} GiB host " + " / ".join(f"{v:.1f}" for v in issue)
          + " gc " + " / ".join(f"{v:.1f}" for v in gcs))
PY
