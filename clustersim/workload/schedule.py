"""Pipeline schedules: the order in which each pipeline rank runs forward and backward chunks.

A chunk is ``(kind, micro_batch, model_chunk)`` with kind ``"F"`` or ``"B"``, and for the
zero-bubble and DualPipe schedules (:data:`SPLIT_SCHEDULES`) ``"B"`` the input-gradient pass and
``"W"`` the weight-gradient pass. Model chunk ``c`` on pipeline rank ``r`` is virtual stage
``c * p + r`` (Megatron's interleaved layout); with one chunk per rank the virtual stage is the
rank; the V schedules and DualPipe place chunks as :func:`virtual_stage` says.

* ``gpipe``: all forwards, then all backwards (last micro-batch first).
* ``1f1b`` (PipeDream-Flush): ``p - r - 1`` warm-up forwards, then one-forward-one-backward,
  then the cool-down backwards; at most ``p - r`` micro-batches in flight on rank ``r``.
* ``interleaved``: Megatron-LM's interleaved 1F1B (``forward_backward_pipelining_with_interleaving``):
  ``(p - r - 1) * 2 + (v - 1) * p`` warm-up chunks, micro-batches issued in groups of ``p``.
* ``zb_h1``, ``zb_v`` (Qi et al., "Zero Bubble Pipeline Parallelism"), ``dualpipe``,
  ``dualpipe_v`` (DeepSeek-V3, ``deepseek-ai/DualPipe``): :func:`pipeline_slots`, whose slots
  also say which chunks run as one op (a full backward, an overlapped forward-backward pair).
  :func:`closed_form_bubble` has DeepSeek-V3 Table 2's bubbles.
"""

from __future__ import annotations

from clustersim.config.scenario import split_schedule_problem
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
    if schedule in SPLIT_SCHEDULES:
        return [c for slot in pipeline_slots(schedule, p, m, rank, v) for c in slot]
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


# ---------------------------------------------------------------------- split-backward schedules
#: Schedules that split each backward into the input-gradient pass (kind ``"B"``) and the
#: weight-gradient pass (kind ``"W"``, the weight-gradient GEMMs, see ``Unit.weight_grad``).
SPLIT_SCHEDULES = ("zb_h1", "zb_v", "dualpipe", "dualpipe_v")
#: Schedules whose model chunks sit in a V: chunk 0 of rank ``r`` is virtual stage ``r``, chunk 1 is ``2p - 1 - r``.
V_SCHEDULES = ("zb_v", "dualpipe_v")

Slot = tuple[Chunk, ...]


def chunks_per_rank(schedule: str, v: int = 1) -> int:
    """Model chunks each pipeline rank holds: ``v`` interleaved, 2 for the V schedules and for
    DualPipe (stage ``r`` and, duplicated, stage ``p - 1 - r``), else 1.

    >>> chunks_per_rank("interleaved", 3), chunks_per_rank("dualpipe"), chunks_per_rank("1f1b")
    (3, 2, 1)
    """
    if schedule == "interleaved":
        return v
    return 2 if schedule in V_SCHEDULES or schedule == "dualpipe" else 1


def model_stages(schedule: str, p: int, v: int = 1) -> int:
    """Virtual stages the model is cut into: ``p * chunks`` except DualPipe, whose ``p`` stages are
    each held twice (once per direction).

    >>> model_stages("zb_v", 4), model_stages("dualpipe", 4), model_stages("interleaved", 4, 2)
    (8, 4, 8)
    """
    return p if schedule == "dualpipe" else p * chunks_per_rank(schedule, v)


def virtual_stage(schedule: str, p: int, rank: int, chunk: int) -> int:
    """Virtual stage of model chunk ``chunk`` on pipeline rank ``rank``.

    >>> virtual_stage("interleaved", 4, 1, 1), virtual_stage("zb_v", 4, 1, 1), virtual_stage("dualpipe", 4, 1, 1)
    (5, 6, 2)
    """
    if schedule in V_SCHEDULES:
        return rank if chunk == 0 else 2 * p - 1 - rank
    if schedule == "dualpipe":  # chunk 1 carries the reverse direction: stage p-1-r of the model
        return rank if chunk == 0 else p - 1 - rank
    return chunk * p + rank


