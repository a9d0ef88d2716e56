#!/bin/bash
# clustersim calibration job: rendered by `clustersim calibrate slurm`; read it, edit it, submit it with sbatch.
# 2 node(s) x 8 rank(s) = 16 ranks, device cuda, launcher srun
#SBATCH --job-name="cal \"two\" nodes"
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=12
#SBATCH --mem=500G
#SBATCH --time=1-00:00:00
#SBATCH --partition="h100"
#SBATCH --account="proj 42"
#SBATCH --output="/scratch/my runs/slurm-%j.out"
#SBATCH --comment="clustersim results=/scratch/my runs/results.jsonl"
#SBATCH --exclusive

set -euo pipefail

OUT_DIR='/scratch/my runs'
mkdir -p "$OUT_DIR"

# Rendezvous: rank 0 runs on the first host of the allocation; the port is derived from the job id
# so that jobs sharing a node do not collide.
export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))

# NCCL and user settings (NCCL_NVLS_ENABLE=0: measure without NVLink multicast unless asked)
export NCCL_NVLS_ENABLE=0
export NCCL_DEBUG=INFO
export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT"

# one task per rank; each finds its rank from SLURM_PROCID / PMIx (clustersim.calibration.env)
srun --mpi=pmix --ntasks-per-node=8 --kill-on-bad-exit=1 python3 -m clustersim calibrate bench -o '/scratch/my runs/results.jsonl' --device cuda --sizes 1KiB:1GiB --scopes world,intra

echo "results: $OUT_DIR/results.jsonl"
