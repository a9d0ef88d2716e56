"""Calibration: measure a real cluster, import nccl-tests logs, fit profiles.

This package imports without torch. Only :mod:`clustersim.calibration.bench`
(the measuring code that runs on the cluster) imports torch, and only when its
functions run.

Modules
-------
env
    Rank discovery from launchers (torchrun, Slurm, PMIx, Open MPI, PMI).
jsonl
    Measurement files (JSON lines), written row by row, resumable.
nccl_tests
    Import of nccl-tests logs as measurement rows.
fit
    Profiles fitted from measurements (read and group, fit, write; see its docstring).
slurm
    sbatch script rendering, submission and status.
bench
    The benchmark itself (torch.distributed collectives, GEMM, HBM, launch).
"""
