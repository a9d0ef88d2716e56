"""Several jobs on one fabric: every job's step on the same flow network at once, and each alone.

A ``jobs:`` scenario (:mod:`clustersim.config.jobs`) places each job on its own GPUs. Each job's
op DAG is built exactly as a one-job run builds it (transformer step or generic phases) on its
local ranks ``0..n-1``, then its ranks are renamed to the cluster GPUs of its placement
(:func:`relabel_ranks`), so its collectives route over the links those GPUs really use. The
jobs' DAGs are joined into one graph (:func:`join_graphs`) and played on one flow simulation:
their flows share links max-min fairly (:mod:`clustersim.engine.flow`), which is the contention
the result reports. Each job is then played again alone on the same GPUs; its slowdown is its
step time together over its step time alone (1 when no link it uses carries another job's traffic).

Every data-parallel replica of every job is simulated (no symmetry reduction): a replica left
out would leave its traffic off the shared links.

Analytical fidelity is refused (exit 2), as link faults are: the closed forms price each
collective on an idle fabric, so they cannot show one job's traffic slowing another's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from clustersim.config.jobs import place_jobs
from clustersim.config.scenario import job_scenario
from clustersim.config.topology import GPUSpec
from clustersim.errors import ClusterSimError
from clustersim.simulate.execute import CommCache, Timeline, breakdown
from clustersim.simulate.fidelity import execute_graph
from clustersim.simulate.resolve import ResolvedScenario
from clustersim.simulate.result import JobRow, JobsReport, JobStep, RunResult, StepTimeline, step_metrics
from clustersim.simulate.step import apply_host_factor, build_graph, collective_model, effective_cluster
from clustersim.topology.cluster import Cluster
from clustersim.workload.ops import Coll, Graph, Op
from clustersim.workload.transformer import TransformerStep


def relabel_ranks(graph: Graph, gpus: list[int]) -> Graph:
    """Rename the ranks of ``graph`` in place: local rank ``r`` becomes GPU ``gpus[r]``; returns it.

    Ops, the other streams they occupy and the groups of every collective (those of ops and those
    inside compute ops' segments, each :class:`~clustersim.workload.ops.Coll` once) are renamed.

    >>> from clustersim.workload.ops import Coll
    >>> g = Graph()
    >>> _ = g.add(0, "compute", "ar", "comm_dp", coll=Coll("all_reduce", [[0, 1]], 8.0, "dp"),
    ...           extra_streams=[(1, "compute")])
    >>> op = relabel_ranks(g, [8, 12]).ops[0]
    >>> op.rank, op.args.tracks, op.coll.groups
    (8, ((12, 'compute'),), [[8, 12]])
    """
    done: set[int] = set()

    def coll(c) -> None:
        if id(c) not in done:
            done.add(id(c))
            c.groups = [[gpus[r] for r in grp] for grp in c.groups]

    for op in graph.ops:
        op.rank = gpus[op.rank]
        if op.args.tracks:
            op.args.tracks = tuple((gpus[r], s) for r, s in op.args.tracks)
        if op.coll is not None:
            coll(op.coll)
        for seg in op.segments or ():
            c = getattr(seg, "coll", None)
            if c is not None:
                coll(c)
    return graph


def join_graphs(graphs: list[Graph]) -> tuple[Graph, list[range]]:
    """One graph holding copies of the ops of ``graphs`` (ids and dependencies shifted), and the id
    range each came from. The graphs must use disjoint ranks (they then wait on nothing of each other).

    >>> a, b = Graph(), Graph()
    >>> _ = a.add(0, "compute", "x", "compute", duration=1.0)
    >>> _ = b.add(1, "compute", "y", "compute", duration=1.0); _ = b.add(1, "compute", "z", "compute", duration=1.0)
    >>> g, spans = join_graphs([a, b])
    >>> [op.deps for op in g.ops], spans
    ([[], [], [1]], [range(0, 1), range(1, 3)])
    """
    out = Graph()
    spans = []
    for g in graphs:
        base = len(out.ops)
        for op in g.ops:
            out.ops.append(Op(op.id + base, op.rank, op.stream, op.name, op.category, op.duration, op.coll,
                              op.segments, [d + base for d in op.deps], op.args))
        spans.append(range(base, len(out.ops)))
    return out, spans


@dataclass
class _Job:
    """One placed job: its scenario, GPUs, op graph (on cluster GPUs) and what a one-job run reports."""

    name: str
    rs: ResolvedScenario
    gpus: list[int]
    graph: Graph
    exec_ranks: list[int]
    #: the transformer step (None: a generic job)
    step: TransformerStep | None
    iterations: int


def _build(rs: ResolvedScenario, cluster: Cluster, comm: CommCache) -> list[_Job]:
    """Place the jobs and build each one's graph on its GPUs (a band's host speed applied)."""
    sc = rs.scenario
    fname = str(rs.file) if rs.file is not None else None
    try:
        placement = place_jobs(sc.jobs, cluster.host_of)
    except ClusterSimError as exc:
        raise exc.with_file(fname) if fname else exc from None
    jobs = []
    for i, gpus in enumerate(placement):
        try:
            jsc = job_scenario(sc, i)
        except ClusterSimError as exc:
            raise exc.with_file(fname) if fname else exc from None
        # the job sees its own GPUs as ranks 0..n-1: hosts of its ranks for `group: node`, and the world size
        view = _JobView(cluster, gpus)
        jrs = replace(rs, scenario=jsc, cluster=view)
        try:
            built = build_graph(jrs, view, reduced=False, comm=_LocalComm(comm, gpus))
        except ClusterSimError as exc:
            field = f"jobs.{i}" + (f".{exc.field}" if exc.field else "")
            raise ClusterSimError(exc.reason, file=fname, field=field) from None
        apply_host_factor(built.graph, jrs.host_factor)
        relabel_ranks(built.graph, gpus)
        jobs.append(_Job(jsc.name, jrs, gpus, built.graph, [gpus[r] for r in built.exec_ranks], built.step,
                         jsc.job.iterations if jsc.job is not None else 1))
    return jobs


class _JobView:
    """What building a job's graph reads of the cluster, seen from the job: its GPUs as ranks 0..n-1."""

    def __init__(self, cluster: Cluster, gpus: list[int]):
        self.n_gpus = len(gpus)
        self.host_of = cluster.host_of[gpus]
        self.gpu_spec = cluster.gpu_spec
        self.gpus = [cluster.gpus[r] for r in gpus]


