#!/bin/bash
# clustersim calibration job: rendered by `clustersim calibrate slurm`; read it, edit it, submit it with sbatch.
# 1 node(s) x 2 rank(s) = 2 ranks, device cuda, launcher srun
#SBATCH --job-name="calib-h200x2"
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=2
#SBATCH --time=00:30:00
#SBATCH --partition="gpu"
#SBATCH --output="/scratch/calib/h200x2/slurm-%j.out"
#SBATCH --comment="clustersim results=/scratch/calib/h200x2/results.jsonl"
#SBATCH --exclusive

set -euo pipefail

OUT_DIR=/scratch/calib/h200x2
mkdir -p "$OUT_DIR"

# Rendezvous: rank 0 runs on the first host of the allocation; the port is derived from the job id
# so that jobs sharing a node do not collide.
export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))

# NCCL and user settings (NCCL_NVLS_ENABLE=0: measure without NVLink multicast unless asked)
export NCCL_NVLS_ENABLE=0

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT"

# CPUs per task: this node's allocated CPUs shared among its tasks
CPUS_PER_TASK=$(( ${SLURM_CPUS_ON_NODE:-1} / 2 ))
[ "$CPUS_PER_TASK" -ge 1 ] || CPUS_PER_TASK=1

# one task per rank; each finds its rank from SLURM_PROCID / PMIx (clustersim.calibration.env)
srun --mpi=pmix --ntasks-per-node=2 --kill-on-bad-exit=1 "--cpus-per-task=$CPUS_PER_TASK" /opt/venv/bin/python -m clustersim calibrate bench -o /scratch/calib/h200x2/results.jsonl --device cuda

echo "results: $OUT_DIR/results.jsonl"
