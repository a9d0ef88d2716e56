"""A standalone HTML report of one simulated step (``clustersim run SCENARIO --html step.html``).

One file, nothing fetched: inline CSS and inline SVG, no JavaScript, every text escaped.
Sections: header (scenario, cluster, fidelity, profile), key metrics, a Gantt timeline of a
readable subset of ranks (one row per rank x stream, ops coloured by kind, idle gaps of the
compute stream drawn as bubble/wait, hover titles through SVG ``<title>``), the step breakdown
as a stacked bar, memory per GPU and the busiest links.

The timeline is built from the Chrome/Perfetto trace events (:mod:`clustersim.trace.chrome`),
so a report can be drawn from any saved trace plus the ``--json`` document. Large runs stay
small: ops narrower than a pixel are merged with their neighbours of the same kind until at
most ``max_bars`` bars are drawn. The output is deterministic (same input, same bytes): no
clocks, no wall times, no absolute paths of the machine it ran on.
"""

from __future__ import annotations

import html
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.units import format_bytes, format_time

# colour of each op kind (trace category); "idle" is the compute stream waiting (bubble / exposed comm)
KIND_COLORS = {
    "compute": "#4e79a7",
    "optimizer": "#8c6bb1",
    "host": "#b07aa1",
    "comm_tp": "#f28e2b",
    "comm_dp": "#59a14f",
    "comm_pp": "#e15759",
    "job": "#76b7b2",
    "idle": "#d9d9d9",
    "other": "#bab0ac",
}
KIND_LABELS = {
    "compute": "compute",
    "optimizer": "optimizer",
    "host": "host (CPU issue)",
    "comm_tp": "TP communication",
    "comm_dp": "DP communication",
    "comm_pp": "PP communication",
    "job": "job collective",
    "idle": "idle (bubble / waiting)",
    "other": "other",
}
# breakdown keys (clustersim.simulate.run.BREAKDOWN_KEYS) -> colour kind
BREAKDOWN_KIND = {"compute": "compute", "comm_dp": "comm_dp", "comm_tp": "comm_tp", "comm_pp": "comm_pp",
                  "bubble": "idle", "optimizer": "optimizer", "host": "host", "other": "other"}
STREAM_ORDER = ("compute", "tp", "dp", "dp_ag", "dp_rs", "pp_f", "pp_b")

MAX_RANKS = 16
PALE_NOTE = " Pale bars are aggregates, their opacity is the busy share of the span they cover."
MAX_BARS = 12000
PLOT_W = 1040  # pixels of the timeline's time axis
LABEL_W = 240
ROW_H = 16
BAR_H = 12


def _e(x) -> str:
    """Escape text for HTML element content and attribute values."""
    return html.escape(str(x), quote=True)


def _f(x: float) -> str:
    """SVG coordinate: fixed two decimals (deterministic, compact)."""
    s = f"{x:.2f}"
    return s[:-3] if s.endswith(".00") else s


# ---------------------------------------------------------------------------- rank choice
def select_ranks(ranks: list[int], coords=None, limit: int = MAX_RANKS) -> list[int]:
    """A readable subset of the traced ranks, sorted.

    All of them when at most ``limit``. Otherwise the first rank of each pipeline stage (all
    coordinates but ``pp`` zero; evenly spaced stages when there are more than ``limit``), then
    the first rank of the other TP groups, then the rest, in rank order. Without a layout
    (``coords`` is ``None``), evenly spaced ranks including the first and the last.
    """
    ranks = sorted(set(ranks))
    if len(ranks) <= limit:
        return ranks
    if coords is None:
        return _even(ranks, limit)
    c = {r: coords(r) for r in ranks}
    stage_first = [r for r in ranks if all(v == 0 for ax, v in c[r].items() if ax != "pp")]
    stage_first.sort(key=lambda r: (c[r].get("pp", 0), r))
    if len(stage_first) >= limit:
        return sorted(_even(stage_first, limit))
    chosen = list(stage_first)
    rest = [r for r in ranks if r not in set(chosen)]
    rest.sort(key=lambda r: (any(c[r].get(ax, 0) for ax in ("tp", "cp", "ep")), r))
    chosen += rest[: limit - len(chosen)]
    return sorted(chosen)


