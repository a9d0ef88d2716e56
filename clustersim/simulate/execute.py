"""Analytical execution of an op DAG and the time breakdown both fidelities share.

The analytical executor walks the DAG in topological order: an op starts when all its
dependencies (stream order included) have finished and lasts its compute time or its
closed-form collective time. No event queue: O(ops + deps). The flow executor
(:mod:`clustersim.simulate.flow`) shares :class:`Timeline`, :func:`host_issue` and the segment
reading (:func:`clustersim.workload.segments.segment_time`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from clustersim.breakdown import BREAKDOWN_KEYS, exposed_comm_part, inner_comm_part
from clustersim.errors import ClusterSimError
from clustersim.workload.ops import Coll, Graph, Op
from clustersim.workload.segments import ComputeSegment, TPCollectiveSegment, segment_time


@dataclass
class Timeline:
    """Start/end of every op plus the parts (category -> seconds) inside compute ops."""

    start: list[float]
    end: list[float]
    parts: list[dict[str, float]] = field(default_factory=list)

    @property
    def makespan(self) -> float:
        """End of the last op."""
        return max(self.end) if self.end else 0.0


def topo_order(graph: Graph) -> list[int]:
    """Kahn's algorithm over ``deps``; raises on a cycle (a schedule bug or a bad job)."""
    n = len(graph.ops)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for op in graph.ops:
        for d in op.deps:
            succ[d].append(op.id)
            indeg[op.id] += 1
    q = deque(i for i in range(n) if indeg[i] == 0)
    out = []
    while q:
        i = q.popleft()
        out.append(i)
        for s in succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                q.append(s)
    if len(out) != n:
        raise ClusterSimError("the operations wait on each other in a cycle (deadlock)", field="schedule")
    return out


def compute_parts(op: Op, comm_time) -> tuple[float, dict[str, float]]:
    """GPU-busy duration and category split of a compute op with closed-form inner collectives.

    Host issue time is not included: :func:`host_issue` and :func:`with_host` add it.
    """
    if op.segments is None:
        return op.duration, {op.category: op.duration}
    comp = sum(seg.seconds for seg in op.segments if isinstance(seg, ComputeSegment))
    parts = {"compute": 0.0}
    comm = 0.0
    for seg in op.segments:
        if isinstance(seg, TPCollectiveSegment):
            # a GEMM overlapped with it counts as compute; only the excess communication is exposed
            _, hidden, exposed = segment_time(seg, comm_time)
            comp += hidden
            comm += exposed
            if exposed:
                key = inner_comm_part(seg.coll.axis)
                parts[key] = parts.get(key, 0.0) + exposed
    parts["compute"] = comp
    return comp + comm, parts


def host_issue(graph: Graph) -> dict[int, tuple[float, float]]:
    """When the host thread of each rank issues each op that carries ``host_s``: ``{op id: (start, end)}``.

    Eager PyTorch: one Python thread per rank issues every kernel and collective call in program
    order, and each call costs CPU time (dispatch, autograd bookkeeping, launch). The thread
    never waits for the GPU inside a step of the reference programs (no ``.item()``; NCCL
    ``work.wait()`` only makes the compute stream wait), so it runs ahead of the GPU: its issue
    times are the running sum of the ``host_s`` of the rank's ops in issue order (graph order).
    A GPU op cannot start before its issue starts nor end before its last call was issued.
    """
    out: dict[int, tuple[float, float]] = {}
    t: dict[int, float] = {}
    for op in graph.ops:
        h = op.args.host_s
        if h is None:
            continue
        s = t.get(op.rank, 0.0)
        out[op.id] = (s, s + h)
        t[op.rank] = s + h
    return out


