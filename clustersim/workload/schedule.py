"""Pipeline schedules: the order in which each pipeline rank runs forward and backward chunks.

A chunk is ``(kind, micro_batch, model_chunk)`` with kind ``"F"`` or ``"B"``. Model chunk ``c``
on pipeline rank ``r`` is virtual stage ``c * p + r`` (Megatron's interleaved layout); with one
chunk per rank the virtual stage is the rank.

* ``gpipe``: all forwards, then all backwards (last micro-batch first).
* ``1f1b`` (PipeDream-Flush): ``p - r - 1`` warm-up forwards, then one-forward-one-backward,
  then the cool-down backwards; at most ``p - r`` micro-batches in flight on rank ``r``.
* ``interleaved``: Megatron-LM's interleaved 1F1B (``forward_backward_pipelining_with_interleaving``):
  ``(p - r - 1) * 2 + (v - 1) * p`` warm-up chunks, micro-batches issued in groups of ``p``.
"""

from __future__ import annotations

from clustersim.errors import ClusterSimError

Chunk = tuple[str, int, int]


def _interleaved_ids(k: int, p: int, v: int, forward: bool) -> tuple[int, int]:
    """(micro_batch, model_chunk) of the k-th forward or backward virtual micro-batch."""
    group, within = divmod(k, p * v)
    chunk = within // p
    if not forward:
        chunk = v - 1 - chunk
    return group * p + within % p, chunk


def pipeline_order(schedule: str, p: int, m: int, rank: int, v: int = 1) -> list[Chunk]:
    """Chunks pipeline rank ``rank`` runs, in order.

    Examples
    --------
    >>> pipeline_order("1f1b", p=2, m=3, rank=0)
    [('F', 0, 0), ('F', 1, 0), ('B', 0, 0), ('F', 2, 0), ('B', 1, 0), ('B', 2, 0)]
    """
    if not 0 <= rank < p:
        raise ClusterSimError(f"pipeline rank {rank} out of range", field="parallelism.pp")
    if schedule == "gpipe" or p == 1 and schedule != "interleaved":
        if schedule == "gpipe":
            return [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in reversed(range(m))]
        # p == 1: forward then backward per micro-batch (plain gradient accumulation)
        out: list[Chunk] = []
        for i in range(m):
            out += [("F", i, 0), ("B", i, 0)]
        return out
    if schedule == "1f1b":
        warm = min(p - rank - 1, m)
        out = [("F", i, 0) for i in range(warm)]
        f, b = warm, 0
        while f < m:
            out.append(("F", f, 0))
            f += 1
            out.append(("B", b, 0))
            b += 1
        out += [("B", i, 0) for i in range(b, m)]
        return out
    if schedule == "interleaved":
        if m % p:
            raise ClusterSimError(f"interleaved schedule needs micro-batches ({m}) divisible by pp ({p})",
                                  field="parallelism.schedule")
        total = m * v
        if p == 1:
            out = []
            for i in range(m):
                out += [("F", i, c) for c in range(v)] + [("B", i, c) for c in reversed(range(v))]
            return out
        warm = min((p - rank - 1) * 2 + (v - 1) * p, total)
        out = []
        for k in range(warm):
            mb, c = _interleaved_ids(k, p, v, True)
            out.append(("F", mb, c))
        fk, bk = warm, 0
        while fk < total:
            mb, c = _interleaved_ids(fk, p, v, True)
            out.append(("F", mb, c))
            fk += 1
            mb, c = _interleaved_ids(bk, p, v, False)
            out.append(("B", mb, c))
            bk += 1
        while bk < total:
            mb, c = _interleaved_ids(bk, p, v, False)
            out.append(("B", mb, c))
            bk += 1
        return out
    raise ClusterSimError(f"unknown pipeline schedule {schedule!r}", field="parallelism.schedule")


def max_in_flight(order: list[Chunk]) -> int:
    """Largest number of chunks whose forward ran and whose backward has not (activation memory).

    >>> max_in_flight([("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("F", 2, 0), ("B", 1, 0), ("B", 2, 0)])
    2
    """
    live, peak = 0, 0
    for kind, _, _ in order:
        live += 1 if kind == "F" else -1
        peak = max(peak, live)
    return peak


def bubble_fraction(schedule: str, p: int, m: int, v: int = 1) -> float:
    """Textbook bubble fraction of the step, ``(p-1)/(v*m + p - 1)`` for uniform stages.

    Idle time ``(p-1)(t_f+t_b)/v`` over the step time ``m (t_f+t_b) + (p-1)(t_f+t_b)/v``
    (Narayanan 2021 quotes the bubble relative to the ideal time, ``(p-1)/(v m)``).

    4 stages, 8 micro-batches: 3/11 of the step idle; interleaving 2 chunks per stage nearly halves it:

    >>> round(bubble_fraction("1f1b", 4, 8), 4), round(bubble_fraction("interleaved", 4, 8, v=2), 4)
    (0.2727, 0.1579)
    """
    if p == 1:
        return 0.0
    vv = v if schedule == "interleaved" else 1
    return (p - 1) / (vv * m + p - 1)
