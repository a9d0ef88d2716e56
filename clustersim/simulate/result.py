"""What a simulated run reports: :class:`RunResult` and its typed optional parts.

A run's ``--json`` document is :meth:`RunResult.to_dict`: the fields every run has (step time,
throughput, breakdown, memory, busiest links), then the parts only some runs have, each a typed
object with its own ``to_dict``, in a fixed order:

* ``tp_closed_form`` (flow fidelity);
* :class:`OverlapSlowdown` (``overlap_slowdown``: the profile has an ``overlap_table`` for the step);
* :class:`TransformerReport` (a transformer model: ``model_flops_per_step``, ``params``, ...);
* :class:`MoEReport` (``moe``: an MoE model);
* :class:`CPReport` (``cp``: context parallelism, ``parallelism.cp > 1``);
* ``total_time_s`` (a generic job, or a transformer run of several steps) and ``ranks`` (a generic job);
* :class:`FaultReport` (``faults``: the scenario injects faults);
* :class:`JobsReport` (``jobs`` and ``placed_gpus``: several jobs on one fabric, ``jobs:``);
* ``band_factors`` (``step_time_band_factors``: ``clustersim run --band``);
* ``compute_tables`` (which compute tables the profile carries: ``clustersim run``).
* ``evidence`` (every single-job run: :mod:`clustersim.simulate.evidence`).

>>> OverlapSlowdown(compute=1.05, collective=1.2, stretch_s=0.01).to_dict()
{'compute': 1.05, 'collective': 1.2, 'stretch_s': 0.01}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from clustersim.config.scenario import Scenario
from clustersim.config.topology import GPUSpec
from clustersim.simulate.execute import CommCache, Timeline
from clustersim.topology.cluster import Cluster
from clustersim.workload.ops import Graph
from clustersim.workload.transformer import TransformerStep


@dataclass
class StepTimeline:
    """The simulated ops and when they ran: what a trace or a report draws.

    ``graph``: the per-rank op DAG; ``timeline``: start, end and parts of every op;
    ``cluster``: the cluster it ran on (rank names); ``comm_time``: closed-form time of a
    collective (lays out the TP collectives inside compute ops).
    """

    graph: Graph
    timeline: Timeline
    cluster: Cluster
    comm_time: CommCache
    #: trace label of each rank where it is more than its number (several jobs: ``"<job> rank <r>"``)
    rank_labels: dict[int, str] | None = None
    #: flow fidelity: ``(link names, [(time s, link indices, bytes/s), ...])``, every link's load over time
    link_loads: tuple | None = None


@dataclass(frozen=True)
class OverlapSlowdown:
    """Compute and collectives slowing each other where they overlap (the profile's ``overlap_table``,
    :mod:`clustersim.simulate.overlap`): the step's two factors and the seconds they added in all."""

    compute: float
    collective: float
    stretch_s: float

    def to_dict(self) -> dict:
        """The ``overlap_slowdown`` entry."""
        return {"compute": self.compute, "collective": self.collective, "stretch_s": self.stretch_s}


@dataclass(frozen=True)
class TransformerReport:
    """What a transformer step adds to its result: its model FLOPs, size and micro-batching."""

    model_flops_per_step: float
    params: int
    micro_batches: int
    tflops_per_gpu: float
    #: one data-parallel replica simulated (the symmetry reduction)
    reduced: bool
    #: the sustained-clock model (profile ``clock_table``): the step's compute duty and the clock's
    #: slowdown at it; None without a clock table
    compute_duty: float | None = None
    clock_slowdown: float | None = None

    def to_dict(self) -> dict:
        """Its top-level keys of the result."""
        d: dict = {"model_flops_per_step": self.model_flops_per_step}
        if self.compute_duty is not None:
            d.update(compute_duty=self.compute_duty, clock_slowdown=self.clock_slowdown)
        d.update(params=self.params, micro_batches=self.micro_batches, tflops_per_gpu=self.tflops_per_gpu,
                 reduced=self.reduced)
        return d