class _LocalComm:
    """A collective-time memo on the cluster, asked with a job's local ranks (a forced algorithm's check)."""

    def __init__(self, comm: CommCache, gpus: list[int]):
        self.comm, self.gpus = comm, gpus

    def __call__(self, coll: Coll) -> float:
        return self.comm(replace(coll, groups=[[self.gpus[r] for r in g] for g in coll.groups]))


def _job_step(job: _Job, graph: Graph, tl: Timeline, ids: range, spec: GPUSpec) -> JobStep:
    """Step time, throughput and breakdown of one job from a timeline of ``graph`` (its ops: ``ids``)."""
    makespan = max((tl.end[i] for i in ids), default=0.0)
    step_time = makespan / job.iterations
    bd = {k: v / job.iterations for k, v in breakdown(graph, tl, job.exec_ranks, makespan).items()}
    if job.step is None or job.step.experts is None:
        bd.pop("comm_ep", None)
    m = step_metrics(job.rs.scenario, job.step, spec, n=len(job.gpus), step_time=step_time, makespan=makespan,
                     exec_ranks=job.exec_ranks)
    return JobStep(step_time_s=step_time, tokens_per_s=m.tokens_per_s, samples_per_s=m.samples_per_s, mfu=m.mfu,
                   breakdown=bd, memory_fits=m.memory["fits"] if m.memory else None,
                   tflops_per_gpu=m.transformer.tflops_per_gpu if m.transformer is not None else None)