def _even(items: list, k: int) -> list:
    n = len(items)
    if n <= k:
        return list(items)
    if k == 1:
        return [items[0]]
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})
    return [items[i] for i in idx]


# ---------------------------------------------------------------------------- trace -> rows
@dataclass
class Bar:
    """One drawn rectangle: [t0, t1) seconds of one kind, with its hover text."""

    t0: float
    t1: float
    kind: str
    title: str
    density: float = 1.0  # busy share of [t0, t1) (aggregates); drawn as the fill opacity


@dataclass
class Row:
    rank: int
    stream: str
    label: str
    ops: list  # (t0, t1, name, cat, args) sorted
    bars: list | None = None


def _op_title(name: str, cat: str, t0: float, t1: float, args: dict, rank_label: str, stream: str) -> str:
    lines = [name, f"{KIND_LABELS.get(cat, cat)} on {rank_label}, stream {stream}",
             f"duration {format_time(t1 - t0)} (from {format_time(t0)} to {format_time(t1)})"]
    if args.get("bytes") is not None:
        lines.append(f"bytes {format_bytes(float(args['bytes']))}")
    group = args.get("group")
    if group is not None:
        ranks = args.get("ranks")
        g = f"group {group}"
        if ranks:
            shown = ", ".join(str(r) for r in ranks[:16]) + (", ..." if len(ranks) > 16 else "")
            g += f" (ranks {shown})"
        if (args.get("groups") or 1) > 1:
            g += f", {args['groups']} groups"
        lines.append(g)
    if args.get("op"):
        lines.append(f"collective {args['op']}")
    if args.get("in"):
        lines.append(f"inside {args['in']}")
    parts = [f"{k[:-3]} {format_time(v * 1e-6)}" for k, v in sorted(args.items())
             if k.endswith("_us") and isinstance(v, (int, float)) and v > 0]
    if len(parts) > 1:
        lines.append("parts: " + ", ".join(parts))
    for k in ("kind", "mb", "chunk", "iteration"):
        if k in args:
            lines.append(f"{k} {args[k]}")
    return "\n".join(lines)


def trace_rows(events: list[dict], ranks: list[int]) -> list[Row]:
    """One row per (rank, stream) of the chosen ranks, in rank then stream order."""
    want = set(ranks)
    pname: dict[int, str] = {}
    tname: dict[tuple[int, int], str] = {}
    ops: dict[tuple[int, int], list] = {}
    for ev in events:
        pid = ev.get("pid")
        if pid not in want:
            continue
        ph = ev.get("ph")
        if ph == "M":
            if ev.get("name") == "process_name":
                pname[pid] = str(ev["args"]["name"])
            elif ev.get("name") == "thread_name":
                tname[(pid, ev.get("tid", 0))] = str(ev["args"]["name"])
        elif ph == "X":
            t0 = float(ev["ts"]) * 1e-6
            t1 = t0 + max(float(ev.get("dur", 0.0)), 0.0) * 1e-6
            ops.setdefault((pid, ev.get("tid", 0)), []).append(
                (t0, t1, str(ev.get("name", "")), str(ev.get("cat", "other")), ev.get("args") or {}))

    def order(key):
        pid, tid = key
        s = tname.get(key, f"tid {tid}")
        return (pid, STREAM_ORDER.index(s) if s in STREAM_ORDER else len(STREAM_ORDER), tid, s)

    rows = []
    for key in sorted(ops, key=order):
        pid, tid = key
        lst = sorted(ops[key], key=lambda o: (o[0], o[1], o[2]))
        rows.append(Row(pid, tname.get(key, f"tid {tid}"), pname.get(pid, f"rank {pid}"), lst))
    return rows


