"""Inline SVG charts of the results pages (``clustersim report``): bars, stacked bars and lines.

Plain SVG, no script: every mark has a ``<title>`` (the browser's hover text), every text is
escaped, coordinates have fixed decimals, so the same input gives the same bytes. Colours come
from CSS classes: ``k-<kind>`` for the op kinds of :mod:`clustersim.report.kinds` (the breakdown
parts keep the colours of the step report) and ``s0`` ... ``s5`` for line series (:data:`SERIES_CSS`).
"""

from __future__ import annotations

import math

from clustersim.report.kinds import BREAKDOWN_KIND
from clustersim.report.svg import nice_step, escape_html, svg_number

#: line series colours (stroke and marker fill), in series order; ``ideal`` is the dashed reference
SERIES_COLORS = ("#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#8c6bb1", "#76b7b2")
SERIES_CSS = "".join(f"svg .s{i}{{stroke:{c};fill:{c}}}svg path.s{i}{{fill:none;stroke-width:2}}"
                     f".sw.s{i}{{background:{c}}}" for i, c in enumerate(SERIES_COLORS)) + \
    "svg path.ideal{fill:none;stroke:#888;stroke-width:1.2;stroke-dasharray:5 4}" \
    "svg .axlabel{font-size:11px;fill:#333;text-anchor:middle}svg .ylab{font-size:10px;fill:#555;text-anchor:end}" \
    "svg .barlabel{font-size:11px;fill:#222;text-anchor:end}svg .val{font-size:10px;fill:#333}" \
    "svg rect.plain{fill:#4e79a7}svg rect.drop{fill:#e15759}"

LABEL_W = 220  # pixels for the row labels of bar charts
BAR_W = 640  # pixels of the value axis of bar charts
ROW_H = 22


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _ticks(lo: float, hi: float, log2: bool) -> list[float]:
    """Axis ticks over [lo, hi]: powers of two on a log axis, round steps on a linear one.

    >>> _ticks(1, 8, True), _ticks(0, 1, False)[:3]
    ([1, 2, 4, 8], [0.0, 0.2, 0.4])
    """
    if log2:
        a, b = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step = max(1, math.ceil((b - a) / 10))
        return [2 ** k for k in range(a, b + 1, step)]
    step = nice_step(hi - lo, 5)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 12) for k in range(first, int(math.floor(hi / step + 1e-9)) + 1)]


def bars_svg(cid: str, items: list[tuple[str, float, str]], *, cls: str = "plain", unit: str = "",
             aria: str = "bar chart") -> str:
    """Horizontal bars, one per ``(label, value, hover text)``, scaled to the largest value.

    >>> s = bars_svg("c", [("a", 2.0, "a: 2"), ("b", 1.0, "b: 1")])
    >>> s.count("<rect"), 'id="c"' in s
    (2, True)
    """
    top = max((v for _, v, _ in items), default=0.0)
    width, height = LABEL_W + BAR_W + 90, ROW_H * len(items) + 8
    out = [f'<svg id="{escape_html(cid)}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape_html(aria)}">']
    for i, (label, value, title) in enumerate(items):
        y = 4 + i * ROW_H
        w = BAR_W * value / top if top > 0 else 0.0
        out.append(f'<text class="barlabel" x="{LABEL_W - 8}" y="{y + 14}">{escape_html(label)}</text>')
        out.append(f'<rect class="{escape_html(cls)}" x="{LABEL_W}" y="{y + 2}" width="{svg_number(max(w, 1.0))}" '
                   f'height="{ROW_H - 6}"><title>{escape_html(title)}</title></rect>')
        out.append(f'<text class="val" x="{svg_number(LABEL_W + max(w, 1.0) + 5)}" y="{y + 14}">'
                   f'{escape_html(f"{value:,.6g}{unit}")}</text>')
    out.append("</svg>")
    return "\n".join(out)


def stacked_bars_svg(cid: str, rows: list[tuple[str, dict[str, float], str]], *, unit_s: bool = True,
                     aria: str = "stacked bars") -> str:
    """Horizontal stacked bars: one per ``(label, {part: value}, hover prefix)``.

    Parts are breakdown keys (``compute``, ``comm_dp``, ``bubble``, ...) coloured like the step
    report's breakdown bar; a time axis (seconds) along the top.

    >>> s = stacked_bars_svg("b", [("p1", {"compute": 1.0, "bubble": 0.5}, "plan 1")])
    >>> s.count('class="k-compute"'), s.count('class="k-idle"')
    (1, 1)
    """
    from clustersim.units import format_time

    top = max((sum(v for v in parts.values() if v > 0) for _, parts, _ in rows), default=0.0)
    axis_h = 22
    width, height = LABEL_W + BAR_W + 30, axis_h + ROW_H * len(rows) + 6
    out = [f'<svg id="{escape_html(cid)}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape_html(aria)}">']
    scale = BAR_W / top if top > 0 else 0.0
    for t in (_ticks(0.0, top, False) if top > 0 else []):
        x = LABEL_W + t * scale
        out.append(f'<line class="grid" x1="{svg_number(x)}" y1="{axis_h - 4}" x2="{svg_number(x)}" y2="{height - 2}"/>')
        out.append(f'<text class="tick" x="{svg_number(x)}" y="{axis_h - 8}">'
                   f'{escape_html(format_time(t) if unit_s and t else _fmt(t))}</text>')
    for i, (label, parts, prefix) in enumerate(rows):
        y = axis_h + i * ROW_H
        out.append(f'<text class="barlabel" x="{LABEL_W - 8}" y="{y + 14}">{escape_html(label)}</text>')
        x = float(LABEL_W)
        total = sum(v for v in parts.values() if v > 0)
        for key, v in parts.items():
            if v <= 0:
                continue
            w = v * scale
            kind = BREAKDOWN_KIND.get(key, "other")
            share = v / total if total > 0 else 0.0
            what = format_time(v) if unit_s else _fmt(v)
            out.append(f'<rect class="k-{kind}" x="{svg_number(x)}" y="{y + 2}" width="{svg_number(w)}" '
                       f'height="{ROW_H - 6}"><title>{escape_html(f"{prefix}: {key} {what} ({100 * share:.1f} %)")}'
                       "</title></rect>")
            x += w
    out.append(f'<line class="axis" x1="{LABEL_W}" y1="{axis_h - 4}" x2="{LABEL_W}" y2="{height - 2}"/>')
    out.append("</svg>")
    return "\n".join(out)


