"""Kernel tables of a GPU without its own measurements, transferred from a measured GPU by roofline.

A profile's ``compute`` section holds shape-dependent efficiency tables measured with ``calibrate
bench --kernels`` (GEMMs by layout and shape, flash attention by pass / seq / head_dim, memory-bound
kernel classes by bytes). A GPU that was never measured gets those tables from a measured one
(:func:`transfer_compute`); every number used comes from the two vendor specs
(:class:`clustersim.config.topology.GPUSpec`: dense peak, HBM bandwidth, SM count) and the source's
measured tables -- nothing is fitted to a step time.

Compute-bound kernels (GEMMs, flash attention). A measured point of ``F`` FLOPs moving ``B`` bytes
took ``t_s = F / (peak_s * eff_s)`` on the source. Its roofline time there is
``r_s = max(F / (peak_s * w_s), B / bw_s)`` (:mod:`clustersim.roofline`): the compute part at the peak
reduced by wave quantisation ``w = tiles / (ceil(tiles / SMs) * SMs)`` (output tiles of one thread
block spread over the SMs; the last partial wave leaves SMs idle), the memory part at the measured
copy bandwidth. What the roofline does not explain (pipeline fill, epilogue, tile-internal
overheads), ``eta = r_s / t_s``, is taken as a property of the kernel's shape and carried over: on the
target ``t_t = r_t / eta`` with the target's peak, bandwidth and SM count, and the stored efficiency is
``F / (peak_t * t_t)``. The transferred section sets ``roofline_lookup``: the compute model divides
each layout / attention point by the target's roofline there (giving back ``eta``) and multiplies by
the roofline of the shape a run actually has (:mod:`clustersim.workload.compute`), so wave
quantisation is evaluated at the run's shape, not at the nearest measured one. Tiles and byte counts:
:mod:`clustersim.roofline`.

Memory-bound kernels. A class's point of ``B`` bytes took ``t_s = B / (bw_s eff_s)`` on the source, where the
copy kernel moves the same bytes in ``B / bw_s`` (``bw``: the measured copy bandwidth). Only that copy time is HBM
time; the rest, ``u = t_s - B / bw_s``, is spent in the SMs (instruction issue, reductions, the latency of
dependent loads, start-up), which a faster HBM does not shorten: it scales with the SMs' issue rate, SM count x
clock (the boost clock where both GPUs state it, else the SM count alone). On the target
``t_t = B / bw_t + u x (sms_s f_s) / (sms_t f_t)``, stored as ``B / (bw_t t_t)`` at the same bytes; a point faster
than the copy (``eff_s >= 1``: caches serve part of it) keeps its efficiency. Tested
leave-one-GPU-out on H200 <-> H100 (same SMs and clock, 1.41x the bandwidth; ``tools/transfer_logo.py``,
validation/transfer-rule-logo_h100-h200_2026-12-02; H200 -> H100 / H100 -> H200, 128 points): mean |time error|
12.5% / 15.7%, bias +3.4% / +0.8%, where keeping each point's efficiency at ``bytes x bw_t / bw_s`` (all of the time
HBM time, the rule before 2026-12-02) gave 22.1% / 19.0% and a bias of +20.2% / -14.8%: too fast on the faster-HBM
GPU. Which share of
a class is SM time differs by class (the H200 runs RoPE at 1.06x the H100's speed, SwiGLU at 1.40x), and one GPU's
table cannot tell them apart: that is the held-out error the class carries. The achievable copy bandwidth itself is
the source's measured fraction of its datasheet bandwidth applied to the target's datasheet bandwidth. A class that is a sequence of
kernels with GEMMs in it (eager attention: ``q k^T``, scale, mask, softmax, ``@ v``) has the *sum*
of the two roofline parts as its roofline (kernels one after another); its time scales by that sum.

Clocks. The bench times kernels in short bursts, at the GPU's boost clock, while a datasheet quotes its
peak at a stated clock, which on H100 / H200 SXM is below the boost (989.4 TFLOPS at 1,830 MHz; bursts at
1,980) and on A100 is the boost (1,410 MHz). An H100 efficiency of 0.80 against 989.4 is 0.74 of what the
SMs could do at the clock it ran at. Where both GPUs state both clocks
(:meth:`~clustersim.config.topology.GPUSpec.boost_ratio`), the roofline on each side uses the peak at the
boost clock, and the stored efficiency is converted back to the target's datasheet peak: an H100 table
transferred to A100 loses the 1,980 / 1,830 it had against its datasheet; H100 to H200 is unchanged (same
clocks); H200 to B200 (1,980 boost over a peak at 1,856 MHz) keeps 1,856 / 1,830 of it, to GB200 (2,112 over
2,062) 0.946 of its efficiency. Where either clock is unknown (H100 PCIe / NVL) no correction is made. Checked against a published
per-layer measurement (Korthikanti et al. Table 4, one 22B layer on A100, five settings): 4.9-7.0% too fast
without the correction, 0.1-2.1% with it (docs/validation.md 3c).

Sustained clocks (``clock_table``: slowdown of compute-bound kernels by compute duty under the
board's power limit; ``clock_window_ms``, the limiter's averaging window) are a property of the die and its power
budget, not of the kernel: kept as they are when source and target share the architecture (``sm``) and the board
power (``tdp_W``; H100 SXM and H200 are the same GH100 die at 700 W). Otherwise they are carried by the power the
target's tensor cores draw at their boost clock against its board power (:func:`clock_table_between`): a measured
slowdown ``s`` at duty ``d`` says the load at the boost clock would draw ``s^3`` x the board power (dynamic power goes
as ``f V^2`` and the voltage with the clock, so as ``f^3``); at the same energy per FLOP (Hopper and Blackwell are
both made on TSMC's 4N-class process) the target's load draws ``R = (peak_t / TDP_t) / (peak_s / TDP_s)`` times as
much of its own board power, peaks at the boost clock, so its slowdown is ``max(1, s R^(1/3))``. H200 -> B200:
``R`` = (2,250 x 1,980 / 1,856 TFLOPS / 1,000 W) / (989.4 x 1,980 / 1,830 / 700) = 1.57, full-duty GEMMs 1.137 ->
1.32 slower than their burst (the H200 table's 0.72-0.81 of peak on a 70B layer's GEMMs becomes 0.55-0.61, where
measurements of those shapes elsewhere show 0.46-0.65, issue 32; a check, not a fit); GB200 (1,200 W) 1.40 -> 1.27;
H100 -> A100 (312 TFLOPS at 400 W): ``R`` = 0.51, no slowdown (as before). The energy per FLOP is the rule's one
assumption beyond the datasheets; the H100 <-> H200 test cannot test it (same die). ``gemm_half_flops`` (the closed
form's roll-off, used only below the table's smallest point) and ``kernel_launch_us`` (the GPU-side
gap between dependent kernels) are kept from the source.
"""

