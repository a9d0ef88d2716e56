"""Cheap screen of a mix: its memory and a provable lower bound on its step time, with no DAG.

Both come from the :class:`~clustersim.workload.transformer.TransformerStep` that
``run_scenario`` would simulate (:func:`clustersim.simulate.run.transformer_step`): memory is
its ``memory()`` report, and the bound sums the GPU seconds of its own compute items.

Why the bound holds (every op of a rank's compute stream runs one after another, and each
lasts at least the sum of its compute items):

* every compute op lasts at least its compute items plus its TP collectives (``compute_parts``);
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

from clustersim.workload.memory import optimizer_update_bytes
from clustersim.workload.ops import Coll


def _unit_busy(u, tp_time) -> float:
    """GPU seconds of unit ``u`` on the compute stream: its compute items plus its TP collectives
    (``compute_parts`` of the executor: a collective beside a GEMM costs ``max(comm, GEMM)``).
    ``tp_time(op, size) -> seconds`` (None: collectives count 0 s, a weaker bound)."""
    tot = 0.0
    for sg in u.segments:
        if sg[0] == "c":
            tot += sg[1]
        elif sg[0] == "tp":
            ct = tp_time(sg[1], sg[2]) if tp_time is not None else 0.0
            tot += max(ct, sg[3]) if len(sg) > 3 else ct
    return tot


def _busy(units, tp_time) -> float:
    """Summed :func:`_unit_busy` of ``units`` (a chunk repeats one layer unit: summed once per object)."""
    seen: dict[int, list] = {}
    for u in units:
        e = seen.get(id(u))
        if e is None:
            seen[id(u)] = [u, 1]
        else:
            e[1] += 1
    return sum(_unit_busy(u, tp_time) * n for u, n in seen.values())


def _optimizer_seconds(step) -> list[float]:
    """GPU seconds of each pipeline rank's optimizer step (it follows that rank's last backward).

    The same call the DAG makes (``TransformerStep._optimizer_time`` over the rank's shard);
    the gradient scaling kernel some configurations add is left out (a bound may undercount).
    """
    upd = optimizer_update_bytes(step.tr.precision, step.tr.optimizer)
    out = []
    for j in range(step.p):
        n = step.stage_params(j)
        shard = n / step.d if step.par.zero >= 1 else n
        out.append(step._optimizer_time(shard, upd))
    return out


def step_lower_bound(step, comm=None) -> float:
    """Lower bound (seconds) on the step time of ``step`` (a ``TransformerStep``).

    ``comm``: the run's collective-time memo (``CommCache``); with it the TP collectives inside
    each layer count, on the TP group of the stage that runs it (as the DAG lays them out).
    """
    p, v, m = step.p, step.v, step.n_mb
    nvs = step.n_vstages

    def tp_of(j):
        if comm is None or step.t == 1:
            return None
        group = step.layout.group("tp", dp=0, pp=j)
        return lambda op, size: comm(Coll(op, [group], size, "tp"))

    tp_fns = [tp_of(j) for j in range(p)]
    fwd = [_busy(step.chunk_units(vs, "F"), tp_fns[vs % p]) for vs in range(nvs)]
    bwd = [_busy(step.chunk_units(vs, "B"), tp_fns[vs % p]) for vs in range(nvs)]
    work = [m * sum(fwd[c * p + j] + bwd[c * p + j] for c in range(v)) for j in range(p)]
    opt = _optimizer_seconds(step)
    bound = max(w + o for w, o in zip(work, opt))
    if p > 1:
        bound = max(bound, work[p - 1] + sum(fwd[: p - 1]) + sum(bwd[: p - 1]) + min(opt))
    return bound


class UnitCache:
    """Per-layer kernel costs shared by the mixes of one scenario.

    A ``TransformerStep``'s units (the kernels and TP collectives of one layer, the embedding and
    the head, with the sustained-clock slowdown they imply) depend on the model, the profile and
    only four knobs of a mix: ``tp``, ``micro_batch``, ``sequence_parallel`` and ``recompute``.
    Computing them is ~90 % of a screen (the GEMM efficiency table is interpolated per shape), so
    they are computed once per key and handed to every later step with the same key.
    """

    def __init__(self):
        self._units: dict[tuple, tuple] = {}

    def attach(self, step) -> None:
        """Give ``step`` the units of its key (computing them on the first call)."""
        sc = step.sc
        key = (step.t, step.b, step.sp, sc.training.recompute, sc.parallelism.tp_comm_overlap)
        hit = self._units.get(key)
        if hit is None:
            units = step.units  # computes and sets compute_duty / cm.clock_slowdown
            self._units[key] = (units, step.compute_duty, step.cm.clock_slowdown)
            return
        # the same three attributes TransformerStep.units sets on its first call
        step._cache_units, step.compute_duty, step.cm.clock_slowdown = hit


def screen_step(rs, units: UnitCache | None = None, comm=None) -> tuple[dict, float]:
    """``(memory report, step-time lower bound)`` of the resolved scenario ``rs``."""
    from clustersim.simulate.run import transformer_step

    step = transformer_step(rs)
    if units is not None:
        units.attach(step)
    memory = step.memory(rs.cluster.gpu_spec.hbm_GB * 1e9)
    return memory, step_lower_bound(step, comm)
