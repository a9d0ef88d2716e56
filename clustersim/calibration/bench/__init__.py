"""``clustersim calibrate bench``: measure collectives, GEMMs, HBM and launch overhead with torch.

This is the only package of clustersim that imports torch (inside its functions,
so that ``import clustersim.calibration.bench`` works without it). Every rank of a
job runs :func:`run_bench`; rank 0 writes the rows (Contract 3) to one JSON-lines
file, flushing each row, and skips points already in the file (resume).

What is measured
----------------
``collective`` rows, three modes kept apart (``timing`` says how each was taken):

- ``mode: "nccl"``: the library-level time of one collective, what nccl-tests
  reports. On GPUs ``iters`` calls are captured in a CUDA graph and the graph is
  replayed (``timing: cuda-graph``, as nccl-tests ``-G``), so the host-side cost of
  a ``torch.distributed`` call (~20-40 us) is not in the number; on CPU (gloo) the
  calls run back to back (``timing: back-to-back``).
- ``mode: "eager"`` (GPUs only): ``iters`` eager ``torch.distributed`` calls back to
  back (``timing: back-to-back``); at small sizes this is bound by the host's
  launch rate, which is what an eager training loop sees.
- For both: repeated ``reps`` times (CUDA events on GPU, ``perf_counter`` after a
  barrier on CPU), divided by ``iters``; the row has the median over repetitions
  (``time_us``) and ``time_us_min``/``_p10``/``_p90``. Each repetition's time is the
  mean over ranks (nccl-tests' ``-a 1``); ``time_us_rank_max`` is the median of
  the slowest rank.
- ``mode: "framework"``: one isolated ``torch.distributed`` call on an idle device
  (synchronize, barrier, synchronize, then host clock around the call and its
  completion): what a training framework pays per call, launch included.

Sizes follow nccl-tests: all_reduce and broadcast move ``size`` bytes per rank;
all_gather's size is the whole gathered buffer and reduce_scatter's the whole
input (per-rank part rounded down to 16 bytes); all_to_all's is each rank's whole
send buffer; send_recv's the bytes each rank sends (ring: to rank+1, from rank-1).

``comm_init``: time from just before ``init_process_group`` to the first completed
collective (slowest rank), and from process start.

``gemm``, ``hbm`` (device-to-device copy, read + write counted), ``launch``
(GPU-side gap between back-to-back tiny kernels, queued behind a sleep kernel so
the host is never the bottleneck) and ``framework_call`` (the smallest framework
time per op). ``kernel`` rows (``--kernels``, rank 0; see :func:`kernel_plan`): SDPA causal
flash attention fwd and fwd+bwd (``flops`` as executed with the causal mask, ``flops_full``
the full s^2 count), the linears of a layer in the three training layouts (forward NT
``x @ W^T``, dgrad NN ``dy @ W``, wgrad TN ``dy^T @ x``), LayerNorm/GELU fwd and bwd,
residual add, cross-entropy fwd+bwd over bf16 logits, one foreach AdamW step; GPU-bound
(warm-up, then ``reps`` repetitions of back-to-back calls queued behind a sleep kernel,
between two CUDA events; median). ``bytes`` of memory-bound rows is the minimum traffic
(each tensor read or written once). A ``meta`` row comes first (GPU, driver, CUDA, NCCL, torch, hosts,
``nvidia-smi topo -m``, NCCL topology dump, NVLS state).

Modules
-------
``config`` (:class:`BenchConfig`, presets, validation), ``plans`` (what is measured: kernel
plan, collective layouts, row counts), ``process`` (one rank: NCCL environment, rendezvous,
device, row bookkeeping), ``rows`` (summaries, meta and comm_init rows), ``collectives``
(collective sweeps and their timers), ``compute`` (GEMM grid, HBM, launch), ``gpu_bound``
(GPU-bound timing of a kernel point), ``kernels`` and ``elementwise`` (the kernel classes),
``sustained`` (sustained-clock sweeps), ``runner`` (:func:`run_bench`, :func:`main`).
"""

from __future__ import annotations

from typing import Any

from clustersim.calibration.bench.config import (
    CPU_GEMM_SHAPES,
    DEFAULT_GEMM_SHAPES,
    MODES,
    OPS,
    QUICK_GEMM_SHAPES,
    BenchConfig,
    parse_gemm_shapes,
    quick_config,
    validate_config,
)
from clustersim.calibration.bench.gpu_bound import KERNEL_MAX_ITERS, KERNEL_REP_TARGET_S, KERNEL_REPS, KERNEL_SLEEP_CYCLES
from clustersim.calibration.bench.kernels import KERNEL_ADAMW_TENSOR
from clustersim.calibration.bench.plans import kernel_plan, kernel_plan_size, op_layout
from clustersim.calibration.bench.rows import summarize
from clustersim.calibration.bench.runner import main, run_bench
from clustersim.calibration.bench.sustained import DUTIES, DUTY_S, SUSTAINED_S

__all__ = [
    "CPU_GEMM_SHAPES", "DEFAULT_GEMM_SHAPES", "DUTIES", "DUTY_S", "KERNEL_ADAMW_TENSOR", "KERNEL_MAX_ITERS",
    "KERNEL_REPS", "KERNEL_REP_TARGET_S", "KERNEL_SLEEP_CYCLES", "MODES", "OPS", "QUICK_GEMM_SHAPES", "SUSTAINED_S",
    "BenchConfig", "busbw_factor", "kernel_plan", "kernel_plan_size", "main", "op_layout", "parse_gemm_shapes",
    "quick_config", "run_bench", "summarize", "validate_config",
]


def __getattr__(name: str) -> Any:
    """``busbw_factor``: the one in :mod:`clustersim.collectives.formulas`, imported on first use.

    Not imported with the package: the collectives package's ``__init__`` needs numpy and
    pydantic, which ``python -m clustersim.calibration.bench`` does not need otherwise.
    """
    if name == "busbw_factor":
        from clustersim.collectives.formulas import busbw_factor

        return busbw_factor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
