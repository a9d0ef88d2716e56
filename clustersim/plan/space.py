"""The planner's search space: every mix of parallel degrees and training knobs for one scenario.

A :class:`Mix` is one candidate configuration. :func:`enumerate_mixes` walks the cartesian
product of the axes in :class:`SpaceOptions` in a fixed order and yields only *canonical* mixes:
a knob that has no effect at a degree is pinned (sequence parallel is off at ``tp = 1``; the
schedule is ``1f1b`` with one virtual stage at ``pp = 1``), so the same step is never counted
twice. Whether a mix is *valid* is the business of :mod:`clustersim.plan.constraints`.

``ep`` and ``cp`` are axes of the space. ``ep`` (expert parallelism, carved out of the dp*tp
ranks) is searched over the degrees an MoE model allows (:func:`expert_degrees`); ``cp``
(context parallelism) for long sequences (:func:`cp_degrees`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import product

#: every pipeline schedule the simulator plays (``parallelism.schedule``)
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb_h1", "zb_v", "dualpipe", "dualpipe_v")


@dataclass(frozen=True)
class Mix:
    """One configuration of the space (the fields of the ``parallelism`` and ``training`` sections)."""

    dp: int
    tp: int
    pp: int
    virtual_stages: int
    ep: int
    cp: int
    sequence_parallel: bool
    zero: int
    schedule: str
    micro_batch: int
    recompute: str

    def as_dict(self) -> dict:
        """Plain dictionary (JSON field names)."""
        return asdict(self)

    def label(self) -> str:
        """Short human-readable form, e.g. ``tp8 pp8 dp16 v1 sp z1 1f1b mb1 rc=none``.

        >>> Mix(16, 8, 8, 1, 1, 1, True, 1, "1f1b", 1, "none").label()
        'tp8 pp8 dp16 v1 sp z1 1f1b mb1 rc=none'
        """
        sp = "sp" if self.sequence_parallel else "nosp"
        extra = "".join(f" {k}{v}" for k, v in (("ep", self.ep), ("cp", self.cp)) if v > 1)
        return (f"tp{self.tp} pp{self.pp} dp{self.dp} v{self.virtual_stages}{extra} {sp} z{self.zero} "
                f"{self.schedule} mb{self.micro_batch} rc={self.recompute}")


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n`` in increasing order.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass
class SpaceOptions:
    """Which values each axis may take (``None``: every value the model and cluster allow).

    ``tp``/``pp``: degrees (default: every divisor of the GPU count). ``virtual_stages``: chunks
    per pipeline rank for the interleaved schedule (default: every ``v >= 2`` with ``pp * v``
    dividing the layer count, Megatron's requirement for even chunks). ``micro_batch``: sequences
    per micro-batch (default 1, 2, 4, 8). ``ep``: default :func:`expert_degrees` (1 for a dense
    model). ``cp``: default :func:`cp_degrees` of the sequence length.
    """

    tp: list[int] | None = None
    pp: list[int] | None = None
    virtual_stages: list[int] | None = None
    ep: list[int] | None = None
    cp: list[int] | None = None
    sequence_parallel: list[bool] = field(default_factory=lambda: [False, True])
    zero: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    schedule: list[str] = field(default_factory=lambda: list(SCHEDULES))
    micro_batch: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    recompute: list[str] = field(default_factory=lambda: ["none", "selective", "full"])


def _pipeline_shapes(pp: int, layers: int, opts: SpaceOptions) -> list[tuple[str, int]]:
    """(schedule, virtual_stages) pairs for ``pp`` stages (canonical: pp = 1 runs plain 1F1B)."""
    if pp == 1:
        return [("1f1b", 1)]
    out = []
    for sched in opts.schedule:
        if sched in ("zb_v", "dualpipe_v"):  # two chunks per rank in a V, nothing else
            if 2 * pp <= layers:
                out.append((sched, 2))
            continue
        if sched != "interleaved":
            out.append((sched, 1))
            continue
        vs = opts.virtual_stages
        if vs is None:
            vs = [v for v in range(2, layers // pp + 1) if layers % (pp * v) == 0]
        out += [("interleaved", v) for v in vs if v >= 2]
    return out


#: Context parallelism is searched from this sequence length on: NeMo's long-sequence table
#: (reference §12, Llama 2 7B on H100) finds the best configuration without CP up to 16K tokens
#: and with CP from 32K on.
CP_FROM_SEQ_LEN = 32768
#: Fewest tokens a CP rank keeps: below it the attention blocks are too short to hide the K/V
#: transfers (NeMo's largest CP, 32 at 1M tokens, keeps 32K per rank; 8K is the common
#: pre-training length).
CP_MIN_LOCAL_TOKENS = 8192


def cp_degrees(seq_len: int | None, n_gpus: int) -> list[int]:
    """Context-parallel degrees the planner tries: 1, and for sequences of at least
    :data:`CP_FROM_SEQ_LEN` tokens the powers of two dividing ``n_gpus`` that leave every rank at
    least :data:`CP_MIN_LOCAL_TOKENS` tokens.

    >>> cp_degrees(8192, 64), cp_degrees(131072, 64)
    ([1], [1, 2, 4, 8, 16])
    """
    out = [1]
    if seq_len is None or seq_len < CP_FROM_SEQ_LEN:
        return out
    c = 2
    while n_gpus % c == 0 and seq_len // c >= CP_MIN_LOCAL_TOKENS and seq_len % (2 * c) == 0:
        out.append(c)
        c *= 2
    return out


def expert_degrees(experts: int | None, ranks: int) -> list[int]:
    """Expert-parallel degrees of an MoE layer over ``ranks = dp * tp`` GPUs of a pipeline stage:
    the divisors of ``experts`` that divide ``ranks`` (Megatron-Core carves EP out of the dp*tp
    ranks); ``[1]`` for a dense model.

    >>> expert_degrees(8, 64), expert_degrees(None, 64), expert_degrees(256, 12)
    ([1, 2, 4, 8], [1], [1, 2, 4])
    """
    if not experts:
        return [1]
    return [d for d in divisors(experts) if ranks % d == 0]


def _zeros(opts: SpaceOptions, shards: int) -> list[int]:
    """ZeRO stages of a mix whose states would shard over ``shards`` ranks at most.

    With one rank to shard over (dp*cp = 1 and one expert replica) every stage is ZeRO-0's step
    and memory, so only the lowest stage asked for is kept (:meth:`TransformerStep.build`).
    ZeRO-1 and ZeRO-2 issue the same collectives (one DAG, :mod:`clustersim.simulate.memo`) and
    ZeRO-2 holds less (its gradients sharded too): where both are asked for, ZeRO-1 is ZeRO-2's
    run with more memory and is left out.

    >>> _zeros(SpaceOptions(), 8), _zeros(SpaceOptions(), 1), _zeros(SpaceOptions(zero=[1]), 8)
    ([0, 2, 3], [0], [1])
    """
    if shards <= 1:
        return sorted(opts.zero)[:1]
    return [z for z in opts.zero if not (z == 1 and 2 in opts.zero)]


def _recomputes(opts: SpaceOptions, attention: str | None) -> list[str]:
    """Recompute policies that are different runs: with flash attention nothing of the attention
    core is stored, so ``selective`` (Megatron's core-attention recompute) is ``none``'s step and
    memory; it is kept only where ``none`` is not asked for."""
    rc = list(opts.recompute)
    if attention == "flash" and "none" in rc and "selective" in rc:
        rc.remove("selective")
    return rc


def enumerate_mixes(n_gpus: int, layers: int, opts: SpaceOptions | None = None, seq_len: int | None = None,
                    experts: int | None = None, attention: str | None = None):
    """Yield every canonical :class:`Mix` whose degrees multiply to ``n_gpus`` (``seq_len``: the
    model's sequence, which picks the default context-parallel degrees, :func:`cp_degrees`;
    ``experts``: routed experts of an MoE model, whose default EP degrees are
    :func:`expert_degrees`; ``attention``: ``flash`` collapses selective recompute into none).

    ``dp * tp * pp * cp = n_gpus``; ``ep`` divides ``dp * tp`` (it does not multiply the GPU count,
    Megatron-Core's convention, as ``parallelism.ep``). Mixes that are one run are yielded once: a
    knob that has no effect at a degree is pinned (sequence parallel off at ``tp = 1``; plain
    1F1B at ``pp = 1``; the lowest ZeRO stage where nothing shards, :func:`_zeros`; no
    ``selective`` beside ``none`` under flash attention, :func:`_recomputes`).

    2 GPUs, 4 layers: pp = 1 (tp 1, and tp 2 with and without sequence parallelism) and pp = 2
    with its 7 schedules (interleaved, zb_v and dualpipe_v at two chunks per rank):

    >>> len(list(enumerate_mixes(2, 4, SpaceOptions(zero=[0], micro_batch=[1], recompute=["none"]))))
    10
    """
    opts = opts or SpaceOptions()
    tps = opts.tp if opts.tp is not None else divisors(n_gpus)
    pps = opts.pp if opts.pp is not None else divisors(n_gpus)
    cps = opts.cp if opts.cp is not None else cp_degrees(seq_len, n_gpus)
    rcs = _recomputes(opts, attention)
    for tp, pp, cp in product(tps, pps, cps):
        rest = tp * pp * cp
        if n_gpus % rest:
            continue
        dp = n_gpus // rest
        eps = opts.ep if opts.ep is not None else expert_degrees(experts, dp * tp)
        sps = [False] if tp == 1 else opts.sequence_parallel
        for ep in eps:
            if (dp * tp) % ep:
                continue
            expert_dp = dp * tp // ep if experts else 1
            zeros = _zeros(opts, max(dp * cp, expert_dp))
            for (sched, v), sp, zero, mb, rc in product(_pipeline_shapes(pp, layers, opts), sps, zeros,
                                                        opts.micro_batch, rcs):
                yield Mix(dp=dp, tp=tp, pp=pp, virtual_stages=v, ep=ep, cp=cp, sequence_parallel=sp,
                          zero=zero, schedule=sched, micro_batch=mb, recompute=rc)
