"""The compute section of a fitted profile: GEMM efficiency table, plateau and roll-off; HBM; kernel launch.

Owns how GEMM, ``hbm`` and ``launch`` rows become the profile's ``compute``
fields. GEMM efficiencies are measured TFLOP/s over the GPU's dense peak of the
dtype (``--peak-tflops``, else the bf16 peak that the GPU catalogue,
:data:`clustersim.config.topology.GPU_CATALOG`, gives for the meta row's GPU name).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.kernels import fit_kernels
from clustersim.calibration.fit.measurements import Measurements
from clustersim.calibration.fit.profile_file import rounded
from clustersim.config.profile import GemmPoint
from clustersim.config.topology import GPU_CATALOG, GPUSpec
from clustersim.errors import ClusterSimError

#: GPU names as nvidia-smi and torch print them (upper-cased) that are no catalogue entry's ``vendor_name``,
#: matched as substrings, first match wins ("H100 PCIE" before "H100"; "GH200" is caught by "H200": its GPU
#: has an H100 SXM's compute) -> the :data:`~clustersim.config.topology.GPU_CATALOG` entry whose peak they have.
_PEAK_ALIASES: tuple[tuple[str, str], ...] = (
    ("H100 PCIE", "H100-PCIe"),
    ("H100 NVL", "H100-NVL"),
    ("H200", "H200-SXM"),
    ("H100", "H100-SXM"),
    ("A100", "A100-SXM-80GB"),  # every A100 has the same 312 TFLOP/s dense bf16
)


def gpu_spec_for(gpu: str | None) -> GPUSpec | None:
    """The GPU catalogue's entry for a GPU name as nvidia-smi and torch print it, or None when unknown.

    The entry whose ``vendor_name`` is ``gpu`` (case-insensitive), else the
    first of :data:`_PEAK_ALIASES` that ``gpu`` contains.

    >>> gpu_spec_for("NVIDIA H200").name, gpu_spec_for("Tesla V100")
    ('H200-SXM', None)
    """
    if not gpu:
        return None
    name = gpu.upper()
    spec = next((g for g in GPU_CATALOG.values() if (g.vendor_name or "").upper() == name), None)
    if spec is None:
        alias = next((entry for key, entry in _PEAK_ALIASES if key in name), None)
        spec = GPU_CATALOG[alias] if alias else None
    return spec


def peak_tflops_for(gpu: str | None) -> float | None:
    """Dense bf16 peak (TFLOP/s) of a GPU name (:func:`gpu_spec_for`), or None when unknown.

    >>> peak_tflops_for("NVIDIA H200"), peak_tflops_for("NVIDIA H100 PCIe"), peak_tflops_for("Tesla V100")
    (989.4, 756.5, None)
    """
    spec = gpu_spec_for(gpu)
    return float(spec.peak_tflops["bf16"]) if spec else None


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
    row's GPU name. ``hbm`` and ``launch`` rows give their medians; ``kernel`` rows (``calibrate bench
    --kernels``) the kernel-class tables (:func:`clustersim.calibration.fit.kernels.fit_kernels`).
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
    every = meas.of("kernel")
    kernels = [r for r in every if r.get("dtype", "bf16") == "bf16" and not str(r.get("linear", "")).startswith("expert")]
    if kernels:  # calibrate bench --kernels: the kernel-class tables (each one the rows give; others kept)
        peak = peak_tflops or compute.get("peak_tflops") or peak_tflops_for(meta.get("gpu"))
        if peak is None:
            raise ClusterSimError("cannot tell the GPU's peak TFLOP/s for the kernel-class efficiencies: pass "
                                  "--peak-tflops or include a meta row naming the GPU (H100, H200, A100)")
        if not compute.get("hbm_bandwidth_GBps"):
            raise ClusterSimError("kernel rows need the GPU's copy bandwidth for the memory-bound classes: include "
                                  "the bench's hbm rows or a base profile that states compute.hbm_bandwidth_GBps")
        try:
            tables = fit_kernels(kernels, float(peak), float(compute["hbm_bandwidth_GBps"]),
                                 float(compute.get("kernel_launch_us", 4.0)))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise ClusterSimError(f"a kernel row lacks a field or holds a bad value ({exc!r}): the rows of "
                                  "calibrate bench --kernels carry each kernel's shape") from None
        compute.update({k: v for k, v in tables.items() if v})
        compute.update(_expert_and_fp8_tables(every, float(peak), compute))
    return compute


def _expert_and_fp8_tables(rows: list[dict], peak: float, compute: dict) -> dict:
    """The MoE and FP8 tables of ``--kernel-classes experts,fp8`` rows: expert-shape GEMMs as ``expert_gemm_table``
    (apart from the dense layout table), grouped GEMMs, the loop's wall times, FP8 GEMMs against twice the bf16
    peak (the dense FP8 rate of Hopper and Blackwell parts by their datasheets)."""
    from clustersim.calibration.fit.kernels import fit_fp8_and_experts

    launch = float(compute.get("kernel_launch_us", 4.0))
    expert = [r for r in rows if str(r.get("linear", "")).startswith("expert") and r.get("name", "").startswith("gemm_")]
    out = fit_fp8_and_experts(rows, peak, 2.0 * peak, launch)
    if expert:
        out["expert_gemm_table"] = fit_kernels(expert, peak, float(compute["hbm_bandwidth_GBps"]), launch)["gemm_layout_table"]
    return out