@dataclass(frozen=True)
class MoEReport:
    """The routing load and expert layout an MoE step assumed (:mod:`clustersim.workload.moe`)."""

    imbalance: float
    tokens_per_expert_mean: float
    tokens_per_expert_max: float
    tokens_per_expert_loaded_rank: list[int]
    dropped_fraction: float
    ep: int
    expert_tp: int
    expert_dp: int
    dispatcher: str
    moe_layers: int
    active_params: int
    #: one-sided EP puts (``parallelism.ep_transport``); None: NCCL's all-to-all
    transport: str | None = None
    #: node-limited routing (``parallelism.ep_max_nodes``): the limit, the nodes the EP group spans and
    #: whether the dispatch runs in two stages; None without the limit
    ep_max_nodes: int | None = None
    ep_nodes: int | None = None
    node_limited: bool | None = None

    @classmethod
    def of(cls, step: TransformerStep) -> "MoEReport":
        """The report of a step with experts (``step.experts`` set)."""
        xp = step.experts
        return cls(**xp.routing.report(), ep=xp.ep, expert_tp=xp.expert_tp, expert_dp=step.expert_dp,
                   dispatcher=xp.dispatcher, moe_layers=step.model.moe_layers, active_params=step.model.active_params,
                   transport=xp.transport if xp.transport != "nccl" else None,
                   ep_max_nodes=xp.max_nodes, ep_nodes=xp.nodes if xp.max_nodes is not None else None,
                   node_limited=xp.node_limited if xp.max_nodes is not None else None)

    def to_dict(self) -> dict:
        """The ``moe`` entry."""
        d = {"imbalance": self.imbalance, "tokens_per_expert_mean": self.tokens_per_expert_mean,
             "tokens_per_expert_max": self.tokens_per_expert_max,
             "tokens_per_expert_loaded_rank": list(self.tokens_per_expert_loaded_rank),
             "dropped_fraction": self.dropped_fraction, "ep": self.ep, "expert_tp": self.expert_tp,
             "expert_dp": self.expert_dp, "dispatcher": self.dispatcher, "moe_layers": self.moe_layers,
             "active_params": self.active_params}
        if self.transport is not None:
            d["transport"] = self.transport
        if self.ep_max_nodes is not None:
            d.update(ep_max_nodes=self.ep_max_nodes, ep_nodes=self.ep_nodes, node_limited=self.node_limited)
        return d


@dataclass(frozen=True)
class CPReport:
    """The K/V exchange a context-parallel step assumed (:func:`clustersim.workload.context_parallel.cp_report`)."""

    cp: int
    algorithm: str
    local_tokens: int
    kv_block_bytes: float
    send_bytes_per_layer: dict[str, float]
    grad_reduction_ranks: int

    def to_dict(self) -> dict:
        """The ``cp`` entry."""
        return {"cp": self.cp, "algorithm": self.algorithm, "local_tokens": self.local_tokens,
                "kv_block_bytes": self.kv_block_bytes, "send_bytes_per_layer": dict(self.send_bytes_per_layer),
                "grad_reduction_ranks": self.grad_reduction_ranks}


@dataclass(frozen=True)
class FaultReport:
    """What the injected faults cost: the step time over the healthy cluster's, and one cause entry per
    fault (:mod:`clustersim.reliability.faults`: its kind, links or ranks, and what it did)."""

    slowdown: float
    healthy_step_time_s: float
    causes: list[dict]

    def to_dict(self) -> dict:
        """The ``faults`` entry."""
        return {"slowdown": self.slowdown, "healthy_step_time_s": self.healthy_step_time_s, "causes": self.causes}


@dataclass(frozen=True)
class JobStep:
    """One job's step from a timeline: its time, throughput and breakdown (:mod:`clustersim.simulate.multijob`)."""

    step_time_s: float
    tokens_per_s: float | None
    samples_per_s: float | None
    mfu: float | None
    breakdown: dict[str, float]
    #: whether the job's memory fits its GPUs (None: a generic job, no memory model)
    memory_fits: bool | None
    tflops_per_gpu: float | None

    def to_dict(self) -> dict:
        """Its keys of the job's row."""
        return {"step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s,
                "samples_per_s": self.samples_per_s, "mfu": self.mfu, "breakdown": self.breakdown,
                "memory_fits": self.memory_fits, "tflops_per_gpu": self.tflops_per_gpu}


@dataclass(frozen=True)
class JobRow:
    """One job of a ``jobs:`` run: where it ran, its step together with the others, and alone."""

    name: str
    #: ``model`` (a transformer) or ``job`` (generic phases)
    kind: str
    gpus: int
    nodes: list[int]
    ranks: list[int]
    together: JobStep
    alone_step_time_s: float
    #: step time together over step time alone (1 when no link it uses carries another job's traffic)
    slowdown: float

    def to_dict(self) -> dict:
        """The job's row of the ``jobs`` entry."""
        return {"name": self.name, "kind": self.kind, "gpus": self.gpus, "nodes": self.nodes, "ranks": self.ranks,
                **self.together.to_dict(), "alone_step_time_s": self.alone_step_time_s, "slowdown": self.slowdown}


@dataclass(frozen=True)
class JobsReport:
    """Every job of a ``jobs:`` run, and how many GPUs they were placed on together."""

    jobs: list[JobRow]
    placed_gpus: int

    def to_dict(self) -> dict:
        """The ``jobs`` and ``placed_gpus`` entries."""
        return {"jobs": [j.to_dict() for j in self.jobs], "placed_gpus": self.placed_gpus}