from __future__ import annotations

from clustersim.config.topology import GPUSpec
from clustersim.roofline import (attention_shape, bmm_shape, gemm_shape, issue_corrected_table, layout_gemm,
                                 layout_wave_loss, roofline_efficiency)
from clustersim.roofline import wave_efficiency  # noqa: F401  (re-exported: the transfer's wave model)

#: memory-table classes that are a *sequence* of kernels with batched GEMMs in it, with their FLOPs per
#: counted byte: the bench's eager attention (clustersim/calibration/bench, head_dim 128 on every
#: point) forward does 4 n hd FLOPs (q k^T and @ v over n score elements) per 2 n x 2 bytes, its
#: backward 8 n hd per 3 n x 2 bytes
SEQUENCE_FLOPS_PER_BYTE = {"eager_attention_fwd": 4 * 128 / 4, "eager_attention_bwd": 8 * 128 / 6}


def transfer_point(*, efficiency: float, flops: float, nbytes: float, tiles: int, source: dict,
                   target: dict, wave_loss: float | None = None) -> float:
    """Efficiency on ``target`` of a compute-bound kernel measured at ``efficiency`` on ``source``.

    ``source`` / ``target``: ``{"peak": FLOP/s, "bw": achievable bytes/s, "sms": SM count}``.

    >>> a = {"peak": 1e15, "bw": 3e12, "sms": 132}
    >>> transfer_point(efficiency=0.7, flops=1e12, nbytes=1e8, tiles=1320, source=a, target=a)
    0.7
    >>> b = {"peak": 0.3e15, "bw": 2e12, "sms": 108}   # 1320 tiles: 13 waves on 108 SMs, the last 24 % full
    >>> round(transfer_point(efficiency=0.7, flops=1e12, nbytes=1e8, tiles=1320, source=a, target=b), 4)
    0.6581
    """
    # roofline times r = F / (peak x roofline efficiency); t_t = r_t / eta with eta = r_s / t_s (eta
    # may exceed 1 where the library's tiling beats the one-tile wave model, e.g. split-K on few
    # tiles: the ratio still carries over). In efficiencies: e_t = e_s x rho_t / rho_s.
    rho_s = roofline_efficiency(flops, nbytes, tiles, peak=source["peak"], bw=source["bw"], sms=source["sms"],
                                wave_loss=wave_loss)
    rho_t = roofline_efficiency(flops, nbytes, tiles, peak=target["peak"], bw=target["bw"], sms=target["sms"],
                                wave_loss=wave_loss)
    return round(min(1.0, efficiency * rho_t / rho_s), 12)


