"""A standalone HTML report of one simulated step (``clustersim run SCENARIO --html step.html``).

One file, nothing fetched: inline CSS and inline SVG, no JavaScript, every text escaped.
Sections: header (scenario, cluster, fidelity, profile), key metrics, a Gantt timeline of a
readable subset of ranks (one row per rank x stream, ops coloured by kind, idle gaps of the
compute stream drawn as bubble/wait, hover titles through SVG ``<title>``), the step breakdown
as a stacked bar, the evidence each figure rests on with the step's band, memory per GPU and the busiest links.

The timeline is built from the Chrome/Perfetto trace events (:mod:`clustersim.trace.chrome`),
so a report can be drawn from any saved trace plus the ``--json`` document. Large runs stay
small: ops narrower than a pixel are merged with their neighbours of the same kind until at
most ``max_bars`` bars are drawn. The output is deterministic (same input, same bytes): no
clocks, no wall times, no absolute paths of the machine it ran on.

The page shell (:func:`page`: head, inline style sheet, title, footer) and the small pieces
(:func:`header_table`, :func:`metric_html`, :func:`html_table`) are shared with the pages of
``clustersim report`` (:mod:`clustersim.report.pages`). Without trace events (a report drawn
from a ``clustersim run --json`` document alone) the timeline section says how to add one.

This module lays out the page; the timeline's rows and bars come from
:mod:`clustersim.report.timeline`, the SVG from :mod:`clustersim.report.svg`. The report renders
what it is given: ``clustersim run --html`` (:func:`clustersim.cli.run.run_and_write`) runs the
scenario, and hands over the result, its trace events and the header facts of
:func:`clustersim.simulate.describe.run_description`.
"""

from __future__ import annotations

from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.files import write_output
from clustersim.report.kinds import BREAKDOWN_KIND, KIND_COLORS, KIND_LABELS, host_bound_note
from clustersim.report.svg import breakdown_svg, escape_html, svg_number, timeline_svg
from clustersim.report.timeline import MAX_BARS, MAX_RANKS, layout_bars, select_ranks, trace_rows
from clustersim.units import format_bytes, format_time

NO_TRACE = ("No trace events given, so no timeline: write one with clustersim run SCENARIO --json --trace "
            "trace.json and pass it with clustersim report RESULTS --trace trace.json.")
PALE_NOTE = " Pale bars are aggregates, their opacity is the busy share of the span they cover."

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


def metric_html(mid: str, label: str, value: str, raw=None) -> str:
    """One key-metric box; ``raw`` (the exact number) goes to ``data-value`` for readers and tests."""
    data = f' data-value="{escape_html(repr(float(raw)))}"' if raw is not None else ""
    return (f'<div class="metric" id="{escape_html(mid)}"{data}><div class="v">{escape_html(value)}</div>'
            f'<div class="l">{escape_html(label)}</div></div>')


def _metrics(d: dict) -> str:
    n = d.get("n_gpus") or 1
    out = [metric_html("metric-step-time", "step time" if d.get("tokens_per_s") is not None else "time per iteration",
                   format_time(d["step_time_s"]), d["step_time_s"])]
    if d.get("tokens_per_s") is not None:
        out.append(metric_html("metric-tokens", "tokens/s", f"{d['tokens_per_s']:,.0f}", d["tokens_per_s"]))
        out.append(metric_html("metric-tokens-gpu", "tokens/s/GPU", f"{d['tokens_per_s'] / n:,.1f}", d["tokens_per_s"] / n))
    if d.get("samples_per_s") is not None:
        out.append(metric_html("metric-samples", "samples/s", f"{d['samples_per_s']:,.2f}", d["samples_per_s"]))
    if d.get("mfu") is not None:
        out.append(metric_html("metric-mfu", "MFU (model FLOPs / bf16 peak)", f"{100 * d['mfu']:.1f} %", d["mfu"]))
    if d.get("tflops_per_gpu") is not None:
        out.append(metric_html("metric-tflops", "model TFLOP/s/GPU", f"{d['tflops_per_gpu']:.1f}", d["tflops_per_gpu"]))
    if d.get("total_time_s") is not None:
        out.append(metric_html("metric-total", "total time", format_time(d["total_time_s"]), d["total_time_s"]))
    out.append(metric_html("metric-gpus", "GPUs", str(d.get("n_gpus")), d.get("n_gpus")))
    if d.get("params") is not None:
        out.append(metric_html("metric-params", "parameters", f"{d['params'] / 1e9:.3g} B", d["params"]))
    if d.get("micro_batches") is not None:
        out.append(metric_html("metric-mb", "micro-batches", str(d["micro_batches"]), d["micro_batches"]))
    out.append(metric_html("metric-ops", "simulated ops", f"{d.get('ops', 0):,}", d.get("ops", 0)))
    return '<div class="metrics" id="metrics">' + "".join(out) + "</div>"