def run_jobs(rs: ResolvedScenario, fidelity: str, *, top_links: int = 8, keep_timeline: bool = False) -> RunResult:
    """Simulate every job of a ``jobs:`` scenario together on one fabric, and each alone.

    Returns a :class:`~clustersim.simulate.result.RunResult` whose ``jobs`` part lists, per job,
    its GPUs, step time together and alone, slowdown, throughput and breakdown. Its own
    ``step_time_s`` is the slowest job's; its breakdown averages every placed GPU up to that time
    (a faster job's GPUs are ``other`` after their step ends).

    >>> from clustersim.config.base import shipped_dir
    >>> from clustersim.simulate.run import run_scenario
    >>> d = run_scenario(shipped_dir("scenario") / "two-jobs-shared-fabric.yaml").to_dict()
    >>> [j["name"] for j in d["jobs"]], all(j["slowdown"] > 1.0 for j in d["jobs"])
    (['dp-a', 'dp-b'], True)
    """
    t_wall = time.perf_counter()
    sc = rs.scenario
    fname = str(rs.file) if rs.file is not None else None
    if fidelity != "flow":
        raise ClusterSimError("several jobs on one fabric need fidelity flow: the analytical closed forms price each "
                              "collective on an idle fabric, so one job's traffic could not slow another's "
                              "(run with --fidelity flow)", file=fname, field="simulation.fidelity")
    cluster = effective_cluster(rs)
    comm = CommCache(collective_model(cluster, rs.profile, sc))
    jobs = _build(rs, cluster, comm)
    graph, spans = join_graphs([j.graph for j in jobs])
    ex = execute_graph(rs, cluster, graph, comm, fidelity=fidelity)
    spec = cluster.gpu_spec
    rows = []
    slowest = 0.0
    for j, ids in zip(jobs, spans):
        together = _job_step(j, graph, ex.timeline, ids, spec)
        alone_tl = execute_graph(rs, cluster, j.graph, comm, fidelity=fidelity).timeline
        alone = _job_step(j, j.graph, alone_tl, range(len(j.graph.ops)), spec)
        hosts = sorted({int(h) for h in cluster.host_of[j.gpus]})
        rows.append(JobRow(name=j.name, kind="model" if j.step is not None else "job", gpus=len(j.gpus), nodes=hosts,
                           ranks=list(j.gpus), together=together, alone_step_time_s=alone.step_time_s,
                           slowdown=together.step_time_s / alone.step_time_s if alone.step_time_s > 0 else 1.0))
        slowest = max(slowest, together.step_time_s)
    # where the placed GPUs' time goes until the slowest job ends its step, averaged over them
    n_placed = sum(len(j.gpus) for j in jobs)
    bd: dict[str, float] = {}
    for j, row in zip(jobs, rows):
        w = len(j.gpus) / n_placed
        for k, v in row.together.breakdown.items():
            bd[k] = bd.get(k, 0.0) + w * v
        bd["other"] = bd.get("other", 0.0) + w * (slowest - row.together.step_time_s)
    links = ex.busiest_links(cluster, graph, comm, top=top_links)
    tok = [r.together.tokens_per_s for r in rows]
    res = RunResult(scenario=sc.name, fidelity=fidelity, step_time_s=slowest,
                    tokens_per_s=sum(tok) if all(t is not None for t in tok) else None,
                    samples_per_s=None, mfu=None, breakdown=bd, memory=None, links=links, n_gpus=cluster.n_gpus,
                    ops=len(graph), wall_s=0.0, tp_closed_form=ex.tp_closed_form, overlap=ex.overlap,
                    jobs=JobsReport(jobs=rows, placed_gpus=n_placed))
    from clustersim.simulate.evidence import crossing_parts, evidence_of

    # the slowest job's step, broken down over every job's ranks: what it rests on (one profile for the fabric)
    res.evidence = evidence_of(rs.profile, bd, slowest, links, cluster.n_nodes, cluster.gpu_spec.name,
                               topology=cluster.spec, crossing=crossing_parts(graph, int(cluster.gpus_per_host)))
    if keep_timeline:
        labels = {g: f"{j.name} rank {r}" for j in jobs for r, g in enumerate(j.gpus)}
        res.step = StepTimeline(graph=graph, timeline=ex.timeline, cluster=cluster, comm_time=comm, rank_labels=labels)
    res.wall_s = time.perf_counter() - t_wall
    return res