def _row_bars(row: Row, theta: float, by_kind: bool, makespan: float) -> list[Bar]:
    """Bars of a row: ops narrower than ``theta`` seconds merged with close neighbours.

    ``by_kind``: merge only ops of the same kind (else any, the aggregate takes the kind with the
    most busy time). Idle gaps of the compute stream wider than ``theta`` become ``idle`` bars.
    """
    bars: list[Bar] = []
    group: list = []
    group_end = 0.0

    def flush():
        if not group:
            return
        if len(group) == 1:
            t0, t1, name, cat, args = group[0]
            bars.append(Bar(t0, t1, cat, _op_title(name, cat, t0, t1, args, row.label, row.stream)))
        else:
            t0 = group[0][0]
            t1 = max(o[1] for o in group)
            busy: dict[str, float] = {}
            nbytes = 0.0
            names: list[str] = []
            for o in group:
                busy[o[3]] = busy.get(o[3], 0.0) + (o[1] - o[0])
                if o[4].get("bytes") is not None:
                    nbytes += float(o[4]["bytes"])
                if o[2] not in names and len(names) < 4:
                    names.append(o[2])
            kind = max(sorted(busy), key=lambda k: busy[k])  # the kind with the most busy time
            lines = [f"{len(group)} ops aggregated ({', '.join(sorted(busy))}) on {row.label}, stream {row.stream}",
                     f"from {format_time(t0)} to {format_time(t1)}, busy {format_time(sum(busy.values()))}"]
            if len(busy) > 1:
                lines.append("busy by kind: " + ", ".join(f"{k} {format_time(busy[k])}" for k in sorted(busy)))
            if nbytes:
                lines.append(f"bytes {format_bytes(nbytes)}")
            lines.append("e.g. " + "; ".join(names))
            dens = min(sum(busy.values()) / (t1 - t0), 1.0) if t1 > t0 else 1.0
            bars.append(Bar(t0, t1, kind, "\n".join(lines), dens))
        group.clear()

    for o in row.ops:
        tiny = (o[1] - o[0]) < theta
        if not tiny:
            flush()
            bars.append(Bar(o[0], o[1], o[3], _op_title(o[2], o[3], o[0], o[1], o[4], row.label, row.stream)))
            continue
        if group and (o[0] - group_end >= theta or (by_kind and o[3] != group[-1][3])):
            flush()
        group_end = o[1] if not group else max(group_end, o[1])
        group.append(o)
    flush()
    if row.stream == "compute":
        bars = _idle_bars(row, theta, makespan) + bars
    return bars


def _idle_bars(row: Row, theta: float, makespan: float) -> list[Bar]:
    out = []
    t = 0.0
    for o in row.ops:
        if o[0] - t > max(theta, 0.0) and o[0] > t:
            out.append(Bar(t, o[0], "idle", _idle_title(row, t, o[0], o[2])))
        t = max(t, o[1])
    if makespan - t > theta and makespan > t:
        out.append(Bar(t, makespan, "idle", _idle_title(row, t, makespan, None)))
    return out


def _idle_title(row: Row, t0: float, t1: float, before: str | None) -> str:
    what = f"before {before}" if before else "until the end of the run"
    return (f"idle {format_time(t1 - t0)} on {row.label} ({what})\n"
            f"from {format_time(t0)} to {format_time(t1)}\n"
            "the compute stream waits: pipeline bubble or exposed communication")


