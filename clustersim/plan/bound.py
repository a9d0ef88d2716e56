"""Cheap screen of a mix: its memory and a provable lower bound on its step time, with no DAG.

Both come from the :class:`~clustersim.workload.transformer.TransformerStep` that
``run_scenario`` would simulate (:func:`clustersim.simulate.run.transformer_step`): memory is
its ``memory()`` report, and the bound sums the GPU seconds of its own compute items.

Why the bound holds (every op of a rank's compute stream runs one after another, and each
lasts at least the sum of its compute items):

* every compute op lasts at least its compute items plus its TP collectives (``segment_time``);
* every pipeline rank ``j`` runs the forward and backward of all its virtual stages for all
  ``m`` micro-batches: ``T >= W_j = m * sum_c (F[c p + j] + B[c p + j])``;
* the last pipeline rank cannot start before micro-batch 0's forward crossed virtual stages
  ``0 .. p-2``, and after its last op (a backward of its first chunk, virtual stage ``p-1``, in
  every schedule here) that micro-batch's backward still crosses stages ``p-2 .. 0``:
  ``T >= W_{p-1} + sum_{vs < p-1} (F[vs] + B[vs])``.

Every rank's optimizer step runs after its last backward, so its GPU seconds add to ``W_j``.
Host issue time, collectives and recompute-extra kernels only add to ``T``.
"""

from __future__ import annotations

from clustersim.workload.moe_costs import EP_AXES
from clustersim.workload.step_pipeline import overlap_pair
from clustersim.workload.segments import ComputeSegment, TPCommSegment, segment_time


#: collective axes of an MoE layer the bound counts on their own groups: the dispatch/combine
#: (one all-to-all, or the node-limited rail and node stages) and the expert-TP gather
EXPERT_AXES = (*EP_AXES, "etp")


class _Busy:
    """GPU seconds of units on the compute stream, memoised for one bound: a unit's compute
    segments plus its TP collectives on a TP group, read by the executors' own
    :func:`segment_time` (a collective beside a GEMM costs ``max(comm, GEMM)``). Without ``comm``
    the collectives count 0 s (a weaker bound).

    ``seg_times``: ``{(TP segment, group): seconds}`` kept across bounds (the planner's
    :class:`UnitCache`): the same few layer collectives on the same groups recur in every mix.
    """

    def __init__(self, comm, seg_times: dict | None = None):
        self.comm = comm
        self.seg_times = {} if seg_times is None else seg_times
        self._units: dict[tuple, tuple] = {}  # (id(unit), group) -> (unit, seconds): the unit kept alive

    def seg(self, seg, tp_group) -> float:
        """Seconds of TP segment ``seg`` on ``tp_group`` (a list of ranks)."""
        key = (seg, tuple(tp_group))
        t = self.seg_times.get(key)
        if t is None:
            t = self.seg_times[key] = segment_time(seg.bind([tp_group]), self.comm)[0]
        return t

    def seg_on(self, seg, groups) -> float:
        """Seconds of segment ``seg`` bound to ``groups`` (an expert axis: every group of the
        collective, as the DAG binds it, :func:`~clustersim.workload.segments.op_segments`)."""
        key = (seg, tuple(map(tuple, groups)))
        t = self.seg_times.get(key)
        if t is None:
            t = self.seg_times[key] = segment_time(seg.bind(groups), self.comm)[0]
        return t

    def comm_seconds(self, seg, tp_group, axes) -> float:
        """GPU seconds of collective segment ``seg``: on its TP group, or on the groups of its
        expert axis (``axes``: the stage's ``expert_axis_groups``: EP dispatch/combine, expert TP);
        else (no ``comm``, CP collectives) the compute beside it only (a weaker bound)."""
        if self.comm is not None and seg.axis == "tp" and tp_group is not None:
            return self.seg(seg, tp_group)
        if self.comm is not None and seg.axis in EXPERT_AXES and axes and seg.axis in axes:
            return self.seg_on(seg, axes[seg.axis])
        return seg.overlapped_gemm_s

    def unit(self, u, tp_group, axes=None, stage=None) -> float:
        """GPU seconds of unit ``u`` with its TP collectives on ``tp_group`` (None: no TP) and its
        expert-axis ones on ``axes`` (those of pipeline rank ``stage``)."""
        gk = (None if tp_group is None else tuple(tp_group), stage if axes else None)
        hit = self._units.get((id(u), gk))
        if hit is not None and hit[0] is u:
            return hit[1]
        tot = 0.0
        for seg in u.segments:
            if isinstance(seg, ComputeSegment):
                tot += seg.seconds
            elif isinstance(seg, TPCommSegment):
                tot += self.comm_seconds(seg, tp_group, axes)
        self._units[(id(u), gk)] = (u, tot)
        return tot

    def units(self, units, tp_group, axes=None, stage=None) -> float:
        """Summed :meth:`unit` of ``units`` (a chunk repeats one layer unit: summed once per object)."""
        seen: dict[int, list] = {}
        for u in units:
            e = seen.get(id(u))
            if e is None:
                seen[id(u)] = [u, 1]
            else:
                e[1] += 1
        return sum(self.unit(u, tp_group, axes, stage) * n for u, n in seen.values())


