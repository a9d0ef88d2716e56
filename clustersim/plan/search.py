"""The planner: enumerate, drop what breaks a constraint, rank by analytical step time, re-rank the top at flow.

Order of work, cheapest first:

1. every canonical mix of :mod:`clustersim.plan.space` is checked against the structural rules
   of :mod:`clustersim.plan.constraints` (microseconds each);
2. the survivors become scenarios and are *screened* (:mod:`clustersim.plan.bound`): the
   simulator's own memory report drops those that do not fit, and a lower bound on the step time
   orders the rest (milliseconds each, the per-layer kernel costs shared between mixes);
3. mixes are simulated analytically (``run_scenario``) in order of their lower bound until the
   next bound cannot beat the ``keep``-th best step time found (branch and bound: every skipped
   mix is provably slower than every kept plan); ``exhaustive`` simulates them all;
4. the best ``flow_top`` are re-simulated at flow fidelity and re-ranked among themselves.

Steps 2-4 run on a process pool (``workers``; the resolved cluster and profile are inherited
by fork, not rebuilt).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field

from clustersim.errors import ClusterSimError
from clustersim.plan.constraints import Context, Tally, structural_violation
from clustersim.plan.evaluate import Evaluator
from clustersim.plan.result import Plan, PlanReport
from clustersim.plan.space import Mix, SpaceOptions, enumerate_mixes

_EV: Evaluator | None = None  # the worker processes' evaluator (inherited through fork)


@dataclass
class PlanOptions:
    """How to search. ``keep``: plans the bound must protect (default ``max(top, flow_top)``)."""

    top: int = 10
    flow_top: int = 5
    keep: int | None = None
    space: SpaceOptions = field(default_factory=SpaceOptions)
    tp_across_nodes: bool = False
    workers: int = 2
    exhaustive: bool = False
    #: simulate at least every mix whose lower bound is below this many seconds (rank checks)
    simulate_below_s: float | None = None


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


def _screen(mixes: list[Mix]) -> tuple[list[tuple[Mix, float, dict]], Tally]:
    """Scenario rules and memory for ``mixes``: the feasible ones with (bound, memory), and the tally."""
    ev = _EV
    tally = Tally()
    out = []
    for mix in mixes:
        try:
            sc = ev.scenario_for(mix)
        except (ValueError, ClusterSimError) as exc:
            tally.drop("scenario-rules", mix, str(exc).splitlines()[-1][:200])
            continue
        s = ev.screen(sc)
        mem = s.memory
        if not mem["fits"]:
            tally.drop("memory", mix, f"pipeline stage {mem['stage']} needs {_gib(mem['peak_bytes_per_gpu'])} "
                                      f"(states {_gib(mem['params'] + mem['grads'] + mem['optimizer'])}, activations "
                                      f"{_gib(mem['activations'])}) > {_gib(mem['capacity_bytes'])} HBM")
            continue
        out.append((mix, s.bound_s, mem))
    return out, tally


def _simulate(job: tuple[Mix, str]) -> dict:
    """Step time and memory of one mix at one fidelity (a pool task)."""
    mix, fidelity = job
    r = _EV.simulate(mix, fidelity)
    return {"step_time_s": r.step_time_s, "mfu": r.mfu, "tokens_per_s": r.tokens_per_s,
            "peak_bytes_per_gpu": r.memory["peak_bytes_per_gpu"], "fits": bool(r.memory["fits"]),
            "breakdown": r.breakdown}


def _placement(ev: Evaluator, mix: Mix) -> str:
    gpn = ev.gpus_per_node
    order = ev.base.parallelism.order
    where = "inside one node's NVLink domain" if mix.tp <= gpn else f"across {mix.tp // gpn} nodes"
    return f"order {order} (innermost first): TP groups of {mix.tp} adjacent GPUs {where}, pipeline stages outermost"


class _Pool:
    """A fork pool over the evaluator, or inline work for one worker."""

    def __init__(self, workers: int):
        self.pool = None
        if workers > 1:
            self.pool = mp.get_context("fork").Pool(workers)

    def map(self, fn, items, chunksize: int = 1):
        if self.pool is None:
            return [fn(x) for x in items]
        return self.pool.map(fn, items, chunksize=chunksize)

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def _branch_and_bound(pool: _Pool, feasible: list, keep: int, opts: PlanOptions, batch: int) -> list:
    """Analytical results of the feasible mixes (sorted by bound) until the bound cuts off."""
    done = []
    times: list[float] = []
    i = 0
    while i < len(feasible):
        if not opts.exhaustive and len(times) >= keep:
            cut = sorted(times)[keep - 1]
            if opts.simulate_below_s is not None:
                cut = max(cut, opts.simulate_below_s)
            if feasible[i][1] >= cut:
                break
        chunk = feasible[i:i + batch]
        res = pool.map(_simulate, [(m, "analytical") for m, _, _ in chunk])
        for (m, b, mem), r in zip(chunk, res):
            done.append((m, b, r))
            times.append(r["step_time_s"])
        i += len(chunk)
    return done


def plan(source, overrides: list[str] | None = None, options: PlanOptions | None = None) -> PlanReport:
    """Search the parallel configurations of ``source``'s model, batch and cluster.

    >>> rep = plan("scenarios/ref-tp2.yaml", options=PlanOptions(workers=1, flow_top=1))  # doctest: +SKIP
    >>> rep.plans[0].mix.label()                                                          # doctest: +SKIP
    """
    global _EV
    opts = options or PlanOptions()
    t0 = time.perf_counter()
    ev = Evaluator(source, overrides)
    _EV = ev
    m, tr = ev.base.model, ev.base.training
    ctx = Context(heads=m.heads, kv_heads=m.kv_heads, ffn_hidden=m.ffn_hidden, layers=m.layers, seq_len=m.seq_len,
                  global_batch=tr.global_batch, gpus_per_node=ev.gpus_per_node, attention=m.attention,
                  tp_across_nodes=opts.tp_across_nodes)
    tally = Tally()
    survivors = []
    evaluated = 0
    for mix in enumerate_mixes(ev.n_gpus, m.layers, opts.space, seq_len=m.seq_len):
        evaluated += 1
        bad = structural_violation(mix, ctx)
        if bad is None:
            survivors.append(mix)
        else:
            tally.drop(bad[0], mix, bad[1])
    t_enum = time.perf_counter()
    workers = max(1, min(opts.workers, len(survivors)))
    pool = _Pool(workers)
    try:
        n_chunks = max(1, workers * 4)
        parts = [survivors[k::n_chunks] for k in range(n_chunks)]
        feasible = []
        for ok, t in pool.map(_screen, parts):
            feasible += ok
            tally.merge(t)
        feasible.sort(key=lambda x: (x[1], x[0].label()))
        t_screen = time.perf_counter()
        keep = opts.keep or max(opts.top, opts.flow_top, 1)
        done = _branch_and_bound(pool, feasible, keep, opts, batch=2 * workers)
        done.sort(key=lambda x: (x[2]["step_time_s"], x[0].label()))
        t_ana = time.perf_counter()
        plans = [Plan(mix=mx, step_time_s=r["step_time_s"], mfu=r["mfu"], tokens_per_s=r["tokens_per_s"],
                      peak_bytes_per_gpu=r["peak_bytes_per_gpu"], fits=r["fits"], fidelity="analytical",
                      analytical_step_time_s=r["step_time_s"], bound_s=b, breakdown=r["breakdown"],
                      placement=_placement(ev, mx)) for mx, b, r in done]
        n_flow = min(opts.flow_top, len(plans))
        if n_flow:
            flow = pool.map(_simulate, [(p.mix, "flow") for p in plans[:n_flow]])
            for p, r in zip(plans[:n_flow], flow):
                p.step_time_s, p.mfu, p.tokens_per_s = r["step_time_s"], r["mfu"], r["tokens_per_s"]
                p.breakdown, p.fidelity = r["breakdown"], "flow"
            plans[:n_flow] = sorted(plans[:n_flow], key=lambda p: (p.step_time_s, p.mix.label()))
    finally:
        pool.close()
    t_end = time.perf_counter()
    return PlanReport(scenario=ev.base.name, n_gpus=ev.n_gpus, evaluated=evaluated, feasible=len(feasible),
                      simulated=len(done), pruned_by_bound=len(feasible) - len(done), flow_reranked=n_flow,
                      wall_s=t_end - t0, constraints=tally.rows(), plans=plans,
                      timings={"enumerate": t_enum - t0, "screen": t_screen - t_enum, "analytical": t_ana - t_screen,
                               "flow": t_end - t_ana}, evaluator=ev)


def why_dropped(source, mix: Mix, overrides: list[str] | None = None, tp_across_nodes: bool = False) -> tuple[str, str] | None:
    """``(constraint, reason)`` that removes ``mix`` from the space of ``source``, or None if it is feasible."""
    global _EV
    ev = Evaluator(source, overrides)
    _EV = ev
    m, tr = ev.base.model, ev.base.training
    ctx = Context(heads=m.heads, kv_heads=m.kv_heads, ffn_hidden=m.ffn_hidden, layers=m.layers, seq_len=m.seq_len,
                  global_batch=tr.global_batch, gpus_per_node=ev.gpus_per_node, attention=m.attention,
                  tp_across_nodes=tp_across_nodes)
    if mix.dp * mix.tp * mix.pp * mix.ep * mix.cp != ev.n_gpus:
        return "world-size", f"dp*tp*pp*ep*cp = {mix.dp * mix.tp * mix.pp * mix.ep * mix.cp} is not the {ev.n_gpus} GPUs"
    bad = structural_violation(mix, ctx)
    if bad is not None:
        return bad
    _, t = _screen([mix])
    for name, (_, reason) in t.example.items():
        return name, reason
    return None