def placement(schedule: str, p: int, vstage: int, chunk: int) -> tuple[int, int]:
    """(pipeline rank, model chunk) that runs virtual stage ``vstage`` for a micro-batch now in
    model chunk ``chunk`` (DualPipe: the chunk is the micro-batch's direction and stays).

    >>> placement("zb_v", 4, 5, 0), placement("dualpipe", 4, 1, 1), placement("interleaved", 4, 5, 0)
    ((2, 1), (2, 1), (1, 1))
    """
    if schedule in V_SCHEDULES:
        return (vstage, 0) if vstage < p else (2 * p - 1 - vstage, 1)
    if schedule == "dualpipe":
        return (vstage, 0) if chunk == 0 else (p - 1 - vstage, 1)
    return vstage % p, vstage // p


def pipeline_slots(schedule: str, p: int, m: int, rank: int, v: int = 1) -> list[Slot]:
    """The compute ops of pipeline rank ``rank`` in order, each a tuple of chunks run as one op.

    A one-chunk slot is one pass; ``(B, W)`` is a full backward of a split schedule (the weight
    gradient not deferred); ``(F, B, W)`` is DualPipe's overlapped forward-backward pair
    (:func:`is_overlapped`). Schedules without a split backward have one chunk per slot.

    ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", handcrafted ZB-H1): 1F1B's warm-up
    and steady state, but rank ``r`` runs the weight pass of a micro-batch ``r`` backwards later,
    so the cool-down bubbles fill with weight passes and at most ``p`` micro-batches are in flight
    (as 1F1B's first rank).

    >>> pipeline_slots("zb_h1", p=2, m=3, rank=1)
    [(('F', 0, 0),), (('B', 0, 0),), (('F', 1, 0),), (('B', 1, 0),), (('W', 0, 0),), (('F', 2, 0),), \
(('B', 2, 0),), (('W', 1, 0),), (('W', 2, 0),)]
    """
    if schedule not in SPLIT_SCHEDULES:
        return [(c,) for c in pipeline_order(schedule, p, m, rank, v)]
    if not 0 <= rank < p:
        raise ClusterSimError(f"pipeline rank {rank} out of range", field="parallelism.pp")
    problem = split_schedule_problem(schedule, p, v, m)
    if problem:
        raise ClusterSimError(problem, field="parallelism.schedule")
    if schedule == "zb_h1":
        return _zb_h1(p, m, rank)
    if schedule == "zb_v":
        return _zb_v(p, m, rank)
    if schedule == "dualpipe":
        return _dualpipe(p, m, rank)
    return _dualpipe_v(p, m, rank)


def is_overlapped(slot: Slot) -> bool:
    """A slot whose forward and backward run mutually overlapped (DualPipe's F&B pair).

    >>> is_overlapped((("F", 3, 0), ("B", 0, 1), ("W", 0, 1))), is_overlapped((("B", 0, 1), ("W", 0, 1)))
    (True, False)
    """
    return len(slot) > 1 and slot[0][0] == "F"


def _zb_h1(p: int, m: int, rank: int) -> list[Slot]:
    """ZB-H1 order of rank ``rank`` (see :func:`pipeline_slots`)."""
    warm = min(p - rank - 1, m)
    out: list[Slot] = [(("F", i, 0),) for i in range(warm)]
    f = b = w = 0
    f = warm
    while b < m:
        if f < m:
            out.append((("F", f, 0),))
            f += 1
        out.append((("B", b, 0),))
        b += 1
        if b - w > rank:  # the weight pass trails its backward by `rank` backwards
            out.append((("W", w, 0),))
            w += 1
    out += [(("W", i, 0),) for i in range(w, m)]
    return out


