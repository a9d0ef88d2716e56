"""GPU compute-time model: GEMMs by shape, attention, memory-bound kernels, launch overhead.

Parameters come from the profile's ``compute`` section (:class:`clustersim.config.profile.ComputeParams`)
and the GPU's vendor figures (:class:`clustersim.config.topology.GPUSpec`):

* GEMM efficiency: the profile's ``gemm_table`` when it has points (interpolated in
  log(FLOPs) among the points of the same ``n, k`` shape if any, else among all points,
  clamped at the ends), otherwise ``gemm_efficiency * F / (F + gemm_half_flops)`` (a
  saturating roll-off: half the large-GEMM efficiency at ``F = gemm_half_flops``).
* Linear layers (:meth:`ComputeModel.linear`): the profile's ``gemm_layout_table`` (bench
  ``--kernels``: forward NT, dgrad NN, wgrad TN measured separately) when it has points of the
  layout -- the points of the same weight shape, else of the nearest weight shape in log space,
  interpolated in log(tokens) and clamped -- otherwise the GEMM table above.
* Flash attention: the profile's ``attention_table`` (efficiency per pass, head_dim, seq;
  interpolated in log(FLOPs) among the points of the nearest head_dim and seq, clamped) when it
  has points of the pass, else ``attention_efficiency`` of dense peak.
* Memory-bound kernels: bytes / HBM bandwidth (profile ``hbm_bandwidth_GBps``, else 0.9 x spec);
  kernel classes measured by bench ``--kernels`` (:meth:`ComputeModel.memory_op`: LayerNorm,
  GELU, add, cross-entropy, AdamW) use their minimum traffic at the measured fraction of that
  bandwidth (``memory_table``, interpolated in log(bytes), clamped).
* Every kernel adds ``kernel_launch_us`` of GPU-side gap.
* Overlap with NCCL (profile ``overlap_table``, :meth:`ComputeModel.overlap_slowdowns`): how much
  the step's kernels and a collective beside them slow each other, by kernel class (GEMM by its
  FLOPs, memory-bound) weighted by the step's compute duty; the executors apply it
  (:mod:`clustersim.simulate.overlap`).

Tables transferred from another GPU (profile ``roofline_lookup: true``, written by
:mod:`clustersim.calibration.transfer`) are read through the roofline at the run's own shape: a
layout or flash-attention point's efficiency is the residual ``eta`` (what the roofline of
:mod:`clustersim.roofline` -- wave quantisation of the output tiles over this GPU's SMs, then the
HBM bound -- does not explain) times the roofline at that point on this GPU. The residual is
interpolated like the efficiency (nearest weight shape, log tokens; nearest head_dim and seq, log
FLOPs) and multiplied by the roofline of the shape actually run, so a 2304 x 6144 GEMM is quantised
as 2304 x 6144 on 108 SMs, not as the measured 2048 x 8192 it is read from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from clustersim.errors import ClusterSimError
from clustersim.roofline import (ATTENTION_BWD_FLOPS, attention_shape, bmm_shape, gemm_shape,
                                issue_corrected_table, layout_gemm, layout_wave_loss, roofline_efficiency)


def interp_log(points: list[tuple[float, float]], x: float) -> float:
    """Piecewise-linear interpolation of ``(x, y)`` points in log(x), clamped at the ends.

    Points at the same x are averaged.

    >>> interp_log([(1.0, 0.2), (100.0, 0.6)], 10.0)
    0.4
    >>> interp_log([(1.0, 0.2), (100.0, 0.6)], 1e6)
    0.6
    """
    acc: dict[float, list[float]] = {}
    for px, py in points:
        acc.setdefault(math.log(px), []).append(py)
    xs = sorted((k, sum(v) / len(v)) for k, v in acc.items())
    lx = math.log(max(x, 1e-300))
    if lx <= xs[0][0]:
        return xs[0][1]
    if lx >= xs[-1][0]:
        return xs[-1][1]
    for (x0, y0), (x1, y1) in zip(xs, xs[1:]):
        if x0 <= lx <= x1:
            w = (lx - x0) / (x1 - x0)
            return round(y0 + w * (y1 - y0), 12)
    return xs[-1][1]  # pragma: no cover


def _nearest(values, target: float) -> float:
    """The value closest to ``target`` in log space (ties: the smaller)."""
    return min(sorted(set(values)), key=lambda v: abs(math.log(v / target)))


#: Linear-layer roles: training layout and the GEMM (m, n, k) for forward shape (M tokens, N out, K in).
LINEAR_ROLES = {"fwd": "NT", "dgrad": "NN", "wgrad": "TN"}


def clock_slowdown(points: list[tuple[float, float]], duty: float) -> float:
    """Sustained slowdown of compute-bound kernels at compute ``duty`` from ``(duty, slowdown)`` points:
    linear in duty, 1 at duty 0, the last point beyond it.

    >>> clock_slowdown([(0.5, 1.05), (1.0, 1.15)], 0.75), clock_slowdown([], 0.9)
    (1.1, 1.0)
    """
    if not points:
        return 1.0
    xs = [(0.0, 1.0)] + [p for p in points if p[0] > 0]
    d = min(max(duty, 0.0), 1.0)
    if d >= xs[-1][0]:
        return xs[-1][1]
    for (x0, y0), (x1, y1) in zip(xs, xs[1:]):
        if x0 <= d <= x1:
            return y0 + (y1 - y0) * (0.0 if x1 == x0 else (d - x0) / (x1 - x0))
    return 1.0


def _duty_weighted(points: list[tuple[str, float, float]], gemm_flops: float, duty: float) -> float:
    """``duty`` x the ``gemm`` points' value interpolated in log(work) at ``gemm_flops`` + the rest x the
    ``memory`` points' value at their largest work; a class without points counts as 1.

    >>> _duty_weighted([("gemm", 1e11, 1.3), ("gemm", 1e12, 1.1), ("memory", 1e9, 1.2)], 1e11, 0.5)
    1.25
    """
    gemm = [(w, v) for k, w, v in points if k == "gemm"]
    mem = [(w, v) for k, w, v in points if k == "memory"]
    d = min(max(duty, 0.0), 1.0)
    g = interp_log(gemm, gemm_flops) if gemm else 1.0
    m = interp_log(mem, max(w for w, _ in mem)) if mem else 1.0
    return d * g + (1 - d) * m


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
    # (direction, seq, head_dim, heads, batch, efficiency) of flash attention (bench --kernels)
    attention_table: list[tuple[str, int, int, int, int, float]] = field(default_factory=list)
    # (layout, tokens, out_features, in_features, efficiency) of linear-layer GEMMs (bench --kernels)
    gemm_layout_table: list[tuple[str, int, int, int, float]] = field(default_factory=list)
    # (kind, batch x heads, seq, head_dim, efficiency) of an eager attention core's batched GEMMs
    bmm_table: list[tuple[str, int, int, int, float]] = field(default_factory=list)
    #: SM count of the GPU, for the batched GEMMs' roofline (read at the run's own shape on every GPU)
    sm_count: int | None = None
    #: per GEMM layout, the share of a partial wave's loss the GEMM library keeps (profile wave_loss); empty: the
    #: one-tile wave model
    wave_loss: dict[str, float] = field(default_factory=dict)
    # op class -> [(minimum bytes, efficiency vs hbm_bandwidth, row length or None)] (bench --kernels)
    memory_table: dict[str, list[tuple[float, ...]]] = field(default_factory=dict)
    # (compute duty, sustained slowdown) of compute-bound kernels (bench --kernels gemm_duty)
    clock_table: list[tuple[float, float]] = field(default_factory=list)
    # (kernel class, work: FLOPs or bytes, collective, compute slowdown, comm slowdown) (overlap probe)
    overlap_table: list[tuple[str, float, str, float, float]] = field(default_factory=list)
    # (kernel class, work: FLOPs or bytes, side "recv"/"send", compute slowdown) (p2p residency probe)
    p2p_wait_table: list[tuple[str, float, str, float]] = field(default_factory=list)
    #: seconds over which the clock follows the load (profile clock_window_ms); None: the step's duty everywhere
    clock_window_s: float | None = None
    #: time multiplier of compute-bound kernels now in force (set by the workload, see slowdown_at)
    clock_slowdown: float = 1.0
    #: [compute-bound seconds, memory-bound seconds] charged since reset (duty of a step)
    tally: list[float] = field(default_factory=lambda: [0.0, 0.0])
    # (layout, tokens, out_features, in_features, efficiency) of MoE expert-shape GEMMs (bench --kernels experts)
    expert_layout_table: list[tuple[str, int, int, int, float]] = field(default_factory=list)
    # (layout, experts, tokens per expert, out_features, in_features, efficiency) of grouped expert GEMMs
    grouped_table: list[tuple[str, int, int, int, int, float]] = field(default_factory=list)
    # (recipe, layout, tokens, out_features, in_features, efficiency vs the FP8 peak) of FP8 linears
    fp8_layout_table: list[tuple[str, str, int, int, int, float]] = field(default_factory=list)
    #: dense FP8 peak FLOP/s of the GPU (None: no FP8)
    fp8_peak_flops: float | None = None
    #: the blocks' linears run in FP8 with this scaling recipe (training.precision.params fp8); None: 16-bit
    fp8_recipe: str | None = None
    #: wall seconds per expert of a Hugging Face style loop beyond its kernels (profile moe_loop_expert_us)
    moe_loop_expert_s: float | None = None
    # (hidden, ffn, tokens per expert, forward s, backward s) of an expert loop in training (profile moe_loop_table)
    moe_loop_table: list[tuple[int, int, int, float, float]] = field(default_factory=list)
    #: SM count when the layout / attention tables are read through the roofline at the run's shape
    #: (transferred tables, module doc); None: tables read as measured
    roofline_sms: int | None = None

    @classmethod
    def from_profile(cls, compute, gpu_spec, dtype: str = "bf16", fp8_recipe: str | None = None) -> "ComputeModel":
        """Build from a profile ``compute`` section and the GPU spec (peak of ``dtype``).

        ``dtype`` ``fp8`` with an ``fp8_recipe`` (a training step) prices the blocks' linear layers in FP8 (the
        FP8 peak and ``fp8_layout_table`` of the recipe) and everything else (attention, the LM head,
        memory-bound kernels) at the 16-bit peak and tables, as FP8 training recipes run them; without a recipe
        (a generic job's phase of dtype fp8) every kernel at the FP8 peak."""
        if dtype == "fp8" and fp8_recipe is not None:
            cm = cls.from_profile(compute, gpu_spec, "bf16")
            if "fp8" not in gpu_spec.peak_tflops:
                raise ClusterSimError(f"GPU {gpu_spec.name} has no fp8 peak in its spec", field="training.precision")
            cm.fp8_peak_flops = gpu_spec.peak_tflops["fp8"] * 1e12
            cm.fp8_recipe = fp8_recipe
            return cm
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
        sms = None
        if compute.roofline_lookup:
            if not gpu_spec.sm_count:
                raise ClusterSimError(f"GPU {gpu_spec.name} has no sm_count in its spec, which roofline_lookup needs",
                                      field="compute.roofline_lookup")
            sms = gpu_spec.sm_count
        mem: dict[str, list[tuple[float, ...]]] = {}
        for p in compute.memory_table:
            mem.setdefault(p.op, []).append((p.bytes, p.efficiency, p.hidden))
        return cls(peak_flops=peak, hbm_bandwidth=hbm, gemm_efficiency=compute.gemm_efficiency,
                   gemm_half_flops=compute.gemm_half_flops, attention_efficiency=compute.attention_efficiency,
                   kernel_launch_s=compute.kernel_launch_us * 1e-6, gemm_table=pts, issue_floor_s=floor,
                   attention_table=[(p.direction, p.seq, p.head_dim, p.heads, p.batch, p.efficiency)
                                    for p in compute.attention_table],
                   gemm_layout_table=[(p.layout, p.tokens, p.out_features, p.in_features, p.efficiency)
                                      for p in compute.gemm_layout_table],
                   memory_table=mem, roofline_sms=sms,
                   bmm_table=[(p.kind, p.batch_heads, p.seq, p.head_dim, p.efficiency) for p in compute.bmm_table],
                   sm_count=getattr(gpu_spec, "sm_count", None),
                   wave_loss=dict(compute.wave_loss),
                   # measured with tensor-core GEMMs of the profile's dtype: other dtypes (fp32 SIMT
                   # GEMMs draw other power) get no slowdown
                   clock_table=(sorted((p.duty, p.slowdown) for p in compute.clock_table)
                                if dtype == compute.dtype else []),
                   overlap_table=[(p.kernel, p.work, p.collective, p.compute_slowdown, p.comm_slowdown)
                                  for p in compute.overlap_table],
                   p2p_wait_table=[(p.kernel, p.work, p.side, p.compute_slowdown) for p in compute.p2p_wait_table],
                   clock_window_s=(compute.clock_window_ms * 1e-3 if compute.clock_window_ms and compute.clock_table
                                   and dtype == compute.dtype else None),
                   expert_layout_table=[(p.layout, p.tokens, p.out_features, p.in_features, p.efficiency)
                                        for p in compute.expert_gemm_table],
                   grouped_table=[(p.layout, p.experts, p.tokens, p.out_features, p.in_features, p.efficiency)
                                  for p in compute.grouped_gemm_table],
                   fp8_layout_table=[(p.recipe, p.layout, p.tokens, p.out_features, p.in_features, p.efficiency)
                                     for p in compute.fp8_layout_table],
                   moe_loop_expert_s=(None if compute.moe_loop_expert_us is None else compute.moe_loop_expert_us * 1e-6),
                   moe_loop_table=[(p.hidden, p.ffn, p.tokens, p.forward_us * 1e-6, p.backward_us * 1e-6)
                                   for p in compute.moe_loop_table])

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

    def slowdown_at(self, duty: float) -> float:
        """Sustained slowdown of compute-bound kernels when they fill ``duty`` of the GPU's time:
        ``clock_table`` interpolated linearly in duty, 1 at duty 0, the last point beyond it
        (:func:`clock_slowdown`)."""
        return clock_slowdown(self.clock_table, duty)

    def p2p_wait_slowdowns(self, gemm_flops: float, duty: float) -> tuple[float, float]:
        """``(beside a waiting receive, beside a waiting send)`` slowdown of the step's kernels: ``duty`` at the
        GEMM points interpolated in log(FLOPs) at ``gemm_flops``, the rest at the memory points (the largest);
        a side or class without points counts as 1.

        >>> cm = ComputeModel(1e15, 3e12, p2p_wait_table=[("gemm", 2.7e11, "recv", 1.16), ("gemm", 1.1e12, "recv", 1.23),
        ...                   ("memory", 2.1e9, "recv", 1.0), ("gemm", 2.7e11, "send", 1.0)])
        >>> [round(x, 3) for x in cm.p2p_wait_slowdowns(2.7e11, duty=0.8)]
        [1.128, 1.0]
        """
        return tuple(_duty_weighted([(p[0], p[1], p[3]) for p in self.p2p_wait_table if p[2] == side], gemm_flops,
                                    duty) for side in ("recv", "send"))  # type: ignore[return-value]

    def overlap_slowdowns(self, gemm_flops: float, duty: float, ops: tuple[str, ...] | None = None
                          ) -> tuple[float, float]:
        """``(compute, collective)`` slowdown while a collective and the step's kernels overlap.

        Compute: ``duty`` (the time share of compute-bound kernels) at the GEMM points' slowdown
        interpolated in log(FLOPs) at ``gemm_flops`` (wave quantisation: a GEMM of few waves loses
        more to the SMs NCCL holds), the rest at the memory-bound points' slowdown; the collective's
        slowdown is weighted the same way. ``ops``: only points of these collectives (default all).
        A class without points counts as 1. ``(1.0, 1.0)`` without an ``overlap_table``.

        >>> cm = ComputeModel(1e15, 3e12, overlap_table=[("gemm", 1e11, "all_gather", 1.3, 1.4),
        ...                   ("gemm", 1e12, "all_gather", 1.1, 1.6), ("memory", 1e9, "all_gather", 1.1, 1.8)])
        >>> [round(x, 3) for x in cm.overlap_slowdowns(1e11, duty=0.8)]
        [1.26, 1.48]
        """
        pts = [p for p in self.overlap_table if ops is None or p[2] in ops]
        if not pts:
            return 1.0, 1.0
        return tuple(_duty_weighted([(p[0], p[1], p[col]) for p in pts], gemm_flops, duty)  # type: ignore[return-value]
                     for col in (3, 4))

    def _cb(self, seconds: float) -> float:
        """A compute-bound kernel's busy seconds at the clock in force (tallied)."""
        t = seconds * self.clock_slowdown
        self.tally[0] += t
        return t

    def _mb(self, seconds: float) -> float:
        """A memory-bound kernel's busy seconds (tallied; the clock does not change them)."""
        self.tally[1] += seconds
        return seconds

    def gemm(self, m: int, n: int, k: int, count: int = 1) -> float:
        """Seconds for ``count`` GEMMs of ``m x n x k`` (launch included)."""
        flops = 2.0 * m * n * k
        if flops <= 0:
            return 0.0
        return count * (self._cb(flops / (self.peak_flops * self.efficiency(m, n, k))) + self.kernel_launch_s)

    def wave_loss_for(self, layout: str | None) -> float | None:
        """The GEMM library's kept share of a partial wave's loss for ``layout``
        (:func:`clustersim.roofline.layout_wave_loss` of the profile's ``wave_loss``)."""
        return layout_wave_loss(self.wave_loss, layout)

    def roofline(self, flops: float, nbytes: float, tiles: int, gemm: bool = True, layout: str | None = None) -> float:
        """Roofline efficiency on this GPU (:func:`clustersim.roofline.roofline_efficiency` at its peak,
        copy bandwidth and ``roofline_sms``; a GEMM's SM share with the library's measured partial-wave loss for
        its ``layout`` where the profile has it, not a flash-attention pass's); 1 when the tables are read as
        measured."""
        if self.roofline_sms is None:
            return 1.0
        return roofline_efficiency(flops, nbytes, tiles, peak=self.peak_flops, bw=self.hbm_bandwidth,
                                   sms=self.roofline_sms, wave_loss=self.wave_loss_for(layout) if gemm else None)

    def linear_efficiency(self, M: int, N: int, K: int, role: str) -> float | None:
        """Measured efficiency of a linear layer's ``role`` GEMM (forward shape: ``M`` tokens, weight
        ``N x K``) from ``gemm_layout_table``; None when the table has no point of that layout.

        With ``roofline_sms`` set: the points' residuals over the roofline, interpolated, times the
        roofline of the run's own GEMM (module doc; at most 1).

        >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, kernel_launch_s=0.0,
        ...                   gemm_layout_table=[("NT", 8192, 8192, 2048, 0.8)])
        >>> cm.linear_efficiency(8192, 6144, 2304, "fwd")        # read as measured at 8192 x 2048
        0.8

        On 108 SMs the measured 8192 x 8192 output is 4,096 tiles in 38 waves (0.998 busy), the run's
        8192 x 6144 output 3,072 tiles in 29 waves (0.981 busy): 0.8 x 0.981 / 0.998.

        >>> cm.roofline_sms = 108
        >>> round(cm.linear_efficiency(8192, 6144, 2304, "fwd"), 4)
        0.7862
        """
        return self._table_efficiency(self.gemm_layout_table, M, N, K, role)

    def _table_efficiency(self, table: list[tuple[str, int, int, int, float]], M: int, N: int, K: int,
                          role: str) -> float | None:
        """:meth:`linear_efficiency` read from ``table`` (rows ``(layout, tokens, out, in, efficiency)``)."""
        layout = LINEAR_ROLES[role]
        pts = [p for p in table if p[0] == layout]
        if not pts:
            return None
        shapes = {(p[2], p[3]) for p in pts}
        run = (M, N, K)
        if (N, K) not in shapes:
            # nearest weight shape in log space (out and in features together)
            (N, K) = min(sorted(shapes), key=lambda sh: abs(math.log(sh[0] / N)) + abs(math.log(sh[1] / K)))
        if self.roofline_sms is None:
            return interp_log([(p[1], p[4]) for p in pts if (p[2], p[3]) == (N, K)], M)
        eta = interp_log([(p[1], p[4] / self.roofline(*gemm_shape(*layout_gemm(layout, p[1], N, K)), layout=layout))
                          for p in pts if (p[2], p[3]) == (N, K)], M)
        return min(1.0, eta * self.roofline(*gemm_shape(*layout_gemm(layout, *run)), layout=layout))

    def linear(self, M: int, N: int, K: int, role: str = "fwd") -> float:
        """Seconds for one GEMM of a linear layer ``y = x W^T`` (x: ``M x K``, W: ``N x K``).

        ``role``: ``fwd`` (NT), ``dgrad`` (``dx = dy W``, NN) or ``wgrad`` (``dW = dy^T x``, TN).
        Without layout points: :meth:`gemm` of the role's shape (forward ``(M, N, K)``, dgrad
        ``(M, K, N)``, wgrad ``(K, N, M)``).
        """
        flops = 2.0 * M * N * K
        if flops <= 0:
            return 0.0
        eff = self.linear_efficiency(M, N, K, role)
        if eff is None:
            shape = {"fwd": (M, N, K), "dgrad": (M, K, N), "wgrad": (K, N, M)}[role]
            return self.gemm(*shape)
        return self._cb(flops / (self.peak_flops * eff)) + self.kernel_launch_s

    def block_linear(self, M: int, N: int, K: int, role: str = "fwd") -> float:
        """Seconds for one GEMM of a block's linear layer: :meth:`linear`, or with ``fp8_recipe`` set the FP8 GEMM
        (``fp8_layout_table`` points of the recipe, else tensorwise, at the FP8 peak; without points the 16-bit
        table's efficiency at the FP8 peak, an assumption). The casts around it are the caller's
        (:func:`clustersim.workload.fp8.cast_segments`)."""
        if self.fp8_recipe is None or self.fp8_peak_flops is None:
            return self.linear(M, N, K, role)
        flops = 2.0 * M * N * K
        if flops <= 0:
            return 0.0
        pts = [p[1:] for p in self.fp8_layout_table if p[0] == self.fp8_recipe] or \
            [p[1:] for p in self.fp8_layout_table if p[0] == "tensorwise"]
        eff = self._table_efficiency(pts, M, N, K, role) if pts else None
        if eff is None:
            eff = self.linear_efficiency(M, N, K, role) or self.efficiency(*{"fwd": (M, N, K), "dgrad": (M, K, N),
                                                                               "wgrad": (K, N, M)}[role])
        return self._cb(flops / (self.fp8_peak_flops * eff)) + self.kernel_launch_s

    def expert_linear(self, M: int, N: int, K: int, role: str = "fwd") -> float:
        """Seconds for one expert's own GEMM (``M`` tokens, weight ``N x K``): ``expert_layout_table``, else
        :meth:`linear`."""
        flops = 2.0 * M * N * K
        if flops <= 0:
            return 0.0
        eff = self._table_efficiency(self.expert_layout_table, M, N, K, role) if self.expert_layout_table else None
        if eff is None:
            return self.linear(M, N, K, role)
        return self._cb(flops / (self.peak_flops * eff)) + self.kernel_launch_s

    def grouped_linear(self, tokens: tuple[int, ...], N: int, K: int, role: str = "fwd") -> float:
        """Seconds for one grouped GEMM over experts of ``tokens[e]`` rows each (weights ``N x K``), one launch.

        ``grouped_table``: the points of the nearest weight shape and expert count, their efficiency interpolated
        in log(tokens per expert) at the group's mean, for the group's FLOPs. Without it every expert at its own
        :meth:`expert_linear` time (the kernel gap once)."""
        work = [m for m in tokens if m > 0]
        if not work:
            return 0.0
        layout = LINEAR_ROLES[role]
        pts = [p for p in self.grouped_table if p[0] == layout]
        if not pts:
            return sum(self.expert_linear(m, N, K, role) - self.kernel_launch_s for m in work) + self.kernel_launch_s
        n_e = len(work)
        shape = min(sorted({(p[3], p[4], p[1]) for p in pts}),
                    key=lambda sh: abs(math.log(sh[0] / N)) + abs(math.log(sh[1] / K)) + abs(math.log(sh[2] / n_e)))
        mean = sum(work) / n_e
        eff = interp_log([(p[2], p[5]) for p in pts if (p[3], p[4], p[1]) == shape], mean)
        return self._cb(2.0 * sum(work) * N * K / (self.peak_flops * eff)) + self.kernel_launch_s

    def loop_expert(self, hidden: int, ffn: int, tokens: int) -> tuple[float, float] | None:
        """(forward, backward) wall seconds of one expert of an expert loop in training at ``tokens`` tokens:
        ``moe_loop_table`` at the nearest (hidden, ffn) in log space, interpolated in log(tokens); None without it."""
        if not self.moe_loop_table:
            return None
        shape = min(sorted({(p[0], p[1]) for p in self.moe_loop_table}),
                    key=lambda sh: abs(math.log(sh[0] / hidden)) + abs(math.log(sh[1] / ffn)))
        pts = [p for p in self.moe_loop_table if (p[0], p[1]) == shape]
        m = max(tokens, 1)
        return interp_log([(p[2], p[3]) for p in pts], m), interp_log([(p[2], p[4]) for p in pts], m)

    def linears(self, Ms, N: int, K: int, role: str = "fwd") -> list[float]:
        """:meth:`linear` of each ``M`` of ``Ms`` (a grouped GEMM's experts, most at one token
        count): the same seconds, tallied in the same order, the efficiency looked up once per
        distinct ``M`` (256 local experts of equal load: one lookup, not 256).

        >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, kernel_launch_s=1e-6,
        ...                   gemm_layout_table=[("NT", 8192, 8192, 2048, 0.8)])
        >>> cm.linears([4096, 4096, 8192], 8192, 2048) == [cm.linear(m, 8192, 2048) for m in (4096, 4096, 8192)]
        True
        """
        eff: dict[int, float | None] = {}
        out = []
        for M in Ms:
            if M not in eff:
                eff[M] = self.linear_efficiency(M, N, K, role) if 2.0 * M * N * K > 0 else None
            e = eff[M]
            flops = 2.0 * M * N * K
            if flops <= 0 or e is None:
                out.append(self.linear(M, N, K, role))
            else:
                out.append(self._cb(flops / (self.peak_flops * e)) + self.kernel_launch_s)
        return out

    def bmm(self, kind: str, batch_heads: int, seq: int, head_dim: int) -> float | None:
        """Seconds for one batched GEMM of an eager attention core (``kind``: score, context or context_t;
        :func:`clustersim.roofline.bmm_shape`), or None when the profile has no ``bmm_table`` (or no SM count).

        The points of ``kind`` at the nearest head_dim and seq, each as its share of the roofline at its own
        shape (the part wave quantisation and the HBM bound do not explain), interpolated in
        log(batch x heads) and held beyond the measured range, times the roofline at the run's shape.

        >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=4e12, kernel_launch_s=0.0, sm_count=132,
        ...                   bmm_table=[("score", 16, 2048, 128, 0.36), ("score", 64, 2048, 128, 0.41)])
        >>> round(cm.bmm("score", 32, 2048, 128) * 1e6, 1)   # 34.4 GFLOP, 302 MB: HBM-bound at 0.455 of peak
        89.2
        """
        pts = [p for p in self.bmm_table if p[0] == kind]
        if not pts or not self.sm_count:
            return None
        hd = _nearest([p[3] for p in pts], head_dim)
        sq = _nearest([p[2] for p in pts if p[3] == hd], seq)
        pts = [p for p in pts if p[3] == hd and p[2] == sq]

        def roof(bh: int, s: int, d: int) -> float:
            return roofline_efficiency(*bmm_shape(kind, bh, s, d), peak=self.peak_flops, bw=self.hbm_bandwidth,
                                       sms=self.sm_count, wave_loss=self.wave_loss_for(None))

        eta = interp_log([(p[1], p[4] / roof(p[1], sq, hd)) for p in pts], batch_heads)
        flops = bmm_shape(kind, batch_heads, seq, head_dim)[0]
        eff = min(1.0, eta * roof(batch_heads, seq, head_dim))
        return self._cb(flops / (self.peak_flops * eff)) + self.kernel_launch_s

    def flops_time(self, flops: float, efficiency: float | None = None, kernels: int = 1) -> float:
        """Seconds for ``flops`` at ``efficiency`` (default: the large-GEMM efficiency)."""
        eff = efficiency if efficiency is not None else self.gemm_efficiency
        return flops / (self.peak_flops * eff) + kernels * self.kernel_launch_s

    def attention_eff(self, flops: float, direction: str = "fwd", seq: int | None = None,
                      head_dim: int | None = None) -> float:
        """Flash-attention efficiency: ``attention_table`` points of ``direction`` at the nearest
        head_dim and seq, interpolated in log(FLOPs); else ``attention_efficiency``. With
        ``roofline_sms``, ``seq`` and ``head_dim`` set: the points' residuals over the roofline,
        interpolated, times the roofline of the run's pass (its ``batch x heads`` from ``flops``)."""
        pts = [p for p in self.attention_table if p[0] == direction]
        if not pts:
            return self.attention_efficiency
        if head_dim:
            hd = _nearest([p[2] for p in pts], head_dim)
            pts = [p for p in pts if p[2] == hd]
        if seq:
            sq = _nearest([p[1] for p in pts], seq)
            pts = [p for p in pts if p[1] == sq]
        mult = ATTENTION_BWD_FLOPS if direction == "bwd" else 1.0
        if self.roofline_sms is None or not (seq and head_dim):
            return interp_log([(mult * 2.0 * b * nh * s * s * d, e) for _, s, d, nh, b, e in pts], flops)
        shapes = [(attention_shape(direction, b * nh, s, d), e) for _, s, d, nh, b, e in pts]  # (FLOPs, bytes, tiles)
        eta = interp_log([(shape[0], e / self.roofline(*shape, gemm=False)) for shape, e in shapes], flops)
        batch_heads = max(1, round(flops / (mult * 2.0 * seq * seq * head_dim)))
        return min(1.0, eta * self.roofline(*attention_shape(direction, batch_heads, seq, head_dim), gemm=False))

    def attention(self, flops: float, kernels: int = 1, direction: str = "fwd", seq: int | None = None,
                  head_dim: int | None = None) -> float:
        """Seconds for a fused (flash) attention kernel doing ``flops`` (causal: the executed half)."""
        eff = self.attention_eff(flops, direction, seq, head_dim)
        return self._cb(flops / (self.peak_flops * eff)) + kernels * self.kernel_launch_s

    def memory(self, nbytes: float, kernels: int = 1) -> float:
        """Seconds for memory-bound kernels moving ``nbytes`` (read + write) through HBM."""
        return self._mb(nbytes / self.hbm_bandwidth) + kernels * self.kernel_launch_s

    def memory_op(self, op: str, min_bytes: float, legacy_bytes: float, kernels: int = 1,
                  size_bytes: float | None = None, hidden: int | None = None) -> float:
        """Seconds for a memory-bound kernel class ``op`` (a ``memory_table`` class).

        Measured class: ``min_bytes`` (the op's minimum traffic, the bench's byte count) at the
        measured fraction of the HBM bandwidth, looked up at ``size_bytes`` (default ``min_bytes``;
        the size of the measured op when this is a part of it); otherwise :meth:`memory` of
        ``legacy_bytes``. ``hidden``: the row length of a row-wise kernel; where the class's points
        carry one, only those of the nearest row length are read (in log(bytes) as ever).

        >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=4e12, kernel_launch_s=0.0,
        ...                   memory_table={"layernorm_bwd": [(5e7, 0.41, 4096), (5e7, 0.22, 1024)]})
        >>> [round(cm.memory_op("layernorm_bwd", 5e7, 5e7, hidden=h) * 1e6, 1) for h in (4096, 1024, None)]
        [30.5, 56.8, 39.7]
        """
        pts = self.memory_table.get(op)
        if not pts or min_bytes <= 0:
            return self.memory(legacy_bytes, kernels)
        rows = [p[2] for p in pts if len(p) > 2 and p[2]]
        if hidden and rows:
            h = _nearest(rows, hidden)
            pts = [p for p in pts if len(p) > 2 and p[2] == h]
        eff = interp_log([(p[0], p[1]) for p in pts], size_bytes or min_bytes)
        return self._mb(min_bytes / (self.hbm_bandwidth * eff)) + kernels * self.kernel_launch_s
