"""The pages of ``clustersim report``: one self-contained HTML file for a run, a plan or a sweep.

Each page is laid out with the step report's pieces (:func:`clustersim.report.html.page`, its
tables, key metrics and style sheet) and draws its plots as inline SVG
(:mod:`clustersim.report.charts`); a sweep's own PNG plots are embedded as ``data:`` URIs. The
pages render the documents the other commands wrote (:mod:`clustersim.report.load`): they run
nothing, so they import no simulator or planner.

* run: :func:`run_page` (the step report of ``clustersim run --html``, from its ``--json``
  document, with a timeline when trace events are given);
* plan: :func:`plan_page` (search funnel, best plans, their step-time breakdown, the
  constraints that removed the other mixes, with how many and an example each);
* sweep: :func:`sweep_page` (scaling, breakdown and sensitivity plots, the sweep's PNGs and the
  per-point table).
"""

from __future__ import annotations

import base64
from typing import Any

from clustersim.breakdown import BREAKDOWN_KEYS
from clustersim.report.charts import SERIES_COLORS, SERIES_CSS, bars_svg, lines_svg, stacked_bars_svg
from clustersim.report.html import html_table, header_table, metric_html, page, render_html
from clustersim.report.kinds import BREAKDOWN_KIND
from clustersim.report.svg import escape_html
from clustersim.units import format_bytes, format_time

#: stacked bars drawn per page at most (22 px each: 200 bars are a 4,400 px chart); the table lists every point
MAX_BAR_ROWS = 200
#: breakdown parts in the order the simulator reports them
PARTS = BREAKDOWN_KEYS

PAGE_CSS = SERIES_CSS + ".plots{display:flex;flex-wrap:wrap;gap:16px}.plots figure{margin:0}" \
    "figcaption{font-size:12px;color:#555;max-width:560px}img.png{max-width:100%;border:1px solid #eee}" \
    "td.err{color:#c62828}"


def _legend(parts) -> str:
    return '<div class="legend">' + "".join(
        f'<span><span class="sw k-{BREAKDOWN_KIND.get(p, "other")}"></span>{escape_html(p)}</span>' for p in parts) + "</div>"


def _series_legend(names: list[str], ideal: bool) -> str:
    items = [f'<span><span class="sw s{i % len(SERIES_COLORS)}"></span>{escape_html(n)}</span>' for i, n in enumerate(names)]
    if ideal:
        items.append('<span><span class="sw" style="background:#fff;border-style:dashed"></span>ideal</span>')
    return '<div class="legend">' + "".join(items) + "</div>"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    return float(v) if isinstance(v, (int, float)) else None


# ------------------------------------------------------------------------------------------- run
def run_page(d: dict, events: list[dict] | None = None, *, source: str = "", version: str = "") -> str:
    """The step report of a ``clustersim run --json`` document (timeline only with ``events``).

    >>> d = {"scenario": "s", "fidelity": "analytical", "n_gpus": 2, "step_time_s": 0.5, "ops": 3,
    ...      "breakdown": {"compute": 0.4, "comm_dp": 0.1}, "links": [], "memory": None}
    >>> text = run_page(d, source="run.json")
    >>> 'id="breakdown-bar"' in text, "No trace events given" in text
    (True, True)
    """
    rows = [("results file", source)] if source else []
    rows.append(("GPUs", f"{d.get('n_gpus')}"))
    if d.get("reduced") is not None:
        rows.append(("symmetry reduction", "one data-parallel replica simulated, its collectives on full groups"
                     if d["reduced"] else "off (--full: every replica simulated)"))
    if d.get("clock_slowdown") is not None and d.get("compute_duty") is not None:
        rows.append(("sustained clock", f"x{d['clock_slowdown']:.3f} at compute duty {100 * d['compute_duty']:.0f} %"))
    if d.get("step_time_band_s"):
        lo, hi = d["step_time_band_s"]
        rows.append(("step time at the profile's 95% bounds", f"{format_time(lo)} .. {format_time(hi)}"))
    if d.get("faults"):
        f = d["faults"]
        rows.append(("faults", f"slowdown x{f['slowdown']:.3f} against {format_time(f['healthy_step_time_s'])} healthy; "
                     + ", ".join(c.get("kind", "") for c in f.get("causes", []))))
    if d.get("wall_s") is not None:
        rows.append(("simulation wall time", format_time(float(d["wall_s"]))))
    return render_html(d, events or [], {"rows": rows, "version": version})


