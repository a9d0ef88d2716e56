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
4. the best ``flow_top`` are re-simulated at flow fidelity and re-ranked among themselves, each
   as soon as it is provably among them (overlapping the end of step 3).

Steps 2-4 run on a process pool (``workers``; the resolved cluster and profile are inherited
by fork, not rebuilt). Mixes whose DAGs are identical (ZeRO-1/2, selective recompute under flash
attention) are executed once (:mod:`clustersim.simulate.memo`); nothing is approximated, the
plans are those of executing every mix (``PlanOptions(reuse=False)``, the tests' reference).
"""

from __future__ import annotations

import collections
import gc
import math
import multiprocessing as mp
import queue
import time
from dataclasses import dataclass, field, replace

from clustersim.errors import ClusterSimError
from clustersim.plan.constraints import Context, Tally, structural_violation
from clustersim.plan.evaluate import Evaluator
from clustersim.plan.distinguish import mark_distinguishable, plan_evidence
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
    #: execute a DAG identical to one already executed only once (:mod:`clustersim.simulate.memo`);
    #: False executes every mix's DAG (the reference the tests compare against)
    reuse: bool = True
    #: a mix that does not fit drops the larger micro-batches and less-recomputing policies of its
    #: memory group unscreened (:func:`_memory_group`); False screens every mix (``exhaustive`` too)
    memory_monotone: bool = True


#: Most mixes one plan screens (scenario rules, memory, the analytical bound), each 4-13 ms of one
#: core (gpt3-175b's 9,324 in 40 s; llama2-7b-nemo-cp's 22,221 would take ~3 minutes; dev VM,
#: 2026-12-02): 16,384 keep a plan near a minute on two workers. Every shipped scenario but the
#: 128-GPU CP one (22,221) stays below (the next largest, llama3-405b-128k, has 10,926).
MAX_SCREENED_MIXES = 16_384


def check_screen_work(n: int, enumerated: int) -> None:
    """Refuse a plan whose structurally valid mixes exceed :data:`MAX_SCREENED_MIXES`, before screening."""
    if n > MAX_SCREENED_MIXES:
        raise ClusterSimError(
            f"{n:,} of the {enumerated:,} mixes pass the structural rules and would each be screened (4-13 ms "
            f"each, minutes in all), more than the bound of {MAX_SCREENED_MIXES:,}; narrow the space with --tp, "
            "--pp, --micro-batch, --zero, --schedule or --recompute", field="parallelism")


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


#: recompute policies from least to most activation memory (full keeps each layer's input only;
#: selective drops the attention scores none keeps)
RECOMPUTE_MEMORY = ("full", "selective", "none")


def _memory_group(mix: Mix) -> Mix:
    """Mixes that differ only in micro-batch and recompute policy: their states are one, and their
    activations grow with the micro-batch and from full to selective to none recompute. Screened in
    that order, a mix that does not fit drops every later one of its group unscreened
    (``PlanOptions.memory_monotone``; the in-flight micro-batches of a schedule at half as many
    micro-batches are at least half as many, so twice the micro-batch never holds less; checked
    against screening all on 520 groups of DeepSeek-V3, Mixtral, GPT-3 175B and Llama 3 405B)."""
    return replace(mix, micro_batch=0, recompute="")


def _screen_order(mix: Mix) -> tuple:
    """Screening order: mixes of one pipeline shape together (schedule, depth, chunks, dp: they share
    the schedule's orders and counts, TransformerStep's caches), a memory group's
    members contiguous in micro-batch, then recompute-memory order (:func:`_memory_group`)."""
    return (mix.schedule, mix.pp, mix.virtual_stages, mix.dp, _memory_group(mix).label(), mix.micro_batch,
            RECOMPUTE_MEMORY.index(mix.recompute))


def _screen(mixes: list[Mix], keys: list | None = None) -> tuple[list[tuple[Mix, float, dict]], Tally, dict]:
    """Scenario rules and memory for ``mixes``: the feasible ones with (bound, memory), the tally,
    and per constraint the dropped mix of smallest ``keys`` entry (default: the first) as
    ``{constraint: (key, mix, reason)}``, so the examples do not depend on how work was split."""
    with _no_gc():
        return _screen_all(mixes, keys if keys is not None else list(range(len(mixes))))


def _screen_part(job: tuple[list, list]):
    """:func:`_screen` of a pool task ``(mixes, keys)``."""
    return _screen(*job)


def _screen_all(mixes: list[Mix], keys: list) -> tuple[list[tuple[Mix, float, dict]], Tally, dict]:
    ev = _EV
    tally = Tally()
    first: dict[str, tuple] = {}
    out = []

    def drop(name: str, mix: Mix, reason: str, key) -> None:
        tally.drop(name, mix, reason)
        if name not in first or key < first[name][0]:
            first[name] = (key, mix, reason)

    failed: dict[Mix, list[tuple[int, int]]] = {}  # memory group -> (micro-batch, recompute rank) that did not fit
    for mix, key in zip(mixes, keys):
        group, rank = _memory_group(mix), RECOMPUTE_MEMORY.index(mix.recompute)
        if ev.memory_monotone and any(mb <= mix.micro_batch and r <= rank for mb, r in failed.get(group, ())):
            tally.removed["memory"] = tally.removed.get("memory", 0) + 1  # counted, not an example: not screened
            continue
        try:
            sc = ev.scenario_for(mix)
        except (ValueError, ClusterSimError) as exc:
            drop("scenario-rules", mix, str(exc).splitlines()[-1][:200], key)
            continue
        s = ev.screen(sc)
        mem = s.memory
        if not mem["fits"]:
            failed.setdefault(group, []).append((mix.micro_batch, rank))
            drop("memory", mix, f"pipeline stage {mem['stage']} needs {_gib(mem['peak_bytes_per_gpu'])} "
                                f"(states {_gib(mem['params'] + mem['grads'] + mem['optimizer'])}, activations "
                                f"{_gib(mem['activations'])}) > {_gib(mem['capacity_bytes'])} HBM", key)
            continue
        out.append((mix, s.bound_s, mem))
    return out, tally, first


def _simulate(job: tuple[tuple[Mix, ...], str]) -> list[dict]:
    """Step time and memory of a group of mixes at one fidelity (a pool task). The group is mixes
    likely to share one DAG (:func:`_groups`): the evaluator's memo executes a DAG once, the
    others only have their DAG built and compared (:mod:`clustersim.simulate.memo`)."""
    mixes, fidelity = job
    out = []
    with _no_gc():
        for mix in mixes:
            r = _EV.simulate(mix, fidelity)
            out.append({"step_time_s": r.step_time_s, "mfu": r.mfu, "tokens_per_s": r.tokens_per_s,
                        "peak_bytes_per_gpu": r.memory["peak_bytes_per_gpu"], "fits": bool(r.memory["fits"]),
                        "breakdown": r.breakdown, "digest": r.digest, "ops": r.ops, "evidence": plan_evidence(r.evidence)})
    return out


class _no_gc:
    """Cyclic garbage collection off for one task. A step's DAG is ~10^4 fresh objects, and the
    collector's young-generation passes over them took ~25 % of an analytical simulation
    (measured on GPT-3 175B mixes); the few cycles a task leaves (SimPy events) are collected when
    it ends. Nested uses keep it off."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def run_key(mix: Mix, r: dict) -> tuple:
    """What names a simulated run: the digest of its executed DAG (equal digests: equal timelines,
    :mod:`clustersim.simulate.memo`), or without one (``reuse=False``) its step time and breakdown."""
    if r.get("digest") is not None:
        return ("digest", r["digest"])
    return ("result", r["step_time_s"], tuple(sorted(r["breakdown"].items())))


def distinct_runs(done: list) -> list[list]:
    """``done`` (``(mix, bound, result)`` in rank order) grouped by :func:`run_key`, in order of each
    run's first entry: the mixes of one group are one simulated run (ZeRO-1 and ZeRO-2 issue the
    same collectives, say), which the top of a plan lists once."""
    out: dict[tuple, list] = {}
    for e in done:
        out.setdefault(run_key(e[0], e[2]), []).append(e)
    return list(out.values())


def _share_key(mix: Mix, bound: float) -> tuple:
    """Mixes that may share one DAG: same bound, same everything but the recompute policy and
    ZeRO-1 versus ZeRO-2 (scheduling only: whether they do is decided by the DAG digest)."""
    return bound, replace(mix, recompute="", zero=1 if mix.zero == 2 else mix.zero)


def _groups(entries: list) -> list[list]:
    """``entries`` (``(mix, bound, memory)`` sorted by bound) grouped by :func:`_share_key`, in order
    of their first member."""
    out: dict[tuple, list] = {}
    for e in entries:
        out.setdefault(_share_key(e[0], e[1]), []).append(e)
    return list(out.values())


def _context(ev: Evaluator, tp_across_nodes: bool) -> Context:
    """The facts of the evaluator's scenario that the structural rules check (model shape, batch, node size)."""
    m, tr = ev.base.model, ev.base.training
    return Context(heads=m.heads, kv_heads=m.kv_heads, ffn_hidden=m.ffn_hidden, layers=m.layers, seq_len=m.seq_len,
                   global_batch=tr.global_batch, gpus_per_node=ev.gpus_per_node, attention=m.attention,
                   tp_across_nodes=tp_across_nodes, experts=m.moe.experts if m.moe is not None else 0,
                   expert_tp=ev.base.parallelism.expert_tp)


def _placement(ev: Evaluator, mix: Mix) -> str:
    gpn = ev.gpus_per_node
    order = ev.base.parallelism.order
    where = "inside one node's NVLink domain" if mix.tp <= gpn else f"across {mix.tp // gpn} nodes"
    ep = ""
    if mix.ep > 1:  # EP groups: ep ranks, tp apart (order tp-...-ep: each EP group spans ep*tp adjacent GPUs)
        span = mix.ep * mix.tp
        ep = (f", EP groups of {mix.ep} over {span} adjacent GPUs "
              + ("inside one node's NVLink domain" if span <= gpn else f"across {-(-span // gpn)} nodes"))
    return (f"order {order} (innermost first): TP groups of {mix.tp} adjacent GPUs {where}{ep}, "
            "pipeline stages outermost")


class _Pool:
    """A fork pool over the evaluator, or inline work for one worker: ``submit(fn, arg, tag)`` a
    task, ``next()`` the ``(tag, result)`` of one that finished (inline: in submission order)."""

    def __init__(self, workers: int):
        self.pool = None
        self._done: queue.Queue = queue.Queue()
        self._inline: collections.deque = collections.deque()
        if workers > 1:
            # the workers inherit the evaluator (cluster, profile, caches) by fork; frozen, the
            # collector never walks those objects again in them (nor copies their pages)
            gc.collect()
            gc.freeze()
            self.pool = mp.get_context("fork").Pool(workers)
            gc.unfreeze()

    def map(self, fn, items, chunksize: int = 1):
        if self.pool is None:
            return [fn(x) for x in items]
        return self.pool.map(fn, items, chunksize=chunksize)

    def submit(self, fn, arg, tag) -> None:
        if self.pool is None:
            self._inline.append((tag, fn, arg))
            return
        self.pool.apply_async(fn, (arg,), callback=lambda r: self._done.put((tag, r, None)),
                              error_callback=lambda e: self._done.put((tag, None, e)))

    def next(self):
        if self.pool is None:
            tag, fn, arg = self._inline.popleft()
            return tag, fn(arg)
        tag, r, err = self._done.get()
        if err is not None:
            raise err
        return tag, r

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def _search(pool: _Pool, feasible: list, keep: int, n_flow: int, opts: PlanOptions, workers: int
            ) -> tuple[list, dict, float]:
    """Branch and bound at analytical fidelity, and the flow re-ranking of the best ``n_flow``,
    on one pool: ``(done, flow results by label, time the last analytical result came)``.

    Analytical: the feasible mixes in order of their bound, as groups that may share a DAG
    (:func:`_groups`; a group's members have one bound), ``2 x workers`` tasks in flight; no group
    is started once its bound reaches the ``keep``-th best step time found (every skipped mix is
    provably slower than every kept plan).

    Flow: a plan is re-simulated as soon as it is provably among the final best ``n_flow``: it
    ranks there now, and its step time is below the bound of every mix not yet simulated (in
    flight or to come), so no later mix can pass it. The flow runs overlap the end of the
    analytical search instead of waiting for it. Plans whose analytical DAGs had one digest go
    to one task (the worker's memo plays a repeated DAG once, checking the flow DAG's own
    digest), longest DAG first.
    """
    groups = _groups(feasible) if opts.reuse else [[e] for e in feasible]
    done: list = []
    times: dict = {}  # run key -> step time: the bound protects `keep` different runs
    flow: dict[str, dict] = {}
    sent: set[str] = set()
    in_flight: dict[int, tuple] = {}  # task id -> ("ana", group index) | ("flow", labels)
    gi, stopped, task, t_ana = 0, False, 0, time.perf_counter()
    cap = 2 * workers
    while True:
        while not stopped and gi < len(groups) and sum(k == "ana" for k, _ in in_flight.values()) < cap:
            if not opts.exhaustive and len(times) >= keep:
                cut = sorted(times.values())[keep - 1]
                if opts.simulate_below_s is not None:
                    cut = max(cut, opts.simulate_below_s)
                if groups[gi][0][1] >= cut:
                    stopped = True
                    break
            pool.submit(_simulate, (tuple(m for m, _, _ in groups[gi]), "analytical"), task)
            in_flight[task] = ("ana", gi)
            task, gi = task + 1, gi + 1
        if n_flow:
            pending = [groups[g][0][1] for k, g in in_flight.values() if k == "ana"]
            if not stopped and gi < len(groups):
                pending.append(groups[gi][0][1])
            threshold = min(pending, default=math.inf)
            best = distinct_runs(sorted(done, key=lambda x: (x[2]["step_time_s"], x[0].label())))[:n_flow]
            new = [g[0] for g in best if g[0][2]["step_time_s"] < threshold and not sent & {e[0].label() for e in g}]
            new = [e for e in new if e[0].label() not in sent]
            by: dict[object, list] = {}
            for e in new:
                d = e[2]["digest"]
                by.setdefault(d if d is not None else ("mix", e[0].label()), []).append(e)
            for es in sorted(by.values(), key=lambda es: -es[0][2]["ops"]):
                labels = tuple(e[0].label() for e in es)
                sent.update(labels)
                pool.submit(_simulate, (tuple(e[0] for e in es), "flow"), task)
                in_flight[task] = ("flow", labels)
                task += 1
        if not in_flight:
            return done, flow, t_ana
        tag, res = pool.next()
        kind, what = in_flight.pop(tag)
        if kind == "ana":
            for (m, b, _), r in zip(groups[what], res):
                done.append((m, b, r))
                times[run_key(m, r)] = r["step_time_s"]
            t_ana = time.perf_counter()
        else:
            flow.update(zip(what, res))


def plan(source, overrides: list[str] | None = None, options: PlanOptions | None = None) -> PlanReport:
    """Search the parallel configurations of ``source``'s model, batch and cluster.

    >>> rep = plan("scenarios/ref-tp2.yaml", options=PlanOptions(workers=1, flow_top=1))  # doctest: +SKIP
    >>> rep.plans[0].mix.label()                                                          # doctest: +SKIP
    """
    global _EV
    opts = options or PlanOptions()
    t0 = time.perf_counter()
    ev = Evaluator(source, overrides)
    if not opts.reuse:
        ev.memo = None
    ev.memory_monotone = opts.memory_monotone and not opts.exhaustive
    _EV = ev
    ctx = _context(ev, opts.tp_across_nodes)
    tally = Tally()
    survivors = []
    evaluated = 0
    for mix in enumerate_mixes(ev.n_gpus, ctx.layers, opts.space, seq_len=ctx.seq_len, experts=ctx.experts or None,
                               attention=ctx.attention):
        evaluated += 1
        bad = structural_violation(mix, ctx)
        if bad is None:
            survivors.append(mix)
        else:
            tally.drop(bad[0], mix, bad[1])
    t_enum = time.perf_counter()
    check_screen_work(len(survivors), evaluated)
    workers = max(1, min(opts.workers, len(survivors)))
    pool = _Pool(workers)
    try:
        # mixes of one pipeline shape (schedule, depth, chunks, micro-batches) share the schedule's
        # orders and counts (TransformerStep's caches): keep them in one worker, in contiguous parts.
        # A constraint's example is the dropped mix first in (index mod 4 x workers, index) order of
        # the enumeration, whatever the split (the order of the strided parts of earlier versions).
        n_chunks = max(1, workers * 4)
        order = sorted(range(len(survivors)), key=lambda k: _screen_order(survivors[k]))
        size = max(1, -(-len(order) // n_chunks))
        parts = [([survivors[k] for k in ks], [(k % n_chunks, k) for k in ks])
                 for ks in (order[i:i + size] for i in range(0, len(order), size))]
        feasible = []
        firsts: dict[str, tuple] = {}
        for ok, t, first in pool.map(_screen_part, parts):
            feasible += ok
            tally.merge(Tally(removed=t.removed))
            for name, e in first.items():
                if name not in firsts or e[0] < firsts[name][0]:
                    firsts[name] = e
        for name, (_, mx, reason) in firsts.items():
            tally.example.setdefault(name, (mx, reason))
        feasible.sort(key=lambda x: (x[1], x[0].label()))
        t_screen = time.perf_counter()
        keep = opts.keep or max(opts.top, opts.flow_top, 1)
        done, flow, t_ana = _search(pool, feasible, keep, max(opts.flow_top, 0), opts, workers)
        done.sort(key=lambda x: (x[2]["step_time_s"], x[0].label()))
        plans = []
        for group in distinct_runs(done):
            # one plan per simulated run: the mix of least memory stands for the others (same step)
            mx, b, r = min(group, key=lambda e: (e[2]["peak_bytes_per_gpu"], e[0].label()))
            plans.append(Plan(mix=mx, step_time_s=r["step_time_s"], mfu=r["mfu"], tokens_per_s=r["tokens_per_s"],
                              peak_bytes_per_gpu=r["peak_bytes_per_gpu"], fits=r["fits"], fidelity="analytical",
                              analytical_step_time_s=r["step_time_s"], bound_s=b, breakdown=r["breakdown"],
                              placement=_placement(ev, mx),
                              same_run=[e[0].label() for e in group if e[0] is not mx], evidence=r["evidence"]))
        n_flow = min(opts.flow_top, len(plans))
        if n_flow:
            for p in plans[:n_flow]:
                r = next(flow[lb] for lb in [p.mix.label(), *p.same_run] if lb in flow)
                p.step_time_s, p.mfu, p.tokens_per_s = r["step_time_s"], r["mfu"], r["tokens_per_s"]
                p.breakdown, p.fidelity, p.evidence = r["breakdown"], "flow", r["evidence"]
            plans[:n_flow] = sorted(plans[:n_flow], key=lambda p: (p.step_time_s, p.mix.label()))
        mark_distinguishable(plans)
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
    ctx = _context(ev, tp_across_nodes)
    if mix.dp * mix.tp * mix.pp * mix.cp != ev.n_gpus:
        return "world-size", f"dp*tp*pp*cp = {mix.dp * mix.tp * mix.pp * mix.cp} is not the {ev.n_gpus} GPUs"
    bad = structural_violation(mix, ctx)
    if bad is not None:
        return bad
    _, t, _ = _screen([mix])
    for name, (_, reason) in t.example.items():
        return name, reason
    return None
