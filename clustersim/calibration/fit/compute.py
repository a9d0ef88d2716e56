"""The compute section of a fitted profile: GEMM efficiency table, plateau and roll-off; HBM; kernel launch.

Owns how GEMM, ``hbm`` and ``launch`` rows become the profile's ``compute``
fields. GEMM efficiencies are measured TFLOP/s over the GPU's dense peak of the
dtype (``--peak-tflops``, else the peak the meta row's GPU name gives).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.measurements import Measurements
from clustersim.calibration.fit.profile_file import rounded
from clustersim.config.profile import GemmPoint
from clustersim.errors import ClusterSimError

#: Dense bf16 peak (TFLOP/s) of the GPUs we know, from the vendor data sheets
#: (H100/H200 SXM: 989.4 dense bf16; A100: 312). Matched as substrings of the
#: meta row's GPU name, first match wins (so "H100 PCIe" must come before "H100").
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIE", 756.0),
    ("H100 NVL", 835.0),
    ("H200", 989.4),
    ("H100", 989.4),
    ("GH200", 989.4),
    ("A100", 312.0),
)


def peak_tflops_for(gpu: str | None) -> float | None:
    """Vendor dense bf16 peak for a GPU name (``'NVIDIA H200'`` -> 989.4), or None when unknown."""
    if not gpu:
        return None
    name = gpu.upper()
    for key, value in PEAK_BF16_TFLOPS:
        if key in name:
            return value
    return None


def fit_gemm(rows: Sequence[dict[str, Any]], peak_tflops: float) -> dict[str, Any]:
    """GEMM efficiency table, large-GEMM plateau and small-GEMM roll-off.

    ``efficiency = tflops / peak``. The plateau is the median efficiency of the
    largest third of the problems by FLOPs (at least 3). The roll-off follows
    ``eff(F) = E * F / (F + F_half)`` -- a fixed per-GEMM cost of
    ``F_half / (E * peak)`` seconds -- with ``F_half`` fitted by least squares on
    ``log(eff)`` over all points.

    Returns a dict with ``gemm_table`` (list of :class:`GemmPoint`),
    ``gemm_efficiency`` and ``gemm_half_flops``.
    """
    from scipy.optimize import minimize_scalar

    if peak_tflops <= 0:
        raise ClusterSimError("peak TFLOP/s must be > 0")
    pts = sorted(((2.0 * r["m"] * r["n"] * r["k"], r["tflops"] / peak_tflops, r) for r in rows),
                 key=lambda x: (x[0], x[1]))
    if not pts:
        raise ClusterSimError("no GEMM rows")
    if max(e for _, e, _ in pts) > 1.0:
        raise ClusterSimError(f"a GEMM reached more than the peak of {peak_tflops} TFLOP/s; "
                              "check --peak-tflops or the GPU name in the meta row")
    table = [GemmPoint(m=r["m"], n=r["n"], k=r["k"], efficiency=rounded(e, 4)) for _, e, r in pts]
    big = pts[-max(3, len(pts) // 3):] if len(pts) >= 3 else pts
    E = float(statistics.median(e for _, e, _ in big))
    F = np.array([p[0] for p in pts])
    eff = np.array([p[1] for p in pts])

    def loss(logh: float) -> float:
        model = E * F / (F + math.exp(logh))
        return float(np.sum((np.log(model) - np.log(eff)) ** 2))

    res = minimize_scalar(loss, bounds=(math.log(1e3), math.log(1e15)), method="bounded",
                          options={"xatol": 1e-6})
    return {"gemm_table": table, "gemm_efficiency": rounded(min(E, 1.0), 4),
            "gemm_half_flops": rounded(math.exp(res.x), 4)}


def compute_section(meas: Measurements, compute: dict[str, Any], *, meta: dict[str, Any],
                    peak_tflops: float | None) -> dict[str, Any]:
    """``compute`` (the base profile's section, JSON form) with every field the measurements determine replaced.

    GEMM rows (one dtype) give the table, plateau and roll-off; the peak is
    ``peak_tflops``, else the base's ``peak_tflops``, else (bf16 only) the meta
    row's GPU name. ``hbm`` and ``launch`` rows give their medians.
    """
    compute = dict(compute)
    gemm_rows = meas.of("gemm")
    if gemm_rows:
        dtypes = {r.get("dtype", "bf16") for r in gemm_rows}
        if len(dtypes) > 1:
            raise ClusterSimError(f"GEMM rows of several dtypes ({', '.join(sorted(map(str, dtypes)))}); fit one at a time")
        dtype = dtypes.pop()
        peak = peak_tflops or compute.get("peak_tflops")
        if peak is None and dtype == "bf16":
            peak = peak_tflops_for(meta.get("gpu"))
        if peak is None:
            raise ClusterSimError("cannot tell the GPU's peak TFLOP/s for the GEMM efficiencies: pass --peak-tflops "
                                  "or include a meta row naming the GPU (H100, H200, A100)")
        compute.update(fit_gemm(gemm_rows, float(peak)))
        compute["gemm_table"] = [p.model_dump(mode="json") for p in compute["gemm_table"]]
        compute["dtype"] = dtype
        if peak_tflops:
            compute["peak_tflops"] = float(peak_tflops)
    hbm = meas.of("hbm")
    if hbm:
        compute["hbm_bandwidth_GBps"] = rounded(statistics.median(float(r["bandwidth_GBps"]) for r in hbm))
    launch = meas.of("launch")
    if launch:
        compute["kernel_launch_us"] = rounded(statistics.median(float(r["overhead_us"]) for r in launch))
    return compute
