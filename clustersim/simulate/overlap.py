"""Compute and collectives that overlap on one GPU slow each other: the stretch both executors apply.

NCCL runs a collective as kernels on the GPU that also computes: they hold SMs (one block per
channel) and HBM bandwidth while they run. ``validation/probes/compute-beside-collectives/overlap_probe.py`` measured it on
2 H100 (``profiles/measurements/h100x2/overlap.jsonl``): the GPT 1.2B layer GEMM (8192 x 2048 x 8192)
1.24-1.31x slower while a 256 MiB all_reduce / reduce_scatter / all_gather runs, a large square
GEMM 1.07-1.22x, a 1 GiB elementwise add 1.11-1.13x, and the collectives 1.32-1.83x. The
profile's ``overlap_table`` holds those rows and
:meth:`clustersim.workload.TransformerStep.overlap_slowdowns` reduces them to one pair
``(compute, collective)`` for the step's kernels (:attr:`clustersim.workload.ops.Graph.overlap`).

Both fidelities apply it the same way: execute the DAG in closed form, measure on every executor
rank how long each compute op ran while one of the rank's collectives of a measured kind (on
another stream) ran, and each such collective while the rank computed; stretch the op by that
overlap x (slowdown - 1), execute again, and measure again until the stretch is self-consistent
(:func:`stretch_fixed_point`: stretched collectives overlap more compute, which stretches it more);
the run's fidelity then executes with that stretch (the flow pass takes the closed-form overlaps,
which an uncontended flow run equals). Point-to-point transfers (pipeline sends) and tensor-parallel
collectives inside a layer (serial with its compute) are not stretched: the probe did not measure them.
"""

from __future__ import annotations

import numpy as np