def html_table(tid: str, head: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    """A table with id ``tid``; ``head``: (title, numeric) per column; cells are already-escaped HTML.

    >>> html_table("t", [("a", False), ("n", True)], [["x", "1"]])
    '<table id="t"><thead><tr><th>a</th><th class="num">n</th></tr></thead><tbody><tr><td>x</td><td class="num">1</td></tr></tbody></table>'
    """
    h = "".join(f'<th class="num">{escape_html(t)}</th>' if num else f"<th>{escape_html(t)}</th>" for t, num in head)
    body = []
    for r in rows:
        body.append("<tr>" + "".join(f'<td class="num">{c}</td>' if head[i][1] else f"<td>{c}</td>"
                                      for i, c in enumerate(r)) + "</tr>")
    return f'<table id="{escape_html(tid)}"><thead><tr>{h}</tr></thead><tbody>' + "".join(body) + "</tbody></table>"


def _memory(d: dict) -> str:
    m = d.get("memory")
    if not m:
        return ('<h2>Memory per GPU</h2><p class="note" id="memory">Not modelled for generic jobs '
                "(no model, parameters or activations to account).</p>")
    cap = float(m.get("capacity_bytes") or 0.0)
    rows = []
    bpp = m.get("bytes_per_param") or {}
    optional = ("loss_transient", "ddp_buckets", "fsdp_gathered", "optimizer_transient", "pipeline_outputs",
                "pipeline_recv_buffers", "ddp_rebuild_transient_bytes")
    for k in ("params", "grads", "optimizer", "activations", *optional[:-1], "peak_bytes_per_gpu", "cuda_context_bytes",
              "nccl_buffer_bytes", "fragmentation_bytes", "total_needed_bytes", optional[-1], "capacity_bytes"):
        if k not in m or (not m[k] and k in optional):
            continue
        v = float(m[k])
        share = f"{100 * v / cap:.1f} %" if cap > 0 else "-"
        note = f"{bpp[k]} B/param" if k in bpp else ""
        label = {"peak_bytes_per_gpu": "peak allocated", "total_needed_bytes": "total needed (fits uses it)",
                 "ddp_rebuild_transient_bytes": "once more at step 2 in some runs (DDP bucket rebuild)",
                 "capacity_bytes": "capacity (HBM)"}.get(k, k)
        rows.append([escape_html(label), escape_html(format_bytes(v)), escape_html(share), escape_html(note)])
    fits = bool(m.get("fits"))
    rows.append(["fits", f'<span class="{"fits-yes" if fits else "fits-no"}">{"yes" if fits else "NO"}</span>', "", ""])
    stage = m.get("stage")
    title = "Memory per GPU" + (f" (fullest pipeline stage {escape_html(stage)})" if stage is not None else "")
    return f"<h2>{title}</h2>" + html_table("memory", [("kind", False), ("bytes", True), ("of capacity", True),
                                                     ("", False)], rows)


def _links(d: dict) -> str:
    links = d.get("links") or []
    if not links:
        return '<h2>Busiest links</h2><p class="note" id="links">No link carried traffic.</p>'
    rows = []
    for row in links:
        fr = float(row.get("busy_fraction", 0.0))
        bar = f'<span class="barbox"><span class="bar" style="width:{svg_number(100 * min(max(fr, 0.0), 1.0))}%"></span></span>'
        rows.append([escape_html(row.get("link", "")), escape_html(row.get("kind", "")), escape_html(format_time(float(row.get("busy_s", 0.0)))),
                     bar + escape_html(f"{100 * fr:.1f} %")])
    return ("<h2>Busiest links</h2>" + html_table("links", [("link", False), ("kind", False), ("busy", True),
                                                          ("busy share of the step", True)], rows))


def _breakdown(d: dict) -> str:
    step = d.get("step_time_s") or 0.0
    rows = []
    for k, v in (d.get("breakdown") or {}).items():
        kind = BREAKDOWN_KIND.get(k, "other")
        share = v / step if step > 0 else 0.0
        rows.append([f'<span class="sw k-{kind}"></span>{escape_html(k)}', escape_html(format_time(v)), escape_html(f"{100 * share:.1f} %")])
    note = host_bound_note(d)
    return ('<h2>Where the step goes</h2><p class="note">Compute stream of the executor ranks, averaged: busy time '
            "by kind; idle time charged to the collective that released it (exposed communication) or to the "
            'pipeline bubble.</p><div class="scroll">' + breakdown_svg(d) + "</div>"
            + html_table("breakdown", [("part", False), ("time", True), ("share", True)], rows)
            + (f'<p class="note">{escape_html(note)}</p>' if note else ""))


def _evidence(d: dict) -> str:
    """What the step rests on: the evidence classes per part, the band and the inputs that move the step most."""
    ev = d.get("evidence")
    if not ev:
        return ""
    step = d.get("step_time_s") or 0.0
    rows = [[escape_html(part), escape_html(", ".join(f"{100 * v:.0f}% {c}" for c, v in cls.items()))]
            for part, cls in ev.get("parts", {}).items()]
    if ev.get("memory"):
        rows.append(["memory (total needed)", escape_html(", ".join(f"{100 * v:.0f}% {c}" for c, v in ev["memory"].items()))])
    for kind, link in ev.get("links", {}).items():
        rows.append([escape_html(f"link class {kind}"), escape_html(f"{link['profile']} ({link['profile_entry']}, error "
                                                                     f"{100 * link['error']:.0f}%); line rate {link['line_rate']}")])
    lo, hi = ev["band"]["step_time_s"]
    sens = "".join(f"<li>{escape_html(e['entry'])} ({escape_html(e['class'])}): {100 * e['share']:.0f}% of the step, "
                   f"held-out error {100 * e['error']:.1f}%, moves it {100 * e['moves']:.1f}%</li>"
                   for e in ev.get("sensitivity", [])[:3])
    return ('<h2>Evidence and band</h2><p class="note" id="evidence-summary">' + escape_html(ev["summary"])
            + f". Step {escape_html(format_time(step))}, band {escape_html(format_time(lo))} to "
            f"{escape_html(format_time(hi))} (each entry's held-out error, weighted by its share, combined as "
            "independent errors).</p>" + html_table("evidence", [("figure", False), ("rests on", False)], rows)
            + f'<p class="note">The inputs that move the step most:</p><ul id="sensitivity">{sens}</ul>')


def _legend(kinds: list[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><span class="sw k-{k}"></span>{escape_html(KIND_LABELS.get(k, k))}</span>' for k in kinds) + "</div>"


def header_table(rows) -> str:
    """The ``(label, value)`` facts under a page's title, as the ``header`` table."""
    return '<table class="meta" id="header">' + "".join(
        f"<tr><td>{escape_html(k)}</td><td>{escape_html(v)}</td></tr>" for k, v in rows) + "</table>"


def page(title: str, body: list[str], *, description: str | None = None, version: str = "", css: str = "") -> str:
    """A whole self-contained page: head with the inline style sheet (plus ``css``), the title,
    the description, the ``body`` parts (HTML) and the footer.

    >>> text = page("t <1>", ["<p>x</p>"])
    >>> text.startswith("<!DOCTYPE html>"), "<title>t &lt;1&gt;</title>" in text
    (True, True)
    """
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape_html(title)}</title>", f"<style>{_css()}{css}</style>", "</head>", "<body>",
             '<div id="report">', f'<h1 id="title">{escape_html(title)}</h1>']
    if description:
        parts.append(f'<p class="desc">{escape_html(description)}</p>')
    parts += body
    parts.append(f'<p class="note" id="footer">Generated by clustersim {escape_html(version)}. '
                 "Self-contained: no scripts, no external resources.</p>")
    parts += ["</div>", "</body>", "</html>", ""]
    return "\n".join(parts)


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
    parts = []
    head_rows = [("scenario", d.get("scenario", "")), ("fidelity", d.get("fidelity", ""))] + list(meta.get("rows", []))
    parts.append(header_table(head_rows))
    parts.append("<h2>Key metrics</h2>" + _metrics(d))

    iters = meta.get("iterations") or 1
    span_txt = (f"the whole run ({iters} iterations, {format_time(makespan)})" if iters > 1
                else f"one step ({format_time(makespan)})")
    dropped = len(traced) - len(ranks)
    agg = (f" Ops narrower than {format_time(stats['theta_s'])} are merged with their neighbours"
           f"{' of the same kind' if stats['by_kind'] else ''} ({stats['ops']:,} ops drawn as {stats['bars']:,} bars)."
           if stats["ops"] > 0 else "")
    parts.append("<h2>Timeline</h2>")
    if not events:
        parts.append(f'<p class="note" id="timeline-note">{escape_html(NO_TRACE)}</p>')
    else:
        parts.append(f'<p class="note" id="timeline-note">Timeline of {escape_html(span_txt)}; one row per rank and stream; '
                     f"ranks shown: {escape_html(', '.join(str(r) for r in ranks))}"
                     f"{escape_html(f' ({dropped} more traced ranks not drawn)') if dropped else ''}. "
                     f"Hover a bar for its name, duration, bytes and group.{escape_html(agg)}"
                     f"{PALE_NOTE if stats['bars'] < stats['ops'] else ''}</p>")
        parts.append(_legend(kinds_used))
        parts.append('<div class="scroll">' + timeline_svg(rows, makespan) + "</div>")
    parts.append(_breakdown(d))
    parts.append(_evidence(d))
    parts.append(_memory(d))
    parts.append(_links(d))
    return page(title, parts, description=meta.get("description"), version=meta.get("version", ""))


def write_html(path, result: dict, events: list[dict], meta: dict | None = None, **kw) -> Path:
    """Render and write the report (UTF-8, ``\\n`` line ends)."""
    return write_page(path, render_html(result, events, meta, **kw))


def write_page(path, text: str) -> Path:
    """Write a rendered page (UTF-8); an unwritable path is a :class:`ClusterSimError`."""
    return write_output(path, text, "HTML report")

