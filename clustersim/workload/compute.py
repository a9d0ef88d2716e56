"""GPU compute-time model: GEMMs by shape, attention, memory-bound kernels, launch overhead.

Parameters come from the profile's ``compute`` section (:class:`clustersim.config.profile.ComputeParams`)
and the GPU's vendor figures (:class:`clustersim.config.topology.GPUSpec`):

* GEMM efficiency: the profile's ``gemm_table`` when it has points (interpolated in
  log(FLOPs) among the points of the same ``n, k`` shape if any, else among all points,
  clamped at the ends), otherwise ``gemm_efficiency * F / (F + gemm_half_flops)`` (a
  saturating roll-off: half the large-GEMM efficiency at ``F = gemm_half_flops``).
* Flash attention: ``attention_efficiency`` of dense peak.
* Memory-bound kernels: bytes / HBM bandwidth (profile ``hbm_bandwidth_GBps``, else 0.9 x spec).
* Every kernel adds ``kernel_launch_us`` of GPU-side gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from clustersim.errors import ClusterSimError


def issue_corrected_table(pts: list[tuple[int, int, int, float]], peak: float, large_eff: float,
                          ratio: float = 5.0) -> tuple[list[tuple[int, int, int, float]], float]:
    """Remove the host issue latency from an event-timed GEMM table.

    ``calibrate bench`` times every GEMM alone between two CUDA events on an idle GPU
    (``clustersim/calibration/bench.py`` ``_event_times``): the start event runs at once, the GEMM
    kernel only after the host has dispatched ``torch.matmul`` and launched it. Each point's time
    is therefore ``issue + kernel``. The smallest GEMM of the table measures ``issue`` when its
    time is more than ``ratio`` x its FLOP time at the large-GEMM efficiency (a 256^3 GEMM is
    34 MFLOP, well under a microsecond of tensor-core work). That floor is subtracted from every
    point; points whose time is under twice the floor are dropped (the remainder is too small to
    be a kernel measurement). Returns the corrected points and the floor (seconds; 0 when the
    smallest point is not launch-bound, and the table unchanged).

    >>> pk = 1e15
    >>> t = lambda m, n, k, e: (m, n, k, 2 * m * n * k / (pk * e))
    >>> raw = [(256, 256, 256, 2 * 256**3 / (pk * 18e-6)), (4096, 4096, 4096, 2 * 4096**3 / (pk * (18e-6 + 2 * 4096**3 / (pk * 0.8))))]
    >>> pts, floor = issue_corrected_table(raw, pk, 0.75)
    >>> round(floor * 1e6, 1), [(p[0], round(p[3], 3)) for p in pts]
    (18.0, [(4096, 0.8)])
    """
    if len(pts) < 2:
        return list(pts), 0.0
    times = [(2.0 * m * n * k / (peak * e), (m, n, k, e)) for m, n, k, e in pts]
    small = min(times, key=lambda x: 2.0 * x[1][0] * x[1][1] * x[1][2])
    f_small = 2.0 * small[1][0] * small[1][1] * small[1][2]
    kernel_small = f_small / (peak * large_eff)
    if small[0] < ratio * kernel_small:
        return list(pts), 0.0
    floor = small[0] - kernel_small
    out = []
    for t, (m, n, k, e) in times:
        if t < 2.0 * floor:
            continue
        out.append((m, n, k, 2.0 * m * n * k / (peak * (t - floor))))
    return (out or list(pts)), floor


@dataclass
class ComputeModel:
    """Seconds for kernels on one GPU.

    Examples
    --------
    >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, gemm_efficiency=0.8, gemm_half_flops=0.0,
    ...                   attention_efficiency=0.5, kernel_launch_s=0.0)
    >>> round(cm.gemm(1024, 1024, 1024) * 1e6, 3)
    2.684
    """

    peak_flops: float
    hbm_bandwidth: float
    gemm_efficiency: float = 0.75
    gemm_half_flops: float = 2.0e9
    attention_efficiency: float = 0.55
    kernel_launch_s: float = 4e-6
    gemm_table: list[tuple[int, int, int, float]] = field(default_factory=list)
    issue_floor_s: float = 0.0  # host issue latency found in (and removed from) the GEMM table

    @classmethod
    def from_profile(cls, compute, gpu_spec, dtype: str = "bf16") -> "ComputeModel":
        """Build from a profile ``compute`` section and the GPU spec (peak of ``dtype``)."""
        if compute.peak_tflops is not None and dtype == compute.dtype:
            peak = compute.peak_tflops * 1e12
        else:
            key = dtype
            table = gpu_spec.peak_tflops
            if key not in table and key == "fp16":
                key = "bf16"
            if key not in table:
                raise ClusterSimError(f"GPU {gpu_spec.name} has no {dtype} peak in its spec",
                                      field="training.precision")
            peak = table[key] * 1e12
        hbm = (compute.hbm_bandwidth_GBps * 1e9 if compute.hbm_bandwidth_GBps
               else 0.9 * gpu_spec.hbm_bandwidth_GBps * 1e9)
        pts, floor = issue_corrected_table([(p.m, p.n, p.k, p.efficiency) for p in compute.gemm_table], peak,
                                           compute.gemm_efficiency)
        return cls(peak_flops=peak, hbm_bandwidth=hbm, gemm_efficiency=compute.gemm_efficiency,
                   gemm_half_flops=compute.gemm_half_flops, attention_efficiency=compute.attention_efficiency,
                   kernel_launch_s=compute.kernel_launch_us * 1e-6, gemm_table=pts, issue_floor_s=floor)

    def efficiency(self, m: int, n: int, k: int) -> float:
        """GEMM efficiency (fraction of peak) for an ``m x n x k`` problem."""
        flops = 2.0 * m * n * k
        if self.gemm_table:
            pts = [p for p in self.gemm_table if p[1] == n and p[2] == k] or self.gemm_table
            xs = sorted((math.log(2.0 * a * b * c), e) for a, b, c, e in pts)
            x = math.log(max(flops, 1.0))
            if x <= xs[0][0]:
                # below the smallest point: roll off like the closed form, anchored at that point
                f0 = math.exp(xs[0][0])
                return xs[0][1] * (flops / (flops + self.gemm_half_flops)) / (f0 / (f0 + self.gemm_half_flops))
            if x >= xs[-1][0]:
                return xs[-1][1]
            for (x0, e0), (x1, e1) in zip(xs, xs[1:]):
                if x0 <= x <= x1:
                    w = 0.0 if x1 == x0 else (x - x0) / (x1 - x0)
                    return e0 + w * (e1 - e0)
        return self.gemm_efficiency * flops / (flops + self.gemm_half_flops)

    def gemm(self, m: int, n: int, k: int, count: int = 1) -> float:
        """Seconds for ``count`` GEMMs of ``m x n x k`` (launch included)."""
        flops = 2.0 * m * n * k
        if flops <= 0:
            return 0.0
        return count * (flops / (self.peak_flops * self.efficiency(m, n, k)) + self.kernel_launch_s)

    def flops_time(self, flops: float, efficiency: float | None = None, kernels: int = 1) -> float:
        """Seconds for ``flops`` at ``efficiency`` (default: the large-GEMM efficiency)."""
        eff = efficiency if efficiency is not None else self.gemm_efficiency
        return flops / (self.peak_flops * eff) + kernels * self.kernel_launch_s

    def attention(self, flops: float, kernels: int = 1) -> float:
        """Seconds for a fused (flash) attention kernel doing ``flops``."""
        return flops / (self.peak_flops * self.attention_efficiency) + kernels * self.kernel_launch_s

    def memory(self, nbytes: float, kernels: int = 1) -> float:
        """Seconds for memory-bound kernels moving ``nbytes`` (read + write) through HBM."""
        return nbytes / self.hbm_bandwidth + kernels * self.kernel_launch_s
