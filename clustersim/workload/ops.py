"""The per-rank operation DAG that both fidelities execute.

An :class:`Op` runs on one stream of one executor rank (compute, tp, dp, dp_ag, dp_rs, pp,
host). Ops on the same (rank, stream) run in issue order: the builder turns that order into
dependencies, so an executor only needs the ``deps`` lists. Collective ops name the global
ranks of their group(s); a compute op may carry ``segments`` (compute seconds interleaved with
tensor-parallel collectives, :mod:`clustersim.workload.segments`) that the flow executor plays
one by one and the analytical executor folds into its ``duration``. What else an op carries
(host issue time, the other streams it occupies, trace labels) is typed in :class:`OpArgs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Coll:
    """One collective call: nccl-tests size convention, one or several identical groups at once.

    ``algorithm`` and ``protocol`` force NCCL's choice (``NCCL_ALGO``/``NCCL_PROTO``, a generic job's
    phase, or ``nvshmem`` for one-sided expert-parallel puts); ``"auto"`` lets the tuner model pick.
    """

    op: str
    groups: list[list[int]]
    size_bytes: float
    axis: str  # dp | tp | pp | ep | etp
    algorithm: str = "auto"
    protocol: str = "auto"

    @property
    def ranks(self) -> list[int]:
        """The first group (the representative one)."""
        return self.groups[0]


@dataclass(slots=True)
class OpArgs:
    """What an op carries besides its work: host issue time, extra streams, labels.

    Attributes
    ----------
    host_s: host CPU seconds the rank's issue thread spends on the op's calls (kernels and
        collectives it issues, see :func:`clustersim.simulate.execute.host_issue`); None: the op
        is not issued through the host-thread model.
    tracks: other (rank, stream) pairs the op occupies besides its own (a collective that stands
        for several executor ranks' identical calls).
    after_compute: the op starts only after every compute op of its ranks (the gradient-norm
        all-reduce): its traffic never meets TP collectives inside layers.
    micro_batch, chunk, kind, iteration: labels for traces and tests (``kind``: ``"F"``, ``"B"``,
        ``"W"`` (weight gradient) or a fused slot's kinds, ``"BW"``, ``"FBW"``; ``iteration``: of a
        generic job); None where they do not apply.
    """

    host_s: float | None = None
    tracks: tuple[tuple[int, str], ...] = ()
    after_compute: bool = False
    micro_batch: int | None = None
    chunk: int | None = None
    kind: str | None = None
    iteration: int | None = None

    def add_host(self, seconds: float) -> None:
        """Charge the issue thread ``seconds`` more for this op (one more call it makes)."""
        self.host_s = (0.0 if self.host_s is None else self.host_s) + seconds

    def labels(self) -> dict[str, int | str]:
        """The labels that apply, under their trace names (``mb``, ``chunk``, ``kind``, ``iteration``)."""
        out: dict[str, int | str] = {}
        for key, value in (("mb", self.micro_batch), ("chunk", self.chunk), ("kind", self.kind),
                           ("iteration", self.iteration)):
            if value is not None:
                out[key] = value
        return out


@dataclass
class Op:
    """A node of the DAG.

    Attributes
    ----------
    id: position in the op list.
    rank: executor rank (a global rank that represents itself or its symmetric copies).
    stream: stream name on that rank.
    name: label in traces.
    category: what its time counts as: compute | optimizer | host | comm_dp | comm_tp | comm_pp | job.
    duration: seconds of compute/host work (for collective ops: 0; their time comes from the model).
    coll: the collective (collective ops only).
    segments: for compute ops with inner TP collectives: :class:`~clustersim.workload.segments.ComputeSegment`
        and :class:`~clustersim.workload.segments.TPCollectiveSegment` items in order.
    deps: ids of ops that must finish first.
    args: host issue time, extra streams and labels (:class:`OpArgs`).
    """

    id: int
    rank: int
    stream: str
    name: str
    category: str
    duration: float = 0.0
    coll: Coll | None = None
    segments: list | None = None  # ComputeSegment and TPCollectiveSegment items
    deps: list[int] = field(default_factory=list)
    args: OpArgs = field(default_factory=OpArgs)


class Graph:
    """Ops in issue order with stream ordering turned into dependencies.

    ``overlap``: ``(compute slowdown, collective slowdown, collectives)`` while a collective of
    one of those ops overlaps compute on the same rank (the profile's ``overlap_table`` for this
    step's kernels, :meth:`clustersim.workload.compute.ComputeModel.overlap_slowdowns`); None: none.
    """

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._last: dict[tuple[int, str], int] = {}
        self.overlap: tuple[float, float, tuple[str, ...]] | None = None
        #: posted p2p batches of a pipeline program: ``(rank, post op, end op, holds a receive)``
        self.p2p_kernels: list[tuple[int, int, int, bool]] = []
        #: ``(beside a waiting receive, beside a waiting send)`` compute slowdown; None: none
        self.p2p_wait: tuple[float, float] | None = None
        #: ``(compute duty, clock slowdown the kernels were costed at, clock-table points, window s)``; None: none
        self.clock: tuple[float, float, tuple, float] | None = None

    def add(self, rank: int, stream: str, name: str, category: str, *, duration: float = 0.0,
            coll: Coll | None = None, segments: list | None = None, deps: list[int | None] | None = None,
            extra_streams: list[tuple[int, str]] | None = None, host_s: float | None = None,
            after_compute: bool = False, micro_batch: int | None = None, chunk: int | None = None,
            kind: str | None = None, iteration: int | None = None) -> int:
        """Append an op; it waits for ``deps`` (None entries ignored) and the previous op of its
        stream(s): its own and ``extra_streams``. The remaining keywords fill :class:`OpArgs`.

        >>> g = Graph()
        >>> a = g.add(0, "compute", "F0", "compute", duration=1.0, host_s=1e-6, micro_batch=0)
        >>> b = g.add(0, "compute", "B0", "compute", duration=2.0)
        >>> g.ops[b].deps, g.ops[a].args.labels()
        ([0], {'mb': 0})
        """
        oid = len(self.ops)
        tracks = tuple(extra_streams) if extra_streams else ()
        args = OpArgs(host_s, tracks, after_compute, micro_batch, chunk, kind, iteration)
        d = [x for x in deps if x is not None] if deps else []
        last = self._last
        for key in ((rank, stream),) + tracks:
            prev = last.get(key)
            if prev is not None:
                d.append(prev)
            last[key] = oid
        self.ops.append(Op(oid, rank, stream, name, category, duration, coll, segments, sorted(set(d)), args))
        return oid

    def last(self, rank: int, stream: str) -> int | None:
        """The most recent op of a stream."""
        return self._last.get((rank, stream))

    def __len__(self) -> int:
        return len(self.ops)
