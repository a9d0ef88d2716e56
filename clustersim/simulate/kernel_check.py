"""A profile's compute tables against ``calibrate bench --kernels`` rows (``calibrate report``).

It lives beside the simulator, not in ``calibration``: it prices rows with the compute model
(:mod:`clustersim.workload.compute`), which calibration may not import.

Owns the step from a kernel row (one GPU-bound kernel class at one shape) to the time the simulator's compute
model charges for it, so that a profile can be checked against kernels measured on a GPU: in-sample where the
profile's tables were fitted on those rows (how exactly the tables reproduce them), a real check where they
were not (another bench run, or a profile carried to this GPU from another one). Each class is priced the way
:func:`clustersim.calibration.fit.kernels.fit_kernels` reads it, launch gaps included:

* ``gemm_nt`` / ``gemm_nn`` / ``gemm_tn``: :meth:`ComputeModel.linear` of the layer (forward, dgrad, wgrad);
* ``bmm_score`` / ``bmm_context`` / ``bmm_context_t``: :meth:`ComputeModel.bmm`;
* ``attention_fwd`` (``_bwd``): :meth:`ComputeModel.attention` of the causal FLOPs (and 2.5x them backward,
  three kernels);
* the memory-bound classes of :data:`~clustersim.calibration.fit.kernels.MEMORY_CLASSES`:
  :meth:`ComputeModel.memory_op` of the row's bytes (and, for the norms, its row length).

Rows of other kernels (the clock sweeps, the wave sweep's GEMMs, eager attention's forward + backward) are
counted as not compared.

>>> from clustersim.calibration.fit import load_profile
>>> rows = [{"kind": "kernel", "name": "residual_add", "bytes": 12582912, "time_us": 3.44}]
>>> rep = kernel_report(rows, load_profile("hgx-h200"))
>>> rep.summary[0]["class"], rep.summary[0]["points"]
('memory add', 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.compute import gpu_spec_for
from clustersim.calibration.fit.kernels import (ATTENTION_BWD_KERNELS, MEMORY_CLASSES, ROW_CLASSES,
                                                attention_fwd_flops)
from clustersim.config.profile import Profile
from clustersim.errors import ClusterSimError
from clustersim.roofline import ATTENTION_BWD_FLOPS
from clustersim.workload.compute import LINEAR_ROLES, ComputeModel

__all__ = ["KernelReport", "kernel_report", "markdown_lines"]

#: a linear layer's GEMM layout -> the compute model's role (forward NT, dgrad NN, wgrad TN)
LAYOUT_ROLE = {layout: role for role, layout in LINEAR_ROLES.items()}


@dataclass
class KernelReport:
    """Predicted against measured, per kernel row and per class.

    ``points``: one dict per compared row (``class, op, measured_us, predicted_us, error_pct``);
    ``summary``: one per class (``class, points, mean_abs_err_pct, max_abs_err_pct, worst_op``);
    ``skipped``: rows of kernels the report does not price; ``gpu``: the GPU the profile describes;
    ``measured_on``: the GPUs the rows name.
    """

    points: list[dict[str, Any]] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    gpu: str = ""
    measured_on: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``calibrate report --json`` puts it under ``kernels``)."""
        return {"gpu": self.gpu, "measured_on": self.measured_on, "summary": self.summary, "points": self.points,
                "skipped": self.skipped}


def compute_model(profile: Profile) -> ComputeModel:
    """The compute model of ``profile`` on the GPU its source names (the catalogue's spec of that GPU)."""
    spec = gpu_spec_for(profile.source.gpu)
    if spec is None:
        raise ClusterSimError(f"the profile names no GPU the catalogue knows ({profile.source.gpu!r}): "
                              "cannot price its kernel tables", field="source.gpu")
    return ComputeModel.from_profile(profile.compute, spec, profile.compute.dtype)