def _r4(x: float) -> float:
    return float(f"{x:.4g}")


def transfer_compute(compute: dict, *, source: GPUSpec, target: GPUSpec) -> dict:
    """The ``compute`` section of a profile for ``target``, transferred from ``source``'s measured one.

    ``compute``: the source profile's compute section as a dict (``ComputeParams`` fields; its
    ``hbm_bandwidth_GBps`` is the measured copy bandwidth, its ``peak_tflops`` if set the peak the
    tables are relative to). Returns a new dict: the same fields for the target (``peak_tflops``
    dropped: the target's datasheet peak applies), ``clock_table`` kept only for the same die and
    board power (see the module doc).
    """
    dtype = compute.get("dtype", "bf16")
    if source.sm_count is None or target.sm_count is None:
        raise ValueError(f"SM count missing in the GPU spec of {source.name if source.sm_count is None else target.name}")
    bw_fraction = (compute.get("hbm_bandwidth_GBps") or 0.9 * source.hbm_bandwidth_GBps) / source.hbm_bandwidth_GBps
    # both peaks at the boost clock the kernels run at, where both GPUs state it (module doc, "Clocks")
    src_boost, tgt_boost = source.boost_ratio(), target.boost_ratio()
    if src_boost is None or tgt_boost is None:
        src_boost = tgt_boost = 1.0
    # the SMs' issue rate (SM count x boost clock; the SM count alone where either clock is unknown): what the
    # part of a memory-bound kernel's time beyond its copy time scales with (module doc, "Memory-bound kernels")
    clocks = (source.boost_clock_MHz, target.boost_clock_MHz) if None not in (source.boost_clock_MHz,
                                                                              target.boost_clock_MHz) else (1.0, 1.0)
    src = {"peak": (compute.get("peak_tflops") or source.peak_tflops[dtype]) * 1e12 * src_boost,
           "bw": bw_fraction * source.hbm_bandwidth, "sms": source.sm_count, "issue": source.sm_count * clocks[0]}
    tgt = {"peak": target.peak_flops(dtype) * tgt_boost, "bw": bw_fraction * target.hbm_bandwidth,
           "sms": target.sm_count, "issue": target.sm_count * clocks[1]}

    # the GEMM library's kept share of a partial wave's loss, per layout (a property of the library, carried with
    # the tables): a layout not listed, the batched and the square-sweep GEMMs take the mean
    loss = dict(compute.get("wave_loss") or {})

    def point(eff: float, flops: float, nbytes: float, tiles: int, gemm: bool = True, layout: str | None = None) -> float:
        # transfer_point returns the efficiency against tgt["peak"]; stored against the datasheet peak
        return _r4(tgt_boost * transfer_point(efficiency=eff / src_boost, flops=flops, nbytes=nbytes, tiles=tiles,
                                              source=src, target=tgt, wave_loss=layout_wave_loss(loss, layout) if gemm else None))

    def gemm(m: int, n: int, k: int, eff: float, layout: str | None = None) -> float:
        flops, nbytes, tiles = gemm_shape(m, n, k)
        return point(eff, flops, nbytes, tiles, layout=layout)

    same_power = (source.sm, source.tdp_W) == (target.sm, target.tdp_W) and source.tdp_W is not None
    out = {key: val for key, val in compute.items()
           if key not in ("peak_tflops", "provenance", "transfer") and (key not in ("clock_table", "clock_window_ms") or same_power)}
    if not same_power and compute.get("clock_table"):
        clock = clock_table_between(compute["clock_table"], source=source, target=target, dtype=dtype)
        if clock:  # the target's load is over its board power: the same limiter, the same window
            out["clock_table"] = clock
            if compute.get("clock_window_ms"):
                out["clock_window_ms"] = compute["clock_window_ms"]
    out["hbm_bandwidth_GBps"] = _r4(tgt["bw"] / 1e9)
    out["gemm_table"] = _gemm_table(compute, gemm, src_ds=src["peak"] / src_boost, tgt_ds=tgt["peak"] / tgt_boost)
    if compute.get("gemm_table"):
        big = max(out["gemm_table"], key=lambda p: p["m"] * p["n"] * p["k"])
        out["gemm_efficiency"] = big["efficiency"]
    else:
        out["gemm_efficiency"] = compute.get("gemm_efficiency", 0.75)
    # training layouts: forward NT (tokens x out), dgrad NN (tokens x in), wgrad TN (out x in)
    out["gemm_layout_table"] = [
        {**p, "efficiency": gemm(*layout_gemm(p["layout"], p["tokens"], p["out_features"], p["in_features"]),
                                 p["efficiency"], p["layout"])}
        for p in compute.get("gemm_layout_table", [])]
    att = []
    for p in compute.get("attention_table", []):
        flops, nbytes, tiles = attention_shape(p["direction"], p["batch"] * p["heads"], p["seq"], p["head_dim"])
        att.append({**p, "efficiency": point(p["efficiency"], flops, nbytes, tiles, gemm=False)})
    out["attention_table"] = att
    if compute.get("bmm_table"):
        out["bmm_table"] = transfer_bmm(compute["bmm_table"], point)
    # the run's own shape is quantised on the target at lookup (ComputeModel), not the measured one
    out["roofline_lookup"] = True
    out["memory_table"] = [_memory_point(p, src, tgt) for p in compute.get("memory_table", [])]
    return out


