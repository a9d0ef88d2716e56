"""Link accounting: which links a step's collectives load, and how busy each link was.

A run lists its busiest links (``links`` of the result). At flow fidelity the flow network
measures every link's busy seconds itself; the TP collectives that took their closed form
(their links private, :func:`tp_private`) and every collective at analytical fidelity keep
their ring's links busy for their duration instead (:func:`add_collective_busy`).
"""

from __future__ import annotations

import numpy as np

from clustersim.simulate.execute import CommCache, Timeline
from clustersim.topology.cluster import Cluster
from clustersim.workload.ops import Coll, Graph
from clustersim.workload.segments import TPCollectiveSegment


def ring_links(cluster: Cluster, coll: Coll, cache: dict) -> np.ndarray:
    """Links a collective loads: ring edges of each group (send_recv: the pair's route).

    ``cache``: routes already looked up, by (send_recv, group), shared by the calls of one run.
    """
    out = []
    for g in coll.groups:
        key = (coll.op == "send_recv", tuple(g))
        arr = cache.get(key)
        if arr is None:
            if len(g) < 2:
                arr = np.zeros(0, dtype=np.int64)
            elif coll.op == "send_recv":
                arr = np.asarray(cluster.route(g[0], g[1]), dtype=np.int64)
            else:
                parts = [np.asarray(cluster.route(a, b), dtype=np.int64) for a, b in zip(g, g[1:] + g[:1])]
                arr = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            cache[key] = arr
        out.append(arr)
    return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def tp_private(cluster: Cluster, graph: Graph) -> bool:
    """True when the representative TP groups' links carry no other simulated traffic."""
    cache: dict = {}
    tp_links: set[int] = set()
    other: set[int] = set()
    seen = set()
    for op in graph.ops:
        if op.segments:
            for s in op.segments:
                if isinstance(s, TPCollectiveSegment):
                    key = tuple(s.coll.ranks)
                    if key not in seen:
                        seen.add(key)
                        new = set(ring_links(cluster, s.coll, cache).tolist())
                        if tp_links & new:
                            return False  # two TP groups share links
                        tp_links |= new
        if op.coll is not None and not op.args.after_compute:
            # ops that start only after every compute op (grad norm, ZeRO weight gather) never meet TP traffic
            other |= set(ring_links(cluster, op.coll, cache).tolist())
    return not (tp_links & other)


def add_collective_busy(cluster: Cluster, graph: Graph, tl: Timeline | None, comm: CommCache, busy: np.ndarray,
                        cache: dict) -> None:
    """Add closed-form busy seconds to ``busy``: each collective keeps its ring links busy for its duration.

    With ``tl`` (analytical fidelity) the DAG's collectives count for their timeline durations; the
    TP collectives inside compute ops always count for their closed-form time, once per use.
    """
    acc: dict[tuple, list] = {}  # (op, groups) -> [coll, summed duration]

    def add(c: Coll, dur: float) -> None:
        key = (c.op, tuple(map(tuple, c.groups)))
        e = acc.get(key)
        if e is None:
            acc[key] = [c, dur]
        else:
            e[1] += dur

    uses: dict[int, list] = {}  # identical chunks share a segment list: count them once
    for op in graph.ops:
        if op.coll is not None and tl is not None:
            add(op.coll, tl.end[op.id] - tl.start[op.id])
        if op.segments:
            e = uses.get(id(op.segments))
            if e is None:
                uses[id(op.segments)] = [op.segments, 1]
            else:
                e[1] += 1
    for segs, count in uses.values():
        for s in segs:
            if isinstance(s, TPCollectiveSegment):
                add(s.coll, comm(s.coll) * count)
    for c, dur in acc.values():
        busy[ring_links(cluster, c, cache)] += dur


def top_links(cluster: Cluster, busy: np.ndarray, step: float, top: int) -> list[dict]:
    """The ``top`` busiest links (busiest first, ties in link order) with their busy seconds and share of ``step``."""
    busy = np.asarray(busy, dtype=float)
    if step <= 0 or busy.size == 0:
        return []
    idx = np.argsort(-busy, kind="stable")[:top]
    return [{"link": cluster.link_names[i], "kind": str(cluster.link_kind[i]),
             "busy_s": float(busy[i]), "busy_fraction": float(min(busy[i] / step, 1.0))}
            for i in idx if busy[i] > 0]


def busiest_links(cluster: Cluster, graph: Graph, comm: CommCache, *, timeline: Timeline,
                  flow_busy: np.ndarray | None, tp_closed_form: bool | None, makespan: float, top: int) -> list[dict]:
    """The run's ``top`` busiest links over its ``makespan``.

    ``flow_busy``: the flow network's own busy seconds per link (flow fidelity), to which the TP
    collectives that took their closed form (``tp_closed_form``) add their links' time; None
    (analytical fidelity): every collective's closed form over its duration in ``timeline``.
    """
    if flow_busy is not None:
        busy = flow_busy
        if tp_closed_form:  # the TP collectives took their closed form: no flows, so add their links' busy time
            busy = np.array(busy, dtype=float)
            add_collective_busy(cluster, graph, None, comm, busy, {})
        return top_links(cluster, busy, makespan, top)
    busy = np.zeros(len(cluster.link_bandwidth))
    add_collective_busy(cluster, graph, timeline, comm, busy, {})
    return top_links(cluster, busy, makespan, top)
