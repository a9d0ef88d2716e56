"""Transfer checks of the link model: fit on part of the measurements, predict the rest.

Owns the two checks ``calibrate report`` shows the user and the band they give:

* :func:`size_check` -- fit on every other size of every (op, ranks, nodes) context,
  predict the sizes left out (link model refined at the fit points, :func:`refine`);
  also the residual of the link model alone at its own fit points;
* :func:`scale_check` -- fit on some rank counts, predict others from the link model
  alone (no measured point of the predicted rank count is used);
* :func:`band_factor` -- the multiplicative half-width of a ~95% band: the 95th
  percentile of the held-out relative errors of a size check (both halves).

Errors are ``|predicted / measured - 1|``, summarised per op as the mean at
``>= 1 MiB``, the mean below and the worst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.linkmodel import fit_link_model, refine

MIB = 1 << 20


@dataclass(frozen=True)
class TransferRow:
    """One op's errors in a check (fractions, not percent)."""

    op: str
    points: int
    mean_large: float
    mean_small: float
    worst: float


def split_sizes(rows: Sequence[dict[str, Any]], parity: int) -> tuple[list[dict], list[dict]]:
    """(fit, held out): per (op, ranks, nodes) context, sizes at positions of ``parity`` are held out.

    >>> rows = [{"op": "all_reduce", "ranks": 2, "size_bytes": s} for s in (8, 16, 32)]
    >>> [r["size_bytes"] for r in split_sizes(rows, 1)[1]]
    [16]
    """
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["op"], r.get("ranks"), r.get("nodes")), []).append(r)
    fit: list[dict] = []
    held: list[dict] = []
    for rs in by.values():
        index = {s: i for i, s in enumerate(sorted({float(r["size_bytes"]) for r in rs}))}
        for r in rs:
            (held if index[float(r["size_bytes"])] % 2 == parity else fit).append(r)
    return fit, held


def summarise(rows: Sequence[dict[str, Any]], predicted_us: np.ndarray) -> list[TransferRow]:
    """Per-op error summary of ``predicted_us`` against the rows' ``time_us``."""
    t = np.array([float(r["time_us"]) for r in rows])
    size = np.array([float(r["size_bytes"]) for r in rows])
    op = np.array([r["op"] for r in rows])
    err = np.abs(np.asarray(predicted_us) / t - 1.0)
    out = []
    for o in dict.fromkeys(op.tolist()):
        m = op == o
        large, small = m & (size >= MIB), m & (size < MIB)
        out.append(TransferRow(op=o, points=int(m.sum()),
                               mean_large=float(err[large].mean()) if large.any() else float("nan"),
                               mean_small=float(err[small].mean()) if small.any() else float("nan"),
                               worst=float(err[m].max())))
    return out


def size_check(rows: Sequence[dict[str, Any]], *, parity: int = 1, **lines: Any) -> dict[str, Any]:
    """Fit on every other size, predict the rest. ``lines``: the line rates of :func:`fit_link_model`.

    Returns ``{"table": [TransferRow], "fit_residual_median": float, "errors": array}``: the
    held-out errors (refined prediction) per op, the median relative residual of the link model
    alone at its fit points, and every held-out signed relative error.
    """
    fit, held = split_sizes(rows, parity)
    model = fit_link_model(fit, **lines)
    pred = refine(model, fit, held)
    t = np.array([float(r["time_us"]) for r in held])
    return {"table": summarise(held, pred), "fit_residual_median": float(np.median(np.abs(np.expm1(model.residuals)))),
            "errors": pred / t - 1.0, "model": model}


def scale_check(fit_rows: Sequence[dict[str, Any]], predict_rows: Sequence[dict[str, Any]],
                **lines: Any) -> list[TransferRow]:
    """Fit on ``fit_rows`` (some rank counts), predict ``predict_rows`` (others) from the link model alone."""
    model = fit_link_model(fit_rows, **lines)
    return summarise(predict_rows, model.predict_us(predict_rows))


def band_factor(rows: Sequence[dict[str, Any]], *, coverage: float = 0.95, **lines: Any) -> float:
    """Relative half-width of a band meant to hold ``coverage`` of unseen sizes.

    Both halves of a size check (fit on even positions, predict odd; then the reverse) give
    held-out errors; the band is their ``coverage`` quantile of ``|log(predicted/measured)|``,
    returned as the factor ``f`` of ``[t / f, t x f]``.
    """
    errs = np.concatenate([size_check(rows, parity=p, **lines)["errors"] for p in (0, 1)])
    return float(np.exp(np.quantile(np.abs(np.log1p(errs)), coverage)))


def format_table(title: str, table: Sequence[TransferRow]) -> str:
    """The check as a text table (percent)."""
    lines = [title, f"{'op':<16}{'points':>7}{'mean>=1MiB':>12}{'mean<1MiB':>11}{'worst':>8}"]
    for r in table:
        lines.append(f"{r.op:<16}{r.points:>7}{100 * r.mean_large:>11.1f}%{100 * r.mean_small:>10.1f}%"
                     f"{100 * r.worst:>7.1f}%")
    return "\n".join(lines)