def with_host(t0: float, busy: float, parts: dict[str, float], issue: tuple[float, float] | None):
    """End time and parts of an op released at ``t0`` that is busy ``busy`` on the GPU, given its host issue window."""
    if issue is None:
        return t0 + busy, parts
    start = max(t0, issue[0])
    end = max(start + busy, issue[1])
    host = end - t0 - busy
    if host > 1e-15:
        parts = dict(parts)
        parts["host"] = parts.get("host", 0.0) + host
    return end, parts


def execute_analytical(graph: Graph, comm_time, stretch: dict[int, float] | None = None,
                       reuse: dict | None = None) -> Timeline:
    """Start and end of every op with closed-form collectives (``comm_time(Coll) -> seconds``).

    ``stretch``: extra busy seconds per op id (compute and collectives slowing each other where
    they overlap, :func:`clustersim.simulate.overlap.overlap_stretch`); counted in the op's own
    category (a compute op's as ``compute``).
    ``reuse``: a dict kept between executions of the same, unchanged ``graph`` with the same
    ``comm_time`` (the two passes of the overlap model): the topological order, the host issue
    windows and the compute ops' costs are computed on the first and read on the next.

    >>> from clustersim.workload.ops import Graph
    >>> g = Graph()
    >>> a = g.add(0, "compute", "F", "compute", duration=1.0)
    >>> b = g.add(1, "compute", "F", "compute", duration=2.0, deps=[a])
    >>> r = {}
    >>> execute_analytical(g, None, reuse=r).end, execute_analytical(g, None, {b: 0.5}, reuse=r).end
    ([1.0, 3.0], [1.0, 3.5])
    """
    stretch = stretch or {}
    if reuse is None:
        reuse = {}
    if "order" not in reuse:
        reuse.update(order=topo_order(graph), issue=host_issue(graph), memo={})
    order, issue = reuse["order"], reuse["issue"]
    memo: dict[int, tuple] = reuse["memo"]  # ops sharing a segment list (identical chunks) cost the same
    ops = graph.ops
    n = len(ops)
    start = [0.0] * n
    end = [0.0] * n
    parts: list[dict[str, float]] = [{} for _ in range(n)]
    for i in order:
        op = ops[i]
        deps = op.deps
        t0 = max([end[d] for d in deps]) if deps else 0.0
        if op.coll is not None:
            dur = comm_time(op.coll) + stretch.get(i, 0.0)
            parts[i] = {op.category: dur}
            start[i], end[i] = t0, t0 + dur
            continue
        if op.segments is not None:
            key = id(op.segments)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = compute_parts(op, comm_time)
            dur, p = hit[0], dict(hit[1])
        else:
            dur, p = compute_parts(op, comm_time)
        extra = stretch.get(i, 0.0)
        if extra:
            dur += extra
            key = "compute" if "compute" in p else op.category
            p = dict(p)
            p[key] = p.get(key, 0.0) + extra
        e, parts[i] = with_host(t0, dur, p, issue.get(i))
        start[i], end[i] = t0, e
    return Timeline(start, end, parts)


def _binding(op: Op, tl: Timeline) -> int | None:
    """The dependency that finished last (the one that released ``op``)."""
    return max(op.deps, key=lambda d: tl.end[d]) if op.deps else None


