"""Trace events -> timeline rows of bars: which ranks to draw and how to keep the bars few.

The data side of the report's Gantt chart (drawn by :mod:`clustersim.report.svg`): a readable
subset of ranks (:func:`select_ranks`), one :class:`Row` per rank x stream from Chrome/Perfetto
trace events (:func:`trace_rows`), and bars per row where ops narrower than a pixel are merged
with their neighbours until at most ``max_bars`` bars remain (:func:`layout_bars`).
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.report.kinds import KIND_LABELS
from clustersim.units import format_bytes, format_time

STREAM_ORDER = ("compute", "tp", "ep", "cp", "dp", "dp_ag", "dp_rs", "pp_f", "pp_b")

MAX_RANKS = 16
MAX_BARS = 12000
PLOT_W = 1040  # pixels of the timeline's time axis


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

