"""Step building: the op graph one run executes, on the cluster it runs on.

A transformer scenario's step is a :class:`~clustersim.workload.transformer.TransformerStep`
(its compute model and host costs from the profile, :func:`transformer_step`); a generic job's
is its phases (:func:`clustersim.workload.job.build_job`). :func:`build_step` builds it on the
scenario's effective cluster (``cluster:`` switches applied) with its faults
(:func:`clustersim.reliability.faults.apply`) and the host speed of a band's bound applied, and
with the memo of closed-form collective times (:func:`comm_cache_for`) that prices it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence

from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario
from clustersim.config.topology import GPUSpec
from clustersim.errors import ClusterSimError
from clustersim.reliability import faults as flt
from clustersim.simulate.execute import CommCache
from clustersim.simulate.resolve import ResolvedScenario
from clustersim.topology.cluster import Cluster
from clustersim.workload.compute import ComputeModel
from clustersim.workload.ops import Graph
from clustersim.workload.transformer import TransformerStep

if TYPE_CHECKING:
    from clustersim.collectives import CollectiveModel


class GraphCluster(Protocol):
    """What building a step's graph reads of the cluster: a :class:`~clustersim.topology.cluster.Cluster`,
    or one job's view of it (:mod:`clustersim.simulate.multijob`: its GPUs as ranks 0..n-1)."""

    n_gpus: int
    host_of: Sequence[int]
    gpu_spec: GPUSpec
    gpus: list[str]


def collective_model(cluster: Cluster, profile: Profile, scenario: Scenario) -> CollectiveModel:
    """The closed-form :class:`~clustersim.collectives.CollectiveModel` of ``cluster`` with the
    scenario's ``cluster:`` switches (nvls, p2p, gpudirect_rdma)."""
    try:
        from clustersim.collectives import CollectiveModel
    except ImportError as exc:  # pragma: no cover - only while the collectives package is missing
        raise ClusterSimError(f"collective model unavailable ({exc})") from None
    c = scenario.cluster
    return CollectiveModel(cluster, profile, nvls=c.nvls, p2p=c.p2p, gdr=c.gpudirect_rdma)


def effective_cluster(rs: ResolvedScenario) -> Cluster:
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
    return CommCache(collective_model(effective_cluster(rs), rs.profile, rs.scenario))


def transformer_step(rs: ResolvedScenario, reduced: bool = True) -> TransformerStep:
    """The :class:`~clustersim.workload.transformer.TransformerStep` that ``run_scenario`` simulates
    for a model scenario (its compute model and host costs from the profile); its ``memory()`` is
    the run's memory report. The planner screens mixes with it before building any DAG."""
    sc, profile = rs.scenario, rs.profile
    host_call = profile.host.per_call_overhead_us * 1e-6
    # GEMMs run at the peak of the weights' dtype; fp8: the blocks' linears on FP8 tensor cores by the recipe,
    # with their casts, attention and the rest at 16 bits
    precision = sc.training.precision
    cm = ComputeModel.from_profile(profile.compute, rs.cluster.gpu_spec, precision.params,
                                   fp8_recipe=precision.fp8_recipe if precision.params == "fp8" else None)
    # host CPU time per kernel call: the profile's per-call overhead, but never below the issue
    # latency of one torch op measured by the event-timed GEMM bench (the floor of its table)
    host_kernel = max(host_call, cm.issue_floor_s)
    # FSDP2 shards over the data-parallel ranks (dp x cp with context parallelism): the hook's host
    # work is measured per shard-group size
    hook_us = profile.host.fsdp_hook_us_at(getattr(sc.parallelism, "fsdp_shard_size", None)
                                           or sc.parallelism.dp * getattr(sc.parallelism, "cp", 1))
    opt = profile.host.fsdp_optimizer_us
    return TransformerStep(sc, cm, host_call_s=host_call, reduced=reduced, host_kernel_s=host_kernel,
                           fsdp_hook_s=None if hook_us is None else hook_us * 1e-6,
                           fsdp_optimizer_host=None if opt is None else (opt.base_us * 1e-6, opt.per_tensor_us * 1e-6),
                           host_of=getattr(rs.cluster, "host_of", None))


@dataclass
class StepGraph:
    """A built step: its op graph, the ranks the executor plays, and the transformer step it came
    from (None: a generic job's phases)."""

    graph: Graph
    exec_ranks: list[int]
    step: TransformerStep | None


def build_graph(rs: ResolvedScenario, cluster: GraphCluster, *, reduced: bool,
                comm: CommCache | None = None) -> StepGraph:
    """Build the op graph of ``rs`` on ``cluster``: its transformer step, or its generic job.

    ``comm`` prices a job phase's forced algorithm/protocol while it is built (see
    :func:`clustersim.workload.job.build_job`); errors name the scenario file."""
    sc, profile = rs.scenario, rs.profile
    spec = cluster.gpu_spec

    def cm_for(dtype: str) -> ComputeModel:
        return ComputeModel.from_profile(profile.compute, spec, dtype)

    if sc.model is not None:
        step = transformer_step(rs, reduced=reduced)
        return StepGraph(step.build(), step.exec_ranks, step)
    from clustersim.workload.job import build_job

    try:
        graph, exec_ranks = build_job(sc, cluster, cm_for, profile.compute.gemm_efficiency, cluster.host_of,
                                      comm_time=comm, profile=profile)
    except ClusterSimError as exc:
        raise exc.with_file(str(rs.file)) if rs.file is not None else exc from None
    return StepGraph(graph, exec_ranks, None)


def apply_host_factor(graph: Graph, factor: float) -> None:
    """A bound of the host speed band (``ResolvedScenario.host_factor``): every rank's host issue
    time times ``factor`` (1: the profile's host, nothing changes)."""
    if factor != 1.0:
        flt.slow_host(graph, dict.fromkeys({op.rank for op in graph.ops}, factor))


@dataclass
class BuiltStep(StepGraph):
    """A step built for one run (:func:`build_step`): its graph on the cluster it runs on (link
    faults applied) and the memo of closed-form collective times on that cluster."""

    cluster: Cluster
    comm: CommCache


def build_step(rs: ResolvedScenario, fidelity: str, *, reduced: bool,
               comm: CommCache | None = None) -> flt.FaultedStep[BuiltStep]:
    """The step ``run_scenario`` executes for a one-job scenario at ``fidelity``, with its faults.

    The scenario's faults are applied in their order (:func:`clustersim.reliability.faults.apply`:
    link faults on the cluster, then the graph is built on it, then the stragglers), then a
    band's host speed (:func:`apply_host_factor`). ``comm``: a memo of closed-form collective
    times on the same cluster (:func:`comm_cache_for`), reused unless link faults change the routes.
    The result's ``built`` is the :class:`BuiltStep`; its ``finish`` completes the fault causes
    once the step is executed.
    """
    sc = rs.scenario

    def build(cluster: Cluster, rerouted: bool) -> BuiltStep:
        c = comm if comm is not None and not rerouted else CommCache(collective_model(cluster, rs.profile, sc))
        g = build_graph(rs, cluster, reduced=reduced, comm=c)
        return BuiltStep(g.graph, g.exec_ranks, g.step, cluster=cluster, comm=c)

    faulted = flt.apply(sc.faults, effective_cluster(rs), build, scenario=sc, fidelity=fidelity)
    apply_host_factor(faulted.built.graph, rs.host_factor)
    return faulted