def clock_table_between(points: list[dict], *, source: GPUSpec, target: GPUSpec, dtype: str = "bf16") -> list[dict]:
    """``clock_table`` points measured on ``source`` carried to ``target`` by board power (module doc, "Sustained
    clocks"): each slowdown ``s`` becomes ``max(1, s R^(1/3))``; empty when no point is slowed on the target or a
    board power is unknown.

    >>> from clustersim.config.topology import gpu_spec
    >>> pts = [{"duty": 0.5911, "slowdown": 1.056}, {"duty": 0.9984, "slowdown": 1.137}]
    >>> clock_table_between(pts, source=gpu_spec("H200-SXM"), target=gpu_spec("B200"))
    [{'duty': 0.5911, 'slowdown': 1.227}, {'duty': 0.9984, 'slowdown': 1.321}]
    >>> clock_table_between(pts, source=gpu_spec("H100-SXM"), target=gpu_spec("A100-SXM-80GB"))
    []
    """
    if source.tdp_W is None or target.tdp_W is None:
        return []

    def per_watt(g: GPUSpec) -> float:
        return g.peak_flops(dtype) * (g.boost_ratio() or 1.0) / g.tdp_W

    cube = (per_watt(target) / per_watt(source)) ** (1.0 / 3.0)
    out = [{**p, "slowdown": round(max(1.0, p["slowdown"] * cube), 3)} for p in points]
    return out if any(p["slowdown"] > 1.0 for p in out) else []


