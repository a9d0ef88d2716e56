"""GPU-bound timing of one kernel point and its ``kernel`` row (used by every sweep of ``--kernels``).

:func:`gpu_bound_times` times back-to-back calls queued behind a sleep kernel, so that the
host's launch cost is hidden as in a training step; :func:`kernel_point` skips a point
already in the file or too large for free memory, times it and writes its row (time
statistics, FLOP/s and bandwidth from the point's FLOPs and minimum bytes).
:class:`KernelKit` carries what every kernel set-up needs (device, element type, row key).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from clustersim.calibration.bench.rows import log, summarize
from clustersim.units import format_bytes

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank

#: Kernel sweep (``--kernels``): one repetition lasts about this long (GPU-bound: the queue never drains).
KERNEL_REP_TARGET_S = 0.005
KERNEL_MAX_ITERS = 500
KERNEL_REPS = 5
#: ~5 ms of GPU sleep in front of each timed repetition (covers the host's enqueueing of the calls).
KERNEL_SLEEP_CYCLES = 10_000_000


@dataclass
class KernelKit:
    """What the kernel set-ups of one sweep share: torch, the device, the element type and the row key."""

    bench: BenchRank
    torch: Any
    F: Any
    """``torch.nn.functional``"""
    dev: Any
    dt: Any
    """bf16 on GPU, fp32 on CPU"""
    elt: int
    """bytes per element of ``dt``"""
    base: dict[str, Any]
    """``kind``, ``dtype`` and ``device`` of every kernel row"""


def kernel_kit(bench: BenchRank) -> KernelKit:
    """The kit of ``bench``'s device: bf16 tensors on GPU, fp32 on CPU (where bf16 kernels are slow)."""
    torch = bench.torch
    return KernelKit(bench=bench, torch=torch, F=torch.nn.functional, dev=bench.device,
                     dt=torch.bfloat16 if bench.cuda else torch.float32, elt=2 if bench.cuda else 4,
                     base={"kind": "kernel", "dtype": "bf16" if bench.cuda else "fp32", "device": bench.cfg.device})


def gpu_bound_times(bench: BenchRank, fn: Callable[[], None]) -> tuple[list[float], int]:
    """Per-call times (s) of ``fn``: warm-up, then ``reps`` repetitions of ``iters`` back-to-back calls.

    ``iters`` is chosen from one timed call so that a repetition lasts about
    ``KERNEL_REP_TARGET_S`` (at least 1 call): the GPU queue stays full, so the
    host's launch cost is hidden (GPU-bound time, as in a training step).
    """
    torch, cfg = bench.torch, bench.cfg
    for _ in range(1 if cfg.quick else 2):
        fn()
    bench.sync()
    t0 = time.perf_counter()
    fn()
    bench.sync()
    est = max(time.perf_counter() - t0, 1e-6)
    target = 0.002 if cfg.quick or not bench.cuda else KERNEL_REP_TARGET_S
    iters = max(1, min(KERNEL_MAX_ITERS, int(target / est)))
    reps = 3 if cfg.quick or not bench.cuda else KERNEL_REPS
    out = []
    host: list[float] = []
    for _ in range(reps):
        if bench.cuda:
            # a sleep kernel in front keeps the GPU busy while the host enqueues the calls, so that
            # even small multi-kernel ops are timed GPU-bound (host_enqueue_us says how close it was)
            torch.cuda._sleep(KERNEL_SLEEP_CYCLES)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            h0 = time.perf_counter()
            for _ in range(iters):
                fn()
            host.append((time.perf_counter() - h0) / iters)
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) / 1e3 / iters)
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            out.append((time.perf_counter() - t0) / iters)
    bench.last_host_us = statistics.median(host) * 1e6 if host else None
    return out, iters


def kernel_point(bench: BenchRank, key: dict[str, Any], fields: dict[str, Any],
                 setup: Callable[[], Callable[[], None]], need_bytes: int, flops: float | None = None,
                 nbytes: float | None = None, extra: dict[str, Any] | None = None) -> None:
    """Measure one kernel point (skipped when already in the file or too big) and emit its row."""
    torch = bench.torch
    if nbytes is not None:
        key = {**key, "bytes": int(nbytes)}  # "bytes" is part of a row's identity (resume)
    bench.describe(f"kernel {key['op']}"[:34])
    if bench.skip(key):
        bench.advance()
        return
    if need_bytes > bench.cfg.memory_fraction * bench.free_bytes():
        log(f"skipped kernel {key['op']}: needs {format_bytes(need_bytes)}")
        bench.advance()
        return
    try:
        fn = setup()
        ts, iters = gpu_bound_times(bench, fn)
    except (RuntimeError, NotImplementedError) as exc:  # e.g. no flash kernel for this shape / device
        log(f"skipped kernel {key['op']}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        fn = None
        if bench.cuda:
            torch.cuda.empty_cache()
        bench.advance()
        return
    del fn
    bench.emit(_kernel_row(bench, key, fields, ts, iters, flops, nbytes, extra))
    if bench.cuda:
        torch.cuda.empty_cache()
    bench.advance()


def _kernel_row(bench: BenchRank, key: dict[str, Any], fields: dict[str, Any], ts: list[float], iters: int,
                flops: float | None, nbytes: float | None, extra: dict[str, Any] | None) -> dict[str, Any]:
    """The row of one timed kernel point: time statistics, then FLOP/s and bandwidth where the point has them."""
    s = summarize(ts)
    row = {**key, **fields, **s, "iters": iters, "reps": len(ts),
           "timing": "back-to-back behind a sleep kernel, CUDA events" if bench.cuda else "back-to-back, perf_counter"}
    if bench.last_host_us is not None:
        row["host_enqueue_us"] = bench.last_host_us
    if flops is not None:
        row["flops"] = flops
        row["tflops"] = flops / (s["time_us"] * 1e-6) / 1e12
    if nbytes is not None:
        row["bytes"] = int(nbytes)
        row["bandwidth_GBps"] = nbytes / (s["time_us"] * 1e-6) / 1e9
    row.update(extra or {})
    if row.get("flops_full"):
        row["tflops_full"] = row["flops_full"] / (s["time_us"] * 1e-6) / 1e12
    return row
