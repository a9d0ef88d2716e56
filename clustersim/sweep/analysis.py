"""Scaling metrics of a sweep's rows: speedup and parallel efficiency.

Strong scaling (fixed total work): ``S(n) = T(n0) / T(n)`` and ``E(n) = S(n) * n0 / n``, so with
``n0 = 1`` the textbook ``S(n) = T(1)/T(n)`` and ``E(n) = S(n)/n``. Weak scaling (work per GPU
fixed): ``E(n) = T(n0) / T(n)`` and ``S(n) = E(n) * n / n0``. ``n0`` is the smallest ``n`` of each
series.
"""

from __future__ import annotations

from typing import Any


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def series_of(rows: list[dict[str, Any]], series: str | None) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by the text of column ``series`` (one group named '' without a series), in first-seen order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        key = "" if series is None else str(r.get(series))
        out.setdefault(key, []).append(r)
    return out


def scaling(rows: list[dict[str, Any]], *, x: str = "n_gpus", time: str = "step_time_s", mode: str = "strong",
            series: str | None = None) -> list[dict[str, Any]]:
    """Speedup and efficiency of every finished row, per series, sorted by ``x``.

    Returns dicts with ``series``, ``n``, ``time``, ``speedup``, ``ideal`` (n/n0) and ``efficiency``.
    Rows without a numeric ``x`` and a positive ``time`` are left out.

    >>> rows = [{"n_gpus": n, "step_time_s": t} for n, t in ((1, 45.15), (2, 22.62), (8, 5.748))]
    >>> [(r["n"], round(r["speedup"], 2), round(r["efficiency"], 3)) for r in scaling(rows)]
    [(1.0, 1.0, 1.0), (2.0, 2.0, 0.998), (8.0, 7.85, 0.982)]
    """
    if mode not in ("strong", "weak"):
        raise ValueError(f"mode must be strong or weak, not {mode!r}")
    out: list[dict[str, Any]] = []
    for name, group in series_of(rows, series).items():
        pts = sorted((n, t) for n, t in ((_num(r.get(x)), _num(r.get(time))) for r in group)
                     if n is not None and n > 0 and t is not None and t > 0)
        if not pts:
            continue
        n0, t0 = pts[0]
        for n, t in pts:
            ideal = n / n0
            if mode == "strong":
                speedup = t0 / t
                eff = speedup / ideal
            else:
                eff = t0 / t
                speedup = eff * ideal
            out.append({"series": name, "n": n, "time": t, "speedup": speedup, "ideal": ideal, "efficiency": eff})
    return out
