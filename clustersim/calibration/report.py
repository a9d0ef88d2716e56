"""Check a fitted profile against measurements it was not fitted on.

For every collective context in the measurements (op, algorithm, protocol,
ranks, scope, mode) the held-out sizes (:func:`clustersim.calibration.fit.split_holdout`)
are predicted with the profile's most specific matching entry and compared
with the median measured time at that size.

Examples
--------
>>> from clustersim.config.profile import Profile
>>> p = Profile(name="x", collectives=[{"op": "all_reduce", "ranks": 2, "segments": [
...     {"alpha_us": 10, "algbw_GBps": 100}]}])
>>> rows = [{"kind": "collective", "op": "all_reduce", "ranks": 2, "mode": "nccl",
...          "size_bytes": s, "time_us": 10 + s / 1e5} for s in (1e3, 1e6, 1e7)]
>>> rep = evaluate(rows, p, holdout="none")
>>> [round(r["error_pct"], 6) for r in rep.rows]
[0.0, 0.0, 0.0]
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from clustersim.calibration.figure import png_figure
from clustersim.calibration.fit import group_collectives, split_holdout
from clustersim.calibration.fit.defaults import whole_call
from clustersim.collectives.uncertainty import find_entry, predict
from clustersim.config.profile import Profile
from clustersim.errors import ClusterSimError
from clustersim.units import MiB, format_bytes

#: Sizes at or above this count as "large" in the summary (the Bar's 1 MiB split).
LARGE = MiB


def _label(key: tuple) -> str:
    op, alg, proto, ranks, scope, mode, nvls = key
    parts = [op, f"{ranks}r" if ranks else "any-r"]
    if scope:
        parts.append(scope)
    if mode != "nccl":
        parts.append(mode)
    if alg:
        parts.append(alg)
    if proto:
        parts.append(proto)
    if nvls:
        parts.append("nvls")
    return " ".join(parts)


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in label.replace(" ", "-")).strip("_")


@dataclass
class Report:
    """Predicted against measured, per context and size.

    Attributes
    ----------
    rows:
        One dict per (context, size): ``op, label, ranks, scope, mode, size_bytes,
        measured_us, predicted_us, lo_us, hi_us, error_pct, in_band, held_out``.
    summary:
        One dict per context: ``label, op, ranks, points, mean_abs_err_large_pct``
        (sizes >= 1 MiB), ``mean_abs_err_small_pct``, ``max_abs_err_pct``, ``worst_size_bytes``.
    missing:
        Contexts of the measurements that the profile has no entry for.
    holdout:
        Which sizes were held out (``odd``, ``even``, ``none``).
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    holdout: str = "odd"
    profile: str = ""
    curves: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: further sections (``calibrate report`` puts the kernel classes here): JSON keys and Markdown lines
    extra: dict[str, Any] = field(default_factory=dict)
    extra_md: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``--json`` prints)."""
        return {"profile": self.profile, "holdout": self.holdout, "summary": self.summary,
                "points": self.rows, "missing": self.missing, **self.extra}


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def evaluate(rows: Iterable[dict[str, Any]], profile: Profile, *, holdout: str = "odd") -> Report:
    """Compare ``profile`` with the held-out collective rows.

    Parameters
    ----------
    rows:
        Contract 3 rows (as read by :func:`clustersim.calibration.fit.read_measurements`).
    profile:
        The fitted profile.
    holdout:
        The same split the fit used: ``odd`` compares at the odd-indexed sizes,
        ``none`` at every size (in-sample, no longer a held-out check).
    """
    rep = Report(holdout=holdout, profile=profile.name)
    rows = list(rows)
    # a whole back-to-back call (nccl-tests without CUDA graphs) is the entry plus the kernel gap, as the
    # simulator gives it; the fit took the gap off those rows (clustersim.calibration.fit.defaults)
    metas = {str(m.get("run_id")): m for m in rows if m.get("kind") == "meta" and m.get("run_id") is not None}
    gap_s = profile.compute.kernel_launch_us * 1e-6
    groups = group_collectives(rows)
    if not groups:
        raise ClusterSimError("no collective measurements to compare with")
    for key, grp in groups.items():
        op, alg, proto, ranks, scope, mode, _nvls = key
        label = _label(key)
        entry = find_entry(profile, op, ranks=ranks, scope=scope, mode=mode, algorithm=alg, protocol=proto)
        if entry is None:
            rep.missing.append(label)
            continue
        fit_rows, held = split_holdout(grp, holdout)
        test = held if holdout != "none" else fit_rows
        by_size: dict[float, list[float]] = {}
        for r in test:
            by_size.setdefault(float(r["size_bytes"]), []).append(float(r["time_us"]))
        errs_large, errs_small, pts = [], [], []
        for S in sorted(by_size):
            meas = float(statistics.median(by_size[S]))
            t, lo, hi = predict(entry, S)
            if whole_call(grp[0], metas):
                t, lo, hi = t + gap_s, lo + gap_s, hi + gap_s
            pred, lo_us, hi_us = t * 1e6, lo * 1e6, hi * 1e6
            err = (pred - meas) / meas * 100.0
            (errs_large if S >= LARGE else errs_small).append(abs(err))
            row = {"label": label, "op": op, "ranks": ranks, "scope": scope, "mode": mode, "algorithm": alg,
                   "protocol": proto, "size_bytes": int(S) if float(S).is_integer() else S,
                   "measured_us": round(meas, 4), "predicted_us": round(pred, 4),
                   "lo_us": round(lo_us, 4), "hi_us": round(hi_us, 4), "error_pct": round(err, 3),
                   "in_band": bool(lo_us <= meas <= hi_us), "held_out": holdout != "none"}
            rep.rows.append(row)
            pts.append(row)
        if not pts:
            continue
        worst = max(pts, key=lambda r: abs(r["error_pct"]))
        rep.summary.append({
            "label": label, "op": op, "ranks": ranks, "scope": scope, "mode": mode, "points": len(pts),
            "mean_abs_err_large_pct": _round(_mean(errs_large)), "mean_abs_err_small_pct": _round(_mean(errs_small)),
            "max_abs_err_large_pct": _round(max(errs_large) if errs_large else None),
            "max_abs_err_pct": _round(abs(worst["error_pct"])), "worst_size_bytes": worst["size_bytes"],
            "in_band_pct": _round(100.0 * sum(r["in_band"] for r in pts) / len(pts)),
        })
        fit_pts = sorted((float(r["size_bytes"]), float(r["time_us"])) for r in fit_rows)
        rep.curves[label] = {"entry": entry, "fit": fit_pts, "test": [(r["size_bytes"], r["measured_us"]) for r in pts],
                             "gap_s": gap_s if whole_call(grp[0], metas) else 0.0}
    if not rep.rows:
        raise ClusterSimError("the profile has no entry for any measured collective"
                              + (f" (measured: {', '.join(rep.missing)})" if rep.missing else ""))
    return rep


def _round(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def markdown(rep: Report) -> str:
    """Markdown summary: per-context error summary and the per-size table (and :attr:`Report.extra_md`)."""
    lines = [f"# Calibration report: profile `{rep.profile}`", ""]
    if not rep.rows:
        return "\n".join(lines + rep.extra_md) + "\n"
    lines += [f"Held-out sizes: `{rep.holdout}` (error = (predicted - measured) / measured).", "",
             "| context | points | mean abs err >= 1 MiB (%) | max abs err >= 1 MiB (%) | mean abs err < 1 MiB (%) | max abs err (%) | worst size | in 95% band (%) |",
             "|---|---|---|---|---|---|---|---|"]
    for s in rep.summary:
        lines.append(f"| {s['label']} | {s['points']} | {_fmt(s['mean_abs_err_large_pct'])} | "
                     f"{_fmt(s['max_abs_err_large_pct'])} | {_fmt(s['mean_abs_err_small_pct'])} | "
                     f"{_fmt(s['max_abs_err_pct'])} | {format_bytes(s['worst_size_bytes'])} | {_fmt(s['in_band_pct'])} |")
    if rep.missing:
        lines += ["", "No profile entry for: " + ", ".join(rep.missing)]
    lines += ["", "| context | size | measured (us) | predicted (us) | error (%) | 95% band (us) |", "|---|---|---|---|---|---|"]
    for r in rep.rows:
        lines.append(f"| {r['label']} | {format_bytes(r['size_bytes'])} | {r['measured_us']:.2f} | "
                     f"{r['predicted_us']:.2f} | {r['error_pct']:+.2f} | {r['lo_us']:.2f} - {r['hi_us']:.2f} |")
    if rep.extra_md:
        lines += ["", *rep.extra_md]
    return "\n".join(lines) + "\n"


def plot(rep: Report, folder: str | Path) -> list[Path]:
    """One log-log PNG per context: fitted points, held-out points, fitted curve and 95% band."""
    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for label, c in rep.curves.items():
        entry = c["entry"]
        xs = [s for s, _ in c["fit"]] + [s for s, _ in c["test"]]
        lo_x = max(1.0, min(xs) / 1.5)
        hi_x = max(xs) * 1.5
        grid = np.geomspace(lo_x, hi_x, 400)
        band = (np.array([predict(entry, s) for s in grid]) + c.get("gap_s", 0.0)) * 1e6
        path = out_dir / f"{_slug(label)}.png"
        with png_figure(path) as ax:
            ax.fill_between(grid, band[:, 1], band[:, 2], color="tab:blue", alpha=0.2, label="95% band")
            ax.plot(grid, band[:, 0], color="tab:blue", lw=1.5, label="fitted")
            if c["fit"]:
                ax.scatter([s for s, _ in c["fit"]], [t for _, t in c["fit"]], s=14, color="0.45", label="fitted on",
                           zorder=3)
            ax.scatter([s for s, _ in c["test"]], [t for _, t in c["test"]], s=26, color="tab:red", marker="x",
                       label="held out" if rep.holdout != "none" else "measured", zorder=4)
            for seg in entry.segments[1:]:
                ax.axvline(seg.size_min_bytes, color="0.8", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel("time (us)")
            ax.set_title(f"{label} - profile {rep.profile}")
            ax.grid(True, which="both", alpha=0.25)
            ax.legend(loc="upper left", fontsize=8)
        written.append(path)
    return written


def write_outputs(rep: Report, folder: str | Path) -> list[Path]:
    """PNG plots, ``summary.md`` and ``report.json`` into ``folder``, never half-written.

    Everything is written into a hidden temporary folder next to ``folder`` first. A new
    ``folder`` is then that folder renamed (one atomic step); into an existing one the
    finished files are moved one by one (each ``os.replace`` atomic, other files there left
    alone). A command killed while plotting leaves only the hidden ``.<name>.tmp-<pid>`` folder.
    """
    import json
    import os
    import shutil
    import tempfile

    out_dir = Path(folder)
    if out_dir.exists() and not out_dir.is_dir():
        raise ClusterSimError("is not a folder", file=str(folder))
    parent = out_dir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name or 'report'}.tmp-{os.getpid()}-", dir=parent))
    except OSError as exc:
        raise ClusterSimError(f"cannot create folder: {exc.strerror or exc}", file=str(folder)) from None
    try:
        try:
            paths = plot(rep, tmp)
            md = tmp / "summary.md"
            md.write_text(markdown(rep), encoding="utf-8")
            js = tmp / "report.json"
            js.write_text(json.dumps(rep.to_dict(), indent=2) + "\n", encoding="utf-8")
            names = [p.name for p in (*paths, md, js)]
            if not out_dir.exists():
                os.replace(tmp, out_dir)
            else:
                for name in names:
                    os.replace(tmp / name, out_dir / name)
        except OSError as exc:
            raise ClusterSimError(f"cannot write the report: {exc.strerror or exc}", file=str(folder)) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return [out_dir / name for name in names]


def bar_check(rep: Report, *, large_mean: float = 5.0, large_max: float = 12.0, small_mean: float = 15.0) -> list[str]:
    """Contexts that miss the issue's bar, as readable lines (empty list = all pass).

    The bar: mean |error| <= 5% for sizes >= 1 MiB with none worse than 12%,
    and mean |error| <= 15% below 1 MiB.
    """
    fails = []
    for s in rep.summary:
        ml, mx, ms = s["mean_abs_err_large_pct"], s["max_abs_err_large_pct"], s["mean_abs_err_small_pct"]
        if ml is not None and ml > large_mean:
            fails.append(f"{s['label']}: mean |err| >= 1 MiB {ml:.2f}% > {large_mean}%")
        if mx is not None and mx > large_max:
            fails.append(f"{s['label']}: max |err| >= 1 MiB {mx:.2f}% > {large_max}%")
        if ms is not None and ms > small_mean:
            fails.append(f"{s['label']}: mean |err| < 1 MiB {ms:.2f}% > {small_mean}%")
    return fails