def layout_bars(rows: list[Row], makespan: float, max_bars: int = MAX_BARS, plot_w: int = PLOT_W) -> dict:
    """Fill ``row.bars`` with at most ``max_bars`` bars in total; returns drawing statistics."""
    px = makespan / plot_w if makespan > 0 else 0.0
    theta = px
    by_kind = True
    n_ops = sum(len(r.ops) for r in rows)
    for _ in range(64):
        for r in rows:
            r.bars = _row_bars(r, theta, by_kind, makespan)
        n = sum(len(r.bars) for r in rows)
        if n <= max_bars or px == 0:
            break
        if by_kind and theta >= 64 * px:
            by_kind = False  # alternating kinds in sub-pixel detail: merge regardless of kind
        else:
            theta *= 2
    return {"ops": n_ops, "bars": sum(len(r.bars) for r in rows), "theta_s": theta, "by_kind": by_kind}


# ---------------------------------------------------------------------------- SVG pieces
def _nice_step(span: float, target: int = 10) -> float:
    if span <= 0:
        return 1.0
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def timeline_svg(rows: list[Row], makespan: float, plot_w: int = PLOT_W) -> str:
    """The Gantt chart: one row per rank x stream, a time axis on top."""
    top = 28
    height = top + ROW_H * len(rows) + 8
    width = LABEL_W + plot_w + 20
    scale = plot_w / makespan if makespan > 0 else 0.0
    out = [f'<svg id="timeline" class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline of the simulated step">']
    # rank bands
    y = top
    i = 0
    band = 0
    while i < len(rows):
        j = i
        while j < len(rows) and rows[j].rank == rows[i].rank:
            j += 1
        h = ROW_H * (j - i)
        cls = "band0" if band % 2 == 0 else "band1"
        out.append(f'<rect class="{cls}" x="0" y="{y}" width="{width}" height="{h}"/>')
        out.append(f'<text class="rank" x="4" y="{y + ROW_H - 3}">{_e(rows[i].label)}</text>')
        for k in range(i, j):
            out.append(f'<text class="stream" x="{LABEL_W - 6}" y="{y + ROW_H * (k - i) + ROW_H - 3}">'
                       f'{_e(rows[k].stream)}</text>')
        y += h
        band += 1
        i = j
    # time axis
    step = _nice_step(makespan)
    t = 0.0
    k = 0
    while makespan > 0 and t <= makespan * 1.0001:
        x = LABEL_W + t * scale
        out.append(f'<line class="grid" x1="{_f(x)}" y1="{top - 4}" x2="{_f(x)}" y2="{height - 8}"/>')
        out.append(f'<text class="tick" x="{_f(x)}" y="{top - 8}">{_e(format_time(t) if t else "0")}</text>')
        k += 1
        t = k * step
    # bars
    for n, r in enumerate(rows):
        y0 = top + n * ROW_H + (ROW_H - BAR_H) / 2
        for b in r.bars or []:
            x = LABEL_W + b.t0 * scale
            w = max((b.t1 - b.t0) * scale, 0.6)
            kind = b.kind if b.kind in KIND_COLORS else "other"
            op = f' fill-opacity="{max(b.density, 0.3):.2f}"' if b.density < 0.95 else ""
            out.append(f'<rect class="k-{kind}" x="{_f(x)}" y="{_f(y0)}" width="{_f(w)}" height="{BAR_H}"{op}>'
                       f'<title>{_e(b.title)}</title></rect>')
    out.append(f'<line class="axis" x1="{LABEL_W}" y1="{top}" x2="{LABEL_W}" y2="{height - 8}"/>')
    out.append("</svg>")
    return "\n".join(out)


def breakdown_svg(d: dict, width: int = LABEL_W + PLOT_W) -> str:
    """The step breakdown as one horizontal stacked bar."""
    step = d.get("step_time_s") or 0.0
    bd = d.get("breakdown") or {}
    total = sum(v for v in bd.values() if v > 0)
    h = 34
    out = [f'<svg id="breakdown-bar" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" role="img" aria-label="step time breakdown">']
    x = 0.0
    for key, v in bd.items():
        if v <= 0 or total <= 0:
            continue
        w = width * v / total
        kind = BREAKDOWN_KIND.get(key, "other")
        share = v / step if step > 0 else 0.0
        out.append(f'<rect class="k-{kind}" x="{_f(x)}" y="2" width="{_f(w)}" height="{h - 4}">'
                   f'<title>{_e(f"{key}: {format_time(v)} ({100 * share:.1f} % of the step)")}</title></rect>')
        if w > 70:
            dark = " dark" if kind in ("idle", "other") else ""
            out.append(f'<text class="seglabel{dark}" x="{_f(x + w / 2)}" y="{h / 2 + 4}">'
                       f'{_e(f"{key} {100 * share:.1f} %")}</text>')
        x += w
    out.append("</svg>")
    return "\n".join(out)


