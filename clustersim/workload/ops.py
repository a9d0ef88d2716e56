"""The per-rank operation DAG that both fidelities execute.

An :class:`Op` runs on one stream of one executor rank (compute, tp, dp, dp_ag, dp_rs, pp,
host). Ops on the same (rank, stream) run in issue order: the builder turns that order into
dependencies, so an executor only needs the ``deps`` lists. Collective ops name the global
ranks of their group(s); a compute op may carry ``segments`` (compute seconds interleaved with
tensor-parallel collectives) that the flow executor plays one by one and the analytical
executor folds into its ``duration``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Coll:
    """One collective call: nccl-tests size convention, one or several identical groups at once."""

    op: str
    groups: list[list[int]]
    size_bytes: float
    axis: str  # dp | tp | pp | job

    @property
    def ranks(self) -> list[int]:
        """The first group (the representative one)."""
        return self.groups[0]


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
    segments: for compute ops with inner TP collectives: ``("c", seconds)`` and ``("tp", Coll)`` items.
    deps: ids of ops that must finish first.
    """

    id: int
    rank: int
    stream: str
    name: str
    category: str
    duration: float = 0.0
    coll: Coll | None = None
    segments: list | None = None
    deps: list[int] = field(default_factory=list)
    args: dict = field(default_factory=dict)


class Graph:
    """Ops in issue order with stream ordering turned into dependencies."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._last: dict[tuple[int, str], int] = {}

    def add(self, rank: int, stream: str, name: str, category: str, *, duration: float = 0.0,
            coll: Coll | None = None, segments: list | None = None, deps: list[int] | None = None,
            extra_streams: list[tuple[int, str]] | None = None, **args) -> int:
        """Append an op; it waits for ``deps`` and the previous op of its stream(s)."""
        oid = len(self.ops)
        if extra_streams:
            args["_tracks"] = list(extra_streams)
        d = [x for x in (deps or []) if x is not None]
        keys = [(rank, stream)] + list(extra_streams or [])
        for key in keys:
            prev = self._last.get(key)
            if prev is not None:
                d.append(prev)
            self._last[key] = oid
        self.ops.append(Op(oid, rank, stream, name, category, duration, coll, segments,
                           sorted(set(d)), args))
        return oid

    def last(self, rank: int, stream: str) -> int | None:
        """The most recent op of a stream."""
        return self._last.get((rank, stream))

    def __len__(self) -> int:
        return len(self.ops)
