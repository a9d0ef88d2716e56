"""Sustained-clock sweeps of ``--kernels`` (GPU, not ``--quick``): rows ``gemm_sustained`` and ``gemm_duty``.

The kernel sweep times each point in bursts of milliseconds, at the clocks an idle GPU
boosts to; a training step keeps the GPU busy for seconds, at the clocks its power limit
allows. :func:`sustained_gemm` measures that slowdown for back-to-back GEMMs,
:func:`duty_sweep` for GEMMs alternating with memory-bound copies at a range of compute
duties (the profile's ``clock_table``).
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

from clustersim.calibration.bench.gpu_bound import gpu_bound_times

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank

#: seconds of back-to-back GEMM load before the sustained time is read (bench --kernels)
SUSTAINED_S = 4.0
#: compute duties of the GEMM/copy alternation and seconds of load for each (bench --kernels)
DUTIES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.35)
DUTY_S = 3.0


def sustained_gemm(bench: BenchRank, base: dict[str, Any], n: int = 8192, seconds: float = SUSTAINED_S) -> None:
    """Burst versus sustained time of one large bf16 GEMM (row ``gemm_sustained``).

    The kernel sweep times each point in bursts of a few milliseconds, at the clocks an idle GPU
    boosts to; a training step keeps the GPU busy for seconds, at the clocks its power limit
    allows. Here the same ``n x n x n`` GEMM is timed in a burst (as the sweep does) and after
    ``seconds`` of back-to-back load (median of the last quarter's 20-call windows); their ratio
    is the profile's ``sustained_factor`` for compute-bound kernels.
    """
    torch = bench.torch
    key = {**base, "op": f"gemm_sustained:n{n}"}
    bench.describe("kernel gemm_sustained")
    if bench.skip(key):
        return
    a = torch.randn(n, n, device=bench.device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=bench.device, dtype=torch.bfloat16)
    o = torch.empty(n, n, device=bench.device, dtype=torch.bfloat16)
    fn = lambda: torch.matmul(a, b, out=o)  # noqa: E731
    burst, _ = gpu_bound_times(bench, fn)
    windows = []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s_.record()
        for _ in range(20):
            fn()
        e_.record()
        e_.synchronize()
        windows.append(s_.elapsed_time(e_) / 1e3 / 20)
    tail = windows[-max(1, len(windows) // 4):]
    b_s, s_s = statistics.median(burst), statistics.median(tail)
    flops = 2.0 * n ** 3
    bench.emit({**key, "name": "gemm_sustained", "m": n, "n": n, "k": n, "time_us": s_s * 1e6,
                "burst_time_us": b_s * 1e6, "sustained_s": seconds, "windows": len(windows),
                "tflops": flops / s_s / 1e12, "burst_tflops": flops / b_s / 1e12, "ratio": b_s / s_s,
                "timing": "burst as the sweep; sustained: median of the last quarter of 20-call windows"})


def duty_sweep(bench: BenchRank, base: dict[str, Any], duties: tuple[float, ...] = DUTIES,
               seconds: float = DUTY_S) -> None:
    """Sustained GEMM time when GEMMs alternate with memory-bound work (rows ``gemm_duty``).

    A training step alternates compute-bound kernels (GEMMs, attention) with memory-bound ones;
    the power limit sets the clock from the mix. For each compute ``duty`` d, a
    4096 x 8192 x 8192 bf16 GEMM (about a transformer layer's GEMM) alternates with a
    device-to-device copy sized to take ``(1 - d) / d`` of the GEMM's burst time; after
    ``seconds`` of this the GEMM and the copy are timed with CUDA events (medians of the last
    half). ``ratio`` = sustained / burst GEMM time (>= 1), ``copy_ratio`` the same for the copy.
    """
    torch = bench.torch
    m, n, k = 4096, 8192, 8192
    dev = bench.device
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    o = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    gemm = lambda: torch.matmul(a, b, out=o)  # noqa: E731
    burst_g = statistics.median(gpu_bound_times(bench, gemm)[0])
    cap = 1 << 30  # bytes per copy buffer
    src = torch.empty(cap, device=dev, dtype=torch.uint8)
    dst = torch.empty(cap, device=dev, dtype=torch.uint8)
    src.random_(0, 255)
    for d in duties:
        key = {**base, "op": f"gemm_duty:d{d:.2f}"}
        bench.describe(f"kernel gemm_duty {d:.2f}")
        if bench.skip(key):
            continue
        nbytes = _copy_bytes_for_duty(bench, src, dst, d, burst_g, cap)
        s_src, s_dst = src[:nbytes], dst[:nbytes]
        burst_c = (statistics.median(gpu_bound_times(bench, lambda: s_dst.copy_(s_src))[0]) if nbytes else 0.0)
        g_t, c_t = _alternate(bench, gemm, s_src, s_dst, nbytes, seconds)
        half = len(g_t) // 2
        sg, sc = statistics.median(g_t[half:]), statistics.median(c_t[half:])
        bench.emit({**key, "name": "gemm_duty", "m": m, "n": n, "k": k, "duty": d, "copy_bytes": nbytes,
                    "time_us": sg * 1e6, "burst_time_us": burst_g * 1e6, "ratio": sg / burst_g,
                    "copy_time_us": sc * 1e6, "copy_burst_time_us": burst_c * 1e6,
                    "copy_ratio": (sc / burst_c) if burst_c else None,
                    "duty_measured": sg / (sg + sc), "seconds": seconds, "calls": len(g_t),
                    "timing": "GEMM and copy alternating; CUDA events around each; medians of the last half"})


def _copy_bytes_for_duty(bench: BenchRank, src: Any, dst: Any, d: float, burst_g: float, cap: int) -> int:
    """Bytes of the copy that takes ``(1 - d) / d`` of the GEMM's burst time (0 at duty 1), at most ``cap``."""
    if d >= 1.0:
        return 0
    probe = src[: 64 << 20]
    dst[: 64 << 20].copy_(probe)
    t_probe = statistics.median(gpu_bound_times(bench, lambda: dst[: 64 << 20].copy_(probe))[0])
    per_byte = t_probe / (64 << 20)
    return min(cap, int(burst_g * (1.0 - d) / d / per_byte))


def _alternate(bench: BenchRank, gemm: Any, s_src: Any, s_dst: Any, nbytes: int,
               seconds: float) -> tuple[list[float], list[float]]:
    """GEMM then copy, 10 pairs per window, for ``seconds``: every GEMM's and every copy's seconds (CUDA events)."""
    torch = bench.torch
    g_t, c_t = [], []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3 * 10)]
        for i in range(10):
            ev[3 * i].record()
            gemm()
            ev[3 * i + 1].record()
            if nbytes:
                s_dst.copy_(s_src)
            ev[3 * i + 2].record()
        ev[-1].synchronize()
        for i in range(10):
            g_t.append(ev[3 * i].elapsed_time(ev[3 * i + 1]) / 1e3)
            c_t.append(ev[3 * i + 1].elapsed_time(ev[3 * i + 2]) / 1e3)
    return g_t, c_t
