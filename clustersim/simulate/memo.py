"""Identical op DAGs give identical timelines: a digest of what the executors read, and a memo by it.

Both executors are deterministic functions of the op DAG (ops, their streams, durations,
segments, collectives, dependencies, host issue times, the overlap slowdowns) on a given
cluster, profile and fidelity. Two scenarios whose DAGs agree in all of that have the same
timeline, step time, breakdown and busiest links, whatever else differs between them (their
memory, say). The planner meets such pairs all the time: with flash attention selective
recompute changes no kernel (the attention core is not stored anyway), and ZeRO-1 and ZeRO-2
issue the same collectives (they differ in the gradient memory only), so up to four mixes share
one DAG. :func:`graph_digest` names a DAG by a BLAKE2b digest of an exact serialisation of every
field the executors, the breakdown and the link report read (floats by their IEEE bytes, so
equal digests mean equal values, not merely close ones); op names and trace labels are left
out, they time nothing. :class:`StepMemo` keeps the last few results by
digest, so the second mix of a pair is built (cheap) but not executed.

>>> from clustersim.workload.ops import Coll, Graph
>>> def dag(d):
...     g = Graph()
...     a = g.add(0, "compute", "F0", "compute", duration=d)
...     g.add(0, "dp", "AR", "comm_dp", coll=Coll("all_reduce", [[0, 1]], 1e6, "dp"), deps=[a])
...     return g
>>> graph_digest(dag(1.0)) == graph_digest(dag(1.0)), graph_digest(dag(1.0)) == graph_digest(dag(2.0))
(True, False)
"""

from __future__ import annotations

import hashlib
import marshal
import pickle
from collections import OrderedDict

from clustersim.workload.ops import Graph
from clustersim.workload.segments import ComputeSegment, TPCollectiveSegment


def _coll_key(c) -> tuple:
    return (c.op, tuple(map(tuple, c.groups)), c.size_bytes, c.axis, c.algorithm, c.protocol)


def _segments_key(segments: list) -> tuple:
    out = []
    for s in segments:
        if isinstance(s, ComputeSegment):
            out.append(("c", s.seconds, s.kernels))
        elif isinstance(s, TPCollectiveSegment):
            out.append(("t", _coll_key(s.coll), s.overlapped_gemm_s, s.comm_slowdown, s.gemm_slowdown))
        else:  # an op segment the executors do not know yet: compare it by value
            out.append(("?", repr(s)))
    return tuple(out)


def graph_digest(graph: Graph, *extra) -> str:
    """Hex digest of everything in ``graph`` that decides its timeline, plus ``extra`` (the run's
    fidelity, executor ranks, ...). Ops sharing one segment list are named by that list's first
    use, so the digest costs one pass over the ops and one per distinct segment list."""
    seg_index: dict[int, int] = {}
    seg_keys: list[tuple] = []
    ops = []
    for op in graph.ops:
        si = None
        if op.segments is not None:
            si = seg_index.get(id(op.segments))
            if si is None:
                si = seg_index[id(op.segments)] = len(seg_keys)
                seg_keys.append(_segments_key(op.segments))
        a = op.args
        ops.append((op.rank, op.stream, op.category, op.duration, None if op.coll is None else _coll_key(op.coll),
                    si, tuple(op.deps), a.host_s, a.tracks, a.after_compute))
    key = (graph.overlap, graph.p2p_wait, graph.clock, tuple(graph.p2p_kernels), tuple(ops), tuple(seg_keys), extra)
    try:
        # marshal format 2 has no back-references: its bytes depend on the values only, floats as
        # their 8 IEEE bytes (5x faster than repr for a 9,000-op DAG: 10 ms against 48 ms)
        data = marshal.dumps(key, 2)
    except ValueError:  # a value marshal does not know (a numpy scalar): pickle is exact too
        data = pickle.dumps(key, protocol=4)
    return hashlib.blake2b(data, digest_size=20).hexdigest()


class StepMemo:
    """The last ``size`` simulated steps by :func:`graph_digest`: ``memo.get(d)``, ``memo.put(d, v)``.

    >>> m = StepMemo(size=1)
    >>> m.put("a", 1); m.put("b", 2)
    >>> m.get("a"), m.get("b"), m.hits
    (None, 2, 1)
    """

    def __init__(self, size: int = 16):
        self.size = size
        self._d: OrderedDict[str, object] = OrderedDict()
        self.hits = 0

    def get(self, digest: str):
        """The stored value of ``digest`` (None if unknown)."""
        v = self._d.get(digest)
        if v is not None:
            self._d.move_to_end(digest)
            self.hits += 1
        return v

    def put(self, digest: str, value) -> None:
        """Store ``value`` under ``digest``, dropping the oldest entry past ``size``."""
        self._d[digest] = value
        self._d.move_to_end(digest)
        while len(self._d) > self.size:
            self._d.popitem(last=False)
