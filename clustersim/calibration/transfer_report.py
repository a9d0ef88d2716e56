"""Transfer checks for ``calibrate report --transfer``: the size check and the scale check, as data and a plot.

Owns choosing the rows of each check from a measurement set and drawing them:
the size check fits the link model (:mod:`clustersim.calibration.fit.linkmodel`) on every
other size of every context and predicts the rest; the scale check fits on the rank counts
``fit_ranks`` and predicts every other rank count from the link model alone. Each check is
one table (per op: mean error at >= 1 MiB, below, worst) and one PNG (predicted / measured
against size, one colour per rank count).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from clustersim.calibration.figure import png_figure
from clustersim.calibration.fit.linkmodel import fit_link_model, refine
from clustersim.calibration.fit.transfer import split_sizes, summarise
from clustersim.errors import ClusterSimError


def model_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The collective rows the link model describes: NCCL's own choice (no forced algorithm or protocol),
    library-level time (``mode: nccl``), without NVLS."""
    return [r for r in rows if r.get("kind") == "collective" and r.get("mode", "nccl") == "nccl"
            and not r.get("nvls") and r.get("algorithm") is None and r.get("protocol") is None]


def transfer_checks(rows: Sequence[dict[str, Any]], *, fit_ranks: Sequence[int] | None = None,
                    **lines: Any) -> dict[str, Any]:
    """Both checks on ``rows`` (see :func:`model_rows`). ``lines``: line rates of :func:`fit_link_model`.

    Returns ``{"size": {...}, "scale": {...} or None}``, each with ``table`` (list of dicts, percent),
    ``fit_residual_median_pct`` and ``points`` (size, measured us, predicted us, ranks, op) for the plot.
    The scale check runs when ``fit_ranks`` leaves some rank counts to predict.
    """
    rows = model_rows(rows)
    if not rows:
        raise ClusterSimError("no NCCL-mode collective rows (without forced algorithm/protocol) for the transfer checks")
    fit, held = split_sizes(rows, 1)
    model = fit_link_model(fit, **lines)
    out: dict[str, Any] = {"size": _check("fit on every other size, predict the rest", model, held,
                                          refine(model, fit, held))}
    ranks = sorted({int(r.get("ranks") or 2) for r in rows})
    chosen = sorted(set(fit_ranks or ranks[:-1]))
    rest = [r for r in rows if int(r.get("ranks") or 2) not in chosen]
    train = [r for r in rows if int(r.get("ranks") or 2) in chosen]
    out["scale"] = None
    if rest and train:
        m = fit_link_model(train, **lines)
        out["scale"] = _check(f"fit on ranks {', '.join(map(str, chosen))}, predict "
                              f"{', '.join(str(n) for n in ranks if n not in chosen)}", m, rest, m.predict_us(rest))
    return out


def link_parameters(rows: Sequence[dict[str, Any]], **lines: Any) -> dict[str, Any]:
    """The link model fitted on every model row (see :func:`model_rows`): its learned parameters.

    Returns :meth:`LinkModel.as_dict` plus ``fit_residual_median_pct`` (the model alone at its rows).
    """
    rows = model_rows(rows)
    if not rows:
        raise ClusterSimError("no NCCL-mode collective rows (without forced algorithm/protocol) to fit")
    model = fit_link_model(rows, **lines)
    return {**model.as_dict(), "fit_residual_median_pct": float(100 * np.median(np.abs(np.expm1(model.residuals))))}


def parameter_rows(params: dict[str, Any]) -> tuple[list[tuple[str, str, str]], list[tuple[str, ...]]]:
    """The parameters as two text tables: (link class.protocol, efficiency, us per step) with the
    protocols' base latency as a third column, and (op, floor us, op efficiency, own-chunk GB/s,
    start-up depth on two ranks).

    >>> links, ops = parameter_rows({"base_us": {"ll": 6.6}, "intra.ll": {"efficiency": 0.4, "latency_us": 0.6},
    ...                              "floor_us": {"all_reduce": 9.0}, "op_efficiency": {"all_reduce": 1.0},
    ...                              "local_GBps": {}, "startup_depth": {"all_reduce": 0.18}})
    >>> links, ops
    ([('intra.ll', '0.400', '0.60', '6.60')], [('all_reduce', '9.00', '1.000', '-', '0.180')])
    """
    links = [(k, f"{v['efficiency']:.3f}", f"{v['latency_us']:.2f}", f"{params['base_us'][k.split('.')[1]]:.2f}")
             for k, v in params.items() if "." in k and isinstance(v, dict)]
    depth = params.get("startup_depth", {})
    ops = [(op, f"{floor:.2f}", f"{params['op_efficiency'][op]:.3f}",
            f"{params['local_GBps'][op]:.0f}" if op in params["local_GBps"] else "-",
            f"{depth[op]:.3f}" if op in depth else "-")
           for op, floor in params["floor_us"].items()]
    return links, ops


def _check(title: str, model, rows: Sequence[dict[str, Any]], pred: np.ndarray) -> dict[str, Any]:
    return {"title": title,
            "fit_residual_median_pct": float(100 * np.median(np.abs(np.expm1(model.residuals)))),
            "table": [{"op": t.op, "points": t.points, "mean_large_pct": 100 * t.mean_large,
                       "mean_small_pct": 100 * t.mean_small, "worst_pct": 100 * t.worst} for t in summarise(rows, pred)],
            "points": [(float(r["size_bytes"]), float(r["time_us"]), float(p), int(r.get("ranks") or 2), r["op"])
                       for r, p in zip(rows, pred)]}


def plot_transfer(checks: dict[str, Any], folder: str | Path) -> list[Path]:
    """One PNG per check: predicted / measured - 1 (%) against size, one colour per rank count."""
    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, c in checks.items():
        if c is None:
            continue
        path = out_dir / f"transfer_{name}.png"
        with png_figure(path) as ax:
            for n in sorted({p[3] for p in c["points"]}):
                pts = [p for p in c["points"] if p[3] == n]
                ax.scatter([p[0] for p in pts], [100 * (p[2] / p[1] - 1) for p in pts], s=14, label=f"{n} ranks")
            ax.axhline(0, color="0.5", lw=0.8)
            ax.set_xscale("log")
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel("predicted / measured - 1 (%)")
            ax.set_title(f"{name} check: {c['title']}", fontsize=9)
            ax.grid(True, which="both", alpha=0.25)
            ax.legend(fontsize=8)
        written.append(path)
    return written