def _busy(units, tp_group, comm) -> float:
    """GPU seconds of ``units`` with their TP collectives on ``tp_group`` (see :class:`_Busy`)."""
    return _Busy(comm).units(units, tp_group)


def _optimizer_seconds(step) -> list[float]:
    """GPU seconds of each pipeline rank's optimizer step (it follows that rank's last backward):
    ``TransformerStep.optimizer_seconds`` over the rank's shard, as the DAG; the gradient scaling
    kernel some configurations add is left out (a bound may undercount)."""
    out = []
    for j in range(step.pp):
        n = step.stage_params(j)
        out.append(step.optimizer_seconds(n / step.grad_dp if step.parallelism.zero >= 1 else n))
    return out


def step_lower_bound(step, comm=None, seg_times: dict | None = None) -> float:
    """Lower bound (seconds) on the step time of ``step`` (a ``TransformerStep``).

    ``comm``: the run's collective-time memo (``CommCache``); with it the TP collectives inside
    each layer count, on the TP group of the stage that runs it (as the DAG lays them out).
    ``seg_times``: a memo of those collectives' times kept across bounds (see :class:`_Busy`).
    """
    bz = _Busy(comm, seg_times)
    p, v, m = step.pp, step.virtual_stages, step.micro_batches
    nvs = step.n_virtual_stages
    if step.split_backward:  # zero-bubble and DualPipe schedules: every chunk a rank runs, at its own count
        return _split_schedule_bound(step, bz)
    groups = [step.layout.group("tp", dp=0, pp=j) if step.tp > 1 else None for j in range(p)]
    axes = [_expert_axes(step, j) for j in range(p)]
    fwd = [bz.units(step.chunk_units(vs, "F"), groups[vs % p], axes[vs % p], vs % p) for vs in range(nvs)]
    bwd = [bz.units(step.chunk_units(vs, "B"), groups[vs % p], axes[vs % p], vs % p) for vs in range(nvs)]
    work = [m * sum(fwd[c * p + j] + bwd[c * p + j] for c in range(v)) for j in range(p)]
    opt = _optimizer_seconds(step)
    bound = max(w + o for w, o in zip(work, opt))
    if p > 1:
        bound = max(bound, work[p - 1] + sum(fwd[: p - 1]) + sum(bwd[: p - 1]) + min(opt))
    return bound


def _expert_axes(step, stage: int) -> dict | None:
    """The expert-axis groups (EP, expert TP) of pipeline rank ``stage`` of replica 0, as the DAG
    binds that rank's MoE collectives; None for a dense model."""
    if not step.experts:
        return None
    return {k: v for k, v in (step.expert_axis_groups(0, stage) or {}).items() if k in EXPERT_AXES}


def _compute_seconds(units) -> float:
    return sum(seg.seconds for u in units for seg in u.segments if hasattr(seg, "seconds"))


def _split_schedule_bound(step, bz: _Busy) -> float:
    """Per rank: the earliest its first op can start plus the GPU seconds of its compute ops (its
    slots in its own order: forward, input- and weight-gradient passes of every micro-batch each
    chunk runs; DualPipe's chunks run half the micro-batches each) and optimizer step; the largest
    over the ranks.

    A rank's first op is a forward of one of its chunks, whose micro-batch must first cross every
    model stage before that chunk's stage (``vstage`` numbers the stages in the direction the data
    flows, DualPipe's reverse copies included), so it starts no earlier than the smallest sum of
    those stages' forwards over the rank's chunks.

    A slot is counted at the GPU seconds of the compute op the DAG makes of it, read by the
    executors' :func:`segment_time`: its chunks' units with the gradient work of its micro-batches
    and, for DualPipe's overlapped F&B pair, each collective beside the other chunk's compute
    (:func:`~clustersim.workload.step_pipeline.overlap_pair`). Where data parallelism splits a
    slot into one op per unit, the units run unpaired, which takes at least as long (the pair
    takes ``max(comm, compute)`` where they run apart ``comm + compute``). Without ``comm``, or
    with collectives of another axis (EP, CP) in a pair, a pair counts its compute only (a weaker
    bound).
    """
    opt = _optimizer_seconds(step)
    pairs: dict[tuple, tuple] = {}  # (unit ids, group) -> (units, seconds): the units kept alive
    fwd = [_compute_seconds(step.chunk_units(vs, "F")) for vs in range(step.n_virtual_stages)]
    before = [sum(fwd[:vs]) for vs in range(step.n_virtual_stages)]
    out = 0.0
    for j in range(step.pp):
        group = step.layout.group("tp", dp=0, pp=j) if step.tp > 1 else None
        axes = _expert_axes(step, j)
        work = 0.0
        for sig, n in step.slot_counts(j).items():
            units = [step.chunk_units(step.vstage(j, chunk), kind, step.micro_batch_like(later, last))
                     for kind, chunk, later, last in sig]
            if len(sig) > 1 and sig[0][0] == "F":  # an overlapped F&B pair (schedule.is_overlapped)
                first, second = units[0], [u for us in units[1:] for u in us]
                key = (tuple(map(id, first)), tuple(map(id, second)), None if group is None else tuple(group),
                       j if axes else None)
                hit = pairs.get(key)
                if hit is None:
                    hit = pairs[key] = ((first, second), _pair_busy(first, second, group, bz, axes))
                work += n * hit[1]
            else:
                work += n * sum(bz.units(us, group, axes, j) for us in units)
        start = min(before[step.vstage(j, c)] for c in range(step.virtual_stages))
        out = max(out, start + work + opt[j])
    return out


