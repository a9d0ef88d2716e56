#!/bin/bash
# Issue 6 on an 8-GPU host (nvidia-h200-x8). Each phase fits one device call (10 minutes); rows go to $OUT.
#   bash validation/blind5-8gpu_h200x8_2026-11-24/h200x8.sh train          # blind set 5 (8- and 4-GPU layouts) + blind set 2's 2-GPU rows
#   bash validation/blind5-8gpu_h200x8_2026-11-24/h200x8.sh bench 8        # all collectives, 1 KiB - 4 GiB, on 8 ranks (then 4, then 2)
# Afterwards: copy $OUT/*.jsonl into validation/h200x8/, compare with
#   python tools/heldout.py --configs validation/blind5-8gpu_h200x8_2026-11-24/configs.txt compare validation/blind5-8gpu_h200x8_2026-11-24/predictions.json validation/h200x8/train_steps.jsonl
# and extend the hgx-h200 profile with the 4- and 8-rank entries (profiles/make_profiles.py).
# NVLink multicast stays off (the host's GPUs are shared).
set -u
phase=${1:?usage: h200x8.sh train | bench N}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpus.txt"
nvidia-smi topo -m > "$OUT/topo-m.txt" 2>&1
t0=$(date +%s)
case "$phase" in
  train)
    for cfg in validation/blind5-8gpu_h200x8_2026-11-24/configs.txt validation/blind2_h200-h100_2026-11-24/configs.txt; do
      python3 tools/heldout.py --configs "$cfg" commands > /tmp/cmds.txt
      while read -r line; do
        id=$(sed -E 's/.*--run-id ([^ ]+).*/\1/' <<<"$line")
        [[ $cfg == *blind2* ]] && ! grep -q -- "--nproc-per-node 2 " <<<"$line" && continue
        t=$(date +%s)
        eval "timeout -k 5 150 $line" >> "$OUT/train.log" 2>&1
        printf '%-20s rc=%d %4d s (at %d s)\n' "$id" "$?" "$(( $(date +%s) - t ))" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/runs.txt"
      done < /tmp/cmds.txt
    done ;;
  bench)
    n=${2:?bench needs the rank count}
    timeout -k 10 560 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" -m clustersim calibrate bench \
      -o "$OUT/bench-x$n.jsonl" --sizes 1KiB:4GiB:x2 --no-gemm --no-hbm --no-progress > "$OUT/bench-x$n.log" 2>&1
    echo "bench x$n rc=$? ($(( $(date +%s) - t0 )) s)" ;;
esac
