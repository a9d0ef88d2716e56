"""SVG pieces of the report: the Gantt timeline of :class:`~clustersim.report.timeline.Row` bars
and the step breakdown as one stacked bar. Inline SVG, every text escaped, coordinates with
fixed decimals (same input, same bytes).
"""

from __future__ import annotations

import html
import math

from clustersim.report.kinds import BREAKDOWN_KIND, KIND_COLORS
from clustersim.report.timeline import PLOT_W, Row
from clustersim.units import format_time

LABEL_W = 240
ROW_H = 16
BAR_H = 12


def escape_html(x) -> str:
    """Escape text for HTML element content and attribute values."""
    return html.escape(str(x), quote=True)


def svg_number(x: float) -> str:
    """SVG coordinate: fixed two decimals (deterministic, compact)."""
    s = f"{x:.2f}"
    return s[:-3] if s.endswith(".00") else s


def nice_step(span: float, target: int = 10) -> float:
    """A round axis step (1, 2, 2.5 or 5 times a power of ten) giving about ``target`` ticks over ``span``.

    >>> nice_step(1.0), nice_step(7.3, 5)
    (0.1, 2)
    """
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
        out.append(f'<text class="rank" x="4" y="{y + ROW_H - 3}">{escape_html(rows[i].label)}</text>')
        for k in range(i, j):
            out.append(f'<text class="stream" x="{LABEL_W - 6}" y="{y + ROW_H * (k - i) + ROW_H - 3}">'
                       f'{escape_html(rows[k].stream)}</text>')
        y += h
        band += 1
        i = j
    # time axis
    step = nice_step(makespan)
    t = 0.0
    k = 0
    while makespan > 0 and t <= makespan * 1.0001:
        x = LABEL_W + t * scale
        out.append(f'<line class="grid" x1="{svg_number(x)}" y1="{top - 4}" x2="{svg_number(x)}" y2="{height - 8}"/>')
        out.append(f'<text class="tick" x="{svg_number(x)}" y="{top - 8}">{escape_html(format_time(t) if t else "0")}</text>')
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
            out.append(f'<rect class="k-{kind}" x="{svg_number(x)}" y="{svg_number(y0)}" width="{svg_number(w)}" height="{BAR_H}"{op}>'
                       f'<title>{escape_html(b.title)}</title></rect>')
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
        out.append(f'<rect class="k-{kind}" x="{svg_number(x)}" y="2" width="{svg_number(w)}" height="{h - 4}">'
                   f'<title>{escape_html(f"{key}: {format_time(v)} ({100 * share:.1f} % of the step)")}</title></rect>')
        if w > 70:
            dark = " dark" if kind in ("idle", "other") else ""
            out.append(f'<text class="seglabel{dark}" x="{svg_number(x + w / 2)}" y="{h / 2 + 4}">'
                       f'{escape_html(f"{key} {100 * share:.1f} %")}</text>')
        x += w
    out.append("</svg>")
    return "\n".join(out)