def breakdown(graph: Graph, tl: Timeline, ranks: list[int], step: float) -> dict[str, float]:
    """Where the compute stream's time goes, averaged over the executor ranks ``ranks``.

    Busy time splits into the parts of its ops (compute, comm_tp inside layers, host, optimizer).
    Idle time before an op is charged to the dependency that released it last: the overlap of
    that collective with the idle interval counts as exposed communication of its axis
    (comm_dp, comm_pp, comm_tp, comm_ep, comm_cp); the rest of the gap is host time where the chain
    ends at a host-only op (stream ``host``: an FSDP2 hook the collective waited for), else pipeline bubble. Time after the last op
    up to the step end is ``other``.
    """
    tot = {k: 0.0 for k in BREAKDOWN_KEYS}
    by_rank: dict[int, list[Op]] = {r: [] for r in ranks}
    for op in graph.ops:
        if op.stream == "compute" and op.rank in by_rank:
            by_rank[op.rank].append(op)
        for r, st in op.args.tracks:
            if st == "compute" and r in by_rank and r != op.rank:
                by_rank[r].append(op)
    for r, ops in by_rank.items():
        ops.sort(key=lambda o: (tl.start[o.id], o.id))
        prev = 0.0
        for op in ops:
            gap = tl.start[op.id] - prev
            if gap > 1e-15:
                # walk back the chain of releasing collectives: their time inside the gap is exposed
                hi, cur, exposed = tl.start[op.id], _binding(op, tl), 0.0
                while cur is not None and hi > prev:
                    dop = graph.ops[cur]
                    if dop.coll is None:
                        break
                    lo = max(tl.start[cur], prev)
                    if hi > lo:
                        tot[exposed_comm_part(dop.coll.axis)] += hi - lo
                        exposed += hi - lo
                        hi = lo
                    cur = _binding(dop, tl)
                # the chain ends at a host-only op (an FSDP2 hook): the GPU waited for its host
                idle = "host" if cur is not None and graph.ops[cur].stream == "host" else "bubble"
                tot[idle] += max(gap - exposed, 0.0)
            for k, v in tl.parts[op.id].items():
                tot[k if k in tot else "other"] += v
            prev = max(prev, tl.end[op.id])
        tot["other"] += max(0.0, step - prev)
    n = max(len(by_rank), 1)
    return {k: v / n for k, v in tot.items()}


class CommCache:
    """Memoised closed-form collective times: ``CommCache(model)(coll) -> seconds``.

    ``model`` has ``estimate(op, ranks, size_bytes, algorithm="auto", protocol="auto")`` returning an
    object with ``time_s`` (Contract 2's :class:`clustersim.collectives.CollectiveModel`); a
    collective's forced ``algorithm``/``protocol`` is passed on and is part of the memo key.
    """

    def __init__(self, model):
        self.model = model
        self.cache: dict[tuple, float] = {}

    def __call__(self, coll: Coll) -> float:
        algo, proto = coll.algorithm, coll.protocol
        key = (coll.op, tuple(coll.ranks), float(coll.size_bytes), algo, proto)
        t = self.cache.get(key)
        if t is None:
            if coll.size_bytes <= 0 and coll.op != "barrier":
                t = 0.0
            elif algo == "auto" and proto == "auto":
                t = float(self.model.estimate(coll.op, list(coll.ranks), int(coll.size_bytes)).time_s)
            else:  # a forced algorithm or protocol (a job phase's, or the nvshmem EP transport)
                t = float(self.model.estimate(coll.op, list(coll.ranks), int(coll.size_bytes), algo, proto).time_s)
            self.cache[key] = t
        return t


def free_comm_bubble(graph: Graph) -> tuple[float, float]:
    """(bubble, work) of a step played with free communication: the makespan minus the busiest
    rank's compute time, and that compute time (seconds). With communication free, what is left
    between the busiest rank's ops is the schedule's own bubble (DeepSeek-V3 Table 2's closed forms
    are of this quantity; ``benchmarks/pipeline_bubbles.py``).

    >>> from clustersim.workload.ops import Graph
    >>> g = Graph()
    >>> a = g.add(0, "compute", "F", "compute", duration=1.0)
    >>> b = g.add(1, "compute", "F", "compute", duration=1.0, deps=[a])
    >>> free_comm_bubble(g)
    (1.0, 1.0)
    """
    tl = execute_analytical(graph, lambda coll: 0.0)
    busy: dict[int, float] = {}
    for op in graph.ops:
        if op.category == "compute":
            busy[op.rank] = busy.get(op.rank, 0.0) + tl.end[op.id] - tl.start[op.id]
    work = max(busy.values())
    return tl.makespan - work, work