# ------------------------------------------------------------------------------------------ plan
def _mix(p: dict) -> str:
    return f"{p['tp']}/{p['pp']}/{p['dp']}/{p['virtual_stages']}"


def _plan_label(i: int, p: dict) -> str:
    return f"#{i} tp{p['tp']} pp{p['pp']} dp{p['dp']} mb{p['micro_batch']}"


def _plan_band(i: int, p: dict) -> str:
    """A plan's band cell: +-half-width, and ~#1 where the band overlaps the best plan's."""
    h = (p.get("evidence") or {}).get("half_width")
    if h is None:
        return ""
    return escape_html(f"+-{100 * h:.1f}%" + (" ~#1" if i > 1 and not p.get("distinguishable_from_best", True) else ""))


def _plans_section(plans: list[dict]) -> list[str]:
    """The best plans: their table and their step-time breakdown as stacked bars."""
    parts = ["<h2>Best plans</h2>"]
    if not plans:
        parts.append('<p class="note" id="plans">No feasible plan: every mix broke a rule (see below).</p>')
    else:
        rows = []
        for i, p in enumerate(plans, 1):
            flow = p.get("fidelity") == "flow"
            fits = bool(p.get("fits"))
            rows.append([str(i), escape_html(_mix(p)), str(p.get("ep", 1)), str(p.get("cp", 1)),
                         "yes" if p.get("sequence_parallel") else "no", str(p.get("zero")), escape_html(p.get("schedule")),
                         str(p.get("micro_batch")), escape_html(p.get("recompute")),
                         escape_html(format_time(p["step_time_s"]) + (" *" if flow else "")),
                         escape_html(format_time(p["analytical_step_time_s"])) if p.get("analytical_step_time_s") else "",
                         escape_html(f"{100 * p['mfu']:.1f} %") if p.get("mfu") is not None else "",
                         escape_html(f"{p['tokens_per_s']:,.0f}") if p.get("tokens_per_s") is not None else "",
                         escape_html(format_bytes(float(p.get("peak_bytes_per_gpu") or 0))),
                         f'<span class="{"fits-yes" if fits else "fits-no"}">{"yes" if fits else "NO"}</span>',
                         _plan_band(i, p), escape_html((p.get("evidence") or {}).get("summary", "").removeprefix("evidence: "))])
        parts.append('<div class="scroll">' + html_table(
            "plans", [("#", True), ("tp/pp/dp/v", False), ("ep", True), ("cp", True), ("seq. par.", False),
                      ("ZeRO", True), ("schedule", False), ("micro-batch", True), ("recompute", False),
                      ("step", True), ("analytical", True), ("MFU", True), ("tokens/s", True),
                      ("peak per GPU", True), ("fits", False), ("band", False), ("evidence", False)], rows) + "</div>")
        parts.append('<p class="note">v: virtual pipeline stages; *: step time at flow fidelity (the others '
                     "analytical, which ranked every feasible mix); band: the evidence band (each input's held-out "
                     "error weighted by its share of the step); ~#1: its band overlaps the best plan's, not "
                     "distinguishable from it.</p>")
        swap = next(((i, p["could_swap_with_best"]) for i, p in enumerate(plans, 1) if p.get("could_swap_with_best")), None)
        top = ((plans[0].get("evidence") or {}).get("sensitivity") or [None])[0]
        if top:
            parts.append(f'<p class="note" id="sensitivity">The input that moves the best plan most: '
                         f"{escape_html(top['entry'])} ({100 * top['share']:.0f}% of its step, held-out error "
                         f"{100 * top['error']:.1f}%)."
                         + (f" Plan #{swap[0]} could beat #1 if {escape_html(swap[1])} were off by its held-out error."
                            if swap else " No single input, off by its held-out error, would change the ranking.")
                         + "</p>")
        with_bd = [(i, p) for i, p in enumerate(plans, 1) if p.get("breakdown")]
        if with_bd:
            used = [k for k in PARTS if any((p["breakdown"].get(k) or 0) > 0 for _, p in with_bd)]
            parts.append("<h2>Where the best plans spend their step</h2>")
            parts.append('<p class="note">Per rank, averaged (the breakdown of the step report); hover a segment '
                         "for its time.</p>")
            parts.append(_legend(used))
            parts.append('<div class="scroll">' + stacked_bars_svg(
                "plan-breakdown", [(_plan_label(i, p), {k: float(p["breakdown"].get(k) or 0) for k in used},
                                    f"plan {i} ({_mix(p)})") for i, p in with_bd], aria="step breakdown per plan")
                + "</div>")
    return parts


