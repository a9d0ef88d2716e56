#!/usr/bin/env bash
# GPU run suite for issue 4 "Real GPUs": runs every scenarios/ref-*.yaml that fits the visible GPUs
# through reference/train_gpt.py and appends one JSON line per config to OUTDIR/train_steps.jsonl.
#
#   bash calibrate/gpu_suite.sh OUTDIR
#
# Environment knobs (all optional):
#   PYTHON=python3        interpreter (torch, pyyaml, pydantic needed; clustersim is found from the checkout)
#   WARMUP=3 STEPS=8      untimed / timed steps per config
#   TIMEOUT=150           seconds per config (killed after; the others still run)
#   ONLY="single ddp2"    run only these ref names
#   EXTRA_SET="k=v k=v"   extra --set overrides for every config
#   DEVICE=cpu NGPU=2     dry run of the suite itself on CPU/gloo (with a tiny model via EXTRA_SET)
# NVLink multicast (NVLS) is always off: NCCL_NVLS_ENABLE=0. No internet needed.
# A failing config is logged (OUTDIR/logs/<name>.log, OUTDIR/failures.jsonl) and never loses other rows.
# Exit status: 0 all ran, 1 some config failed, 2 cannot start (no GPU, missing packages).
set -u
OUTDIR=${1:?usage: gpu_suite.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
PYTHON=${PYTHON:-python3}
WARMUP=${WARMUP:-3}
STEPS=${STEPS:-8}
TIMEOUT=${TIMEOUT:-150}
export NCCL_NVLS_ENABLE=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUTDIR/logs" "$OUTDIR/env"
OUT="$OUTDIR/train_steps.jsonl"
FAIL="$OUTDIR/failures.jsonl"
RUN_ID=${RUN_ID:-suite-$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s 2>/dev/null || echo host)}
START=$(date +%s)

"$PYTHON" -c "import torch, yaml, pydantic" 2>"$OUTDIR/logs/preflight.log" || {
  echo "gpu_suite: $PYTHON cannot import torch, yaml and pydantic (see $OUTDIR/logs/preflight.log)" >&2; exit 2; }

DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then
  NGPU=${NGPU:-2}; GPUNAME=cpu
else
  NGPU=$("$PYTHON" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
  if [ "${NGPU:-0}" -lt 1 ]; then echo "gpu_suite: no CUDA GPU visible" >&2; exit 2; fi
  GPUNAME=$("$PYTHON" -c "import torch; print(torch.cuda.get_device_name(0))" 2>/dev/null || echo unknown)
fi

# Environment record (best effort).
{ nvidia-smi || true; } >"$OUTDIR/env/nvidia-smi.txt" 2>&1
{ nvidia-smi topo -m || true; } >"$OUTDIR/env/topo-m.txt" 2>&1
"$PYTHON" - >"$OUTDIR/env/versions.txt" 2>&1 <<'PY' || true
import platform, torch
print("python", platform.python_version())
print("torch", torch.__version__, "cuda", torch.version.cuda)
try:
    print("nccl", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as e:
    print("nccl ?", e)
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(i, p.name, round(p.total_memory / 2**30, 1), "GiB")
PY

# The simulator describes this machine: hgx-h200 in the files; an H100 box runs the 1-GPU config as dgx-h100.
TOPO_SET=()
case "$GPUNAME" in
  *H100*) TOPO_SET=(--set cluster.topology=dgx-h100) ;;
esac
EXTRA=()
for kv in ${EXTRA_SET:-}; do EXTRA+=(--set "$kv"); done

echo "gpu_suite: $NGPU x $GPUNAME ($DEVICE), run_id $RUN_ID, warmup $WARMUP, steps $STEPS, NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
declare -a NAMES RESULTS
NFAIL=0
for f in "$REPO"/scenarios/ref-*.yaml; do
  name=$(basename "$f" .yaml); short=${name#ref-}
  if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $short "* || " $ONLY " == *" $name "* ]]; then continue; fi
  need=$(sed -n 's/^  gpus:[[:space:]]*\([0-9]\+\).*/\1/p' "$f" | head -1); need=${need:-1}
  if [ "$need" -gt "$NGPU" ]; then
    echo "gpu_suite: skip $name (needs $need GPUs, $NGPU visible)"; NAMES+=("$name"); RESULTS+=("skipped (needs $need GPUs)"); continue
  fi
  log="$OUTDIR/logs/$name.log"
  echo "gpu_suite: run $name on $need GPU(s)"
  t0=$(date +%s)
  timeout -k 15 "$TIMEOUT" "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$need" \
    "$REPO/reference/train_gpt.py" "$f" --device "$DEVICE" --warmup "$WARMUP" --steps "$STEPS" \
    --set "cluster.gpus=$need" "${TOPO_SET[@]}" "${EXTRA[@]}" --run-id "$RUN_ID" -o "$OUT" >"$log" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  NAMES+=("$name")
  if [ $rc -eq 0 ]; then
    RESULTS+=("ok (${dt}s)")
  else
    why="rc=$rc"; [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timeout after ${TIMEOUT}s (rc=$rc)"
    RESULTS+=("FAILED $why, see logs/$name.log"); NFAIL=$((NFAIL + 1))
    echo "gpu_suite: $name FAILED ($why); last lines:"; tail -n 5 "$log" | sed 's/^/    /'
    "$PYTHON" - "$FAIL" "$name" "$rc" "$log" "$RUN_ID" "$dt" <<'PY' || true
import json, sys, datetime
path, name, rc, log, run_id, dt = sys.argv[1:]
try:
    tail = open(log, errors="replace").read()[-4000:]
except OSError:
    tail = ""
row = {"kind": "train_step_failure", "scenario": name, "rc": int(rc), "run_id": run_id, "seconds": int(dt),
       "log_tail": tail, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
with open(path, "a") as f:
    f.write(json.dumps(row) + "\n")
PY
  fi
done

echo
echo "gpu_suite: finished in $(( $(date +%s) - START ))s; rows in $OUT"
for i in "${!NAMES[@]}"; do printf '  %-22s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}"; done
echo
"$PYTHON" - "$OUT" "$RUN_ID" <<'PY' || true
import json, sys
path, run_id = sys.argv[1:]
rows = []
try:
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "train_step" and r.get("run_id") == run_id:
            rows.append(r)
except OSError:
    pass
print(f"{'scenario':<22}{'gpus':>5}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'tokens/s':>12}{'peak GiB':>10}  loss first->last")
for r in rows:
    pk = r.get("peak_memory_bytes") or 0
    print(f"{r['scenario']:<22}{r['world_size']:>5}{r['step_time_s']*1e3:>11.1f}{r['step_time_s_min']*1e3:>9.1f}"
          f"{r['step_time_s_max']*1e3:>9.1f}{r['tokens_per_s']:>12,.0f}{pk/2**30:>10.2f}  "
          f"{r['losses'][0]:.3f}->{r['losses'][-1]:.3f}  {r.get('gpu','')}")
PY
if [ "$NFAIL" -gt 0 ]; then echo "gpu_suite: $NFAIL config(s) failed (rows of the others are kept)"; exit 1; fi
exit 0
