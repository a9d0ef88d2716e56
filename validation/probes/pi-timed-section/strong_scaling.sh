#!/bin/bash
# Strong scaling of the Monte-Carlo pi exercise's timed section on 1, 2, 4 (, 8) GPUs of one host,
# fresh processes each run, R repeats (issue 15): rows to $OUT/pi-strong.jsonl, SM clocks to $OUT/clocks.csv.
#   bash validation/probes/pi-timed-section/strong_scaling.sh [N] [R]        (N = 1e13 samples, R = 3)
set -u
N=${1:-1e13}; R=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/pi
nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -shared -o /tmp/pi/libpi.so "$here/pi_lib.cu" || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
ng=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 200 > "$OUT/clocks.csv" &
for r in $(seq 1 "$R"); do
  for n in 1 2 4 8; do
    [ "$n" -le "$ng" ] || continue
    timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" "$here/strong_scaling.py" \
      --samples "$N" --repeat "$r" -o "$OUT/pi-strong.jsonl" 2>&1 | grep -E "^world|Error|error" | head -4
  done
done
kill %1
