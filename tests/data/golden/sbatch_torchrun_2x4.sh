#!/bin/bash
# clustersim calibration job: rendered by `clustersim calibrate slurm`; read it, edit it, submit it with sbatch.
# 2 node(s) x 4 rank(s) = 8 ranks, device cuda, launcher torchrun
#SBATCH --job-name="calib-torchrun"
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --time=01:00:00
#SBATCH --output="runs/tr/slurm-%j.out"
#SBATCH --comment="clustersim results=runs/tr/results.jsonl"
#SBATCH --exclusive

set -euo pipefail

OUT_DIR=runs/tr
mkdir -p "$OUT_DIR"

# Rendezvous: rank 0 runs on the first host of the allocation; the port is derived from the job id
# so that jobs sharing a node do not collide.
export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))

# NCCL and user settings (NCCL_NVLS_ENABLE=0: measure without NVLink multicast unless asked)
export NCCL_NVLS_ENABLE=1

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT"

# CPUs per task: this node's allocated CPUs shared among its tasks
CPUS_PER_TASK=$(( ${SLURM_CPUS_ON_NODE:-1} / 1 ))
[ "$CPUS_PER_TASK" -ge 1 ] || CPUS_PER_TASK=1

# one torchrun per node; torchrun starts one rank per GPU
srun --ntasks-per-node=1 --kill-on-bad-exit=1 "--cpus-per-task=$CPUS_PER_TASK" python3 -m torch.distributed.run "--nnodes=$SLURM_JOB_NUM_NODES" --nproc-per-node=4 --rdzv-backend=c10d "--rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT" "--rdzv-id=$SLURM_JOB_ID" -m clustersim calibrate bench -o runs/tr/results.jsonl --device cuda --nvls on

echo "results: $OUT_DIR/results.jsonl"
