"""PNG plots of a sweep (matplotlib, Agg backend; no display needed).

* scaling: speedup S(n) beside the ideal line, and parallel efficiency E(n) (:mod:`.analysis`).
* breakdown: each point's step time as a stacked bar of where it goes (compute, exposed
  communication by axis, bubble, optimizer, host, other).
* sensitivity: one output (step time by default) against one varied input, e.g. the line rate of
  a link class.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from clustersim.breakdown import BREAKDOWN_KEYS
from clustersim.files import write_output
from clustersim.sweep.analysis import scaling, series_of
from clustersim.sweep.study import BreakdownPlot, ScalingPlot, SensitivityPlot

# one fixed colour per breakdown part, so bars of different studies read the same way
PART_COLOURS = {"compute": "#4c72b0", "comm_dp": "#dd8452", "comm_tp": "#c44e52", "comm_pp": "#8172b3", "comm_ep": "#64b5cd",
                "comm_cp": "#b5a36a",
                "bubble": "#937860", "optimizer": "#55a868", "host": "#da8bc3", "other": "#8c8c8c"}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110)


def _save(fig, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return write_output(path, buf.getvalue())


def _plain_numbers():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:g}")


def _ok(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("status") == "ok"]


def plot_scaling(rows: list[dict[str, Any]], spec: ScalingPlot, path: Path, title: str) -> Path | None:
    """Speedup and efficiency panels; None when fewer than two points can be compared."""
    pts = scaling(_ok(rows), x=spec.x, time=spec.time, mode=spec.mode, series=spec.series)
    if len(pts) < 2:
        return None
    fig = _figure(10, 4.2)
    ax_s, ax_e = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    names = list(dict.fromkeys(p["series"] for p in pts))
    for name in names:
        ser = [p for p in pts if p["series"] == name]
        ns = [p["n"] for p in ser]
        label = name or ("simulated" if spec.measured else None)
        ax_s.plot(ns, [p["speedup"] for p in ser], "o-", label=label)
        ax_e.plot(ns, [p["efficiency"] for p in ser], "o-", label=label)
        for p in ser:
            ax_e.annotate(f"{p['efficiency']:.3f}", (p["n"], p["efficiency"]), textcoords="offset points",
                          xytext=(0, 6), ha="center", fontsize=7)
    all_n = sorted({p["n"] for p in pts})
    n0 = all_n[0]
    ax_s.plot(all_n, [n / n0 for n in all_n], "--", color="grey", label="ideal")
    if spec.measured:
        meas = scaling([{"n": n, "t": t} for n, t in spec.measured.items()], x="n", time="t", mode=spec.mode)
        ax_s.plot([p["n"] for p in meas], [p["speedup"] for p in meas], "x", color="black", ms=8,
                  label=spec.measured_label)
        ax_e.plot([p["n"] for p in meas], [p["efficiency"] for p in meas], "x", color="black", ms=8,
                  label=spec.measured_label)
        for p in meas:
            ax_e.annotate(f"{p['efficiency']:.3f}", (p["n"], p["efficiency"]), textcoords="offset points",
                          xytext=(0, -12), ha="center", fontsize=7)
        ax_e.legend(fontsize=8, loc="lower left")
        pts = pts + meas
    log = all_n[-1] / all_n[0] >= 8
    for ax in (ax_s, ax_e):
        if log:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(_plain_numbers())
        ax.set_xlabel(spec.x)
        ax.grid(True, alpha=0.3)
    if log:
        ax_s.set_yscale("log", base=2)
        ax_s.yaxis.set_major_formatter(_plain_numbers())
    ax_s.set_ylabel(f"speedup S(n) = T(n0)/T(n)" if spec.mode == "strong" else "scaled speedup E(n)·n/n0")
    ax_e.set_ylabel("efficiency E(n)")
    effs = [p["efficiency"] for p in pts]
    if min(effs) < 0.6:
        ax_e.set_ylim(0, max(1.05, max(effs) * 1.05))
    else:  # near-ideal scaling gets a zoomed axis, so a 2% loss is visible
        lo, hi = min(effs), max(effs + [1.0])
        pad = 0.15 * (hi - lo) + 0.005
        ax_e.set_ylim(lo - pad, hi + pad)
    ax_s.legend(fontsize=8)
    if len(names) > 1 and not spec.measured:
        ax_e.legend(fontsize=8)
    fig.suptitle(f"{title}: {spec.mode} scaling")
    return _save(fig, path)


def _label(row: dict[str, Any], label: str | None, varied: list[str]) -> str:
    if label is not None:
        return str(row.get(label))
    parts = [f"{k.rsplit('.', 1)[-1]}={row.get(k)}" for k in varied if row.get(k) is not None]
    return "\n".join(parts) or f"point {row.get('point')}"


def plot_breakdown(rows: list[dict[str, Any]], spec: BreakdownPlot, path: Path, title: str,
                   varied: list[str]) -> Path | None:
    """Stacked bars of the step-time breakdown, one per finished point; None without one."""
    ok = _ok(rows)
    if not ok:
        return None
    fig = _figure(max(6.0, 0.9 * len(ok) + 2.5), 4.8)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(ok)))
    bottom = [0.0] * len(ok)
    for k in BREAKDOWN_KEYS:
        vals = [float(r.get(f"breakdown_{k}_s") or 0.0) for r in ok]
        if not any(v > 0 for v in vals):
            continue
        ax.bar(xs, vals, bottom=bottom, color=PART_COLOURS[k], label=k, width=0.7)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(xs)
    ax.set_xticklabels([_label(r, spec.label, varied) for r in ok], fontsize=7)
    ax.set_ylabel("time per step (s), per rank")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(f"{title}: where the step goes")
    return _save(fig, path)


def plot_sensitivity(rows: list[dict[str, Any]], spec: SensitivityPlot, path: Path, title: str) -> Path | None:
    """``y`` against ``x`` per series; None when no finished point has numeric x and y."""
    drawn, top = 0, 0.0
    fig = _figure(6.4, 4.4)
    ax = fig.add_subplot(1, 1, 1)
    for name, group in series_of(_ok(rows), spec.series).items():
        pts = []
        for r in group:
            x, y = r.get(spec.x), r.get(spec.y)
            if isinstance(x, (int, float)) and not isinstance(x, bool) and isinstance(y, (int, float)):
                pts.append((float(x), float(y)))
        if not pts:
            continue
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name or None)
        drawn += len(pts)
        top = max(top, max(p[1] for p in pts))
    if not drawn:
        return None
    if spec.log_x:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(_plain_numbers())
    ax.set_xlabel(spec.x)
    ax.set_ylabel(spec.y)
    ax.set_ylim(0, top * 1.08 if top > 0 else None)
    ax.grid(True, alpha=0.3)
    if spec.series:
        ax.legend(fontsize=8, title=spec.series)
    ax.set_title(f"{title}: {spec.y} vs {spec.x.rsplit('.', 1)[-1]}")
    return _save(fig, path)


def write_plots(rows: list[dict[str, Any]], plots: list, folder: Path, title: str, varied: list[str]) -> list[Path]:
    """Write every plot of a study into ``folder``; returns the files written (a plot with no data is skipped)."""
    out: list[Path] = []
    used: dict[str, int] = {}
    for spec in plots:
        name = spec.file or f"{spec.kind}.png"
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:  # two plots of one kind without file names: scaling.png, scaling-2.png
            name = f"{name.removesuffix('.png')}-{used[name]}.png"
        path = folder / name
        if isinstance(spec, ScalingPlot):
            p = plot_scaling(rows, spec, path, title)
        elif isinstance(spec, BreakdownPlot):
            p = plot_breakdown(rows, spec, path, title, varied)
        else:
            p = plot_sensitivity(rows, spec, path, title)
        if p is not None:
            out.append(p)
    return out
