"""Compute measurements of rank 0: the GEMM grid (``gemm``), HBM copy bandwidth (``hbm``), launch overhead (``launch``).

:func:`run_compute` runs them (and the kernel-class sweep of ``--kernels``) on rank 0
while the other ranks wait at a barrier. GEMMs and the copy are timed one call at a
time with CUDA events (``perf_counter`` on CPU); the launch overhead is the GPU-side
gap between back-to-back tiny kernels queued behind a sleep kernel.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from clustersim.calibration.bench.config import DTYPE_ALIASES, DTYPE_BYTES, torch_dtype
from clustersim.calibration.bench.kernels import run_kernels
from clustersim.calibration.bench.plans import gemm_shapes_to_run
from clustersim.calibration.bench.rows import log, summarize
from clustersim.units import MiB, format_bytes

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank


def run_compute(bench: BenchRank) -> None:
    """Rank 0 measures the compute sweeps the options ask for; every rank then meets at a barrier."""
    cfg = bench.cfg
    if bench.rank == 0:
        if cfg.gemm:
            gemms(bench)
        if bench.cuda and cfg.hbm:
            hbm(bench)
        if bench.cuda and cfg.launch:
            launch_overhead(bench)
        if cfg.kernels:
            run_kernels(bench)
        if not bench.cuda and (cfg.hbm or cfg.launch):
            log("skipped hbm and launch measurements: CUDA only")
    bench.dist.barrier()


def event_times(bench: BenchRank, fn: Callable[[], None], iters: int, warmup: int = 3) -> list[float]:
    """Seconds of ``iters`` single calls of ``fn`` after ``warmup`` calls (CUDA events; ``perf_counter`` on CPU)."""
    torch = bench.torch
    for _ in range(warmup):
        fn()
    bench.sync()
    out = []
    for _ in range(iters):
        if bench.cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return out


def gemms(bench: BenchRank) -> None:
    """One ``gemm`` row per shape of the grid (``torch.matmul`` into a preallocated output)."""
    torch, cfg = bench.torch, bench.cfg
    shapes = gemm_shapes_to_run(cfg)
    dtype_name = DTYPE_ALIASES.get(cfg.gemm_dtype, cfg.gemm_dtype) if bench.cuda else "float32"
    dtype = torch_dtype(torch, dtype_name)
    elt = DTYPE_BYTES[dtype_name]
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype_name, dtype_name)
    for m, n, k in shapes:
        key = {"kind": "gemm", "m": m, "n": n, "k": k, "dtype": short, "device": cfg.device}
        bench.describe(f"gemm {m}x{n}x{k}")
        if bench.skip(key):
            bench.advance()
            continue
        need = (m * k + k * n + m * n) * elt
        if need > cfg.memory_fraction * bench.free_bytes():
            log(f"skipped gemm {m}x{n}x{k}: needs {format_bytes(need)}")
            bench.advance()
            continue
        a = torch.randn(m, k, device=bench.device).to(dtype)
        b = torch.randn(k, n, device=bench.device).to(dtype)
        c = torch.empty(m, n, device=bench.device, dtype=dtype)
        iters = 3 if cfg.quick else (10 if 2 * m * n * k > 1e12 else 30)
        ts = event_times(bench, lambda: torch.matmul(a, b, out=c), iters)
        s = summarize(ts)
        flops = 2.0 * m * n * k
        bench.emit({**key, **s, "iters": iters, "tflops": flops / (s["time_us"] * 1e-6) / 1e12})
        del a, b, c
        bench.advance()


def hbm(bench: BenchRank) -> None:
    """The ``hbm`` row: a device-to-device copy (halved until source and destination fit), read + write counted."""
    torch, cfg = bench.torch, bench.cfg
    nbytes = cfg.hbm_bytes
    while nbytes > 64 * MiB and 2 * nbytes > cfg.memory_fraction * bench.free_bytes():
        nbytes //= 2
    key = {"kind": "hbm", "bytes": nbytes, "device": cfg.device}
    bench.describe(f"hbm copy {format_bytes(nbytes)}")
    if not bench.skip(key):
        src = torch.empty(nbytes, dtype=torch.uint8, device=bench.device)
        dst = torch.empty_like(src)
        ts = event_times(bench, lambda: dst.copy_(src), 5 if cfg.quick else 20)
        s = summarize(ts)
        bench.emit({**key, **s, "method": "device-to-device copy (read + write counted)",
                    "bandwidth_GBps": 2 * nbytes / (s["time_us"] * 1e-6) / 1e9})
        del src, dst
    bench.advance()


def launch_overhead(bench: BenchRank) -> None:
    """The ``launch`` row: GPU-side gap between back-to-back tiny kernels, and the host's enqueue time per kernel."""
    torch, cfg = bench.torch, bench.cfg
    key = {"kind": "launch", "device": cfg.device}
    bench.describe("kernel launch")
    if not bench.skip(key):
        x = torch.zeros(1, device=bench.device)
        n = 200 if cfg.quick else 1000
        samples = []
        for _ in range(3 if cfg.quick else 5):
            torch.cuda.synchronize()
            # queue a sleep kernel first so that the host has enqueued all tiny kernels before
            # the GPU reaches them: the events then time the GPU-side gap, not host launch speed
            torch.cuda._sleep(int(2e8 if not cfg.quick else 5e7))
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(n):
                x.add_(1)
            e.record()
            e.synchronize()
            samples.append(s.elapsed_time(e) / 1e3 / n)
        # host side: enqueue rate of the same kernels without the sleep in front
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        host_us = (time.perf_counter() - t0) / n * 1e6
        torch.cuda.synchronize()
        s = summarize(samples)
        bench.emit({**key, "overhead_us": s["time_us"], "overhead_us_min": s["time_us_min"],
                    "kernels": n, "host_launch_us": host_us,
                    "method": "back-to-back 1-element add_ kernels queued behind torch.cuda._sleep, CUDA events"})
    bench.advance()