def _dropped_section(d: dict, cons: list[dict], removed: int) -> list[str]:
    """Why the other mixes fell out: per constraint its count (bar and table), rule and example."""
    parts = ["<h2>Why the other mixes fell out</h2>",
             f'<p class="note" id="dropped-note">{removed:,} of {d["evaluated"]:,} mixes broke a rule '
             f"(each counted once, against the first rule it breaks, in this order); "
             f"{int(d.get('pruned_by_bound') or 0):,} feasible mixes were not simulated because their "
             "step-time lower bound was already slower than the plans kept.</p>"]
    hit = [c for c in cons if int(c.get("removed") or 0) > 0]
    if hit:
        parts.append('<div class="scroll">' + bars_svg(
            "constraints-bar", [(c["constraint"], float(c["removed"]), f"{c['constraint']}: {c['removed']:,} mixes; "
                                f"{c.get('description', '')}") for c in hit], cls="drop",
            aria="mixes removed per constraint") + "</div>")
    rows = []
    for c in cons:
        ex = f"{c['example']}: {c['reason']}" if c.get("example") else ""
        rows.append([escape_html(c["constraint"]), escape_html(c.get("description", "")),
                     escape_html(f"{int(c.get('removed') or 0):,}"), escape_html(ex)])
    parts.append(html_table("constraints", [("constraint", False), ("rule", False), ("removed", True),
                                            ("example and reason", False)], rows))
    if d.get("why"):
        w = d["why"]
        verdict = f"dropped by {w['constraint']}: {w['reason']}" if w.get("dropped") else "feasible"
        parts.append(f'<p id="why"><b>{escape_html(w.get("label", ""))}</b>: {escape_html(verdict)}</p>')
    return parts


