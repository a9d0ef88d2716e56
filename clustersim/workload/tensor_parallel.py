"""Tensor parallelism (TP) and sequence parallelism (SP) inside a layer: which collectives a TP
region adds to the forward and backward passes, and TP communication overlap.

Megatron-LM wraps every column-parallel / row-parallel pair of GEMMs in two conjugate operators:
``f`` on the way in (identity forward, all-reduce backward; with SP: all-gather forward,
reduce-scatter backward) and ``g`` on the way out (all-reduce forward, identity backward; with
SP: reduce-scatter forward, all-gather backward). Each collective moves one full activation
``b s h`` (16-bit) in nccl-tests size convention.

With SP a column-parallel linear keeps only its rank's sequence shard of its input for the
backward pass (the activation memory of Korthikanti et al., ``sbh/t`` per linear input, which
the memory model counts), so its weight-gradient GEMM needs the input all-gathered again
(:func:`tp_input_regather`; Megatron-LM ``LinearWithGradAccumulationAndAsyncCommunication``,
Transformer Engine likewise). Korthikanti et al. (Table 4, 22B on A100) measured SP saving 3% of
a layer's time; without the regather the model had it saving 8%.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from clustersim.workload.segments import ComputeSegment, HostSegment, TPCommSegment, UnitSegment


def tp_region_entry(tp: int, sequence_parallel: bool, size_bytes: float) -> tuple[list, list]:
    """Segments Megatron's ``f`` operator adds to the forward and to the backward pass.

    The operator is a Python ``autograd.Function``: its identity pass costs a host call too.
    Backward items are in forward order (the caller reverses the whole backward list).

    >>> fwd, bwd = tp_region_entry(2, True, 8.0)
    >>> [type(s).__name__ for s in fwd], [type(s).__name__ for s in bwd]
    (['TPCommSegment'], ['HostSegment', 'TPCommSegment'])
    """
    if tp == 1:
        return [], []
    if sequence_parallel:
        return [TPCommSegment("all_gather", size_bytes)], [HostSegment(1), TPCommSegment("reduce_scatter", size_bytes)]
    return [HostSegment(1)], [TPCommSegment("all_reduce", size_bytes)]


def tp_input_regather(tp: int, sequence_parallel: bool, size_bytes: float) -> list:
    """Backward items (forward order) a column-parallel linear adds after its own GEMMs with SP:
    the all-gather of its sequence-sharded input for the weight gradient. Once the caller reverses
    the backward list it runs before the linear's backward GEMMs.

    >>> tp_input_regather(2, True, 8.0)
    [TPCommSegment(op='all_gather', size_bytes=8.0, overlapped_gemm_s=0.0, axis='tp', algorithm='auto')]
    >>> tp_input_regather(2, False, 8.0), tp_input_regather(1, True, 8.0)
    ([], [])
    """
    if tp == 1 or not sequence_parallel:
        return []
    return [TPCommSegment("all_gather", size_bytes)]


def tp_region_exit(tp: int, sequence_parallel: bool, size_bytes: float) -> tuple[list, list]:
    """Segments Megatron's ``g`` operator adds to the forward and to the backward pass.

    >>> fwd, bwd = tp_region_exit(2, False, 8.0)
    >>> fwd[0].op, type(bwd[0]).__name__
    ('all_reduce', 'HostSegment')
    """
    if tp == 1:
        return [], []
    if sequence_parallel:
        return [TPCommSegment("reduce_scatter", size_bytes)], [TPCommSegment("all_gather", size_bytes)]
    return [TPCommSegment("all_reduce", size_bytes)], [HostSegment(1)]  # identity backward: a host call


#: chunks of a pipelined reduce-scatter overlap: Transformer Engine's default ``num_splits`` of its ``pipeline``
#: userbuffers method (the method Megatron-Core's default overlap config gives the row-parallel forward GEMMs,
#: attention output projection and MLP down projection)
RS_SPLITS = 4

#: ``(gemm flops, collective op) -> (GEMM slowdown, collective slowdown)`` while the two share the GPU
#: (:meth:`clustersim.workload.compute.ComputeModel.overlap_slowdowns` at compute duty 1)
Slowdowns = Callable[[float, str], tuple[float, float]]


def _no_slowdown(flops: float, op: str) -> tuple[float, float]:
    return 1.0, 1.0


def overlap_tp(segments: list[UnitSegment], chunks: int = 1, slowdowns: Slowdowns = _no_slowdown
               ) -> list[UnitSegment]:
    """TP communication overlap (Megatron-Core ``--tp-comm-overlap``, sequence parallel, Transformer Engine's
    userbuffers), priced from what runs at once.

    Forward (``chunks`` = the TP degree ``n`` > 1), each all-gather with the GEMM it feeds and each
    reduce-scatter with the GEMM it drains, split into ``n`` chunks of ``tokens / n`` rows (a GEMM segment's
    ``chunk_s``: one chunk at that smaller shape's own efficiency):

    * all-gather as a ring exchange: the GEMM of the local shard runs while the next shard arrives (a
      ``send_recv`` of ``size / n`` over the group), ``n - 1`` such steps, then the last shard's GEMM alone:
      ``(n - 1) x pair(p, g) + g``;
    * reduce-scatter pipelined in ``k = min(n, RS_SPLITS)`` chunks: the first chunk's GEMM alone, then the
      reduce-scatter of chunk ``i`` (``size / k``) beside the GEMM of chunk ``i + 1``, the last chunk's
      reduce-scatter alone: ``g + (k - 1) x pair(r, g) + r``.

    ``g``: one chunk's GEMM (``chunk_s`` for ``n`` chunks; ``n / k`` of them for the reduce-scatter's), ``p`` /
    ``r``: one chunk's collective at its own size (its latency paid ``n``
    times), ``pair``: the two run at once, each slowed while the other runs by ``s_c`` (the collective) and ``s_g``
    (the GEMM; ``slowdowns(chunk FLOPs, op)``: the profile's overlap table; 1 without one;
    :func:`clustersim.workload.segments.overlapped_pair`). Backward (``chunks`` 1): the
    input regather beside the dgrad GEMM and the input-gradient reduce-scatter beside the wgrad GEMM, each in bulk
    (the two are independent): ``pair(comm, gemm)``. A GEMM without ``chunk_s`` (not a linear's
    forward) is paired in bulk as well. The overlapped GEMM time moves into the collective's
    ``overlapped_gemm_s`` and its segment keeps the kernel count (host issue) with the time not hidden.

    What this cannot beat: the unoverlapped ``comm + gemm`` less the smaller of the two, and it pays the chunks'
    latencies, the smaller GEMMs' efficiency and the SMs the collective takes.

    >>> g = ComputeSegment(2.0, 1, chunk_s=0.55, flops=1e12)
    >>> out = overlap_tp([ComputeSegment(1.0), TPCommSegment("all_gather", 8.0), g], chunks=4)
    >>> [(type(x).__name__, getattr(x, "op", ""), x.size_bytes if hasattr(x, "op") else x.seconds) for x in out]
    [('ComputeSegment', '', 1.0), ('TPCommSegment', 'send_recv', 2.0), ('TPCommSegment', 'send_recv', 2.0), ('TPCommSegment', 'send_recv', 2.0), ('ComputeSegment', '', 0.55)]
    >>> [(round(x.overlapped_gemm_s, 2), x.gemm_slowdown) for x in out if hasattr(x, "op")][:1]
    [(0.55, 1.0)]
    >>> overlap_tp([ComputeSegment(1.0), TPCommSegment("all_gather", 8.0), ComputeSegment(2.0)])[1:]
    [TPCommSegment(op='all_gather', size_bytes=8.0, overlapped_gemm_s=2.0, axis='tp', algorithm='auto'), ComputeSegment(seconds=0.0, kernels=1)]
    """
    out: list[UnitSegment | list[UnitSegment]] = list(segments)
    for i, seg in enumerate(list(out)):
        if not isinstance(seg, TPCommSegment) or seg.overlapped_gemm_s > 0 or seg.axis == "cp":
            continue  # CP traffic overlaps with attention blocks (workload.context_parallel), not with a GEMM
        j = i + 1 if seg.op == "all_gather" else i - 1
        if not (0 <= j < len(out) and isinstance(out[j], ComputeSegment) and out[j].seconds > 0):
            continue
        gemm = out[j]
        assert isinstance(gemm, ComputeSegment)
        if chunks > 1 and gemm.chunk_s > 0:
            s_g, s_c = slowdowns(gemm.flops, seg.op)
            g, n = gemm.chunk_s, chunks
            if seg.op == "all_gather":   # ring exchange: n - 1 shard transfers, each beside a shard's GEMM
                steps = [replace(seg, op="send_recv", size_bytes=seg.size_bytes / n, overlapped_gemm_s=g,
                                 comm_slowdown=s_c, gemm_slowdown=s_g) for _ in range(n - 1)]
                out[i], out[j] = [], steps + [ComputeSegment(g, gemm.kernels * n)]
            else:                        # pipelined: chunk i's reduce-scatter beside chunk i + 1's GEMM
                k = min(n, RS_SPLITS)
                s_g, s_c = slowdowns(gemm.flops * n / k, seg.op)
                g *= n / k
                steps = [replace(seg, size_bytes=seg.size_bytes / k, overlapped_gemm_s=g, comm_slowdown=s_c,
                                 gemm_slowdown=s_g) for _ in range(k - 1)]
                out[j], out[i] = [ComputeSegment(g, gemm.kernels * k)], steps + [replace(seg, size_bytes=seg.size_bytes / k)]
            continue
        s_g, s_c = slowdowns(gemm.flops or 0.0, seg.op)
        out[i] = replace(seg, overlapped_gemm_s=gemm.seconds, comm_slowdown=s_c, gemm_slowdown=s_g)
        out[j] = ComputeSegment(0.0, gemm.kernels)
    flat: list[UnitSegment] = []
    for x in out:
        flat.extend(x if isinstance(x, list) else [x])
    return flat