def lines_svg(cid: str, series: list[tuple[str, list[tuple[float, float]]]], *, x_label: str, y_label: str,
              log2_x: bool = False, log2_y: bool = False, ideal: list[tuple[float, float]] | None = None,
              y_min: float | None = None, y_max: float | None = None, width: int = 520, height: int = 320,
              aria: str = "line chart") -> str:
    """One panel of lines with markers: ``series`` of ``(name, [(x, y), ...])``; ``ideal`` dashed.

    Log axes are base 2 (GPU counts); every marker's ``<title>`` gives its series, x and y.

    >>> s = lines_svg("l", [("sim", [(1, 1.0), (8, 7.9)])], x_label="GPUs", y_label="speedup",
    ...               log2_x=True, log2_y=True, ideal=[(1, 1), (8, 8)])
    >>> s.count("<circle"), 'class="ideal"' in s
    (2, True)
    """
    pts = [p for _, ps in series for p in ps] + list(ideal or [])
    left, right, top, bottom = 62, 14, 14, 44
    out = [f'<svg id="{escape_html(cid)}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape_html(aria)}">']
    if not pts:
        out.append("</svg>")
        return "\n".join(out)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0 = min(ys) if y_min is None else y_min
    y1 = max(ys) if y_max is None else y_max
    if x1 == x0:
        x0, x1 = (x0 / 2, x1 * 2) if log2_x else (x0 - 1, x1 + 1)
    if y1 == y0:
        y0, y1 = (y0 / 2, y1 * 2) if log2_y else (y0 - 0.5, y1 + 0.5)
    tx = (lambda v: math.log2(v)) if log2_x else (lambda v: v)
    ty = (lambda v: math.log2(v)) if log2_y else (lambda v: v)
    pw, ph = width - left - right, height - top - bottom

    def X(v: float) -> float:
        return left + pw * (tx(v) - tx(x0)) / (tx(x1) - tx(x0))

    def Y(v: float) -> float:
        return top + ph * (1 - (ty(v) - ty(y0)) / (ty(y1) - ty(y0)))

    x_ticks = _ticks(x0, x1, log2_x)
    if all(float(x).is_integer() for x in xs):  # counts (GPUs, micro-batches): no 1.5 GPUs on the axis
        whole = [t for t in x_ticks if float(t).is_integer()]
        x_ticks = whole if len(whole) >= 2 else sorted(set(xs))
    for t in x_ticks:
        if x0 - 1e-12 <= t <= x1 + 1e-12:
            out.append(f'<line class="grid" x1="{svg_number(X(t))}" y1="{top}" x2="{svg_number(X(t))}" y2="{top + ph}"/>')
            out.append(f'<text class="tick" x="{svg_number(X(t))}" y="{top + ph + 14}">{escape_html(_fmt(t))}</text>')
    for t in _ticks(y0, y1, log2_y):
        if y0 - 1e-12 <= t <= y1 + 1e-12:
            out.append(f'<line class="grid" x1="{left}" y1="{svg_number(Y(t))}" x2="{left + pw}" y2="{svg_number(Y(t))}"/>')
            out.append(f'<text class="ylab" x="{left - 5}" y="{svg_number(Y(t) + 3)}">{escape_html(_fmt(t))}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"/>')
    out.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"/>')
    out.append(f'<text class="axlabel" x="{svg_number(left + pw / 2)}" y="{height - 8}">{escape_html(x_label)}</text>')
    out.append(f'<text class="axlabel" transform="translate(14 {svg_number(top + ph / 2)}) rotate(-90)">'
               f'{escape_html(y_label)}</text>')
    if ideal:
        d = " ".join(f"{'M' if i == 0 else 'L'}{svg_number(X(x))} {svg_number(Y(y))}" for i, (x, y) in enumerate(ideal))
        out.append(f'<path class="ideal" d="{d}"><title>ideal</title></path>')
    for k, (name, ps) in enumerate(series):
        cls = f"s{k % len(SERIES_COLORS)}"
        ps = sorted(ps)
        if len(ps) > 1:
            d = " ".join(f"{'M' if i == 0 else 'L'}{svg_number(X(x))} {svg_number(Y(y))}" for i, (x, y) in enumerate(ps))
            out.append(f'<path class="{cls}" d="{d}"/>')
        for x, y in ps:
            out.append(f'<circle class="{cls}" cx="{svg_number(X(x))}" cy="{svg_number(Y(y))}" r="4">'
                       f"<title>{escape_html(f'{name}: {x_label} {_fmt(x)}, {y_label} {y:.4g}')}</title></circle>")
    out.append("</svg>")
    return "\n".join(out)