def plan_page(d: dict, *, source: str = "", version: str = "") -> str:
    """The report of a ``clustersim plan --json`` document: the funnel from every mix to the
    best, the best plans with their breakdown, and which constraint removed how many mixes.

    >>> d = {"scenario": "s", "n_gpus": 2, "evaluated": 4, "feasible": 1, "simulated": 1,
    ...      "pruned_by_bound": 0, "flow_reranked": 0, "wall_s": 0.1,
    ...      "constraints": [{"constraint": "memory", "description": "HBM", "removed": 3,
    ...                       "example": "tp1 pp1 dp2", "reason": "needs 90 GB of 80"}], "plans": []}
    >>> text = plan_page(d)
    >>> 'id="constraints"' in text and "needs 90 GB of 80" in text and "No feasible plan" in text
    True
    """
    plans = d.get("plans") or []
    cons = d.get("constraints") or []
    removed = sum(int(c.get("removed") or 0) for c in cons)
    title = f"clustersim plan report: {d.get('scenario', '')} on {d.get('n_gpus')} GPUs"
    head = [("results file", source)] if source else []
    head += [("scenario", d.get("scenario", "")), ("GPUs", str(d.get("n_gpus"))),
             ("search wall time", f"{float(d.get('wall_s') or 0):.2f} s")]
    if plans and plans[0].get("placement"):
        head.append(("placement", plans[0]["placement"]))
    parts = [header_table(head)]

    metrics = [metric_html("metric-evaluated", "mixes evaluated", f"{d['evaluated']:,}", d["evaluated"]),
               metric_html("metric-feasible", "feasible", f"{d['feasible']:,}", d["feasible"])]
    if plans:
        b = plans[0]
        metrics.append(metric_html("metric-step-time", f"best step time ({b.get('fidelity', '')})",
                                   format_time(b["step_time_s"]), b["step_time_s"]))
        if b.get("mfu") is not None:
            metrics.append(metric_html("metric-mfu", "best MFU", f"{100 * b['mfu']:.1f} %", b["mfu"]))
        if b.get("tokens_per_s") is not None:
            metrics.append(metric_html("metric-tokens", "best tokens/s", f"{b['tokens_per_s']:,.0f}", b["tokens_per_s"]))
        metrics.append(metric_html("metric-best-mix", "best tp/pp/dp/virtual", _mix(b)))
    parts.append("<h2>Key metrics</h2>" + '<div class="metrics" id="metrics">' + "".join(metrics) + "</div>")

    # the funnel: every mix is accounted for once
    funnel = [("enumerated", d["evaluated"], "mixes of the search space"),
              ("removed by a constraint", removed, "a mix counts against the first rule it breaks"),
              ("feasible", d["feasible"], "pass every rule and fit memory"),
              ("skipped by the bound", d.get("pruned_by_bound", 0),
               "their step-time lower bound could not beat the plans kept"),
              ("simulated (analytical)", d.get("simulated", 0), "ranked by predicted step time"),
              ("re-ranked at flow", d.get("flow_reranked", 0), "the best, re-simulated discrete-event")]
    parts.append("<h2>From every mix to the best</h2>")
    parts.append('<div class="scroll">' + bars_svg("funnel", [(k, float(v), f"{k}: {v:,} ({why})") for k, v, why in funnel],
                                                  aria="search funnel") + "</div>")

    parts += _plans_section(plans)
    parts += _dropped_section(d, cons, removed)
    return page(title, parts, version=version, css=PAGE_CSS)


# ----------------------------------------------------------------------------------------- sweep
def varied_columns(columns: list[str]) -> list[str]:
    """The study's varied ``--set`` paths: the columns between ``id`` and ``run_args``.

    >>> varied_columns(["point", "id", "cluster.gpus", "run_args", "scenario"])
    ['cluster.gpus']
    """
    if "id" in columns and "run_args" in columns:
        return columns[columns.index("id") + 1:columns.index("run_args")]
    return []


def _point_label(r: dict, varied: list[str]) -> str:
    parts = [f"{k.rsplit('.', 1)[-1]}={r.get(k)}" for k in varied if r.get(k) is not None]
    return f"{r.get('point')}: " + (", ".join(parts) if parts else "")


def scaling_mode(rows: list[dict]) -> tuple[str, str]:
    """``(strong | weak, why)`` from the rows: weak when the global batch grows with the GPUs.

    >>> scaling_mode([{"n_gpus": 8, "global_batch": 16}, {"n_gpus": 16, "global_batch": 32}])[0]
    'weak'
    >>> scaling_mode([{"n_gpus": 1}, {"n_gpus": 8}])[0]
    'strong'
    """
    gb = [(_num(r.get("n_gpus")), _num(r.get("global_batch"))) for r in rows]
    if gb and all(n and b for n, b in gb) and len({b for _, b in gb}) > 1 and len({b / n for n, b in gb}) == 1:
        return "weak", "the global batch grows with the GPUs (work per GPU fixed)"
    return "strong", "the total work is the same at every point"