@dataclass
class RunResult:
    """What one simulated step looks like. ``to_dict()`` is the ``--json`` document.

    The fields after ``wall_s`` are the parts only some runs have (None where a run has not),
    in the order of the module's list.
    """

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
    #: flow fidelity: the TP collectives took their closed form (their links carry no other simulated traffic)
    tp_closed_form: bool | None = None
    overlap: OverlapSlowdown | None = None
    transformer: TransformerReport | None = None
    moe: MoEReport | None = None
    cp: CPReport | None = None
    #: a generic job's run (all iterations), or a transformer's ``training.steps`` steps
    total_time_s: float | None = None
    #: a generic job's executor ranks
    ranks: int | None = None
    faults: FaultReport | None = None
    jobs: JobsReport | None = None
    #: the factors of the step-time band (:func:`clustersim.simulate.band.band_factors`), set by ``run --band``
    band_factors: dict[str, float | None] | None = None
    #: the profile's name and the compute tables it carries (``ComputeParams.tables_summary``), set by ``clustersim run``
    compute_tables: str | None = None
    #: what each figure rests on and the step's band (:func:`clustersim.simulate.evidence.evidence_of`)
    evidence: dict | None = None
    #: the simulated ops and their times, kept when ``run_scenario(keep_timeline=True)`` (not in ``to_dict``)
    step: StepTimeline | None = field(default=None, repr=False, compare=False)
    #: :func:`~clustersim.simulate.memo.graph_digest` of the executed DAG when run with a ``memo`` (not in ``to_dict``)
    digest: str | None = field(default=None, repr=False, compare=False)

    def parts(self) -> dict:
        """The JSON of the optional parts this run has, in the order of the module's list."""
        d: dict = {}
        if self.tp_closed_form is not None:
            d["tp_closed_form"] = self.tp_closed_form
        if self.overlap is not None:
            d["overlap_slowdown"] = self.overlap.to_dict()
        if self.transformer is not None:
            d.update(self.transformer.to_dict())
        if self.moe is not None:
            d["moe"] = self.moe.to_dict()
        if self.cp is not None:
            d["cp"] = self.cp.to_dict()
        if self.total_time_s is not None:
            d["total_time_s"] = self.total_time_s
        if self.ranks is not None:
            d["ranks"] = self.ranks
        if self.faults is not None:
            d["faults"] = self.faults.to_dict()
        if self.jobs is not None:
            d.update(self.jobs.to_dict())
        if self.band_factors is not None:
            d["step_time_band_factors"] = dict(self.band_factors)
        if self.compute_tables is not None:
            d["compute_tables"] = self.compute_tables
        if self.evidence is not None:
            d["evidence"] = self.evidence
        return d

    @property
    def extra(self) -> Mapping:
        """A read-only view of :meth:`parts` (as the result's JSON has them: ``extra["moe"]["imbalance"]``);
        the typed parts are the fields themselves."""
        return MappingProxyType(self.parts())

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
        d.update(self.parts())
        return d


@dataclass(frozen=True)
class StepMetrics:
    """A step's throughput, MFU and memory, and the optional parts they come with (see :func:`step_metrics`)."""

    tokens_per_s: float | None
    samples_per_s: float | None
    mfu: float | None
    memory: dict | None
    transformer: TransformerReport | None = None
    moe: MoEReport | None = None
    cp: CPReport | None = None
    total_time_s: float | None = None
    ranks: int | None = None


def step_metrics(sc: Scenario, step: TransformerStep | None, spec: GPUSpec, *, n: int, step_time: float,
                 makespan: float, exec_ranks: list[int]) -> StepMetrics:
    """Throughput, MFU and memory of a step of ``step_time`` seconds on ``n`` GPUs of ``spec``.

    ``step``: the transformer step that was simulated (None: a generic job, whose run of all its
    iterations took ``makespan`` seconds on ``exec_ranks``). MFU counts the model's FLOPs against
    the bf16 peak (fp16 where a GPU lists no bf16).
    """
    bf16_peak = spec.peak_tflops.get("bf16", spec.peak_tflops.get("fp16", 0.0)) * 1e12
    if step is None:
        spi = sc.job.samples_per_iteration
        return StepMetrics(tokens_per_s=None, samples_per_s=spi / step_time if spi and step_time > 0 else None,
                           mfu=None, memory=None, total_time_s=makespan, ranks=len(exec_ranks))
    tokens = sc.training.global_batch * sc.model.seq_len
    mflops = step.model_flops_per_step()
    memory = step.memory(spec.hbm_bytes)
    transformer = TransformerReport(
        model_flops_per_step=mflops, params=step.model.total_params, micro_batches=sc.micro_batches,
        tflops_per_gpu=mflops / step_time / n / 1e12, reduced=step.reduced, compute_duty=step.compute_duty,
        clock_slowdown=step.compute.clock_slowdown if step.compute_duty is not None else None)
    cp = None
    if step.context is not None:  # the K/V exchange the step assumed (workload.context_parallel)
        from clustersim.workload.context_parallel import cp_report

        cp = CPReport(**cp_report(step))
    return StepMetrics(tokens_per_s=tokens / step_time, samples_per_s=sc.training.global_batch / step_time,
                       mfu=mflops / (step_time * n * bf16_peak) if bf16_peak else None,
                       memory=memory, transformer=transformer,
                       moe=MoEReport.of(step) if step.experts is not None else None, cp=cp,
                       total_time_s=step_time * sc.training.steps if sc.training.steps > 1 else None)
