"""Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing).

One process per rank (``pid`` = rank, named ``rank N (host.gpu)``), one thread per stream
(compute, tp, dp, dp_ag, dp_rs, pp_f, pp_b, ep: the MoE dispatch/combine, cp: the context-parallel
K/V exchange). Every op is a complete event (``ph: "X"``) with
microsecond ``ts``/``dur``; collectives carry ``op``, ``group`` (axis), ``ranks`` and ``bytes``
in ``args``. Ops that occupy several ranks' streams (collectives) appear on each of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from clustersim.files import write_output
from clustersim.workload.segments import TPCollectiveSegment, segment_time

STREAM_TID = {"compute": 0, "tp": 1, "dp": 2, "dp_ag": 3, "dp_rs": 4, "pp_f": 5, "pp_b": 6, "ep": 7, "cp": 8}


def _tp_events(graph, tl, comm_time, streams) -> list[dict]:
    """Tensor-parallel collectives inside compute ops, laid out on the rank's ``tp`` track.

    Positions follow the op's segment order (compute seconds and closed-form collective times),
    scaled to the op's simulated duration.
    """
    out = []
    for op in graph.ops:
        if not op.segments or not any(isinstance(sg, TPCollectiveSegment) for sg in op.segments):
            continue
        durs = [segment_time(sg, comm_time)[0] for sg in op.segments]
        total = sum(durs)
        span = tl.end[op.id] - tl.start[op.id]
        scale = span / total if total > 0 else 0.0
        t = tl.start[op.id]
        for sg, d in zip(op.segments, durs):
            if isinstance(sg, TPCollectiveSegment):
                c = sg.coll
                # MoE and context-parallel traffic on their own tracks and colours
                track = "ep" if c.axis in ("ep", "etp", "ep_inter", "ep_intra") else ("cp" if c.axis == "cp" else "tp")
                streams.setdefault(op.rank, set()).add(track)
                out.append({"ph": "X", "name": f"{c.op} [{c.axis} {c.size_bytes:.3g} B]", "cat": f"comm_{track}",
                            "pid": op.rank, "tid": STREAM_TID[track], "ts": t * 1e6, "dur": d * scale * 1e6,
                            "args": {"op": c.op, "group": c.axis, "bytes": c.size_bytes, "ranks": c.ranks,
                                     "in": op.name}})
            t += d * scale
    return out


def trace_events(graph, tl, cluster=None, comm_time=None, rank_labels=None) -> list[dict]:
    """Trace events of a simulated timeline (metadata first, then ops by start time).

    With ``comm_time`` (closed-form collective time), the TP collectives inside layers are drawn
    on a ``tp`` track of each rank. ``rank_labels`` (rank -> label, e.g. ``"dp-a rank 3"`` when
    several jobs share the cluster) names a rank's process and sorts the processes by label, so
    each job's ranks sit together.
    """
    events: list[dict] = []
    streams: dict[int, set[str]] = {}
    ops_by_track: list[tuple[int, str, object]] = []
    for op in graph.ops:
        tracks = [(op.rank, op.stream)]
        if op.coll is not None and op.coll.groups:
            # collective ops also show on the other executor ranks whose stream they occupy
            tracks += op.args.tracks
        for r, s in tracks:
            streams.setdefault(r, set()).add(s)
            ops_by_track.append((r, s, op))
    tp_body = _tp_events(graph, tl, comm_time, streams) if comm_time is not None else []
    labels = rank_labels or {}
    # a job's ranks together (sorted by label, then rank), else rank order
    order = sorted(streams, key=lambda r: (labels.get(r, "").split(" rank ")[0], r)) if labels else sorted(streams)
    for pos, r in enumerate(order):
        label = labels.get(r, f"rank {r}")
        if cluster is not None and r < len(cluster.gpus):
            label += f" ({cluster.gpus[r]})"
        events.append({"ph": "M", "name": "process_name", "pid": r, "tid": 0, "args": {"name": label}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": r, "tid": 0,
                       "args": {"sort_index": pos if labels else r}})
        for s in sorted(streams[r], key=lambda x: STREAM_TID.get(x, 99)):
            tid = STREAM_TID.get(s, 10 + len(s))
            events.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": s}})
    body = []
    for r, s, op in ops_by_track:
        dur = tl.end[op.id] - tl.start[op.id]
        args = {"category": op.category}
        if op.coll is not None:
            args.update({"op": op.coll.op, "group": op.coll.axis, "bytes": op.coll.size_bytes,
                         "ranks": op.coll.ranks, "groups": len(op.coll.groups)})
        for k, v in tl.parts[op.id].items():
            args[f"{k}_us"] = v * 1e6
        args.update(op.args.labels())
        name = op.name
        if op.coll is not None:
            name = f"{op.name} [{op.coll.axis} {op.coll.size_bytes:.3g} B]"
        body.append({"ph": "X", "name": name, "cat": op.category, "pid": r,
                     "tid": STREAM_TID.get(s, 10 + len(s)), "ts": tl.start[op.id] * 1e6,
                     "dur": dur * 1e6, "args": args})
    body += tp_body
    body.sort(key=lambda e: (e["ts"], e["pid"], e["tid"]))
    return events + body


#: the process the link counters are drawn in (after every rank's), and how many links it shows
LINKS_PID, LINK_COUNTERS = 1_000_000, 16


def link_counter_events(link_loads: tuple, top: int = LINK_COUNTERS) -> list[dict]:
    """Perfetto counter tracks (``ph: "C"``) of the ``top`` links that carried the most bytes, in GB/s over time,
    from a flow run's ``(link names, [(time s, link indices, bytes/s), ...])``: one event where a link's load changes.

    >>> import numpy as np
    >>> log = [(0.0, np.array([1]), np.array([2e9])), (1.0, np.array([], dtype=int), np.array([]))]
    >>> [(e["name"], e.get("ts"), e["args"]) for e in link_counter_events((["a->b", "b->c"], log))][1:]
    [('b->c', 0.0, {'GB/s': 2.0}), ('b->c', 1000000.0, {'GB/s': 0.0})]
    """
    names, log = link_loads
    if not log:
        return []
    bytes_by_link: dict[int, float] = {}
    for (t, idx, load), nxt in zip(log, [e[0] for e in log[1:]] + [log[-1][0]]):
        for i, v in zip(idx.tolist(), load.tolist()):
            bytes_by_link[i] = bytes_by_link.get(i, 0.0) + v * (nxt - t)
    shown = sorted(bytes_by_link, key=lambda i: (-bytes_by_link[i], i))[:top]
    out = [{"ph": "M", "name": "process_name", "pid": LINKS_PID, "tid": 0,
            "args": {"name": f"links (GB/s; the {len(shown)} that carried the most bytes)"}}]
    last = {i: 0.0 for i in shown}
    for t, idx, load in log:
        now = dict(zip(idx.tolist(), load.tolist()))
        for i in shown:
            v = now.get(i, 0.0) / 1e9
            if v != last[i] or (t == log[0][0] and v):
                out.append({"ph": "C", "name": names[i], "pid": LINKS_PID, "ts": t * 1e6, "args": {"GB/s": round(v, 6)}})
                last[i] = v
    return out


def write_trace(path, graph, tl, cluster=None, title: str | None = None, comm_time=None, rank_labels=None,
                link_loads=None) -> Path:
    """Write the trace JSON object (``traceEvents`` + ``displayTimeUnit``) to ``path`` (``rank_labels``:
    see :func:`trace_events`; ``link_loads``: a flow run's link loads over time, drawn as counter tracks by
    :func:`link_counter_events`)."""
    p = Path(path)
    events = trace_events(graph, tl, cluster, comm_time, rank_labels)
    if link_loads is not None:
        events += link_counter_events(link_loads)
    doc = {"traceEvents": events, "displayTimeUnit": "ms",
           "otherData": {"generator": "clustersim", "scenario": title}}
    return write_output(p, json.dumps(doc), "trace")