def _series_keys(ok: list[dict], varied: list[str]) -> list[str]:
    """Varied columns that still differ between points of one GPU count: they split the series."""
    out = []
    for c in varied:
        by_n: dict = {}
        for r in ok:
            by_n.setdefault(r.get("n_gpus"), set()).add(repr(r.get(c)))
        if any(len(v) > 1 for v in by_n.values()):
            out.append(c)
    return out


def _scaling_section(ok: list[dict], varied: list[str]) -> list[str]:
    from clustersim.sweep.analysis import scaling

    if len({r.get("n_gpus") for r in ok}) < 2:
        return []
    keys = _series_keys(ok, varied)
    for r in ok:
        r["_series"] = ", ".join(f"{k.rsplit('.', 1)[-1]}={r.get(k)}" for k in keys) or "simulated"
    mode, why = scaling_mode(ok)
    pts = scaling(ok, x="n_gpus", time="step_time_s", mode=mode, series="_series")
    for r in ok:
        del r["_series"]
    if len(pts) < 2:
        return []
    names = list(dict.fromkeys(p["series"] for p in pts))
    series_s = [(n, [(p["n"], p["speedup"]) for p in pts if p["series"] == n]) for n in names]
    series_e = [(n, [(p["n"], p["efficiency"]) for p in pts if p["series"] == n]) for n in names]
    ns = sorted({p["n"] for p in pts})
    log = ns[-1] / ns[0] >= 8
    effs = [p["efficiency"] for p in pts]
    lo, hi = min(min(effs), 1.0), max(max(effs), 1.0)
    pad = 0.15 * (hi - lo) + 0.005  # near-ideal scaling gets a zoomed axis, so a 2% loss is visible
    y_min, y_max = (0.0, hi * 1.05) if lo < 0.6 else (lo - pad, hi + pad)
    out = ["<h2>Scaling</h2>",
           f'<p class="note" id="scaling-note">{escape_html(mode)} scaling ({escape_html(why)}): speedup '
           "S(n) = T(n0)/T(n) and efficiency E(n) = S(n) n0/n against the fewest GPUs n0 of each series"
           f"{' (weak: E(n) = T(n0)/T(n))' if mode == 'weak' else ''}; hover a marker for its value.</p>",
           _series_legend(names, ideal=True),
           '<div class="plots">',
           "<figure>" + lines_svg("scaling-speedup", series_s, x_label="GPUs", y_label="speedup S(n)", log2_x=log,
                                  log2_y=log and mode == "strong", ideal=[(n, n / ns[0]) for n in ns],
                                  aria="speedup against GPUs") + "<figcaption>speedup</figcaption></figure>",
           "<figure>" + lines_svg("scaling-efficiency", series_e, x_label="GPUs", y_label="efficiency E(n)",
                                  log2_x=log, ideal=[(ns[0], 1.0), (ns[-1], 1.0)], y_min=y_min, y_max=y_max,
                                  aria="parallel efficiency against GPUs") + "<figcaption>parallel efficiency"
           "</figcaption></figure>", "</div>"]
    rows = [[escape_html(p["series"]), escape_html(f"{p['n']:g}"), escape_html(format_time(p["time"])),
             escape_html(f"{p['speedup']:.3f}"), escape_html(f"{p['efficiency']:.3f}")] for p in pts]
    out.append(html_table("scaling", [("series", False), ("GPUs", True), ("step time", True), ("speedup", True),
                                      ("efficiency", True)], rows))
    return out


