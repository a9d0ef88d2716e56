"""Contract 5: simulate one training step (or a generic job) of a scenario: :func:`run_scenario`.

The run, module by module: the scenario resolved (:mod:`clustersim.simulate.resolve`), its step
built on the cluster with its faults (:mod:`clustersim.simulate.step`), executed at its fidelity
(:mod:`clustersim.simulate.fidelity`), its breakdown and busiest links accounted
(:mod:`clustersim.simulate.execute`, :mod:`clustersim.simulate.links`) and reported
(:mod:`clustersim.simulate.result`). Several jobs on one fabric take
:mod:`clustersim.simulate.multijob` instead. The names other modules import from here
(``RunResult``, ``StepTimeline``, ``transformer_step``, ``comm_cache_for``, ``resolve_scenario``,
``BREAKDOWN_KEYS``) are those modules' own, re-exported.

The shipped GPT 1B DDP scenario on 2 H200; the step's breakdown adds up to the step time:

>>> from clustersim.config.base import shipped_dir
>>> from clustersim.simulate import run_scenario
>>> res = run_scenario(shipped_dir("scenario") / "gpt-1b-ddp.yaml", fidelity="analytical")
>>> d = res.to_dict()
>>> d["n_gpus"], d["fidelity"]
(2, 'analytical')
>>> abs(sum(d["breakdown"].values()) - d["step_time_s"]) < 1e-9
True
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from clustersim.breakdown import BREAKDOWN_KEYS
from clustersim.config.scenario import Scenario, check_work
from clustersim.errors import ClusterSimError
from clustersim.reliability.faults import FaultedStep
from clustersim.simulate.evidence import crossing_parts, evidence_of
from clustersim.simulate.execute import CommCache, breakdown
from clustersim.simulate.fidelity import Execution, execute_graph
from clustersim.simulate.memo import StepMemo, graph_digest
from clustersim.simulate.resolve import ResolvedScenario, resolve_scenario
from clustersim.simulate.result import FaultReport, RunResult, StepTimeline, step_metrics
from clustersim.simulate.step import BuiltStep, build_step, comm_cache_for, transformer_step

__all__ = ["BREAKDOWN_KEYS", "RunResult", "StepTimeline", "comm_cache_for", "resolve_scenario", "run_scenario",
           "transformer_step"]


def _resolve_for_run(source: str | Path | Scenario | ResolvedScenario, fidelity: str | None,
                     overrides: list[str] | None, reduced: bool) -> tuple[ResolvedScenario, str]:
    """Resolve the run's scenario, check its work bound and pick a valid fidelity."""
    rs = source if isinstance(source, ResolvedScenario) else resolve_scenario(source, overrides)
    sc, cluster = rs.scenario, rs.cluster
    if not reduced:  # resolve_scenario checked the reduced step; every replica costs dp times that
        check_work(sc, cluster.n_gpus, reduced=False, file=str(rs.file) if rs.file else None)
    fidelity = fidelity or sc.simulation.fidelity
    if fidelity not in ("flow", "analytical"):
        raise ClusterSimError("fidelity must be flow or analytical", field="simulation.fidelity")
    return rs, fidelity


def _fault_report(rs: ResolvedScenario, faulted: FaultedStep[BuiltStep], ex: Execution, *, fidelity: str,
                  step_time: float, total_time: float | None, reduced: bool, top_links: int) -> FaultReport:
    """Complete the fault causes of the executed step ``ex`` and compare its step time against the
    same run on the healthy cluster. ``total_time``: the run's length where it is more than one step."""
    causes = faulted.finish(total_time if total_time is not None else step_time, ex.link_busy, ex.timeline.makespan)
    # the same run on the healthy cluster: the slowdown is what the faults cost
    healthy = run_scenario(replace(rs, scenario=rs.scenario.model_copy(update={"faults": None})), fidelity,
                           reduced=reduced, top_links=top_links)
    return FaultReport(slowdown=step_time / healthy.step_time_s, healthy_step_time_s=healthy.step_time_s,
                       causes=causes)