from clustersim.simulate.execute import execute_analytical
from clustersim.workload.ops import Graph


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, disjoint union of ``(start, end)`` intervals.

    >>> _union([(3.0, 4.0), (0.0, 2.0), (1.0, 2.5)])
    [(0.0, 2.5), (3.0, 4.0)]
    """
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _covered(union: list[tuple[float, float]], a: float, b: float) -> float:
    """Seconds of ``[a, b]`` inside the disjoint sorted intervals ``union``.

    >>> _covered([(0.0, 2.5), (3.0, 4.0)], 2.0, 3.5)
    1.0
    """
    total = 0.0
    for lo, hi in union:
        if hi <= a:
            continue
        if lo >= b:
            break
        total += min(b, hi) - max(a, lo)
    return total


def needs_stretch(graph: Graph) -> bool:
    """Whether :func:`overlap_stretch` can give anything for ``graph`` (the second pass is needed)."""
    return graph.overlap is not None or (graph.p2p_wait is not None and bool(graph.p2p_kernels)) \
        or graph.clock is not None


#: passes of :func:`stretch_fixed_point` at most, and the relative change of the step between two passes
#: below which it stops (the stretch of DDP/FSDP/pipeline steps settles within 3-5 passes)
FIXED_POINT_PASSES = 8
FIXED_POINT_TOL = 1e-3


def stretch_fixed_point(graph: Graph, comm, first, reuse: dict | None = None) -> tuple[dict[int, float], object]:
    """The self-consistent :func:`overlap_stretch` of ``graph`` and the closed-form timeline it gives.

    ``first``: the unstretched closed-form timeline (``execute_analytical(graph, comm)``). The first
    correction (:func:`overlap_stretch` on ``first``) starts it; then the compute / collective term is
    measured again on each stretched timeline, where an op overlapped for ``O`` real seconds at slowdown
    ``s`` lasts ``O (1 - 1/s)`` longer (:func:`_collective_stretch` with ``real``), and the step executed
    with the mean of the new and the previous stretch (damped), until it changes by less than
    :data:`FIXED_POINT_TOL` of itself or after :data:`FIXED_POINT_PASSES` passes. The p2p-wait and clock
    terms keep their first-correction values (measured on ``first``). The model before 2026-11-27 stopped
    after the first correction.

    >>> from clustersim.workload.ops import Coll
    >>> g = Graph()
    >>> c = g.add(0, "compute", "B", "compute", duration=4.0)
    >>> r = g.add(0, "dp", "RS", "comm_dp", coll=Coll("reduce_scatter", [[0, 1]], 1e6, "dp"))
    >>> g.overlap = (1.25, 1.5, ("reduce_scatter",))
    >>> first = execute_analytical(g, lambda coll: 2.0)
    >>> overlap_stretch(g, first.start, first.end)   # first correction: the compute 4.5 s, the RS 3 s
    {0: 0.5, 1: 1.0}
    >>> s, tl = stretch_fixed_point(g, lambda coll: 2.0, first)
    >>> round(s[0], 3), round(s[1], 3)   # the RS runs 3 s beside compute: 2 + 3 x (1 - 1/1.5); compute + 3 x 0.2
    (0.597, 1.0)
    """
    if reuse is None:
        reuse = {}
    stretch = overlap_stretch(graph, first.start, first.end)
    if not stretch:
        return stretch, first
    tl = execute_analytical(graph, comm, stretch, reuse=reuse)
    if graph.overlap is None:
        return stretch, tl
    coll = _collective_stretch(graph, first.start, first.end)
    others = {o: x - coll.get(o, 0.0) for o, x in stretch.items()}  # the p2p-wait and clock terms, fixed
    for _ in range(FIXED_POINT_PASSES - 2):
        new = _collective_stretch(graph, tl.start, tl.end, real=True)
        coll = {o: 0.5 * (new.get(o, 0.0) + coll.get(o, 0.0)) for o in new.keys() | coll.keys()}
        damped = {o: others.get(o, 0.0) + coll.get(o, 0.0) for o in others.keys() | coll.keys()}
        nxt = execute_analytical(graph, comm, damped, reuse=reuse)
        done = abs(nxt.makespan - tl.makespan) <= FIXED_POINT_TOL * max(nxt.makespan, 1e-300)
        stretch, tl = damped, nxt
        if done:
            break
    return stretch, tl


def overlap_stretch(graph: Graph, start: list[float], end: list[float]) -> dict[int, float]:
    """Extra seconds of every op that overlapped work of the other kind on its rank: ``{op id: s}``.

    ``start``/``end``: a first execution of ``graph`` (a :class:`~clustersim.simulate.execute.Timeline`'s
    lists). Compute ops (no collective, on the ``compute`` stream) gain ``overlap x (compute
    slowdown - 1)``, collectives of the measured kinds on another stream ``overlap x (collective
    slowdown - 1)`` (``graph.overlap``); compute ops also gain the time a posted p2p batch of their rank
    waited beside them x (its slowdown - 1) (``graph.p2p_wait``, :func:`p2p_wait_stretch`), and change
    by their rank's own sustained clock (``graph.clock``, :func:`idle_clock_stretch`).

    >>> from clustersim.workload.ops import Coll
    >>> g = Graph()
    >>> c = g.add(0, "compute", "B", "compute", duration=4.0)
    >>> r = g.add(0, "dp", "RS", "comm_dp", coll=Coll("reduce_scatter", [[0, 1]], 1e6, "dp"))
    >>> g.overlap = (1.25, 1.5, ("reduce_scatter",))
    >>> overlap_stretch(g, [0.0, 1.0], [4.0, 3.0])
    {0: 0.5, 1: 1.0}
    """
    out = _collective_stretch(graph, start, end) if graph.overlap is not None else {}
    comp = [op for op in graph.ops if op.coll is None and op.stream == "compute"]
    for extra in (p2p_wait_stretch(graph, comp, start, end), idle_clock_stretch(graph, comp, start, end)):
        for oid, x in extra.items():
            out[oid] = out.get(oid, 0.0) + x
    return out


def p2p_wait_stretch(graph: Graph, comp: list, start: list[float], end: list[float]) -> dict[int, float]:
    """Extra seconds of the compute ops ``comp`` that ran while a p2p batch of their rank was posted.

    A batch (:attr:`Graph.p2p_kernels`) is posted from its post op's start to its end op's end; one that
    holds a receive slows the compute beside it by ``graph.p2p_wait[0]``, a send-only one by
    ``graph.p2p_wait[1]`` (the residency probe: a waiting receive costs an 8192^3 GEMM x1.21-1.26, a waiting
    send x1.10, a copy nothing; ``validation/probes/p2p-waiting-kernel/h100x4``).

    >>> g = Graph()
    >>> c = g.add(0, "compute", "F1", "compute", duration=4.0)
    >>> p = g.add(0, "p2p", "post", "comm_pp"); e = g.add(0, "p2p", "wait", "comm_pp")
    >>> g.p2p_kernels, g.p2p_wait = [(0, p, e, True)], (1.2, 1.05)
    >>> p2p_wait_stretch(g, [g.ops[c]], [0.0, 1.0, 1.0], [4.0, 1.0, 3.0])
    {0: 0.4}
    """
    if graph.p2p_wait is None or not graph.p2p_kernels:
        return {}
    f_recv, f_send = graph.p2p_wait
    recv_iv: dict[int, list] = {}
    any_iv: dict[int, list] = {}
    for rank, post, stop, has_recv in graph.p2p_kernels:
        iv = (start[post], end[stop])
        any_iv.setdefault(rank, []).append(iv)
        if has_recv:
            recv_iv.setdefault(rank, []).append(iv)
    recv_u = {r: _union(v) for r, v in recv_iv.items()}
    any_u = {r: _union(v) for r, v in any_iv.items()}
    out: dict[int, float] = {}
    for op in comp:
        u = any_u.get(op.rank)
        if not u:
            continue
        a, b = start[op.id], end[op.id]
        o_any = _covered(u, a, b)
        o_recv = _covered(recv_u[op.rank], a, b) if op.rank in recv_u else 0.0
        x = o_recv * (f_recv - 1.0) + (o_any - o_recv) * (f_send - 1.0)
        if x > 0:
            out[op.id] = round(x, 15)
    return out


def idle_clock_stretch(graph: Graph, comp: list, start: list[float], end: list[float]) -> dict[int, float]:
    """Change of every compute op's seconds when its clock follows its rank's own load.

    The profile's clock table (docs/validation.md section 8) gives the slowdown of compute-bound kernels by
    their share of a busy GPU's time. The power limiter averages the load over a window (``graph.clock[3]``,
    profile ``clock_window_ms``: GEMMs cycled with idle time ran at the clock of their average duty up to a
    100 ms period, ``validation/probes/clock-idle-window/h100``), so a rank that idles (a pipeline rank waiting for its peer,
    a rank waiting for its host) keeps a higher clock near its idle time. The kernels were costed at the
    step's duty ``d`` (slowdown ``s``); an op whose rank is busy (compute stream) for a share ``b`` of the
    window centred on it runs them at the slowdown of duty ``d x b``, ``s_op``: it changes by
    ``seconds x d x (s_op / s - 1)`` (its compute-bound share; negative where ``s_op < s``).

    >>> g = Graph()
    >>> a = g.add(0, "compute", "F", "compute", duration=2.0)
    >>> g.clock = (0.8, 1.075, ((0.5, 1.0), (1.0, 1.125)), 4.0)   # the table gives 1.075 at duty 0.8
    >>> idle_clock_stretch(g, [g.ops[a]], [0.0], [2.0]), idle_clock_stretch(g, [g.ops[a]], [2.0], [4.0])
    ({}, {0: -0.09922480620155})
    """
    if graph.clock is None:
        return {}
    duty, slow, points, window = graph.clock
    if not duty or slow <= 0 or not end or not comp:
        return {}
    span = max(end)  # the step runs from 0
    if span <= 0:
        return {}
    xs = np.array([0.0] + [p[0] for p in points if p[0] > 0])
    ys = np.array([1.0] + [p[1] for p in points if p[0] > 0])  # clock_slowdown as np.interp: 1 at 0, flat beyond
    ranks = np.array([op.rank for op in comp])
    a = np.array([start[op.id] for op in comp])
    b = np.array([end[op.id] for op in comp])
    x = np.zeros(len(comp))
    for r in np.unique(ranks):
        sel = ranks == r
        u = np.array(_union(list(zip(a[sel].tolist(), b[sel].tolist()))))
        us, ue = u[:, 0], u[:, 1]
        cum = np.concatenate(([0.0], np.cumsum(ue - us)))

        def busy_until(t):  # the rank's busy seconds in [0, t]
            i = np.searchsorted(us, t, side="right") - 1
            j = np.maximum(i, 0)
            return np.where(i < 0, 0.0, cum[j] + np.clip(t - us[j], 0.0, ue[j] - us[j]))

        mid = 0.5 * (a[sel] + b[sel])
        lo, hi = np.maximum(0.0, mid - 0.5 * window), np.minimum(span, mid + 0.5 * window)
        width = hi - lo
        share = np.where(width > 0, np.minimum(1.0, (busy_until(hi) - busy_until(lo)) / np.where(width > 0, width, 1.0)), 1.0)
        x[sel] = (b[sel] - a[sel]) * duty * (np.interp(duty * share, xs, ys) / slow - 1.0)
    return {op.id: round(float(v), 15) for op, v in zip(comp, x) if abs(v) > 1e-15}


def _collective_stretch(graph: Graph, start: list[float], end: list[float], real: bool = False) -> dict[int, float]:
    """The compute / collective mutual stretch of ``graph.overlap`` (:func:`overlap_stretch`).

    An op of unstretched length ``W`` that runs ``s`` times slower while overlapped for ``O`` seconds of the
    real (stretched) timeline lasts ``W + O (1 - 1/s)``. ``real``: the timeline is a stretched one, charge
    ``O (1 - 1/s)``; else it is the unstretched one, whose overlap the slowdown lengthens in full: ``O (s - 1)``
    (the first correction)."""
    comp_s, comm_s, kinds = graph.overlap
    comm_iv: dict[int, list[tuple[float, float]]] = {}
    comp_iv: dict[int, list[tuple[float, float]]] = {}
    comm_ops, comp_ops = [], []
    for op in graph.ops:
        if op.coll is not None:
            if op.stream != "compute" and op.coll.op in kinds and op.coll.size_bytes > 0:
                ranks = [op.rank] + [r for r, _ in op.args.tracks]
                for r in ranks:
                    comm_iv.setdefault(r, []).append((start[op.id], end[op.id]))
                comm_ops.append(op)
        elif op.stream == "compute":
            comp_iv.setdefault(op.rank, []).append((start[op.id], end[op.id]))
            comp_ops.append(op)
    if not comm_ops:
        return {}
    comm_u = {r: _union(v) for r, v in comm_iv.items()}
    comp_u = {r: _union(v) for r, v in comp_iv.items()}
    out: dict[int, float] = {}
    # each compute op is stretched for the time a collective ran beside it, and the reverse
    for ops, beside, slowdown in ((comp_ops, comm_u, comp_s), (comm_ops, comp_u, comm_s)):
        for op in ops:
            u = beside.get(op.rank)
            o = _covered(u, start[op.id], end[op.id]) if u else 0.0
            if o > 0:
                out[op.id] = o * ((1.0 - 1.0 / slowdown) if real else (slowdown - 1.0))
    return out
