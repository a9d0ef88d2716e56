"""Compute and collectives that overlap on one GPU slow each other: the stretch both executors apply.

NCCL runs a collective as kernels on the GPU that also computes: they hold SMs (one block per
channel) and HBM bandwidth while they run. ``calibrate/device/overlap_probe.py`` measured it on
2 H100 (``calibrate/raw/blind6/overlap.jsonl``): the GPT 1.2B layer GEMM (8192 x 2048 x 8192)
1.24-1.31x slower while a 256 MiB all_reduce / reduce_scatter / all_gather runs, a large square
GEMM 1.07-1.22x, a 1 GiB elementwise add 1.11-1.13x, and the collectives 1.32-1.83x. The
profile's ``overlap_table`` holds those rows and
:meth:`clustersim.workload.TransformerStep.overlap_slowdowns` reduces them to one pair
``(compute, collective)`` for the step's kernels (:attr:`clustersim.workload.ops.Graph.overlap`).

Both fidelities apply it the same way, in two passes: execute the DAG in closed form, measure on
every executor rank how long each compute op ran while one of the rank's collectives of a
measured kind (on another stream) ran, and each such collective while the rank computed; stretch
the op by that overlap x (slowdown - 1) and execute again at the run's fidelity (the flow pass
takes the overlaps of the closed-form pass, which an uncontended flow run equals). One correction, not a fixed point: the
stretched ops overlap a little differently in the second pass (the stretch of pass two is not
re-measured). Point-to-point transfers (pipeline sends) and tensor-parallel collectives inside a
layer (serial with its compute) are not stretched: the probe did not measure them.
"""

from __future__ import annotations

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


def overlap_stretch(graph: Graph, start: list[float], end: list[float]) -> dict[int, float]:
    """Extra seconds of every op that overlapped work of the other kind on its rank: ``{op id: s}``.

    ``start``/``end``: a first execution of ``graph`` (a :class:`~clustersim.simulate.execute.Timeline`'s
    lists). Compute ops (no collective, on the ``compute`` stream) gain ``overlap x (compute
    slowdown - 1)``, collectives of the measured kinds on another stream ``overlap x (collective
    slowdown - 1)``; empty when ``graph.overlap`` is None.

    >>> from clustersim.workload.ops import Coll
    >>> g = Graph()
    >>> c = g.add(0, "compute", "B", "compute", duration=4.0)
    >>> r = g.add(0, "dp", "RS", "comm_dp", coll=Coll("reduce_scatter", [[0, 1]], 1e6, "dp"))
    >>> g.overlap = (1.25, 1.5, ("reduce_scatter",))
    >>> overlap_stretch(g, [0.0, 1.0], [4.0, 3.0])
    {0: 0.5, 1: 1.0}
    """
    if graph.overlap is None:
        return {}
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
                out[op.id] = o * (slowdown - 1.0)
    return out
