"""Segments: the ordered pieces of work inside a layer-like unit and inside a compute op.

A unit (one layer's forward, say) is a list of

* :class:`ComputeSegment` -- GPU seconds of one or several kernels and how many kernels
  (each kernel costs the host one call to issue);
* :class:`HostSegment` -- host-only calls that launch no kernel (a Python autograd.Function's
  identity pass);
* :class:`TPCommSegment` -- a tensor-parallel collective by name and size, not yet bound to a
  group, optionally overlapped with the GEMM beside it.

:func:`op_segments` turns the units of one compute op into the op's segment list (compute merged,
host calls summed into the op's ``host_s``, TP collectives bound to their group as
:class:`TPCollectiveSegment`), and :func:`segment_time` is the one reading of an op segment that
both executors (``simulate/execute.py``, ``simulate/flow.py``) and the trace use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from clustersim.workload.ops import Coll


@dataclass(frozen=True, slots=True)
class ComputeSegment:
    """GPU work of ``kernels`` kernels taking ``seconds`` in all.

    A linear layer's forward GEMM also carries, for TP communication overlap
    (:func:`clustersim.workload.tensor_parallel.overlap_tp`), ``chunk_s``: the seconds of one of the ``tp`` chunks
    the overlap splits it into (its tokens / tp, at that smaller shape's own efficiency), and ``flops``: FLOPs of
    one such chunk (0: not a splittable GEMM). Neither is part of its value (repr, equality).
    """

    seconds: float
    kernels: int = 1
    chunk_s: float = field(default=0.0, repr=False, compare=False)
    flops: float = field(default=0.0, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class HostSegment:
    """``calls`` host calls that launch no kernel (CPU time only)."""

    calls: int = 1


@dataclass(frozen=True, slots=True)
class TPCommSegment:
    """A tensor-parallel collective of a unit (nccl-tests ``size_bytes``), not yet bound to a group.

    ``overlapped_gemm_s`` > 0: the collective runs beside a GEMM of that many seconds
    (``--tp-comm-overlap``, see :func:`clustersim.workload.tensor_parallel.overlap_tp`); the pair takes
    :func:`overlapped_pair`: ``comm_slowdown`` and ``gemm_slowdown`` are how much slower the collective and the GEMM
    run while both share the SMs (the profile's overlap table; 1: not measured).
    """

    op: str
    size_bytes: float
    overlapped_gemm_s: float = 0.0
    axis: str = "tp"  # tp, or ep: the MoE token dispatch/combine over the expert-parallel group
    algorithm: str = "auto"  # nvshmem: the EP dispatch/combine as one-sided puts (parallelism.ep_transport)
    comm_slowdown: float = field(default=1.0, repr=False)
    gemm_slowdown: float = field(default=1.0, repr=False)

    def bind(self, groups: list[list[int]]) -> TPCollectiveSegment:
        """The op-level segment of this collective on the group(s) ``groups`` of its axis."""
        return TPCollectiveSegment(Coll(self.op, groups, self.size_bytes, self.axis, self.algorithm),
                                   self.overlapped_gemm_s, self.comm_slowdown, self.gemm_slowdown)


@dataclass(frozen=True, slots=True)
class TPCollectiveSegment:
    """A tensor-parallel collective inside a compute op, on its group (see :class:`TPCommSegment`)."""

    coll: Coll
    overlapped_gemm_s: float = 0.0
    comm_slowdown: float = field(default=1.0, repr=False)
    gemm_slowdown: float = field(default=1.0, repr=False)


def overlapped_pair(comm: float, gemm: float, comm_slowdown: float = 1.0, gemm_slowdown: float = 1.0) -> float:
    """Seconds of a collective of ``comm`` seconds and a GEMM of ``gemm`` seconds (each alone) run at once, each
    slowed by its factor only while the other runs: the one that ends first ran slowed all along; the other made
    ``1 / slowdown`` of progress meanwhile and finishes the rest at full speed. ``max(comm, gemm)`` when neither
    slows.

    >>> overlapped_pair(2.0, 3.0), overlapped_pair(1.0, 3.0, 1.5, 1.2)
    (3.0, 3.25)
    """
    if comm * comm_slowdown <= gemm * gemm_slowdown:   # the collective ends first
        return gemm + comm * comm_slowdown * (1.0 - 1.0 / gemm_slowdown)
    return comm + gemm * gemm_slowdown * (1.0 - 1.0 / comm_slowdown)


UnitSegment = ComputeSegment | HostSegment | TPCommSegment
OpSegment = ComputeSegment | TPCollectiveSegment


def op_segments(segment_lists: Iterable[list[UnitSegment]], tp_groups: list[list[int]], host_call_s: float,
                host_kernel_s: float, axis_groups: dict[str, list[list[int]]] | None = None
                ) -> tuple[list[OpSegment], float]:
    """Segments of a compute op made of units, and the host seconds to issue them.

    Collectives bind to ``tp_groups``, or to ``axis_groups[axis]`` for another axis (``ep``: the
    expert-parallel group, ``etp``: the expert tensor-parallel group).

    Consecutive compute segments merge into one; every kernel costs ``host_kernel_s`` and every
    other call (a collective, a host-only call) ``host_call_s`` of host time.

    Examples
    --------
    >>> segs, host = op_segments([[ComputeSegment(1.0, 2), HostSegment(1)], [ComputeSegment(0.5),
    ...                            TPCommSegment("all_reduce", 8.0)]], [[0, 1]], 0.1, 0.01)
    >>> segs[0], type(segs[1]).__name__, round(host, 3)
    (ComputeSegment(seconds=1.5, kernels=3), 'TPCollectiveSegment', 0.23)
    """
    out: list[OpSegment] = []
    calls = 0
    kernels = 0
    run_open, run_s, run_kernels = False, 0.0, 0  # the run of consecutive compute segments being merged
    bound: dict[int, TPCollectiveSegment] = {}  # repeated units share their segments: bind each once
    for segments in segment_lists:
        for seg in segments:
            if isinstance(seg, ComputeSegment):
                kernels += seg.kernels
                if run_open:
                    run_s += seg.seconds
                    run_kernels += seg.kernels
                else:
                    run_open, run_s, run_kernels = True, seg.seconds, seg.kernels
            elif isinstance(seg, HostSegment):
                calls += seg.calls
            else:
                calls += 1
                if run_open:
                    out.append(ComputeSegment(run_s, run_kernels))
                    run_open = False
                hit = bound.get(id(seg))
                if hit is None:
                    groups = tp_groups if seg.axis == "tp" else (axis_groups or {})[seg.axis]
                    hit = bound[id(seg)] = seg.bind(groups)
                out.append(hit)
    if run_open:
        out.append(ComputeSegment(run_s, run_kernels))
    return out, calls * host_call_s + kernels * host_kernel_s


def segment_time(seg: OpSegment, comm_time: Callable[[Coll], float]) -> tuple[float, float, float]:
    """``(GPU seconds, of which compute, exposed TP communication)`` of an op segment, with the
    collective at its closed-form time ``comm_time(coll)``.

    A TP collective overlapped with a GEMM of ``g`` seconds takes :func:`overlapped_pair` (``max(comm, g)`` without
    slowdowns): ``g`` counts as compute and only the excess as exposed communication.

    Examples
    --------
    >>> segment_time(ComputeSegment(2.0), comm_time=lambda c: 0.0)
    (2.0, 2.0, 0.0)
    >>> seg = TPCollectiveSegment(Coll("all_gather", [[0, 1]], 8.0, "tp"), overlapped_gemm_s=3.0)
    >>> segment_time(seg, comm_time=lambda c: 5.0)
    (5.0, 3.0, 2.0)
    """
    if isinstance(seg, ComputeSegment):
        return seg.seconds, seg.seconds, 0.0
    comm = comm_time(seg.coll)
    gemm = seg.overlapped_gemm_s
    if not gemm:
        return comm, 0.0, comm
    if seg.comm_slowdown != 1.0 or seg.gemm_slowdown != 1.0:
        total = overlapped_pair(comm, gemm, seg.comm_slowdown, seg.gemm_slowdown)
        return total, gemm, total - gemm
    # max(comm, gemm) and max(0, comm - gemm), spelled out: this runs once per TP collective of a step
    return (comm if comm >= gemm else gemm), gemm, (comm - gemm if comm > gemm else 0.0)