def _gemm_table(compute: dict, gemm, *, src_ds: float, tgt_ds: float) -> list[dict]:
    """The square GEMM sweep on the target. Each point was timed alone between CUDA events, so it holds the host's
    issue latency (:func:`clustersim.roofline.issue_corrected_table` finds it from the smallest point:
    18.3 us on the H100). That time is the host's, not the GPU's: only the kernel's part goes through the roofline
    (``gemm``), and the same host time is added back on the target. ``src_ds`` / ``tgt_ds``: the datasheet peaks
    (FLOP/s) the points' efficiencies are relative to."""
    pts = compute.get("gemm_table", [])
    raw = [(p["m"], p["n"], p["k"], p["efficiency"]) for p in pts]
    _, floor = issue_corrected_table(raw, src_ds, compute.get("gemm_efficiency", 0.75))
    out = []
    for p in pts:
        flops = 2.0 * p["m"] * p["n"] * p["k"]
        kernel_s = flops / (src_ds * p["efficiency"]) - floor
        if floor <= 0 or kernel_s <= 0:  # no host floor in the table: the point as it was timed
            out.append({**p, "efficiency": gemm(p["m"], p["n"], p["k"], p["efficiency"])})
            continue
        kernel_t = flops / (tgt_ds * gemm(p["m"], p["n"], p["k"], flops / (src_ds * kernel_s)))
        out.append({**p, "efficiency": _r4(flops / (tgt_ds * (kernel_t + floor)))})
    return out


def transfer_bmm(points: list[dict], point) -> list[dict]:
    """An eager attention core's batched-GEMM points (``bmm_table``) through ``point(eff, flops, bytes, tiles)``
    (the roofline transfer of :func:`transfer_compute`) at each point's own shape
    (:func:`clustersim.roofline.bmm_shape`)."""
    return [{**p, "efficiency": point(p["efficiency"], *bmm_shape(p["kind"], p["batch_heads"], p["seq"], p["head_dim"]))}
            for p in points]


def bmm_between(points: list[dict], *, source: GPUSpec, target: GPUSpec, hbm_fraction: float) -> list[dict]:
    """``bmm_table`` points measured on ``source`` carried to ``target`` alone (the rest of the target's tables
    measured on it): :func:`transfer_compute`'s roofline and clock conversion with the copy bandwidth at
    ``hbm_fraction`` of each datasheet bandwidth.

    >>> from clustersim.config.topology import gpu_spec
    >>> p = [{"kind": "score", "batch_heads": 64, "seq": 2048, "head_dim": 128, "efficiency": 0.41}]
    >>> bmm_between(p, source=gpu_spec("H200-SXM"), target=gpu_spec("H100-SXM"), hbm_fraction=0.9)[0]["efficiency"]
    0.2861
    """
    comp = {"hbm_bandwidth_GBps": hbm_fraction * source.hbm_bandwidth_GBps, "bmm_table": points}
    return transfer_compute(comp, source=source, target=target)["bmm_table"]


def _memory_point(p: dict, src: dict, tgt: dict) -> dict:
    """One ``memory_table`` point on the target (efficiency relative to the target's copy bandwidth).

    A single memory-bound kernel: its copy time at the target's bandwidth plus its SM time at the target's issue
    rate (``issue``: SM count x clock; module doc), at the same bytes. A sequence with GEMMs in it (:data:`SEQUENCE_FLOPS_PER_BYTE`): its kernels run one after the
    other, so its roofline is the *sum* ``F / peak + B / bw``, and its time scales by that sum's ratio.
    """
    nbytes = p["bytes"]
    if p["op"] not in SEQUENCE_FLOPS_PER_BYTE:
        if p["efficiency"] >= 1.0:  # faster than the copy (caches serve part of it): keeps its share of the copy
            return dict(p)
        sm_time = (nbytes / (src["bw"] * p["efficiency"]) - nbytes / src["bw"]) * src["issue"] / tgt["issue"]
        return {**p, "efficiency": _r4(nbytes / (tgt["bw"] * (nbytes / tgt["bw"] + sm_time)))}
    flops = nbytes * SEQUENCE_FLOPS_PER_BYTE[p["op"]]
    t_s = nbytes / (src["bw"] * p["efficiency"])
    t_t = t_s * (flops / tgt["peak"] + nbytes / tgt["bw"]) / (flops / src["peak"] + nbytes / src["bw"])
    return {**p, "efficiency": _r4(nbytes / (t_t * tgt["bw"]))}