# ---------------------------------------------------------------------------- the page
CSS = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:18px 24px;color:#222;background:#fff;font-size:14px}
h1{font-size:22px;margin:0 0 4px 0}h2{font-size:17px;margin:22px 0 8px 0;border-bottom:1px solid #ddd;padding-bottom:3px}
.desc{color:#555;margin:0 0 10px 0}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}
th{background:#f4f4f4;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.meta td:first-child{color:#666}
.metrics{display:flex;flex-wrap:wrap;gap:10px}
.metric{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:120px;background:#fafafa}
.metric .v{font-size:20px;font-weight:600}.metric .l{font-size:12px;color:#666}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:6px 0;font-size:12px}
.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border:1px solid #999}
.note{color:#666;font-size:12px}
.fits-yes{color:#1a7f37;font-weight:600}.fits-no{color:#c62828;font-weight:600}
.bar{display:inline-block;height:10px;background:#59a14f;vertical-align:middle}
.barbox{display:inline-block;width:160px;background:#eee;margin-right:6px;text-align:left;vertical-align:middle}
svg text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif}
svg .rank{font-size:11px;font-weight:600;fill:#222}svg .stream{font-size:10px;fill:#555;text-anchor:end}
svg .tick{font-size:10px;fill:#555;text-anchor:middle}svg .grid{stroke:#ccc;stroke-width:0.5}
svg .axis{stroke:#888;stroke-width:1}svg .band0{fill:#ffffff}svg .band1{fill:#f3f5f8}
svg .seglabel{font-size:12px;fill:#fff;text-anchor:middle;font-weight:600}svg .seglabel.dark{fill:#333}
svg rect:hover{stroke:#000;stroke-width:1}
.scroll{overflow-x:auto}
"""


def _css() -> str:
    rules = [f"svg .k-{k},.sw.k-{k}{{fill:{c};background:{c}}}" for k, c in KIND_COLORS.items()]
    return CSS + "\n".join(rules) + "\n"


def _metric(mid: str, label: str, value: str, raw=None) -> str:
    data = f' data-value="{_e(repr(float(raw)))}"' if raw is not None else ""
    return (f'<div class="metric" id="{_e(mid)}"{data}><div class="v">{_e(value)}</div>'
            f'<div class="l">{_e(label)}</div></div>')


def _metrics(d: dict) -> str:
    n = d.get("n_gpus") or 1
    out = [_metric("metric-step-time", "step time" if d.get("tokens_per_s") is not None else "time per iteration",
                   format_time(d["step_time_s"]), d["step_time_s"])]
    if d.get("tokens_per_s") is not None:
        out.append(_metric("metric-tokens", "tokens/s", f"{d['tokens_per_s']:,.0f}", d["tokens_per_s"]))
        out.append(_metric("metric-tokens-gpu", "tokens/s/GPU", f"{d['tokens_per_s'] / n:,.1f}", d["tokens_per_s"] / n))
    if d.get("samples_per_s") is not None:
        out.append(_metric("metric-samples", "samples/s", f"{d['samples_per_s']:,.2f}", d["samples_per_s"]))
    if d.get("mfu") is not None:
        out.append(_metric("metric-mfu", "MFU (model FLOPs / bf16 peak)", f"{100 * d['mfu']:.1f} %", d["mfu"]))
    if d.get("tflops_per_gpu") is not None:
        out.append(_metric("metric-tflops", "model TFLOP/s/GPU", f"{d['tflops_per_gpu']:.1f}", d["tflops_per_gpu"]))
    if d.get("total_time_s") is not None:
        out.append(_metric("metric-total", "total time", format_time(d["total_time_s"]), d["total_time_s"]))
    out.append(_metric("metric-gpus", "GPUs", str(d.get("n_gpus")), d.get("n_gpus")))
    if d.get("params") is not None:
        out.append(_metric("metric-params", "parameters", f"{d['params'] / 1e9:.3g} B", d["params"]))
    if d.get("micro_batches") is not None:
        out.append(_metric("metric-mb", "micro-batches", str(d["micro_batches"]), d["micro_batches"]))
    out.append(_metric("metric-ops", "simulated ops", f"{d.get('ops', 0):,}", d.get("ops", 0)))
    return '<div class="metrics" id="metrics">' + "".join(out) + "</div>"


def _table(tid: str, head: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    """``head``: (title, numeric); cells are already-escaped HTML."""
    h = "".join(f'<th class="num">{_e(t)}</th>' if num else f"<th>{_e(t)}</th>" for t, num in head)
    body = []
    for r in rows:
        body.append("<tr>" + "".join(f'<td class="num">{c}</td>' if head[i][1] else f"<td>{c}</td>"
                                      for i, c in enumerate(r)) + "</tr>")
    return f'<table id="{_e(tid)}"><thead><tr>{h}</tr></thead><tbody>' + "".join(body) + "</tbody></table>"


def _memory(d: dict) -> str:
    m = d.get("memory")
    if not m:
        return ('<h2>Memory per GPU</h2><p class="note" id="memory">Not modelled for generic jobs '
                "(no model, parameters or activations to account).</p>")
    cap = float(m.get("capacity_bytes") or 0.0)
    rows = []
    bpp = m.get("bytes_per_param") or {}
    for k in ("params", "grads", "optimizer", "activations", "transient", "peak_bytes_per_gpu", "capacity_bytes"):
        if k not in m:
            continue
        v = float(m[k])
        share = f"{100 * v / cap:.1f} %" if cap > 0 else "-"
        note = f"{bpp[k]} B/param" if k in bpp else ""
        label = {"peak_bytes_per_gpu": "peak (all of the above)", "capacity_bytes": "capacity (HBM)"}.get(k, k)
        rows.append([_e(label), _e(format_bytes(v)), _e(share), _e(note)])
    fits = bool(m.get("fits"))
    rows.append(["fits", f'<span class="{"fits-yes" if fits else "fits-no"}">{"yes" if fits else "NO"}</span>', "", ""])
    stage = m.get("stage")
    title = "Memory per GPU" + (f" (fullest pipeline stage {_e(stage)})" if stage is not None else "")
    return f"<h2>{title}</h2>" + _table("memory", [("kind", False), ("bytes", True), ("of capacity", True),
                                                     ("", False)], rows)


def _links(d: dict) -> str:
    links = d.get("links") or []
    if not links:
        return '<h2>Busiest links</h2><p class="note" id="links">No link carried traffic.</p>'
    rows = []
    for row in links:
        fr = float(row.get("busy_fraction", 0.0))
        bar = f'<span class="barbox"><span class="bar" style="width:{_f(100 * min(max(fr, 0.0), 1.0))}%"></span></span>'
        rows.append([_e(row.get("link", "")), _e(row.get("kind", "")), _e(format_time(float(row.get("busy_s", 0.0)))),
                     bar + _e(f"{100 * fr:.1f} %")])
    return ("<h2>Busiest links</h2>" + _table("links", [("link", False), ("kind", False), ("busy", True),
                                                          ("busy share of the step", True)], rows))


def _breakdown(d: dict) -> str:
    step = d.get("step_time_s") or 0.0
    rows = []
    for k, v in (d.get("breakdown") or {}).items():
        kind = BREAKDOWN_KIND.get(k, "other")
        share = v / step if step > 0 else 0.0
        rows.append([f'<span class="sw k-{kind}"></span>{_e(k)}', _e(format_time(v)), _e(f"{100 * share:.1f} %")])
    return ('<h2>Where the step goes</h2><p class="note">Compute stream of the executor ranks, averaged: busy time '
            "by kind; idle time charged to the collective that released it (exposed communication) or to the "
            'pipeline bubble.</p><div class="scroll">' + breakdown_svg(d) + "</div>"
            + _table("breakdown", [("part", False), ("time", True), ("share", True)], rows))


def _legend(kinds: list[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><span class="sw k-{k}"></span>{_e(KIND_LABELS.get(k, k))}</span>' for k in kinds) + "</div>"


def render_html(result: dict, events: list[dict], meta: dict | None = None, *, max_ranks: int = MAX_RANKS,
                max_bars: int = MAX_BARS) -> str:
    """The report page for a ``RunResult.to_dict()`` document and its trace events.

    ``meta``: header facts (``rows``: list of (label, value) pairs), ``layout``: a function rank ->
    coordinates dict used to pick the ranks, ``source``: scenario label, ``iterations``.
    """
    meta = meta or {}
    d = result
    traced = sorted({ev["pid"] for ev in events if ev.get("ph") == "X" and "pid" in ev})
    ranks = select_ranks(traced, meta.get("layout"), max_ranks)
    rows = trace_rows(events, ranks)
    makespan = max((float(ev["ts"]) * 1e-6 + float(ev.get("dur", 0.0)) * 1e-6
                    for ev in events if ev.get("ph") == "X"), default=0.0)
    stats = layout_bars(rows, makespan, max_bars=max_bars)
    kinds_used = sorted({b.kind for r in rows for b in (r.bars or [])},
                        key=lambda k: list(KIND_COLORS).index(k) if k in KIND_COLORS else 99)

    title = f"clustersim step report: {d.get('scenario', '')}"
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title>", f"<style>{_css()}</style>", "</head>", "<body>",
             '<div id="report">', f'<h1 id="title">{_e(title)}</h1>']
    if meta.get("description"):
        parts.append(f'<p class="desc">{_e(meta["description"])}</p>')
    head_rows = [("scenario", d.get("scenario", "")), ("fidelity", d.get("fidelity", ""))] + list(meta.get("rows", []))
    parts.append('<table class="meta" id="header">' + "".join(
        f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in head_rows) + "</table>")
    parts.append("<h2>Key metrics</h2>" + _metrics(d))

    iters = meta.get("iterations") or 1
    span_txt = (f"the whole run ({iters} iterations, {format_time(makespan)})" if iters > 1
                else f"one step ({format_time(makespan)})")
    dropped = len(traced) - len(ranks)
    agg = (f" Ops narrower than {format_time(stats['theta_s'])} are merged with their neighbours"
           f"{' of the same kind' if stats['by_kind'] else ''} ({stats['ops']:,} ops drawn as {stats['bars']:,} bars)."
           if stats["ops"] > 0 else "")
    parts.append("<h2>Timeline</h2>")
    parts.append(f'<p class="note" id="timeline-note">Timeline of {_e(span_txt)}; one row per rank and stream; '
                 f"ranks shown: {_e(', '.join(str(r) for r in ranks))}"
                 f"{_e(f' ({dropped} more traced ranks not drawn)') if dropped else ''}. "
                 f"Hover a bar for its name, duration, bytes and group.{_e(agg)}"
                 f"{PALE_NOTE if stats['bars'] < stats['ops'] else ''}</p>")
    parts.append(_legend(kinds_used))
    parts.append('<div class="scroll">' + timeline_svg(rows, makespan) + "</div>")
    parts.append(_breakdown(d))
    parts.append(_memory(d))
    parts.append(_links(d))
    parts.append(f'<p class="note" id="footer">Generated by clustersim {_e(meta.get("version", ""))}. '
                 "Self-contained: no scripts, no external resources.</p>")
    parts += ["</div>", "</body>", "</html>", ""]
    return "\n".join(parts)


def write_html(path, result: dict, events: list[dict], meta: dict | None = None, **kw) -> Path:
    """Render and write the report (UTF-8, ``\\n`` line ends)."""
    p = Path(path)
    text = render_html(result, events, meta, **kw)
    try:
        p.write_bytes(text.encode("utf-8"))
    except OSError as exc:
        raise ClusterSimError(f"cannot write HTML report: {exc.strerror}", file=str(path)) from None
    return p


def scenario_meta(rs, source_label: str | None = None, reduced: bool = True) -> dict:
    """Header facts and rank layout of a :class:`~clustersim.simulate.resolve.ResolvedScenario`."""
    import clustersim

    sc, cluster, profile = rs.scenario, rs.cluster, rs.profile
    spec = cluster.gpu_spec
    rows: list[tuple[str, str]] = []
    if source_label:
        rows.append(("scenario file", source_label))
    rows.append(("cluster", f"{cluster.name}: {cluster.n_gpus} x {spec.name} on {cluster.n_hosts} host"
                            f"{'s' if cluster.n_hosts != 1 else ''}"))
    rows.append(("topology", rs.topology_file.name if rs.topology_file else "-"))
    prof = profile.name + (f" ({rs.profile_file.name})" if rs.profile_file else "")
    rows.append(("profile", prof))
    par = sc.parallelism
    layout = None
    if sc.model is not None:
        rows.append(("parallelism", f"tp {par.tp}, pp {par.pp}, dp {par.dp}, cp {par.cp}, ep {par.ep}; "
                                    f"schedule {par.schedule}; ZeRO {par.zero}; order {par.order}"))
        rows.append(("simulated replicas", "one data-parallel replica (identical replicas)" if reduced
                     else "every data-parallel replica"))
    else:
        rows.append(("workload", f"generic job, {sc.job.iterations} iteration"
                                 f"{'s' if sc.job.iterations != 1 else ''}"))
    if par.dp * par.tp * par.pp * par.cp * par.ep == cluster.n_gpus:
        from clustersim.workload.transformer import Layout

        layout = Layout({"tp": par.tp, "cp": par.cp, "ep": par.ep, "dp": par.dp, "pp": par.pp}, par.order).coords
    return {"rows": rows, "layout": layout, "description": sc.description or "",
            "iterations": sc.job.iterations if sc.job is not None else 1,
            "version": getattr(clustersim, "__version__", "")}


def run_html_report(scenario, html_path, *, fidelity: str | None = None, overrides: list[str] | None = None,
                    reduced: bool = True, trace_path=None, top_links: int = 8):
    """Simulate ``scenario`` (as :func:`clustersim.simulate.run_scenario`) and write the HTML report.

    The trace goes to ``trace_path`` when given (``--trace``), else to a temporary file.
    Returns the :class:`~clustersim.simulate.run.RunResult`.
    """
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario

    rs = resolve_scenario(scenario, overrides)
    with tempfile.TemporaryDirectory(prefix="clustersim-html-") as tmp:
        tpath = Path(trace_path) if trace_path is not None else Path(tmp) / "trace.json"
        res = run_scenario(rs, fidelity=fidelity, trace_path=tpath, reduced=reduced, top_links=top_links)
        try:
            events = json.loads(tpath.read_text())["traceEvents"]
        except (OSError, ValueError, KeyError) as exc:
            raise ClusterSimError(f"cannot read the step trace for the report: {exc}", file=str(tpath)) from None
    label = str(scenario) if isinstance(scenario, (str, Path)) else None
    write_html(html_path, res.to_dict(), events, scenario_meta(rs, label, reduced))
    return res
