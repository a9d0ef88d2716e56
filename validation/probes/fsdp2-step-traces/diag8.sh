#!/usr/bin/env bash
# Issue 14 diagnostics on a lent multi-GPU H100/H200 host (2026-11-26); parts run in the order given:
#   bash validation/probes/fsdp2-step-traces/diag8.sh trace   # reference/step_trace.py on the FSDP2 rows the model misses (w7, gv) and
#                                          # those it gets (d7, b2), and on the DDP rows whose peak memory it misses
#                                          # (ac, b2) or gets (gv): $OUT/trace.jsonl, w7's rank-0 trace under $OUT/
#                                          # (TRACE_ROWS="..." other rows; TRACE_NPROC=4 for blind set 8's 4-GPU rows;
#                                          # TRACE_KERNELS=1: every rank's kernels of the profiled step, $OUT/kernels.tgz)
#   bash validation/probes/fsdp2-step-traces/diag8.sh pi      # Monte-Carlo pi timed section (pi/pi_fixed_cost.cu) with N/4 samples on
#                                          # each of 4 GPUs alone, then on all 4 at once: $OUT/pi-gpus.txt, clocks
# Configurations are the -h100 rows of the blind-set files (the H200 rows where the GPUs are H200).
set -u
[ $# -gt 0 ] || { echo "usage: diag8.sh trace|pi ..." >&2; exit 2; }
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
suffix=""; case "$gpu" in *H100*) suffix="-h100";; esac
echo "GPU: $gpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)" | tee -a "$OUT/diag.log"
for part in "$@"; do
case "$part" in
trace)
  for name in ${TRACE_ROWS:-w7-fsdp2 gv-fsdp2 d7-fsdp2 ac-ddp2 b2-ddp2}; do
    line=$(grep -hE "^$name$suffix " validation/blind6-2gpu-overheads_h100x2_2026-11-26/configs.txt validation/blind7_h100x2_2026-11-26/configs.txt validation/blind8-4gpu_h200x4_2026-11-26/configs.txt | head -1)
    set -- $line; shift; scenario=$1; shift
    sets=""; for kv in "$@"; do sets="$sets --set $kv"; done
    keep=""; [ "$name" = w7-fsdp2 ] && keep="--trace-dir $OUT"
    [ -n "${TRACE_KERNELS:-}" ] && keep="$keep --kernels-dir /tmp/kernels"
    start=$(date +%s)
    timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node ${TRACE_NPROC:-2} reference/step_trace.py \
      "$scenario" $sets --run-id "$name$suffix" $keep -o "$OUT/trace.jsonl" >> "$OUT/diag.log" 2>&1 < /dev/null
    echo "$name$suffix rc=$? $(( $(date +%s) - start )) s" | tee -a "$OUT/diag.log"
  done
  [ -d /tmp/kernels ] && tar czf "$OUT/kernels.tgz" -C /tmp/kernels .
  python3 - "$OUT/trace.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["rank"]:
        continue
    st = r.get("streams", {})
    comp = max(st.values(), key=lambda s: s["busy_us"]) if st else {}
    fs = sum(v["us"] for k, v in r["annotations"].items() if k.startswith("FSDP::") and "(" in k and "copy_out" not in k
             and "all_gather (" not in k)
    print(f"{r['run_id']:18s} step {r['profiled_step_ms']:7.1f} issue {r['host_issue_ms']:7.1f} busy "
          f"{r.get('gpu_busy_any_stream_us', 0) / 1e3:7.1f} nccl {r.get('nccl_kernel_us', 0) / 1e3:6.1f} "
          f"late {comp.get('idle_host_late_us', 0) / 1e3:6.1f} wait {comp.get('idle_stream_wait_us', 0) / 1e3:6.1f} "
          f"fsdp-host {fs / 1e3:6.1f} ms")
    print("   mem", " ".join(f"{p['phase']}={p['peak']}" for p in r["memory_phases_GiB"]))
PY
  ;;
pi)
  N=${N:-10000000000000}
  cd /tmp && cp "$OLDPWD/validation/probes/pi-timed-section/pi_fixed_cost.cu" p.cu && nvcc -O3 -arch=sm_90 -o p p.cu || exit 1
  cd "$OLDPWD"
  ng=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l); ng=$(( ng < 4 ? ng : 4 ))
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 200 > "$OUT/pi-clocks.csv" & mon=$!
  for r in 1 2; do
    for g in $(seq 0 $((ng - 1))); do echo "alone $r gpu$g $(CUDA_VISIBLE_DEVICES=$g /tmp/p $((N / ng)))" >> "$OUT/pi-gpus.txt"; done
    pids=""
    for g in $(seq 0 $((ng - 1))); do (echo "together $r gpu$g $(CUDA_VISIBLE_DEVICES=$g /tmp/p $((N / ng)))" > /tmp/t$g.txt) & pids="$pids $!"; done
    wait $pids; cat /tmp/t*.txt >> "$OUT/pi-gpus.txt"; rm -f /tmp/t*.txt
  done
  kill $mon; cat "$OUT/pi-gpus.txt"
  ;;
esac
done