def _price(r: dict[str, Any], cm: ComputeModel) -> tuple[str, float] | None:
    """(class, predicted seconds) of one kernel row, or None for a kernel the report does not price."""
    name = str(r.get("name", ""))
    try:
        if name.startswith("gemm_") and r.get("layout") in LAYOUT_ROLE:
            return (f"gemm {r['layout']}",
                    cm.linear(int(r["tokens"]), int(r["out_features"]), int(r["in_features"]),
                              LAYOUT_ROLE[r["layout"]]))
        if name in ("bmm_score", "bmm_context", "bmm_context_t"):
            t = cm.bmm(name[4:], int(r["batch_heads"]), int(r["seq"]), int(r["head_dim"]))
            return None if t is None else (f"bmm {name[4:]}", t)
        if name in ("attention_fwd", "attention_fwd_bwd"):
            s, hd = int(r["seq"]), int(r["head_dim"])
            flops = attention_fwd_flops(int(r["batch"]), s, int(r["heads"]), hd)
            t = cm.attention(flops, 1, "fwd", s, hd)
            if name == "attention_fwd_bwd":
                t += cm.attention(ATTENTION_BWD_FLOPS * flops, ATTENTION_BWD_KERNELS, "bwd", s, hd)
            return ("attention fwd" if name == "attention_fwd" else "attention fwd+bwd", t)
        if name in MEMORY_CLASSES:
            op, kernels = MEMORY_CLASSES[name]
            hidden = int(r["hidden"]) if op in ROW_CLASSES and r.get("hidden") else None
            return f"memory {op}", cm.memory_op(op, float(r["bytes"]), float(r["bytes"]), kernels=kernels,
                                                hidden=hidden)
    except KeyError:   # a row without the fields its class needs: not compared
        return None
    return None


def kernel_report(rows: Sequence[dict[str, Any]], profile: Profile) -> KernelReport:
    """Price every ``kind: "kernel"`` row of ``rows`` with ``profile``'s compute tables.

    The error is ``(predicted - measured) / measured`` in percent, measured being the row's ``time_us``
    (a GPU-bound time per call with its launch gap, as the bench times it).
    """
    kern = [r for r in rows if r.get("kind") == "kernel" and r.get("time_us")]
    if not kern:
        raise ClusterSimError("no kernel measurements (calibrate bench --kernels rows) to compare with")
    cm = compute_model(profile)
    rep = KernelReport(gpu=str(profile.source.gpu or ""),
                       measured_on=sorted({str(r["gpu"]) for r in kern if r.get("gpu")}))
    by_class: dict[str, list[dict[str, Any]]] = {}
    for r in kern:
        got = _price(r, cm)
        if got is None:
            rep.skipped += 1
            continue
        cls, seconds = got
        meas = float(r["time_us"])
        pred = seconds * 1e6
        pt = {"class": cls, "op": str(r.get("op") or r.get("name")), "measured_us": round(meas, 3),
              "predicted_us": round(pred, 3), "error_pct": round((pred - meas) / meas * 100.0, 2)}
        rep.points.append(pt)
        by_class.setdefault(cls, []).append(pt)
    for cls in sorted(by_class):
        pts = by_class[cls]
        errs = np.abs([p["error_pct"] for p in pts])
        worst = pts[int(np.argmax(errs))]
        rep.summary.append({"class": cls, "points": len(pts), "mean_abs_err_pct": round(float(errs.mean()), 2),
                            "max_abs_err_pct": round(float(errs.max()), 2), "worst_op": worst["op"]})
    return rep


def markdown_lines(rep: KernelReport) -> list[str]:
    """The kernel section of ``summary.md``: the per-class table."""
    lines = ["## Kernel classes", "",
             f"The profile's compute tables ({rep.gpu or 'GPU unnamed'}) against kernel rows measured on "
             f"{', '.join(rep.measured_on) or 'an unnamed GPU'}; {rep.skipped} row(s) of other kernels not compared.",
             "", "| class | points | mean abs err (%) | max abs err (%) | worst |", "|---|---|---|---|---|"]
    for s in rep.summary:
        lines.append(f"| {s['class']} | {s['points']} | {s['mean_abs_err_pct']:.2f} | {s['max_abs_err_pct']:.2f} | "
                     f"`{s['worst_op']}` |")
    return lines
