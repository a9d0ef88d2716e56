"""The scenario file: cluster + model (or a generic job, or several jobs) + training + parallelism.

This is the contract that ``clustersim run`` simulates and that the reference
training script in ``calibrate/`` executes on real GPUs. Every field carries its
default and meaning; ``clustersim schema scenario`` exports the JSON Schema. The sections
are :mod:`clustersim.config.sections` (every name re-exported here).

Cross-field rules live in one place: :meth:`Scenario._rules` (rules that need
only the file, those of a ``jobs:`` list included: :func:`check_jobs_section`) and
:func:`check_world_size` (the rule that needs the GPU count of the resolved topology).
"""

from __future__ import annotations

from pydantic import Field, ValidationError, model_validator

from clustersim.budget import check_events, check_memory, events_bytes, job_events, transformer_events
from clustersim.config.base import StrictModel, validation_error
from clustersim.config.jobs import check_jobs_fit, check_placement, job_size
from clustersim.config.sections import (
    CollectivePhase,
    ComputePhase,
    FaultsSection,
    JobEntry,
    JobSection,
    LinkDegraded,
    LinkDown,
    LinkSelector,
    MLASection,
    ModelSection,
    MoESection,
    NodeLost,
    ParallelismSection,
    Phase,
    PrecisionSection,
    ScenarioClusterSection,
    SimulationSection,
    Straggler,
    StragglerDistribution,
    TrainingSection,
)
from clustersim.errors import ClusterSimError

__all__ = [
    "CollectivePhase", "ComputePhase", "FaultsSection", "JobEntry", "JobSection", "LinkDegraded", "LinkDown",
    "LinkSelector", "MLASection", "ModelSection", "MoESection", "NodeLost", "ParallelismSection", "Phase", "PrecisionSection",
    "Scenario", "ScenarioClusterSection", "SimulationSection", "Straggler", "StragglerDistribution", "TrainingSection",
    "check_jobs_section", "check_work", "check_world_size", "estimate_events", "job_scenario", "jobs_events",
    "split_schedule_problem",
]


