"""Contract 5: simulate one training step (or a generic job) of a scenario.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from clustersim.config.scenario import Scenario, check_work
from clustersim.errors import ClusterSimError
from clustersim.simulate.execute import CommCache, Timeline, breakdown, execute_analytical
from clustersim.simulate.memo import StepMemo, graph_digest
from clustersim.simulate.resolve import ResolvedScenario, resolve_scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.ops import Graph
from clustersim.workload.segments import TPCollectiveSegment

BREAKDOWN_KEYS = ("compute", "comm_dp", "comm_tp", "comm_pp", "comm_ep", "comm_cp", "bubble", "optimizer", "host",
                  "other")


@dataclass
class StepTimeline:
    """The simulated ops and when they ran: what a trace or a report draws.

    ``graph``: the per-rank op DAG; ``timeline``: start, end and parts of every op;
    ``cluster``: the cluster it ran on (rank names); ``comm_time``: closed-form time of a
    collective (lays out the TP collectives inside compute ops).
    """

    graph: Graph
    timeline: Timeline
    cluster: object
    comm_time: CommCache
    #: trace label of each rank where it is more than its number (several jobs: ``"<job> rank <r>"``)
    rank_labels: dict[int, str] | None = None


@dataclass
class RunResult:
    """What one simulated step looks like. ``to_dict()`` is the ``--json`` document."""

    scenario: str
    fidelity: str
    step_time_s: float
    tokens_per_s: float | None
    samples_per_s: float | None
    mfu: float | None
    breakdown: dict[str, float]
    memory: dict | None
    links: list[dict]
    n_gpus: int
    ops: int
    wall_s: float
    extra: dict = field(default_factory=dict)
    #: the simulated ops and their times, kept when ``run_scenario(keep_timeline=True)`` (not in ``to_dict``)
    step: StepTimeline | None = field(default=None, repr=False, compare=False)
    #: :func:`~clustersim.simulate.memo.graph_digest` of the executed DAG when run with a ``memo`` (not in ``to_dict``)
    digest: str | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """JSON-ready dictionary."""
        d = {
            "scenario": self.scenario, "fidelity": self.fidelity, "n_gpus": self.n_gpus,
            "step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s,
            "samples_per_s": self.samples_per_s, "mfu": self.mfu,
            "breakdown": dict(self.breakdown),
            "breakdown_fraction": {k: (v / self.step_time_s if self.step_time_s > 0 else 0.0)
                                   for k, v in self.breakdown.items()},
            "memory": self.memory, "links": self.links, "ops": self.ops, "wall_s": self.wall_s,
        }
        d.update(self.extra)
        return d


def _collective_model(cluster, profile, scenario):
    try:
        from clustersim.collectives import CollectiveModel
    except ImportError as exc:  # pragma: no cover - only while the collectives package is missing
        raise ClusterSimError(f"collective model unavailable ({exc})") from None
    c = scenario.cluster
    return CollectiveModel(cluster, profile, nvls=c.nvls, p2p=c.p2p, gdr=c.gpudirect_rdma)


def _ring_links(cluster, coll, cache: dict) -> np.ndarray:
    """Links a collective loads: ring edges of each group (send_recv: the pair's route)."""
    out = []
    for g in coll.groups:
        key = (coll.op == "send_recv", tuple(g))
        arr = cache.get(key)
        if arr is None:
            if len(g) < 2:
                arr = np.zeros(0, dtype=np.int64)
            elif coll.op == "send_recv":
                arr = np.asarray(cluster.route(g[0], g[1]), dtype=np.int64)
            else:
                parts = [np.asarray(cluster.route(a, b), dtype=np.int64) for a, b in zip(g, g[1:] + g[:1])]
                arr = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            cache[key] = arr
        out.append(arr)
    return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def _tp_private(cluster, graph: Graph) -> bool:
    """True when the representative TP groups' links carry no other simulated traffic."""
    cache: dict = {}
    tp_links: set[int] = set()
    other: set[int] = set()
    seen = set()
    for op in graph.ops:
        if op.segments:
            for s in op.segments:
                if isinstance(s, TPCollectiveSegment):
                    key = tuple(s.coll.ranks)
                    if key not in seen:
                        seen.add(key)
                        new = set(_ring_links(cluster, s.coll, cache).tolist())
                        if tp_links & new:
                            return False  # two TP groups share links
                        tp_links |= new
        if op.coll is not None and not op.args.after_compute:
            # ops that start only after every compute op (grad norm, ZeRO weight gather) never meet TP traffic
            other |= set(_ring_links(cluster, op.coll, cache).tolist())
    return not (tp_links & other)


def _add_collective_busy(cluster, graph: Graph, tl: Timeline | None, comm, busy: np.ndarray, cache: dict) -> None:
    """Add closed-form busy seconds to ``busy``: each collective keeps its ring links busy for its duration.

    With ``tl`` (analytical fidelity) the DAG's collectives count for their timeline durations; the
    TP collectives inside compute ops always count for their closed-form time, once per use.
    """
    acc: dict[tuple, list] = {}  # (op, groups) -> [coll, summed duration]

    def add(c, dur):
        key = (c.op, tuple(map(tuple, c.groups)))
        e = acc.get(key)
        if e is None:
            acc[key] = [c, dur]
        else:
            e[1] += dur

    uses: dict[int, list] = {}  # identical chunks share a segment list: count them once
    for op in graph.ops:
        if op.coll is not None and tl is not None:
            add(op.coll, tl.end[op.id] - tl.start[op.id])
        if op.segments:
            e = uses.get(id(op.segments))
            if e is None:
                uses[id(op.segments)] = [op.segments, 1]
            else:
                e[1] += 1
    for segs, count in uses.values():
        for s in segs:
            if isinstance(s, TPCollectiveSegment):
                add(s.coll, comm(s.coll) * count)
    for c, dur in acc.values():
        busy[_ring_links(cluster, c, cache)] += dur


def _analytical_links(cluster, graph: Graph, tl: Timeline, comm, step: float, top: int) -> list[dict]:
    """Busy seconds per link from the closed form: each collective keeps its ring links busy for its duration."""
    busy = np.zeros(len(cluster.link_bandwidth))
    _add_collective_busy(cluster, graph, tl, comm, busy, {})
    return _top_links(cluster, busy, step, top)


def _top_links(cluster, busy, step: float, top: int) -> list[dict]:
    busy = np.asarray(busy, dtype=float)
    if step <= 0 or busy.size == 0:
        return []
    idx = np.argsort(-busy, kind="stable")[:top]
    return [{"link": cluster.link_names[i], "kind": str(cluster.link_kind[i]),
             "busy_s": float(busy[i]), "busy_fraction": float(min(busy[i] / step, 1.0))}
            for i in idx if busy[i] > 0]


def _effective_cluster(rs: ResolvedScenario):
    """The resolved cluster with the scenario's p2p / GPUDirect RDMA switches applied."""
    cluster, c = rs.cluster, rs.scenario.cluster
    if not c.p2p and hasattr(cluster, "with_p2p"):
        cluster = cluster.with_p2p(False)
    if not c.gpudirect_rdma and hasattr(cluster, "with_gdr"):
        cluster = cluster.with_gdr(False)
    return cluster


def comm_cache_for(rs: ResolvedScenario) -> CommCache:
    """A memo of closed-form collective times on ``rs``'s cluster and profile.

    It depends only on the cluster, the profile and the ``cluster:`` switches (nvls, p2p,
    gpudirect_rdma), so scenarios that differ only in parallelism or training (the planner's
    mixes) can share one through ``run_scenario(..., comm=...)``.
    """
    return CommCache(_collective_model(_effective_cluster(rs), rs.profile, rs.scenario))


def transformer_step(rs: ResolvedScenario, reduced: bool = True):
    """The :class:`~clustersim.workload.transformer.TransformerStep` that ``run_scenario`` simulates
    for a model scenario (its compute model and host costs from the profile); its ``memory()`` is
    the run's memory report. The planner screens mixes with it before building any DAG."""
    from clustersim.workload.transformer import TransformerStep

    sc, profile = rs.scenario, rs.profile
    host_call = profile.host.per_call_overhead_us * 1e-6
    # GEMMs run at the peak of the weights' dtype (fp8 -> fp8 tensor cores)
    cm = ComputeModel.from_profile(profile.compute, rs.cluster.gpu_spec, sc.training.precision.params)
    # host CPU time per kernel call: the profile's per-call overhead, but never below the issue
    # latency of one torch op measured by the event-timed GEMM bench (the floor of its table)
    host_kernel = max(host_call, cm.issue_floor_s)
    # FSDP2 shards over the data-parallel ranks (dp x cp with context parallelism): the hook's host
    # work is measured per shard-group size
    hook_us = profile.host.fsdp_hook_us_at(sc.parallelism.dp * getattr(sc.parallelism, "cp", 1))
    opt = profile.host.fsdp_optimizer_us
    return TransformerStep(sc, cm, host_call_s=host_call, reduced=reduced, host_kernel_s=host_kernel,
                           fsdp_hook_s=None if hook_us is None else hook_us * 1e-6,
                           fsdp_optimizer_host=None if opt is None else (opt.base_us * 1e-6, opt.per_tensor_us * 1e-6),
                           host_of=getattr(rs.cluster, "host_of", None))


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


def _faulted_cluster(rs: ResolvedScenario, fidelity: str) -> tuple[Any, list]:
    """Return the effective cluster with the scenario's link faults applied, and their causes."""
    cluster = _effective_cluster(rs)
    faults, fault_causes = rs.scenario.faults, []
    if faults is not None:
        from clustersim.reliability import faults as flt

        if (faults.link_down or faults.link_degraded) and fidelity != "flow":
            raise ClusterSimError("link faults need fidelity flow (the analytical closed forms use the topology's "
                                  "line rates, not the flow network's link capacities)", field="faults")
        cluster, fault_causes = flt.apply_link_faults(cluster, faults)
    return cluster, fault_causes


def _build_step_graph(rs: ResolvedScenario, cluster: Any, *, reduced: bool, fault_causes: list,
                      comm: CommCache | None = None) -> tuple:
    """Build the op graph (transformer step or job), slowing stragglers' compute; return (graph, exec_ranks, step).

    ``comm`` prices a job phase's forced algorithm/protocol while it is built (see
    :func:`clustersim.workload.job.build_job`); errors name the scenario file."""
    sc, profile = rs.scenario, rs.profile
    spec = cluster.gpu_spec

    def cm_for(dtype: str) -> ComputeModel:
        return ComputeModel.from_profile(profile.compute, spec, dtype)

    if sc.model is not None:
        step = transformer_step(rs, reduced=reduced)
        graph = step.build()
        exec_ranks = step.exec_ranks
    else:
        from clustersim.workload.job import build_job

        try:
            graph, exec_ranks = build_job(sc, cluster, cm_for, profile.compute.gemm_efficiency, cluster.host_of,
                                          comm_time=comm, profile=profile)
        except ClusterSimError as exc:
            raise exc.with_file(str(rs.file)) if rs.file is not None else exc from None
        step = None
    if sc.faults is not None:
        from clustersim.reliability import faults as flt

        factors = flt.straggler_factors(sc.faults, cluster.n_gpus, sc.simulation.seed)
        flt.slow_compute(graph, flt.fold_onto_exec_ranks(factors, sc, exec_ranks))
        fault_causes += flt.describe_stragglers(factors)
        hosts = flt.host_factors(sc.faults, cluster.n_gpus, sc.simulation.seed)
        flt.slow_host(graph, flt.fold_onto_exec_ranks(hosts, sc, exec_ranks))
        fault_causes += flt.describe_stragglers(hosts, key="host_slowdown")
    if rs.host_factor != 1.0:  # a bound of the host speed band: every rank's host at that speed
        from clustersim.reliability.faults import slow_host

        slow_host(graph, dict.fromkeys({op.rank for op in graph.ops}, rs.host_factor))
    return graph, exec_ranks, step


def _execute_graph(rs: ResolvedScenario, cluster: Any, graph: Any, comm: CommCache, *, fidelity: str,
                   extra: dict) -> tuple:
    """Execute the graph at the given fidelity; return (timeline, flow simulation or None, private TP)."""
    from clustersim.simulate.overlap import needs_stretch, stretch_fixed_point

    def report(stretch: dict[int, float]) -> None:
        if graph.overlap is not None:
            extra["overlap_slowdown"] = {"compute": graph.overlap[0], "collective": graph.overlap[1],
                                         "stretch_s": sum(stretch.values())}

    if fidelity == "analytical":
        reuse: dict = {}  # order, host issue and op costs: the same in every pass
        tl = execute_analytical(graph, comm, reuse=reuse)
        stretch, tl = stretch_fixed_point(graph, comm, tl, reuse)  # overlapped work slowed, self-consistently
        report(stretch)
        return tl, None, None
    from clustersim.collectives.flow import flow_simulation
    from clustersim.simulate.flow import execute_flow

    c = rs.scenario.cluster
    sim = flow_simulation(cluster, rs.profile, nvls=c.nvls, p2p=c.p2p, gdr=c.gpudirect_rdma)
    private = _tp_private(cluster, graph)
    extra["tp_closed_form"] = private
    stretch: dict[int, float] = {}
    if needs_stretch(graph):
        # where compute and collectives overlap, measured on the closed-form timeline (a flow pass
        # costs 10-100x more; uncontended, both give the same timeline)
        reuse = {}
        stretch, _ = stretch_fixed_point(graph, comm, execute_analytical(graph, comm, reuse=reuse), reuse)
    tl = execute_flow(sim, graph, comm, private_tp=private, stretch=stretch)
    report(stretch)
    return tl, sim, private


def _busiest_links(cluster: Any, graph: Any, tl: Any, comm: CommCache, *, fidelity: str, sim: Any,
                   private: Any, makespan: float, top_links: int) -> list[dict]:
    """List the busiest links of the run."""
    links: list[dict] = []
    if fidelity == "flow":
        busy = getattr(sim, "link_busy_time", None)
        if busy is not None:
            if private:  # the TP collectives took their closed form: no flows, so add their links' busy time
                busy = np.array(busy, dtype=float)
                _add_collective_busy(cluster, graph, None, comm, busy, {})
            links = _top_links(cluster, busy, makespan, top_links)
    else:
        links = _analytical_links(cluster, graph, tl, comm, makespan, top_links)
    return links


def _step_metrics(sc: Scenario, step: Any, spec: Any, *, n: int, step_time: float, makespan: float,
                  exec_ranks: Any, extra: dict) -> tuple:
    """Return (tokens_per_s, samples_per_s, mfu, memory), filling ``extra`` with the step's details."""
    bf16_peak = spec.peak_tflops.get("bf16", spec.peak_tflops.get("fp16", 0.0)) * 1e12
    if step is not None:
        tokens = sc.training.global_batch * sc.model.seq_len
        tokens_per_s = tokens / step_time
        samples_per_s = sc.training.global_batch / step_time
        mflops = step.model_flops_per_step()
        mfu = mflops / (step_time * n * bf16_peak) if bf16_peak else None
        memory = step.memory(spec.hbm_bytes)
        extra["model_flops_per_step"] = mflops
        if step.compute_duty is not None:  # sustained-clock model (profile clock_table)
            extra["compute_duty"] = step.compute_duty
            extra["clock_slowdown"] = step.compute.clock_slowdown
        extra["params"] = step.model.total_params
        extra["micro_batches"] = sc.micro_batches
        extra["tflops_per_gpu"] = mflops / step_time / n / 1e12
        extra["reduced"] = step.reduced
        if step.experts is not None:  # the routing load the step assumed (workload.moe)
            extra["moe"] = {**step.experts.routing.report(), "ep": step.experts.ep,
                            "expert_tp": step.experts.expert_tp, "expert_dp": step.expert_dp,
                            "dispatcher": step.experts.dispatcher, "moe_layers": step.model.moe_layers,
                            "active_params": step.model.active_params}
            if step.experts.transport != "nccl":  # one-sided EP puts (parallelism.ep_transport)
                extra["moe"]["transport"] = step.experts.transport
            if step.experts.max_nodes is not None:  # node-limited routing (parallelism.ep_max_nodes)
                extra["moe"].update({"ep_max_nodes": step.experts.max_nodes, "ep_nodes": step.experts.nodes,
                                     "node_limited": step.experts.node_limited})
        if step.context is not None:  # the K/V exchange the step assumed (workload.context_parallel)
            from clustersim.workload.context_parallel import cp_report

            extra["cp"] = cp_report(step)
        if sc.training.steps > 1:
            extra["total_time_s"] = step_time * sc.training.steps
    else:
        tokens_per_s = None
        spi = sc.job.samples_per_iteration
        samples_per_s = spi / step_time if spi and step_time > 0 else None
        mfu = None
        memory = None
        extra["total_time_s"] = makespan
        extra["ranks"] = len(exec_ranks)
    return tokens_per_s, samples_per_s, mfu, memory


def _fault_report(rs: ResolvedScenario, cluster: Any, *, fidelity: str, sim: Any, fault_causes: list,
                  step_time: float, makespan: float, reduced: bool, top_links: int, extra: dict) -> None:
    """Complete the fault causes and compare against the healthy run into ``extra["faults"]``."""
    from clustersim.reliability import faults as flt

    sc = rs.scenario
    fault_causes += flt.check_node_lost(sc.faults, cluster, extra.get("total_time_s", step_time))
    flt.annotate_link_causes(fault_causes, cluster, getattr(sim, "link_busy_time", None) if fidelity == "flow"
                             else None, makespan)
    # the same run on the healthy cluster: the slowdown is what the faults cost
    healthy = run_scenario(replace(rs, scenario=sc.model_copy(update={"faults": None})), fidelity,
                           reduced=reduced, top_links=top_links)
    extra["faults"] = {"slowdown": step_time / healthy.step_time_s, "healthy_step_time_s": healthy.step_time_s,
                       "causes": fault_causes}


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
    sc, profile = rs.scenario, rs.profile
    cluster, fault_causes = _faulted_cluster(rs, fidelity)
    spec = cluster.gpu_spec
    if comm is None or fault_causes:  # link faults change the closed forms' routes: no reuse
        comm = CommCache(_collective_model(cluster, profile, sc))
    graph, exec_ranks, step = _build_step_graph(rs, cluster, reduced=reduced, fault_causes=fault_causes, comm=comm)

    extra: dict = {}
    iters = sc.job.iterations if sc.job is not None else 1
    digest = None
    if memo is not None and not keep_timeline and sc.faults is None:
        digest = graph_digest(graph, fidelity, tuple(exec_ranks), iters, top_links, step is None,
                              step is None or step.experts is None, step is None or step.context is None)
    hit = memo.get(digest) if digest is not None else None
    if hit is not None:  # the same DAG on the same cluster: the same timeline
        makespan, bd, links, done_extra = hit
        bd, links = dict(bd), [dict(x) for x in links]
        extra.update(done_extra)
    else:
        tl, sim, private = _execute_graph(rs, cluster, graph, comm, fidelity=fidelity, extra=extra)
        makespan = tl.makespan
        bd = breakdown(graph, tl, exec_ranks, makespan)
        bd = {k: v / iters for k, v in bd.items()}
        if step is None or step.experts is None:
            bd.pop("comm_ep", None)  # expert-parallel traffic exists only in MoE models
        if step is None or step.context is None:
            bd.pop("comm_cp", None)  # context-parallel traffic exists only with parallelism.cp > 1
        links = _busiest_links(cluster, graph, tl, comm, fidelity=fidelity, sim=sim, private=private,
                               makespan=makespan, top_links=top_links)
        if digest is not None:
            memo.put(digest, (makespan, dict(bd), [dict(x) for x in links], dict(extra)))
    step_time = makespan / iters

    n = cluster.n_gpus
    tokens_per_s, samples_per_s, mfu, memory = _step_metrics(sc, step, spec, n=n, step_time=step_time,
                                                             makespan=makespan, exec_ranks=exec_ranks, extra=extra)
    if sc.faults is not None:
        _fault_report(rs, cluster, fidelity=fidelity, sim=sim, fault_causes=fault_causes, step_time=step_time,
                      makespan=makespan, reduced=reduced, top_links=top_links, extra=extra)
    res = RunResult(scenario=sc.name, fidelity=fidelity, step_time_s=step_time, tokens_per_s=tokens_per_s,
                    samples_per_s=samples_per_s, mfu=mfu, breakdown=bd, memory=memory, links=links,
                    n_gpus=n, ops=len(graph), wall_s=0.0, extra=extra)
    res.digest = digest
    if keep_timeline:
        res.step = StepTimeline(graph=graph, timeline=tl, cluster=cluster, comm_time=comm)
    res.wall_s = time.perf_counter() - t_wall
    return res