def run_scenario(source: str | Path | Scenario | ResolvedScenario, fidelity: str | None = None,
                 overrides: list[str] | None = None, reduced: bool = True, top_links: int = 8,
                 keep_timeline: bool = False, comm: CommCache | None = None, memo: StepMemo | None = None) -> RunResult:
    """Simulate one step of a scenario (Contract 5).

    Parameters
    ----------
    source: scenario file, :class:`Scenario` or an already :class:`ResolvedScenario`.
    fidelity: ``"flow"`` or ``"analytical"``; default: the scenario's ``simulation.fidelity``.
    overrides: ``--set`` style ``key=value`` strings (file sources only).
    reduced: simulate one data-parallel replica (identical replicas; their DP collectives still
        run on the full groups). ``False`` simulates every replica (validation).
    top_links: how many of the busiest links the result lists.
    keep_timeline: keep the op graph and its timeline in ``result.step`` (a
        :class:`StepTimeline`) for a trace (:func:`clustersim.trace.chrome.write_trace`) or a report.
    comm: a :func:`comm_cache_for` memo made on the same cluster, profile and ``cluster:``
        switches, reused across runs (the planner); default: a fresh one.
    memo: a :class:`~clustersim.simulate.memo.StepMemo` shared by runs on the same cluster,
        profile and ``cluster:`` switches (the planner's): a DAG already executed at this
        fidelity (same :func:`~clustersim.simulate.memo.graph_digest`) takes the stored step
        time, breakdown and links instead of being executed again; memory and the other
        metrics are always the scenario's own. Not used with faults or ``keep_timeline``.
    """
    t_wall = time.perf_counter()
    rs, fidelity = _resolve_for_run(source, fidelity, overrides, reduced)
    if rs.scenario.jobs is not None:  # several jobs on one fabric: clustersim.simulate.multijob
        from clustersim.simulate.multijob import run_jobs

        return run_jobs(rs, fidelity, top_links=top_links, keep_timeline=keep_timeline)
    sc = rs.scenario
    faulted = build_step(rs, fidelity, reduced=reduced, comm=comm)
    built = faulted.built
    graph, exec_ranks, step, cluster = built.graph, built.exec_ranks, built.step, built.cluster

    iters = sc.job.iterations if sc.job is not None else 1
    digest = None
    if memo is not None and not keep_timeline and sc.faults is None:
        digest = graph_digest(graph, fidelity, tuple(exec_ranks), iters, top_links, step is None,
                              step is None or step.experts is None, step is None or step.context is None)
    hit = memo.get(digest) if digest is not None else None
    ex = None
    if hit is not None:  # the same DAG on the same cluster: the same timeline
        makespan, bd, links, tp_closed_form, overlap = hit
        bd, links = dict(bd), [dict(x) for x in links]
    else:
        ex = execute_graph(rs, cluster, graph, built.comm, fidelity=fidelity, record_links=keep_timeline)
        makespan, tp_closed_form, overlap = ex.timeline.makespan, ex.tp_closed_form, ex.overlap
        bd = breakdown(graph, ex.timeline, exec_ranks, makespan)
        bd = {k: v / iters for k, v in bd.items()}
        if step is None or step.experts is None:
            bd.pop("comm_ep", None)  # expert-parallel traffic exists only in MoE models
        if step is None or step.context is None:
            bd.pop("comm_cp", None)  # context-parallel traffic exists only with parallelism.cp > 1
        links = ex.busiest_links(cluster, graph, built.comm, top=top_links)
        if digest is not None:
            memo.put(digest, (makespan, dict(bd), [dict(x) for x in links], tp_closed_form, overlap))
    step_time = makespan / iters

    n = cluster.n_gpus
    m = step_metrics(sc, step, cluster.gpu_spec, n=n, step_time=step_time, makespan=makespan, exec_ranks=exec_ranks)
    faults = None
    if sc.faults is not None:  # never with a memo: ex is this run's execution
        faults = _fault_report(rs, faulted, ex, fidelity=fidelity, step_time=step_time, total_time=m.total_time_s,
                               reduced=reduced, top_links=top_links)
    res = RunResult(scenario=sc.name, fidelity=fidelity, step_time_s=step_time, tokens_per_s=m.tokens_per_s,
                    samples_per_s=m.samples_per_s, mfu=m.mfu, breakdown=bd, memory=m.memory, links=links,
                    n_gpus=n, ops=len(graph), wall_s=0.0, tp_closed_form=tp_closed_form, overlap=overlap,
                    transformer=m.transformer, moe=m.moe, cp=m.cp, total_time_s=m.total_time_s, ranks=m.ranks,
                    faults=faults)
    res.digest = digest
    res.evidence = evidence_of(rs.profile, bd, step_time, links, cluster.n_nodes, cluster.gpu_spec.name,
                               memory=m.memory, topology=cluster.spec,
                               crossing=crossing_parts(graph, int(cluster.gpus_per_host)))
    if keep_timeline:
        loads = (ex.sim.cluster.link_names, ex.sim.net.load_log) if ex.sim is not None else None
        res.step = StepTimeline(graph=graph, timeline=ex.timeline, cluster=cluster, comm_time=built.comm, link_loads=loads)
    res.wall_s = time.perf_counter() - t_wall
    return res