def _sensitivity_section(ok: list[dict], varied: list[str]) -> list[str]:
    """Step time against each numeric varied column that is not just the GPU count."""
    out = []
    for c in varied:
        vals = [(_num(r.get(c)), _num(r.get("step_time_s"))) for r in ok]
        if any(x is None or y is None for x, y in vals) or len({x for x, _ in vals}) < 2:
            continue
        if len({(r.get(c), r.get("n_gpus")) for r in ok}) == len({r.get(c) for r in ok}) and \
                len({r.get("n_gpus") for r in ok}) > 1:
            continue  # the column decides the GPU count: the scaling plot shows it
        others = [k for k in varied if k != c]
        groups: dict[str, list] = {}
        for r in ok:
            key = ", ".join(f"{k.rsplit('.', 1)[-1]}={r.get(k)}" for k in others) or "step time"
            groups.setdefault(key, []).append((float(r[c]), float(r["step_time_s"])))
        xs = [x for x, _ in vals]
        log = min(xs) > 0 and max(xs) / min(xs) >= 8
        cid = "sensitivity-" + "".join(ch if ch.isalnum() else "-" for ch in c)
        out += [f"<h2>Step time against {escape_html(c)}</h2>", _series_legend(list(groups), ideal=False),
                '<div class="scroll">' + lines_svg(cid, list(groups.items()), x_label=c, y_label="step time (s)",
                                                   log2_x=log, y_min=0.0, width=640, aria=f"step time against {c}")
                + "</div>"]
    return out


def _cell(r: dict, c: str) -> str:
    v = r.get(c)
    if v is None:
        return ""
    if c == "step_time_s":
        return escape_html(format_time(float(v)))
    if c in ("mfu", "band_half_width"):
        return escape_html(f"{100 * float(v):.1f} %")
    if c in ("tokens_per_s", "samples_per_s"):
        return escape_html(f"{float(v):,.0f}")
    if c.endswith("_bytes"):
        return escape_html(format_bytes(float(v)))
    if c == "fits":
        return f'<span class="{"fits-yes" if v else "fits-no"}">{"yes" if v else "NO"}</span>'
    if isinstance(v, float):
        return escape_html(f"{v:.6g}")
    return escape_html(v)