def _pair_busy(first, second, tp_group, bz: _Busy, axes: dict | None = None) -> float:
    """GPU seconds of the overlapped pair of the units ``first`` and ``second`` (as
    :func:`~clustersim.workload.step_pipeline._fused_slot` makes it), or their compute only
    where that cannot be read here (no ``comm``, or a collective of another axis than TP and the
    expert axes of ``axes``)."""
    a = [seg for u in first for seg in u.segments]
    b = [seg for u in second for seg in u.segments]
    axes_used = {x.axis for x in a + b if isinstance(x, TPCommSegment)}
    if bz.comm is not None and axes and axes_used & set(EXPERT_AXES) and axes_used <= {"tp", *axes} \
            and (tp_group is not None or "tp" not in axes_used):
        # an MoE pair: each collective on its own groups beside the other chunk's compute
        return sum(seg.seconds if isinstance(seg, ComputeSegment) else bz.comm_seconds(seg, tp_group, axes)
                   for seg in overlap_pair(a, b) if isinstance(seg, (ComputeSegment, TPCommSegment)))
    if bz.comm is None or tp_group is None or any(isinstance(x, TPCommSegment) and x.axis != "tp" for x in a + b):
        return _compute_seconds(first) + _compute_seconds(second)
    total = 0.0
    for seg in overlap_pair(a, b):
        if isinstance(seg, ComputeSegment):
            total += seg.seconds
        elif isinstance(seg, TPCommSegment):
            total += bz.seg(seg, tp_group)
    return total


class UnitCache:
    """Per-layer kernel costs shared by the mixes of one scenario.

    A ``TransformerStep``'s units (the kernels and TP collectives of one layer, the embedding and
    the head, with the sustained-clock slowdown they imply) depend on the model, the profile and
    only these knobs of a mix: ``tp``, ``micro_batch``, ``sequence_parallel``, ``recompute``, ``cp``
    (and ``tp_comm_overlap`` and ``cp_algorithm``, scenario settings), and for an MoE model its
    expert grid and routing load (``TransformerStep.experts``: ep, expert TP, the nodes an EP group
    spans, the tokens per expert). Computing them is ~90 % of a screen (the GEMM
    efficiency table is interpolated per shape), so they are computed once per key and handed to
    every later step with the same key.
    """

    def __init__(self):
        self._units: dict[tuple, tuple] = {}
        self._split: dict[tuple, tuple] = {}  # the split-backward units (zero-bubble schedules)
        self.seg_times: dict[tuple, float] = {}  # TP collective times on their groups (_Busy)

    def attach(self, step) -> None:
        """Give ``step`` the units of its key (computing them on the first call)."""
        key = (step.tp, step.micro_batch, step.sequence_parallel, step.training.recompute,
               step.parallelism.tp_comm_overlap, step.cp, step.parallelism.cp_algorithm)
        if step.experts is not None:  # an MoE layer's units (and the duty they weigh in) follow its EP grid and load
            key += (step.experts,)
        hit = self._units.get(key)
        if hit is None:
            units = step.units  # computes them and sets compute_duty / compute.clock_slowdown
            hit = self._units[key] = (units, step.compute_duty, step.compute.clock_slowdown, step.moe_units)
        else:
            step.use_units(*hit[:3])
            step._moe_units = hit[3]
        if step.split_backward:  # the split backward's units: the same key decides them
            split = self._split.get(key)
            if split is None:
                split = self._split[key] = (step.split_units, step._split_moe_layer)
            step.__dict__["split_units"], step.__dict__["_split_moe_layer"] = split


def screen_step(rs, units: UnitCache | None = None, comm=None) -> tuple[dict, float]:
    """``(memory report, step-time lower bound)`` of the resolved scenario ``rs`` (bound 0 when it
    does not fit: the planner drops it unbounded)."""
    from clustersim.simulate.run import transformer_step

    step = transformer_step(rs)
    if units is not None:
        units.attach(step)
    memory = step.memory(rs.cluster.gpu_spec.hbm_bytes)
    if not memory["fits"]:  # dropped for memory: its bound is never read
        return memory, 0.0
    return memory, step_lower_bound(step, comm, units.seg_times if units is not None else None)
