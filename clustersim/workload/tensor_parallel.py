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


def overlap_tp(segments: list[UnitSegment]) -> list[UnitSegment]:
    """TP communication overlap (Megatron-Core ``--tp-comm-overlap``, sequence parallel).

    Each all-gather runs beside the GEMM it feeds (the next compute segment), each reduce-scatter
    beside the GEMM it drains (the previous one). In the backward pass a linear's dgrad and wgrad
    GEMMs are two segments then (:class:`~clustersim.workload.layer_costs.LayerCosts`): the input
    regather runs beside the dgrad GEMM, the input-gradient reduce-scatter beside the wgrad GEMM
    (Transformer Engine's bulk overlaps). The GEMM's seconds move into the collective's
    ``overlapped_gemm_s``: the pair takes ``max(comm, gemm)``; the GEMM segment keeps its kernel
    count (host issue) with no GPU time of its own.

    >>> segs = [ComputeSegment(1.0), TPCommSegment("all_gather", 8.0), ComputeSegment(2.0)]
    >>> overlap_tp(segs)[1:]
    [TPCommSegment(op='all_gather', size_bytes=8.0, overlapped_gemm_s=2.0, axis='tp', algorithm='auto'), ComputeSegment(seconds=0.0, kernels=1)]
    """
    out = list(segments)
    for i, seg in enumerate(out):
        if not isinstance(seg, TPCommSegment) or seg.overlapped_gemm_s > 0 or seg.axis == "cp":
            continue  # CP traffic overlaps with attention blocks (workload.context_parallel), not with a GEMM
        j = i + 1 if seg.op == "all_gather" else i - 1
        if 0 <= j < len(out) and isinstance(out[j], ComputeSegment) and out[j].seconds > 0:
            out[i] = replace(seg, overlapped_gemm_s=out[j].seconds)
            out[j] = ComputeSegment(0.0, out[j].kernels)
    return out