def _dualpipe_steps(ranks: int, rank: int, chunks: int, middle: bool):
    """DualPipe's eight steps on one rank (``deepseek-ai/DualPipe`` ``DualPipe.step``), as items
    ``("F", phase)``, ``("B", phase, zero_bubble)``, ``("W",)`` and ``("FB", phase_f, phase_b)``.

    ``ranks``: ranks in a half (DualPipe) or all ranks (DualPipeV); ``rank``: the rank's position
    in its half; ``chunks``: micro-batches per phase; ``middle``: the rank at the turn of the pipe.
    """
    for _ in range((ranks - rank - 1) * 2):  # 1: nF0
        yield ("F", 0)
    for _ in range(rank + 1):  # 2: nF0F1
        yield ("F", 0)
        yield ("F", 1)
    for _ in range(ranks - rank - 1):  # 3: nB1W1F1 (zero bubble)
        yield ("B", 1, True)
        yield ("W",)
        yield ("F", 1)
    for i in range(chunks - ranks * 2 + rank + 1):  # 4 (main): nF0B1F1B0
        if i == 0 and middle:  # the reference does not overlap this pair, to shorten the bubble
            yield ("F", 0)
            yield ("B", 1, False)
        else:
            yield ("FB", 0, 1)
        yield ("FB", 1, 0)
    for _ in range(ranks - rank - 1):  # 5: nB1F1B0
        yield ("B", 1, False)
        yield ("FB", 1, 0)
    steps6, zb = rank + 1, False  # 6: nB1B0, the second half with zero bubble
    for i in range(steps6):
        if i == steps6 // 2 and rank % 2 == 1:
            zb = True
        yield ("B", 1, zb)
        if i == steps6 // 2 and rank % 2 == 0:
            zb = True
        yield ("B", 0, zb)
    for _ in range(ranks - rank - 1):  # 7: nWB0
        yield ("W",)
        yield ("B", 0, True)
    for _ in range(rank + 1):  # 8: nW
        yield ("W",)


def _phase_slots(steps, chunk_of, mbs_of) -> list[Slot]:
    """Turn :func:`_dualpipe_steps` items into slots: per phase, forwards and backwards take the
    phase's micro-batches in order; deferred weight passes run first in, first out."""
    nf, nb = [0, 0], [0, 0]
    deferred: list[Chunk] = []
    out: list[Slot] = []

    def forward(ph):
        nf[ph] += 1
        return ("F", mbs_of(ph)[nf[ph] - 1], chunk_of(ph))

    def backward(ph, zb):
        nb[ph] += 1
        b = ("B", mbs_of(ph)[nb[ph] - 1], chunk_of(ph))
        w = ("W", b[1], b[2])
        if zb:
            deferred.append(w)
            return (b,)
        return (b, w)

    for item in steps:
        if item[0] == "F":
            out.append((forward(item[1]),))
        elif item[0] == "B":
            out.append(backward(item[1], item[2]))
        elif item[0] == "W":
            out.append((deferred.pop(0),))
        else:
            out.append((forward(item[1]),) + backward(item[2], False))
    return out


