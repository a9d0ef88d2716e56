#!/bin/bash
# One call on a one-GPU machine (nvidia-h200 or nvidia-h100-x1): the blind-set rows that need one GPU,
# then host-cost probes of the reference script. Rows go to $OUT/train_steps.jsonl, logs to $OUT/train.log.
#   bash validation/launchers/single_gpu.sh h200     # blind2 rg-single gv-single, blind3 (H200 rows), probes
#   bash validation/launchers/single_gpu.sh h100     # blind2 *-single-h100, blind3 *-h100, probes
#   CONFIGS=validation/blind4_h200-h100_2026-11-24/configs.txt PROBES=0 bash validation/launchers/single_gpu.sh h200   # another set only
# Probes (run ids host-*): the host-bound reference shape (ref-single) and a tiny shape whose GPU work is
# negligible (hidden 256, seq 256: the step time is the host's issue time), each as a plain process and
# with --force-ddp (a one-rank NCCL group and DDP), to see what the distributed machinery adds per call.
set -u
gpu=${1:?usage: single_gpu.sh h200|h100}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpus.txt"
nproc >> "$OUT/gpus.txt"
if [ "$gpu" = h100 ]; then sel='h100$'; excl='^$'; topo="--set cluster.topology=dgx-h100"
else sel='.'; excl='h100$'; topo=""; fi
t0=$(date +%s)
runone() {  # id, then train_gpt.py arguments
  local id=$1; shift
  local t=$(date +%s)
  timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node 1 reference/train_gpt.py "$@" \
    --steps 10 --warmup 3 --run-id "$id" -o "$OUT/train_steps.jsonl" >> "$OUT/train.log" 2>&1
  printf '%-24s rc=%d %4d s (at %d s)\n' "$id" "$?" "$(( $(date +%s) - t ))" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/runs.txt"
}
for cfg in ${CONFIGS:-calibrate/blind2_configs.txt validation/blind3_h200-h100_2026-11-24/configs.txt}; do
  python3 tools/heldout.py --configs "$cfg" commands > /tmp/cmds.txt
  while read -r line; do
    id=$(sed -E 's/.*--run-id ([^ ]+).*/\1/' <<<"$line")
    [[ $id =~ $sel ]] || continue
    [[ $id =~ $excl ]] && continue
    grep -q -- "--nproc-per-node 1 " <<<"$line" || continue
    args=$(sed -E 's/.*reference\/train_gpt.py (.*) --steps.*/\1/' <<<"$line")
    eval "runone $id $args"
  done < /tmp/cmds.txt
done
if [ "${PROBES:-1}" = 1 ]; then
  tiny="--set model.hidden=256 --set model.ffn_hidden=1024 --set model.seq_len=256"
  runone "host-ref-$gpu" scenarios/ref-single.yaml $topo
  runone "host-ref-ddp-$gpu" scenarios/ref-single.yaml $topo --force-ddp
  runone "host-tiny-$gpu" scenarios/ref-single.yaml $topo $tiny
  runone "host-tiny-ddp-$gpu" scenarios/ref-single.yaml $topo $tiny --force-ddp
fi
python3 - <<'PY'
import json, os, statistics
for l in open(os.environ["OUT"] + "/train_steps.jsonl"):
    r = json.loads(l)
    iss = r.get("host_issue_s_rank0") or [0]
    print(f"{r.get('run_id'):22s} {r.get('status'):6s} {1e3 * r['step_time_s']:8.1f} ms  host issue "
          f"{1e3 * statistics.median(iss):8.1f} ms  min {1e3 * r['step_time_s_min']:7.1f}  max {1e3 * r['step_time_s_max']:7.1f}")
PY