class Scenario(StrictModel):
    """A complete scenario file."""

    name: str = Field(description="Short identifier of the scenario.")
    description: str | None = None
    cluster: ScenarioClusterSection
    model: ModelSection | None = None
    job: JobSection | None = None
    training: TrainingSection = Field(default_factory=TrainingSection)
    parallelism: ParallelismSection = Field(default_factory=ParallelismSection)
    simulation: SimulationSection = Field(default_factory=SimulationSection)
    faults: FaultsSection | None = Field(None, description="Injected faults (docs/goodput-and-faults.md).")
    jobs: list[JobEntry] | None = Field(None, min_length=1, description="Several jobs on one cluster, sharing its "
                                        "fabric (flow fidelity); instead of model/job (clustersim.config.jobs).")

    @model_validator(mode="after")
    def _rules(self) -> "Scenario":
        if sum(x is not None for x in (self.model, self.job, self.jobs)) != 1:
            raise ValueError("give exactly one of model (a transformer), job (generic phases) or jobs (several jobs)")
        if self.jobs is not None:
            check_jobs_section(self)
            return self
        par, tr = self.parallelism, self.training
        if par.ep > 1 and (self.model is None or self.model.moe is None):
            raise ValueError("parallelism.ep > 1 needs model.moe (expert parallelism splits the experts)")
        if par.expert_tp > 1 and (self.model is None or self.model.moe is None):
            raise ValueError("parallelism.expert_tp > 1 needs model.moe")
        if par.ep_max_nodes is not None and (self.model is None or self.model.moe is None):
            raise ValueError("parallelism.ep_max_nodes needs model.moe (it limits where a token's experts lie)")
        if par.cp > 1:
            _cp_rules(self.model, par)
        if self.model is not None:
            m = self.model
            if m.heads % par.tp:
                raise ValueError(f"parallelism.tp ({par.tp}) must divide model.heads ({m.heads})")
            if m.kv_heads % par.tp:
                raise ValueError(f"parallelism.tp ({par.tp}) must divide model.kv_heads ({m.kv_heads})")
            if m.ffn_hidden % par.tp:
                raise ValueError(f"parallelism.tp ({par.tp}) must divide model.ffn_hidden ({m.ffn_hidden})")
            chunks = par.pp * par.virtual_stages
            if m.layers < chunks:
                # not divisible is allowed: the first and last stages get one layer less (Llama 3 §3.3.2)
                raise ValueError(f"parallelism.pp*virtual_stages ({chunks}) exceeds model.layers ({m.layers})")
            if par.tp_comm_overlap and par.tp > 1 and not par.sequence_parallel:
                raise ValueError("parallelism.tp_comm_overlap needs sequence_parallel (as Megatron's --tp-comm-overlap)")
            if m.moe is not None:
                _moe_rules(m, par)
            if par.sequence_parallel and par.tp > 1 and m.seq_len % par.tp:
                raise ValueError(f"parallelism.tp ({par.tp}) must divide model.seq_len ({m.seq_len}) with sequence_parallel")
        if tr.global_batch % (tr.micro_batch * par.dp):
            raise ValueError(f"training.global_batch ({tr.global_batch}) must be divisible by micro_batch*dp ({tr.micro_batch}*{par.dp})")
        if par.pp_p2p == "torch" and par.pp > 1 and par.schedule not in ("1f1b", "gpipe", "interleaved"):
            raise ValueError(f"parallelism.pp_p2p: torch has no p2p program for schedule {par.schedule!r} "
                             "(torch.distributed.pipelining: 1f1b, gpipe, interleaved); use when_ready")
        if par.virtual_stages > 1 and par.schedule not in ("interleaved", "zb_v", "dualpipe_v"):
            raise ValueError("parallelism.virtual_stages > 1 needs schedule: interleaved, zb_v or dualpipe_v")
        _split_schedule_rules(par, tr.global_batch // (tr.micro_batch * par.dp))
        if par.schedule == "interleaved" and par.pp > 1:
            m_count = tr.global_batch // (tr.micro_batch * par.dp)
            if m_count % par.pp:
                raise ValueError(f"interleaved schedule needs micro-batches per step ({m_count}) divisible by pp ({par.pp})")
        if tr.recompute_layers is not None and tr.recompute != "full":
            raise ValueError("training.recompute_layers needs recompute: full (the layers it names recompute in full)")
        if par.fsdp_shard_size is not None:
            if par.zero != 3:
                raise ValueError("parallelism.fsdp_shard_size (HSDP) needs zero: 3")
            if par.fsdp_shard_size < 2 or par.dp % par.fsdp_shard_size:
                raise ValueError(f"parallelism.fsdp_shard_size ({par.fsdp_shard_size}) must be >= 2 and divide dp ({par.dp})")
        if par.zero == 3 and par.pp > 1:
            raise ValueError("parallelism.zero: 3 (FSDP) with pp > 1 is not supported; use zero <= 1 with pipelines")
        if tr.optimizer_impl == "distributed" and par.zero == 0:
            raise ValueError("training.optimizer_impl: distributed (Megatron's distributed optimizer) shards the "
                             "optimizer states: it needs parallelism.zero >= 1")
        return self

    @property
    def world_size(self) -> int:
        """Product of the dense parallel degrees dp*tp*pp*cp (ep and expert_tp re-split dp*tp, Megatron-Core)."""
        p = self.parallelism
        return p.dp * p.tp * p.pp * p.cp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step on each pipeline (global_batch / (micro_batch*dp))."""
        return self.training.global_batch // (self.training.micro_batch * self.parallelism.dp)


def _split_schedule_rules(par, micro_batches: int) -> None:
    """Raise when the zero-bubble / DualPipe schedule of ``par`` cannot run (see :func:`split_schedule_problem`)."""
    problem = split_schedule_problem(par.schedule, par.pp, par.virtual_stages, micro_batches)
    if problem:
        raise ValueError(f"parallelism.schedule: {problem}")


def split_schedule_problem(schedule: str, pp: int, virtual_stages: int, micro_batches: int) -> str | None:
    """Why a zero-bubble or DualPipe ``schedule`` cannot run (None: it can, or another schedule).

    DualPipe needs an even ``pp`` and an even number of at least ``2 * pp`` micro-batches, DualPipeV
    at least ``2 * pp`` (the asserts of ``deepseek-ai/DualPipe``); ZB-V and DualPipeV hold exactly two
    model chunks per rank; all need a pipeline.

    >>> split_schedule_problem("dualpipe", 4, 1, 6)
    'dualpipe needs micro-batches per step (6) >= 2*pp (8)'
    >>> split_schedule_problem("zb_v", 4, 1, 8)
    'zb_v needs virtual_stages: 2 (two model chunks per rank in a V), got 1'
    >>> split_schedule_problem("zb_h1", 4, 1, 3) is None
    True
    """
    sched, pp, v, m = schedule, pp, virtual_stages, micro_batches
    if sched not in ("zb_h1", "zb_v", "dualpipe", "dualpipe_v"):
        return None
    if pp < 2:
        return f"{sched} is a pipeline schedule: it needs pp >= 2, got {pp}"
    if sched in ("zb_v", "dualpipe_v") and v != 2:
        return f"{sched} needs virtual_stages: 2 (two model chunks per rank in a V), got {v}"
    if sched in ("zb_h1", "dualpipe") and v != 1:
        return f"{sched} needs virtual_stages: 1, got {v}"
    if sched == "dualpipe" and pp % 2:
        return f"dualpipe needs an even pp (micro-batches enter from both ends), got {pp}"
    if sched == "dualpipe" and m % 2:
        return f"dualpipe needs an even number of micro-batches per step (half from each end), got {m}"
    if sched.startswith("dualpipe") and m < 2 * pp:
        return f"{sched} needs micro-batches per step ({m}) >= 2*pp ({2 * pp})"
    return None


def _moe_rules(m: ModelSection, par: ParallelismSection) -> None:
    """Rules of an MoE model: the expert grid (expert_tp innermost, then ep, then expert-DP) tiles
    the dp*tp ranks of each pipeline stage, as Megatron-Core's expert rank generator does."""
    moe = m.moe
    if moe.experts % par.ep:
        raise ValueError(f"parallelism.ep ({par.ep}) must divide model.moe.experts ({moe.experts})")
    if (par.dp * par.tp) % (par.ep * par.expert_tp):
        raise ValueError(f"parallelism.ep*expert_tp ({par.ep}*{par.expert_tp}) must divide dp*tp "
                         f"({par.dp}*{par.tp}): expert parallelism is carved out of the data-parallel ranks")
    if moe.expert_ffn_hidden % par.expert_tp:
        raise ValueError(f"parallelism.expert_tp ({par.expert_tp}) must divide model.moe.expert_ffn_hidden ({moe.expert_ffn_hidden})")
    if (moe.shared_experts * moe.expert_ffn_hidden) % par.tp:
        raise ValueError(f"parallelism.tp ({par.tp}) must divide the shared-expert width")
    if par.tp > 1 and not par.sequence_parallel:
        raise ValueError("model.moe with tp > 1 needs parallelism.sequence_parallel (as Megatron-Core)")
    if par.ep > 1 and par.order.split("-").index("tp") > par.order.split("-").index("dp"):
        raise ValueError("model.moe with ep > 1 needs tp inside dp in parallelism.order (expert groups tile dp*tp)")
    if moe.implementation != "grouped" and (par.ep > 1 or par.expert_tp > 1):
        raise ValueError("model.moe.implementation: loop runs every expert on its own rank (ep = expert_tp = 1); "
                         "expert parallelism needs implementation: grouped")
    if par.ep_transport == "nvshmem" and par.ep_dispatcher != "alltoall":
        raise ValueError("parallelism.ep_transport: nvshmem needs ep_dispatcher: alltoall (one-sided puts replace the all-to-all)")
    if par.ep_max_nodes is not None and par.ep_dispatcher != "alltoall":
        raise ValueError("parallelism.ep_max_nodes needs ep_dispatcher: alltoall (the all-gather dispatcher sends every "
                         "token to every EP rank, so a token's node limit saves nothing)")
    if par.zero == 3:
        raise ValueError("model.moe with zero: 3 is not supported; use zero <= 2")
    if moe.first_dense_layers >= m.layers:
        raise ValueError(f"model.moe.first_dense_layers ({moe.first_dense_layers}) leaves no MoE layer of {m.layers}")


def _cp_rules(m: ModelSection | None, par: ParallelismSection) -> None:
    """Rules of context parallelism (:mod:`clustersim.workload.context_parallel`): a transformer
    with fused (flash) attention, a sequence that splits into ``2 * cp`` zig-zag chunks (and, with
    sequence parallelism, a local sequence TP can split)."""
    if m is None:
        raise ValueError("parallelism.cp > 1 needs a model (context parallelism splits its sequence)")
    if m.attention != "flash":
        raise ValueError("parallelism.cp > 1 needs model.attention: flash (ring/all-gather attention runs fused kernels)")
    if m.seq_len % (2 * par.cp):
        raise ValueError(f"parallelism.cp ({par.cp}) needs model.seq_len ({m.seq_len}) divisible by 2*cp "
                         f"(zig-zag split: two chunks per rank)")
    if par.sequence_parallel and par.tp > 1 and (m.seq_len // par.cp) % par.tp:
        raise ValueError(f"parallelism.tp ({par.tp}) must divide the local sequence seq_len/cp "
                         f"({m.seq_len}/{par.cp}) with sequence_parallel")
    if par.cp_algorithm == "alltoall":
        for name, n in (("heads", m.heads), ("kv_heads", m.kv_heads)):
            if (n // par.tp) % par.cp:
                raise ValueError(f"parallelism.cp_algorithm: alltoall splits each TP rank's {name} over the CP ranks: "
                                 f"model.{name}/tp ({n}/{par.tp}) must be divisible by cp ({par.cp})")
    if m.moe is not None:
        raise ValueError("parallelism.cp > 1 with model.moe is not simulated; use cp: 1 for MoE models")
    if par.zero == 3:
        raise ValueError("parallelism.cp > 1 with zero: 3 is not supported; use zero <= 2")


def job_scenario(parent: Scenario, index: int) -> Scenario:
    """The one-job scenario of ``parent.jobs[index]``: its sections on the parent's cluster and simulation.

    A generic job without ``job.ranks`` takes the length of its explicit placement. Errors name
    ``jobs.<index>.<field>``.
    """
    entry = parent.jobs[index]
    data: dict = {"name": entry.name, "cluster": parent.cluster, "simulation": parent.simulation,
                  "training": entry.training, "parallelism": entry.parallelism}
    if entry.model is not None:
        data["model"] = entry.model
    if entry.job is not None:
        data["job"] = entry.job if entry.job.ranks is not None else \
            entry.job.model_copy(update={"ranks": job_size(entry)})
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        err = validation_error(exc, None)
        raise ClusterSimError(err.reason, field=f"jobs.{index}" + (f".{err.field}" if err.field else "")) from None


def check_jobs_section(sc: Scenario) -> None:
    """The rules of a ``jobs:`` scenario that need only the file (:mod:`clustersim.config.jobs`): the
    sections given per job, no faults, one of model or job, unique names, a size, a sound explicit
    placement (:func:`~clustersim.config.jobs.check_placement`), and every rule of a one-job scenario."""
    # compared with the defaults, not by presence: a dumped scenario (clustersim validate) loads again
    if sc.training != TrainingSection() or sc.parallelism != ParallelismSection():
        key = "training" if sc.training != TrainingSection() else "parallelism"
        raise ClusterSimError(f"with jobs:, give {key} inside each job", field=key)
    if sc.faults is not None:
        raise ClusterSimError("faults are not simulated with jobs: (run each job as a one-job scenario)", field="faults")
    seen: dict[str, int] = {}
    taken: dict[int, str] = {}
    for i, e in enumerate(sc.jobs):
        if (e.model is None) == (e.job is None):
            raise ClusterSimError("give exactly one of model (a transformer) or job (generic phases)", field=f"jobs.{i}")
        if e.name in seen:
            raise ClusterSimError(f"job name {e.name!r} is used by jobs.{seen[e.name]} too", field=f"jobs.{i}.name")
        seen[e.name] = i
        n = job_size(e)
        if n is None:
            raise ClusterSimError("a generic job needs job.ranks (its size) or an explicit placement list",
                                  field=f"jobs.{i}.job.ranks")
        check_placement(e, i, n, taken)
        job_scenario(sc, i)  # every rule of a one-job scenario


def check_world_size(scenario: Scenario, n_gpus: int, file: str | None = None) -> None:
    """The rule that needs the resolved topology: the degrees multiply to the GPU count."""
    if scenario.model is not None and scenario.world_size != n_gpus:
        p = scenario.parallelism
        raise ClusterSimError(
            f"dp*tp*pp*cp = {p.dp}*{p.tp}*{p.pp}*{p.cp} = {scenario.world_size} "
            f"must equal the GPU count of the cluster ({n_gpus})",
            file=file, field="parallelism")
    if scenario.job is not None and scenario.job.ranks is not None and scenario.job.ranks > n_gpus:
        raise ClusterSimError(f"job.ranks ({scenario.job.ranks}) exceeds the GPU count ({n_gpus})", file=file, field="job.ranks")
    if scenario.jobs is not None:
        check_jobs_fit(scenario.jobs, n_gpus, file=file)


def estimate_events(scenario: Scenario, n_gpus: int, *, reduced: bool = True) -> float:
    """Simulated events of one step (transformer) or one run (job), estimated from the counts alone.

    ``reduced``: the symmetry reduction (one data-parallel replica simulated); ZeRO-3 always uses it.
    See :func:`clustersim.budget.transformer_events` and :func:`clustersim.budget.job_events`.
    """
    if scenario.jobs is not None:
        return jobs_events(scenario, n_gpus, reduced=reduced)
    if scenario.model is not None:
        par = scenario.parallelism
        # context parallelism: ring, cp - 1 K/V steps forward and cp backward; all-gather, 3 collectives
        cp_segments = 0 if par.cp == 1 else (2 * par.cp - 1 if par.cp_algorithm == "ring" else
                                             4 if par.cp_algorithm == "alltoall" else 3)
        return transformer_events(layers=scenario.model.layers, micro_batches=scenario.micro_batches, pp=par.pp,
                                  virtual_stages=par.virtual_stages, tp=par.tp,
                                  pipelines=1 if (reduced or par.zero == 3) else par.dp, zero=par.zero,
                                  recompute_full=scenario.training.recompute == "full", cp_segments=cp_segments)
    job = scenario.job
    n = job.ranks or n_gpus
    items = sum(ph.repeat * (len(ph.ranks) if ph.ranks is not None else n) for ph in job.phases)
    return job_events(iterations=job.iterations, phase_items=items)


def jobs_events(sc: Scenario, n_gpus: int, *, reduced: bool = True) -> float:
    """Simulated events of all jobs: each simulated in full (every replica, so that all of its
    traffic loads the shared links), twice (together, then alone for its slowdown)."""
    del reduced  # several jobs are always simulated without the symmetry reduction
    return 2 * sum(estimate_events(job_scenario(sc, i), job_size(e), reduced=False) for i, e in enumerate(sc.jobs))


def check_work(scenario: Scenario, n_gpus: int, *, reduced: bool = True, file: str | None = None) -> None:
    """Refuse, before any workload is built, a scenario over the event or memory budget (:mod:`clustersim.budget`)."""
    events = estimate_events(scenario, n_gpus, reduced=reduced)
    what = (f"{scenario.micro_batches:,} micro-batches of {scenario.model.layers:,} layers"
            if scenario.model is not None else f"{scenario.job.iterations:,} iterations of the job's phases"
            if scenario.job is not None else f"{len(scenario.jobs)} jobs on one cluster")
    field = "training.global_batch" if scenario.model is not None else "job" if scenario.job is not None else "jobs"
    check_events(events, what, field=field, file=file)
    check_memory(events_bytes(events), what, field=field, file=file)