def sweep_page(data: dict, images: list[tuple[str, bytes]] | None = None, *, source: str = "",
               version: str = "") -> str:
    """The report of a sweep: scaling, breakdown and sensitivity plots, the sweep's own PNG
    plots (embedded), and one table row per point.

    >>> rows = [{"point": i, "id": str(i), "cluster.gpus": n, "run_args": "", "n_gpus": n,
    ...          "step_time_s": 8.0 / n, "breakdown_compute_s": 8.0 / n, "status": "ok"} for i, n in enumerate((1, 8))]
    >>> text = sweep_page({"study": "pi", "columns": list(rows[0]), "rows": rows})
    >>> 'id="scaling-speedup"' in text and 'id="points"' in text
    True
    """
    columns = list(data.get("columns") or [])
    rows = list(data.get("rows") or [])
    varied = varied_columns(columns)
    ok = [dict(r) for r in rows if r.get("status") == "ok" and _num(r.get("step_time_s"))]
    failed = [r for r in rows if r.get("status") != "ok"]
    name = data.get("study") or (rows[0].get("scenario") if rows else "") or source
    title = f"clustersim sweep report: {name}"
    head = [("results", source)] if source else []
    scen = sorted({str(r.get("scenario")) for r in rows if r.get("scenario")})
    head += [("scenario", ", ".join(scen)), ("points", f"{len(rows)} ({len(ok)} simulated, {len(failed)} failed)"),
             ("varied", ", ".join(varied) or "-")]
    if any(r.get("planned") for r in rows):
        head.append(("planned", "each point is the best mix the planner found"))
    parts = [header_table(head)]
    metrics = [metric_html("metric-points", "points", str(len(rows)), len(rows))]
    if ok:
        best = min(ok, key=lambda r: r["step_time_s"])
        metrics.append(metric_html("metric-best-step", f"fastest step (point {best.get('point')})",
                                   format_time(best["step_time_s"]), best["step_time_s"]))
        gpus = sorted({int(r["n_gpus"]) for r in ok if _num(r.get("n_gpus"))})
        if gpus:
            metrics.append(metric_html("metric-gpus", "GPUs", f"{gpus[0]:,}" + (f" .. {gpus[-1]:,}" if len(gpus) > 1 else "")))
    metrics.append(metric_html("metric-failed", "failed points", str(len(failed)), len(failed)))
    parts.append("<h2>Key metrics</h2>" + '<div class="metrics" id="metrics">' + "".join(metrics) + "</div>")

    if ok:
        parts += _scaling_section(ok, varied)
        used = [k for k in PARTS if any((_num(r.get(f"breakdown_{k}_s")) or 0) > 0 for r in ok)]
        if used:
            drawn = ok[:MAX_BAR_ROWS]
            more = f" The first {MAX_BAR_ROWS:,} of {len(ok):,} points are drawn." if len(ok) > MAX_BAR_ROWS else ""
            parts.append("<h2>Where the step goes, per point</h2>")
            parts.append(f'<p class="note">Per rank, averaged; hover a segment for its time.{escape_html(more)}</p>')
            parts.append(_legend(used))
            parts.append('<div class="scroll">' + stacked_bars_svg(
                "sweep-breakdown", [(_point_label(r, varied), {k: _num(r.get(f"breakdown_{k}_s")) or 0.0 for k in used},
                                     f"point {r.get('point')}") for r in drawn], aria="step breakdown per point")
                + "</div>")
        parts += _sensitivity_section(ok, varied)
    else:
        parts.append('<p class="note" id="no-points">No point could be simulated: nothing to plot.</p>')

    if images:
        parts.append("<h2>Plots written by the sweep</h2>")
        parts.append('<p class="note">The PNG files of the sweep\'s folder, embedded (they carry the study\'s '
                     "measured overlays).</p>")
        parts.append('<div class="plots" id="sweep-pngs">')
        for fname, blob in images:
            uri = "data:image/png;base64," + base64.b64encode(blob).decode("ascii")
            parts.append(f'<figure><img class="png" alt="{escape_html(fname)}" src="{uri}">'
                         f"<figcaption>{escape_html(fname)}</figcaption></figure>")
        parts.append("</div>")

    show = ["point", *varied]
    for c in ("n_gpus", "dp", "tp", "pp", "virtual_stages", "zero", "schedule", "micro_batch", "step_time_s",
              "band_half_width", "tokens_per_s", "samples_per_s", "mfu", "peak_memory_bytes", "fits", "evidence", "status"):
        if c in columns and c not in show and any(r.get(c) is not None for r in rows):
            show.append(c)
    labels = {"band_half_width": "band +-", "n_gpus": "GPUs", "virtual_stages": "virtual", "micro_batch": "micro-batch", "step_time_s": "step",
              "tokens_per_s": "tokens/s", "samples_per_s": "samples/s", "mfu": "MFU", "peak_memory_bytes": "peak per GPU"}
    numeric = {c for c in show if c not in ("schedule", "status", "fits", "evidence")
               and all(r.get(c) is None or _num(r.get(c)) is not None for r in rows)}
    body = [[_cell(r, c) for c in show] for r in rows]
    parts.append("<h2>Points</h2>")
    parts.append('<div class="scroll">' + html_table("points", [(labels.get(c, c), c in numeric) for c in show], body)
                 + "</div>")
    if failed:
        parts.append(html_table("failed", [("point", True), ("error", False)],
                                [[escape_html(r.get("point")), f'<span class="err">{escape_html(r.get("error") or "")}</span>']
                                 for r in failed]))
    parts.append('<p class="note">Every input and output column of each point is in the sweep\'s results.csv and '
                 "results.parquet; a row's run_args reproduce it with clustersim run.</p>")
    return page(title, parts, version=version, css=PAGE_CSS)


def render_results(res, events: list[dict] | None = None, *, version: str = "") -> str:
    """The page of a loaded :class:`~clustersim.report.load.Results`, by its kind."""
    source = res.source.name or str(res.source)
    if res.kind == "run":
        return run_page(res.data, events, source=source, version=version)
    if res.kind == "plan":
        return plan_page(res.data, source=source, version=version)
    return sweep_page(res.data, res.images, source=source, version=version)

