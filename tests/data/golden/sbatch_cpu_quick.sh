#!/bin/bash
# clustersim calibration job: rendered by `clustersim calibrate slurm`; read it, edit it, submit it with sbatch.
# 1 node(s) x 2 rank(s) = 2 ranks, device cpu, launcher srun
#SBATCH --job-name="calib-cpu"
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --time=10
#SBATCH --output="/tmp/calib/slurm-%j.out"
#SBATCH --comment="clustersim results=/tmp/calib/results.jsonl"

set -euo pipefail

OUT_DIR=/tmp/calib
mkdir -p "$OUT_DIR"

# Rendezvous: rank 0 runs on the first host of the allocation; the port is derived from the job id
# so that jobs sharing a node do not collide.
export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT"

# CPUs per task: this node's allocated CPUs shared among its tasks
CPUS_PER_TASK=$(( ${SLURM_CPUS_ON_NODE:-1} / 2 ))
[ "$CPUS_PER_TASK" -ge 1 ] || CPUS_PER_TASK=1

# one task per rank; each finds its rank from SLURM_PROCID / PMIx (clustersim.calibration.env)
srun --mpi=pmix --ntasks-per-node=2 --kill-on-bad-exit=1 "--cpus-per-task=$CPUS_PER_TASK" python3 -m clustersim calibrate bench -o /tmp/calib/results.jsonl --device cpu --quick

echo "results: $OUT_DIR/results.jsonl"