def _dualpipe(p: int, m: int, rank: int) -> list[Slot]:
    """DualPipe (DeepSeek-V3): micro-batches ``0 .. m/2-1`` enter at rank 0 (model chunk 0, stage
    ``r``), ``m/2 .. m-1`` at rank ``p-1`` (chunk 1, stage ``p-1-r``); a rank of the second half
    calls the reverse direction its phase 0."""
    half, second = p // 2, rank >= p // 2
    half_rank = min(rank, p - 1 - rank)
    steps = _dualpipe_steps(half, half_rank, m // 2, middle=half_rank == half - 1)
    return _phase_slots(steps, lambda ph: ph ^ second,
                        lambda ph: range((ph ^ second) * (m // 2), (1 + (ph ^ second)) * (m // 2)))


def _dualpipe_v(p: int, m: int, rank: int) -> list[Slot]:
    """DualPipeV, DualPipe cut in half (DeepSeek's ``DualPipeV``): ``p`` ranks, ``2p`` stages in a
    V, every micro-batch enters at rank 0, down through chunk 0 and back up through chunk 1."""
    steps = _dualpipe_steps(p, rank, m, middle=rank == p - 1)
    return _phase_slots(steps, lambda ph: ph, lambda ph: range(m))


def _zb_v(p: int, m: int, rank: int) -> list[Slot]:
    """ZB-V order of rank ``rank`` (Qi et al., "Zero Bubble Pipeline Parallelism", ZB-V: two
    chunks per rank in a V, chunk 0 = stage ``r``, chunk 1 = stage ``2p-1-r``).

    Warm-up: ``2(p-r)-1`` forwards of chunk 0, ``r`` pairs of forwards (chunk 1, chunk 0), then
    ``p-r`` rounds of chunk 1's forward, backward and weight pass; steady state, until every
    forward ran: forward, backward and weight pass of chunk 0, then of chunk 1; cool-down: ``r``
    backwards of both chunks with their weight passes deferred, ``p-r`` backward-weight pairs of
    chunk 0, then the deferred weight passes (chunk 1 first). Each pass runs only once its
    predecessor on the rank has (a backward after its forward, a weight pass after its
    backward), so short steps (``m < 2p``) keep the same shape. At most ``2p`` chunk activations
    are in flight on a rank: the ``p`` stage activations of 1F1B's first rank.
    """
    out: list[Slot] = []
    done = {k: [0, 0] for k in "FBW"}

    def run(kind: str, chunk: int) -> None:
        n = done[kind][chunk]
        if n < (m if kind == "F" else done["F" if kind == "B" else "B"][chunk]):
            out.append(((kind, n, chunk),))
            done[kind][chunk] += 1

    for _ in range(2 * (p - rank) - 1):
        run("F", 0)
    for _ in range(rank):
        run("F", 1)
        run("F", 0)
    for _ in range(p - rank):
        for kind in "FBW":
            run(kind, 1)
    f = done["F"]
    while f[1] < f[0] or f[0] < m:
        for chunk in (0, 1):
            for kind in "FBW":
                run(kind, chunk)
    for _ in range(rank):
        run("B", 0)
        run("B", 1)
    for _ in range(p - rank):
        run("B", 0)
        run("W", 0)
    for chunk in (1, 0):
        while done["W"][chunk] < done["B"][chunk]:
            run("W", chunk)
    return out


def max_in_flight(order: list[Chunk]) -> int:
    """Largest number of chunks whose forward ran and whose backward has not (activation memory);
    with a split backward, whose weight pass has not (it reads the inputs of the layer's GEMMs).

    >>> max_in_flight([("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("F", 2, 0), ("B", 1, 0), ("B", 2, 0)])
    2
    >>> max_in_flight([("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("W", 0, 0), ("B", 1, 0), ("W", 1, 0)])
    2
    """
    release = "W" if any(kind == "W" for kind, _, _ in order) else "B"
    live, peak = 0, 0
    for kind, _, _ in order:
        live += 1 if kind == "F" else -1 if kind == release else 0
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
    if schedule in SPLIT_SCHEDULES:
        raise ValueError(f"{schedule}'s bubble depends on F, B and W: see closed_form_bubble")
    if p == 1:
        return 0.0
    vv = v if schedule == "interleaved" else 1
    return (p - 1) / (vv * m + p - 1)


def closed_form_bubble(schedule: str, p: int, f: float, b: float, w: float, fb: float | None = None) -> float:
    """Published idle time per rank of a step (DeepSeek-V3 Table 2) for uniform chunks: ``f`` the
    forward, ``b`` the full backward, ``w`` the weight-gradient pass of one chunk, ``fb`` an
    overlapped forward-backward pair (default ``f + b``: nothing to overlap).

    1F1B ``(p-1)(F+B)``; ZB1P ``(p-1)(F+B-2W)``; DualPipe ``(p/2-1)(F&B+B-3W)``. ZB-V and DualPipeV
    hold two half-stage chunks per rank: ZB1P's form over the chunks, and DualPipe's over ``2p``
    half stages, ``(p-1)(F&B+B-3W)``. DualPipe's form is derived for balanced chunks (a forward
    as long as an input-gradient pass); ``docs/validation.md`` §13 shows the played orders.

    >>> closed_form_bubble("1f1b", 8, 1.0, 2.0, 1.0), closed_form_bubble("zb_h1", 8, 1.0, 2.0, 1.0)
    (21.0, 7.0)
    >>> closed_form_bubble("dualpipe", 8, 1.0, 2.0, 1.0)
    6.0
    """
    fb = f + b if fb is None else fb
    forms = {"1f1b": (p - 1) * (f + b), "zb_h1": (p - 1) * (f + b - 2 * w), "zb_v": (p - 1) * (f + b - 2 * w),
             "dualpipe": (p / 2 - 1) * (fb + b - 3 * w), "dualpipe_v": (p - 1) * (fb + b - 3 * w)}
    if schedule not in forms:
        raise ValueError(f"no closed form for {schedule!r} here (1f1b, zb_h1, zb_v, dualpipe, dualpipe_v)")
    return forms[schedule]
