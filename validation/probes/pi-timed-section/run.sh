#!/bin/bash
# Per-run fixed cost of the Monte-Carlo pi exercise's timed section on the lent GPU: one process per
# run, N/s samples for s = 1, 2, 4, 8, R repeats; rows to $OUT/rows.txt ("s repeat samples blocks
# threads timed_s kernel_s pi"), SM clock and power every 100 ms to $OUT/clocks.csv.
#   bash validation/probes/pi-timed-section/run.sh [N] [R]         (2026-11-26: N = 1e13, R = 3 -> validation/probes/pi-timed-section/pi-h100/)
# The 2026-11-26 run sent this script and pi_fixed_cost.cu inline (gzip + base64 in the command line).
set -u
N=${1:-10000000000000}; R=${2:-3}
here=$(cd "$(dirname "$0")" && pwd); cd /tmp && cp "$here/pi_fixed_cost.cu" "$here/pi_kernel.cuh" .  && mv pi_fixed_cost.cu p.cu
nvcc -O3 -arch=sm_90 -o p p.cu || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 100 > $OUT/clocks.csv &
for r in $(seq 1 $R); do for s in 1 2 4 8; do echo "$s $r $(./p $((N / s)))" >> $OUT/rows.txt; done; done
kill %1; cat $OUT/rows.txt
