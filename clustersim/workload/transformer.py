"""Transformer training step: what runs on each pipeline stage, and the op DAG of one step.

How a step is laid out (Megatron-LM semantics; see ``docs/training.md``), and where each part lives:

* Ranks: :class:`~clustersim.workload.layout.Layout` (``parallelism.order``, innermost first).
* Per layer and micro-batch on each TP rank: the kernels and TP collectives of
  :mod:`clustersim.workload.layer_costs` (TP/SP regions: :mod:`clustersim.workload.tensor_parallel`).
* Pipeline: chunks ordered by :func:`clustersim.workload.schedule.pipeline_order`, their compute
  ops and the point-to-point sends between stages: :mod:`clustersim.workload.step_pipeline`.
* DP: DDP / ZeRO-1/2 gradient buckets, weight all-gathers, tied embedding, gradient norm and
  optimizer: :mod:`clustersim.workload.step_data_parallel`; ZeRO-3/FSDP:
  :mod:`clustersim.workload.step_fsdp`.
* Memory per GPU: :func:`clustersim.workload.memory.step_memory`.
* Host: every compute op carries ``host_s``, the CPU time of the kernel and collective calls the
  eager program makes for it (``docs/training.md``, "Host (CPU) issue thread").

This module keeps what ties them together: the parallel degrees under descriptive names, the
units of each virtual stage (with the per-micro-batch gradient work of plain autograd), the
parameters and optimizer cost of each pipeline rank, and :meth:`TransformerStep.build`.
``Layout`` and ``split_layers`` are re-exported from here for existing callers.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from typing import NamedTuple

from clustersim.workload.compute import ComputeModel
from clustersim.workload.context_parallel import ContextParallel, cp_groups
from clustersim.workload.layer_costs import LayerCosts, LayerUnits, Unit, UnitPair
from clustersim.workload.layout import AXES, Layout, split_layers
from clustersim.workload.memory import optimizer_update_bytes, step_memory
from clustersim.workload.model import DTYPE_BYTES, ModelDims
from clustersim.workload.moe import ep_node_groups, expert_groups, routing
from clustersim.workload.moe_costs import ExpertParallel, expert_layer_params
from clustersim.workload.ops import Graph
from clustersim.workload.schedule import (SPLIT_SCHEDULES, Chunk, Slot, chunks_per_rank, max_in_flight,
                                          model_stages, pipeline_slots, virtual_stage)
from clustersim.workload.segments import ComputeSegment
from clustersim.workload.step_data_parallel import (add_dualpipe_mirror_reduce, add_grad_norm, add_grad_reductions,
                                                    add_optimizer_steps, add_param_gathers,
                                                    add_tied_embedding_reduce)
from clustersim.workload.step_fsdp import build_fsdp
from clustersim.workload.step_pipeline import add_chunk_compute, add_pipeline_transfers

__all__ = ["AXES", "Layout", "StepUnits", "TransformerStep", "Unit", "split_layers"]


class StepUnits(NamedTuple):
    """The cost units of a model: one layer (forward, backward, recompute extra), embedding, head."""

    layer: LayerUnits
    embedding: UnitPair
    head: UnitPair



@lru_cache(maxsize=4096)
def _rank_schedule(schedule: str, p: int, m: int, rank: int, v: int) -> tuple[tuple[Slot, ...], tuple[Chunk, ...]]:
    """(slots, flattened chunk order) of one pipeline rank: they depend on the schedule's numbers
    only, so the planner's thousands of mixes share them (a 192-micro-batch ZB-V order is ~2 ms of
    Python to build)."""
    slots = tuple(pipeline_slots(schedule, p, m, rank, v))
    return slots, tuple(c for slot in slots for c in slot)

@lru_cache(maxsize=1024)
def _schedule_stats(schedule: str, p: int, m: int, v: int) -> tuple[tuple[int, tuple], ...]:
    """Per pipeline rank of a schedule: ``(max_in_flight, (signature, count) ...)``, the chunks in
    flight at the peak (activation memory) and how many slots of each signature the rank runs
    (a slot's signature: ``(kind, chunk, micro-batch > 0, last micro-batch)`` of each of its
    chunks, what decides its kernels). What the planner's screen reads of a schedule, which
    thousands of mixes share (walking a 192-micro-batch order is ~1 ms of Python)."""
    out = []
    for rank in range(p):
        slots, order = _rank_schedule(schedule, p, m, rank, v)
        counts: dict[tuple, int] = {}
        for slot in slots:
            key = tuple((kind, chunk, mb > 0, mb == m - 1) for kind, mb, chunk in slot)
            counts[key] = counts.get(key, 0) + 1
        out.append((max_in_flight(list(order)), tuple(counts.items())))
    return tuple(out)


class TransformerStep:
    """Builds the op DAG of one training step of a transformer scenario.

    Parameters
    ----------
    scenario: a validated :class:`clustersim.config.scenario.Scenario` with a model.
    compute: the :class:`ComputeModel` of the GPU.
    host_call_s: host CPU seconds to issue one collective or host-only call (profile
        ``host.per_call_overhead_us``).
    reduced: simulate one DP replica (the symmetry reduction); False simulates every replica.
    host_kernel_s: host CPU seconds to issue one kernel (default ``host_call_s``).
    fsdp_hook_s: host CPU seconds of one FSDP2 hook of one unit (profile ``host.fsdp_hook_us``);
        None: estimated from the call and kernel costs (:mod:`clustersim.workload.step_fsdp`).
    host_of: node of each rank (``Cluster.host_of``); node-limited MoE routing
        (``parallelism.ep_max_nodes``) splits the EP groups by it. None: the EP groups are taken
        to lie inside one node (no node-limited stages).
    fsdp_optimizer_host: ``(base s, s per tensor)`` of the optimizer step's host time over FSDP2's
        shards (profile ``host.fsdp_optimizer_us``); None: estimated (:mod:`clustersim.workload.step_fsdp`).
    """

    def __init__(self, scenario, compute: ComputeModel, host_call_s: float = 0.0, reduced: bool = True,
                 host_kernel_s: float | None = None, fsdp_hook_s: float | None = None, host_of=None,
                 fsdp_optimizer_host: tuple[float, float] | None = None):
        par, training = scenario.parallelism, scenario.training
        self.scenario = scenario
        self.model = ModelDims.from_section(scenario.model)
        self.compute = compute
        self.host_call_s = host_call_s
        self.host_kernel_s = host_call_s if host_kernel_s is None else host_kernel_s
        self.fsdp_hook_s = fsdp_hook_s
        self.fsdp_optimizer_host = fsdp_optimizer_host
        self.parallelism, self.training = par, training
        self.tp, self.pp, self.dp = par.tp, par.pp, par.dp
        self.cp = par.cp
        # context parallelism (workload.context_parallel); the CP ranks hold the same weights, so the
        # gradient reduction and ZeRO sharding span dp * cp ranks
        self.context = ContextParallel(par.cp, par.cp_algorithm) if par.cp > 1 else None
        self.grad_dp = par.dp * par.cp
        # FSDP's shard group: all of them, or HSDP's fsdp_shard_size consecutive DP ranks (replicated across groups)
        self.shard_dp = par.fsdp_shard_size if par.zero == 3 and par.fsdp_shard_size else self.grad_dp
        # the schedule that runs (one pipeline rank without chunks: plain gradient accumulation)
        self.schedule = par.schedule if par.pp > 1 or par.virtual_stages > 1 else "1f1b"
        self.virtual_stages = chunks_per_rank(self.schedule, par.virtual_stages)  # model chunks per rank
        #: backward split into input-gradient ("B") and weight-gradient ("W") passes (zero-bubble schedules)
        self.split_backward = self.schedule in SPLIT_SCHEDULES
        self.micro_batch = training.micro_batch  # sequences per micro-batch
        self.micro_batches = scenario.micro_batches  # per step on each pipeline
        self.sequence_parallel = par.sequence_parallel and par.tp > 1
        self.vocab_parallel = par.vocab_parallel or par.tp == 1
        self.layout = Layout.from_parallelism(par)
        self.reduced = reduced or par.zero == 3
        self.param_dtype_bytes = DTYPE_BYTES[training.precision.params]
        self.grad_dtype_bytes = DTYPE_BYTES[training.precision.grads]
        self.n_virtual_stages = model_stages(self.schedule, self.pp, par.virtual_stages)
        self.layers_per_virtual_stage = split_layers(self.model.layers, self.n_virtual_stages)
        self.compute_duty: float | None = None  # set when the profile has a clock_table
        self.experts: ExpertParallel | None = None
        if self.model.moe is not None:
            tokens_routed = self.micro_batch * self.model.seq_len // (self.tp if self.sequence_parallel else 1)
            # node-limited routing acts where an EP group spans several nodes (the same count for
            # every group of a uniform layout; ep_node_groups refuses uneven ones when binding)
            nodes = 1
            if par.ep_max_nodes is not None and host_of is not None and par.ep > 1:
                self.host_of = host_of
                ep_group, _ = expert_groups(self.layout, par.ep, par.expert_tp, 0, 0)
                nodes = len({int(host_of[r]) for r in ep_group})
            self.experts = ExpertParallel(
                ep=par.ep, expert_tp=par.expert_tp, dispatcher=par.ep_dispatcher, comm_overlap=par.ep_comm_overlap,
                transport=par.ep_transport,
                routing=routing(self.model.moe, tokens_routed, par.ep, par.expert_tp, scenario.simulation.seed),
                max_nodes=par.ep_max_nodes, nodes=nodes)
        # expert-data-parallel degree: the ranks holding the same experts (Megatron-Core)
        self.expert_dp = self.dp * self.tp // (par.ep * par.expert_tp) if self.experts else self.dp
        self.layer_costs = LayerCosts(
            model=self.model, compute=compute, tp=self.tp, sequence_parallel=self.sequence_parallel,
            vocab_parallel=self.vocab_parallel, micro_batch=self.micro_batch,
            kernel_fusion=training.kernel_fusion, recompute=training.recompute,
            tp_comm_overlap=par.tp_comm_overlap, grad_dtype_bytes=self.grad_dtype_bytes, experts=self.experts,
            context=self.context)
        self._backward_cache: dict[tuple, list[Unit]] = {}
        self._split_made: dict[tuple, tuple] = {}  # (kind, id(backward unit)) -> (unit, its B or W unit)

    # ------------------------------------------------------------------ shape of the step
    @property
    def replicas(self) -> list[int]:
        """DP replicas simulated: one under the symmetry reduction, else all."""
        return [0] if self.reduced else list(range(self.dp))

    @property
    def exec_ranks(self) -> list[int]:
        """Executor ranks: every pipeline rank (TP rank 0) of every simulated replica."""
        return [self.layout.rank(dp=d, pp=j) for d in self.replicas for j in range(self.pp)]

    @cached_property
    def slots(self) -> dict[int, list[Slot]]:
        """Compute ops of every pipeline rank in order, each the chunks it runs
        (:func:`~clustersim.workload.schedule.pipeline_slots`; one pipeline rank without chunks:
        1F1B's forward-backward alternation, i.e. plain gradient accumulation)."""
        return {j: list(_rank_schedule(self.schedule, self.pp, self.micro_batches, j,
                                       self.parallelism.virtual_stages)[0]) for j in range(self.pp)}

    @cached_property
    def orders(self) -> dict[int, list[Chunk]]:
        """Chunk order of every pipeline rank (the :attr:`slots` flattened)."""
        return {j: list(_rank_schedule(self.schedule, self.pp, self.micro_batches, j,
                                       self.parallelism.virtual_stages)[1]) for j in range(self.pp)}

    def in_flight(self, stage: int) -> int:
        """Most chunks of pipeline rank ``stage`` whose forward ran and whose backward (split
        schedules: weight pass) has not, at once (:func:`~clustersim.workload.schedule.max_in_flight`)."""
        return self._stats[stage][0]

    def slot_counts(self, stage: int) -> dict[tuple, int]:
        """How many slots of each signature pipeline rank ``stage`` runs: ``{((kind, chunk, mb > 0,
        mb == last), ...): count}``, one entry per chunk of the slot (as :attr:`slots` holds them)."""
        return dict(self._stats[stage][1])

    def micro_batch_like(self, later: bool, last: bool) -> int:
        """A micro-batch index with the given flags (``> 0``, the last one): the gradient work of a
        backward chunk depends on those only (:meth:`chunk_units`)."""
        if last:
            return self.micro_batches - 1
        return 1 if later else 0

    @cached_property
    def _stats(self):
        return _schedule_stats(self.schedule, self.pp, self.micro_batches, self.parallelism.virtual_stages)

    def vstage(self, stage: int, chunk: int) -> int:
        """Virtual stage of model chunk ``chunk`` of pipeline rank ``stage`` (interleaved: ``chunk * pp +
        stage``; V schedules and DualPipe: see :func:`~clustersim.workload.schedule.virtual_stage`)."""
        return virtual_stage(self.schedule, self.pp, stage, chunk)

    def virtual_stages_of(self, stage: int) -> list[int]:
        """Virtual stages (model chunks) of pipeline rank ``stage`` (DualPipe: stage ``r`` and its
        duplicate of stage ``pp - 1 - r``)."""
        return [self.vstage(stage, c) for c in range(self.virtual_stages)]

    # ------------------------------------------------------------------ units
    @property
    def units(self) -> StepUnits:
        """Cost units of a layer, the embedding and the head, built once.

        With a profile ``clock_table`` (sustained clocks), the compute duty of the step's kernels
        (layers x L, embedding and head once; per micro-batch) picks the slowdown of compute-bound
        kernels; one more pass with that slowdown, since it raises the duty.
        """
        if not hasattr(self, "_units"):
            if self.compute.clock_table:
                self.compute.clock_slowdown = 1.0
                for _ in range(2):
                    self.compute_duty = self._duty()
                    self.compute.clock_slowdown = self.compute.slowdown_at(self.compute_duty)
            costs = self.layer_costs
            self._units = StepUnits(costs.layer(), costs.embedding(), costs.head())
            self._moe_units = costs.layer(moe=True) if self.experts else None
        return self._units

    def use_units(self, units: StepUnits, compute_duty: float | None, clock_slowdown: float) -> None:
        """Take the units another step computed (with the ``compute_duty`` and sustained-clock
        ``clock_slowdown`` they were built at) instead of building them: the planner shares them
        between mixes with the same layer shape (same model, profile, ``tp``, micro-batch,
        sequence parallel, recompute and TP overlap), since building them is ~90 % of a screen."""
        self._units = units
        self.compute_duty = compute_duty
        self.compute.clock_slowdown = clock_slowdown

    @property
    def moe_units(self):
        """Units of an MoE layer (:class:`LayerUnits`), None for a dense model."""
        if not self.experts:
            return None
        _ = self.units
        if getattr(self, "_moe_units", None) is None:  # the units may come from the planner's cache (use_units)
            self._moe_units = self.layer_costs.layer(moe=True)
        return self._moe_units

    def layer_indices(self, vstage: int) -> range:
        """Global indices of the layers of virtual stage ``vstage``."""
        start = sum(self.layers_per_virtual_stage[:vstage])
        return range(start, start + self.layers_per_virtual_stage[vstage])

    def _layer_units_of(self, vstage: int) -> list:
        """The :class:`LayerUnits` of every layer of ``vstage`` (dense or MoE) in order."""
        dense, moe = self.units.layer, self.moe_units
        return [moe if self.model.is_moe_layer(i) else dense for i in self.layer_indices(vstage)]

    def expert_axis_groups(self, replica: int, stage: int) -> dict[str, list[list[int]]] | None:
        """Groups of the collectives inside layers that are not TP ones, of the executor rank of
        (``replica``, ``stage``): the MoE ``ep``/``etp`` groups and the context-parallel ``cp`` ones."""
        out: dict[str, list[list[int]]] = {}
        if self.experts:
            ep_group, etp_group = expert_groups(self.layout, self.experts.ep, self.experts.expert_tp, replica, stage)
            out.update({"ep": [ep_group], "etp": [etp_group]})
            if self.experts.node_limited:  # every rail and node group of the EP group: its whole traffic
                rails, nodes = ep_node_groups(ep_group, self.host_of, rank=self.layout.rank(dp=replica, pp=stage))
                out.update({"ep_inter": rails, "ep_intra": nodes})
        if self.context is not None:
            out["cp"] = cp_groups(self.layout, self.tp, replica, stage)
        return out or None

    def stage_expert_params(self, stage: int) -> float:
        """Routed-expert parameters per GPU on pipeline rank ``stage`` (ZeRO shards them over expert-DP)."""
        if not self.experts:
            return 0.0
        n = sum(self.model.is_moe_layer(i) for vs in self.virtual_stages_of(stage) for i in self.layer_indices(vs))
        return n * expert_layer_params(self.layer_costs)

    def _duty(self) -> float:
        """Fraction of the GPU time of one micro-batch's kernels spent in compute-bound ones."""
        cm, layers = self.compute, self.model.layers
        cm.tally[:] = [0.0, 0.0]
        self.layer_costs.layer()
        layer_cb, layer_mb = cm.tally
        if self.experts:  # MoE layers weigh in by their share of the layers
            cm.tally[:] = [0.0, 0.0]
            self.layer_costs.layer(moe=True)
            share = self.model.moe_layers / layers
            layer_cb = (1 - share) * layer_cb + share * cm.tally[0]
            layer_mb = (1 - share) * layer_mb + share * cm.tally[1]
        cm.tally[:] = [0.0, 0.0]
        self.layer_costs.embedding()
        self.layer_costs.head()
        edge_cb, edge_mb = cm.tally
        total = layers * (layer_cb + layer_mb) + edge_cb + edge_mb
        return (layers * layer_cb + edge_cb) / total if total > 0 else 0.0

    def with_gradient_work(self, unit: Unit, micro_batch: int | None) -> Unit:
        """``unit`` (a backward unit) with the per-parameter work of micro-batch ``micro_batch`` appended.

        Plain autograd gradients (``precision.grads`` equal to ``params``: PyTorch ``.grad``):

        * Gradient accumulation: the first micro-batch's backward hands its gradients to
          ``.grad`` (AccumulateGrad steals the buffer); every later one adds into it: one ``add_``
          kernel per parameter tensor (read both, write one).
        * DDP (``zero: 0``, ``dp > 1``), last micro-batch: the reducer's autograd hook copies each
          gradient into its bucket, and after the all-reduce copies it back (``bucket_cap_mb``
          buckets, ``gradient_as_bucket_view`` off): two copy kernels per tensor.
        """
        precision = self.training.precision
        if micro_batch is None or not unit.tensors or precision.grads != precision.params:
            # 16-bit weights with fp32 gradients are Megatron's main_grad buffers: the wgrad GEMM
            # accumulates into them (gradient-accumulation fusion) and they are the DDP bucket
            # memory, so there is neither an add nor a bucket copy
            return unit
        cm, tensors, grad_bytes = self.compute, unit.tensors, unit.grad_bytes
        extra = []
        if micro_batch > 0:
            extra.append(ComputeSegment(cm.memory_op("add", 3 * grad_bytes, 3 * grad_bytes, tensors), tensors))
        if micro_batch == self.micro_batches - 1 and self.grad_dp > 1 and self.parallelism.zero == 0:
            extra.append(ComputeSegment(cm.memory(4 * grad_bytes, 2 * tensors), 2 * tensors))
        if not extra:
            return unit
        return Unit(unit.name, list(unit.segments) + extra, grad_bytes, unit.param_count, tensors)

    def chunk_units(self, vstage: int, kind: str, micro_batch: int | None = None) -> list[Unit]:
        """Units of virtual stage ``vstage`` in execution order for ``kind`` F or B.

        With ``micro_batch`` a backward chunk carries that micro-batch's gradient work
        (:meth:`with_gradient_work`); recomputation puts the repeated forward work before each
        layer's backward.
        """
        grad_kind = "W" if self.split_backward else "B"
        if micro_batch is not None and kind == grad_kind:
            key = (vstage, micro_batch > 0, micro_batch == self.micro_batches - 1)
            if key not in self._backward_cache:
                self._backward_cache[key] = [self.with_gradient_work(u, micro_batch)
                                             for u in self.chunk_units(vstage, kind)]
            return self._backward_cache[key]
        if self.split_backward and kind != "F":
            return self._split_units(vstage, kind)
        _, (embed_f, embed_b), (head_f, head_b) = self.units
        layers = self._layer_units_of(vstage)
        first, last = vstage == 0, vstage == self.n_virtual_stages - 1
        if kind == "F":
            return ([embed_f] if first else []) + [lu.forward for lu in layers] + ([head_f] if last else [])
        n_rc = self.training.recompute_layers
        if n_rc is not None:  # block recompute: the chunk's first n_rc layers recompute, the rest keep theirs
            return (([head_b] if last else []) + [self._layer_backward(lu, i < n_rc) for i, lu in
                                                   reversed(list(enumerate(layers)))] + ([embed_b] if first else []))
        backward = {}
        for lu in {id(lu): lu for lu in layers}.values():  # dense and MoE layers: one backward unit each
            backward[id(lu)] = self._layer_backward(lu)
        return ([head_b] if last else []) + [backward[id(lu)] for lu in reversed(layers)] + ([embed_b] if first else [])

    @cached_property
    def split_units(self) -> StepUnits:
        """Cost units with the backward split (:meth:`LayerCosts.layer` with ``split``): the
        backward units are the input-gradient passes and carry the weight-gradient GEMMs."""
        _ = self.units  # the sustained-clock slowdown in force, as for the whole units
        costs = self.layer_costs
        return StepUnits(costs.layer(split=True), costs.embedding(), costs.head(split=True))

    @cached_property
    def _split_moe_layer(self):
        """The MoE layer's units with the backward split (None for a dense model)."""
        return self.layer_costs.layer(moe=True, split=True) if self.experts else None

    def _split_units(self, vstage: int, kind: str) -> list[Unit]:
        """Input-gradient (``kind`` B) or weight-gradient (W) units of ``vstage`` in execution order.

        B holds everything but the weight-gradient GEMMs (recomputation's repeated forward work
        included) and produces no gradient; W holds the weight-gradient GEMMs of the layers and
        the LM head and produces the unit's gradients (the embedding's backward, a scatter-add
        into its table, stays in B)."""
        split = self.split_units
        dense = split.layer
        layers = [self._split_moe_layer if self.model.is_moe_layer(i) else dense for i in self.layer_indices(vstage)]
        first, last = vstage == 0, vstage == self.n_virtual_stages - 1
        head_b, embed_b = split.head.backward, split.embedding.backward
        n_rc = self.training.recompute_layers
        units = ([head_b] if last else []) + [self._layer_backward(lu, n_rc is None or i < n_rc)
                                               for i, lu in reversed(list(enumerate(layers)))] \
            + ([embed_b] if first else [])
        # one B (W) unit per distinct full backward unit: the layers of every chunk share them
        made = self._split_made
        out = []
        for u in units:
            if kind != "B" and u.weight_grad is None:
                continue
            hit = made.get((kind, id(u)))
            if hit is None:
                if kind == "B":
                    new = Unit(u.name, u.segments, 0.0 if u.weight_grad is not None else u.grad_bytes, u.param_count,
                               u.tensors)
                else:
                    new = Unit(u.name, list(u.weight_grad), u.grad_bytes, u.param_count, u.tensors)
                hit = made[(kind, id(u))] = (u, new)  # u kept alive: its id stays its own
            out.append(hit[1])
        return out

    def _layer_backward(self, layer_units, recompute: bool = True) -> Unit:
        """Backward unit of a layer with the forward work recomputation repeats before it (one
        object per layer units, shared by every chunk; ``recompute`` False: a layer that block
        recompute, ``training.recompute_layers``, leaves out)."""
        key = ("layer", id(layer_units)) if recompute else ("layer-kept", id(layer_units))
        hit = self._split_made.get(key)
        if hit is None:
            hit = self._split_made[key] = (layer_units, self._make_layer_backward(layer_units) if recompute
                                           else layer_units[1])
        return hit[1]

    def _make_layer_backward(self, layer_units) -> Unit:
        layer_f, layer_b, layer_extra = layer_units
        repeated: list = []
        if self.training.recompute == "full":
            repeated = list(layer_f.segments)
        elif self.training.recompute == "selective" and layer_extra is not None:
            repeated = list(layer_extra.segments)
        if repeated:
            return Unit("layer", repeated + layer_b.segments, layer_b.grad_bytes, layer_b.param_count, layer_b.tensors,
                        layer_b.weight_grad)
        return layer_b

    # ------------------------------------------------------------------ per pipeline rank
    def stage_params(self, stage: int) -> float:
        """Parameters held per GPU on pipeline rank ``stage`` (all its model chunks)."""
        _, (embed_f, _), (head_f, _) = self.units
        vstages = self.virtual_stages_of(stage)
        n_moe = sum(self.model.is_moe_layer(i) for vs in vstages for i in self.layer_indices(vs))
        n_dense = sum(self.layers_per_virtual_stage[vs] for vs in vstages) - n_moe
        n = n_dense * self.units.layer.forward.param_count  # a product, not a sum: exact for dense models
        if n_moe:
            n += n_moe * self.moe_units.forward.param_count
        if 0 in vstages:
            n += embed_f.param_count
        if self.n_virtual_stages - 1 in vstages:
            n += head_f.param_count
            if self.model.tied_embeddings and self.pp > 1:
                n += embed_f.param_count  # a copy of the embedding for the tied head
        return n

    def stage_tensors(self, stage: int) -> int:
        """Parameter tensors on pipeline rank ``stage`` (entries in the optimizer's lists)."""
        _, (embed_f, _), (head_f, _) = self.units
        vstages = self.virtual_stages_of(stage)
        n = sum(lu.forward.tensors for vs in vstages for lu in self._layer_units_of(vs))
        if 0 in vstages:
            n += embed_f.tensors
        if self.n_virtual_stages - 1 in vstages:
            n += head_f.tensors
        return n

    def optimizer_seconds(self, n_params: float) -> float:
        """GPU seconds of the optimizer step over ``n_params`` parameters, each moving
        :func:`optimizer_update_bytes` (which includes one gradient read for the norm clip).

        AdamW with a measured ``adamw`` class (bench ``--kernels``: one foreach step): the step's
        bytes at the measured fraction of HBM bandwidth, the norm's gradient read at full copy
        bandwidth; otherwise all bytes at HBM bandwidth.
        """
        cm = self.compute
        update = optimizer_update_bytes(self.training.precision, self.training.optimizer)
        if self.training.optimizer == "adamw" and cm.memory_table.get("adamw"):
            norm = n_params * self.grad_dtype_bytes
            return cm.memory_op("adamw", n_params * update - norm, n_params * update, 2) + cm.memory(norm, 0)
        return cm.memory(n_params * update, 2)

    def optimizer_host_seconds(self, stage: int) -> float:
        """Host seconds of ``optimizer.step()``: torch's multi-tensor (foreach) AdamW walks its
        parameter list in Python once (state, grads, step counters: one call's worth per tensor)
        and issues 9 foreach operations (decay, lerp, mul, addcmul, sqrt, div, add, addcdiv, step
        increment); SGD 1."""
        foreach_ops = 9 if self.training.optimizer == "adamw" else 1
        return (foreach_ops + self.stage_tensors(stage)) * self.host_kernel_s

    # ------------------------------------------------------------------ the DAG, memory, FLOPs
    def build(self) -> Graph:
        """The op DAG of one step (on the executor ranks)."""
        graph = Graph()
        graph.overlap = self.overlap_slowdowns()
        graph.p2p_wait = self.p2p_wait_slowdowns() if self.pp > 1 and self.parallelism.pp_p2p == "torch" else None
        cm = self.compute
        if cm.clock_table and cm.clock_window_s:  # the clock follows each rank's own load (simulate.overlap)
            _ = self.units  # sets the duty and the slowdown the kernels are costed at
            graph.clock = (self.compute_duty, cm.clock_slowdown, tuple(cm.clock_table), cm.clock_window_s)
        # FSDP over one rank shards nothing: the step is plain gradient accumulation, as ZeRO-0's
        # (FSDP2's hooks and per-parameter copies only run where a shard group has peers)
        if self.parallelism.zero == 3 and self.grad_dp > 1:
            build_fsdp(graph, self)
            return graph
        grad_sync = self.grad_dp > 1
        param_gather = self.parallelism.zero in (1, 2) and grad_sync
        chunks = add_chunk_compute(graph, self, grad_sync=grad_sync, param_gather=param_gather)
        add_pipeline_transfers(graph, self, chunks)
        if param_gather:
            add_param_gathers(graph, self, chunks)
        reductions = add_grad_reductions(graph, self, chunks)
        tied = add_dualpipe_mirror_reduce(graph, self, reductions, add_tied_embedding_reduce(graph, self))
        norms = add_grad_norm(graph, self, reductions, tied)
        add_optimizer_steps(graph, self, reductions, tied, norms)
        return graph

    def overlap_slowdowns(self) -> tuple[float, float, tuple[str, ...]] | None:
        """How this step's kernels and a DP/ZeRO collective beside them slow each other (profile
        ``overlap_table``): the GEMM class at the layer's MLP GEMM (``tokens x hidden x ffn``, the
        largest of a layer), weighted by the step's compute duty; ``(compute, collective, ops)``
        with the collectives measured. None without an overlap table."""
        cm = self.compute
        if not cm.overlap_table:
            return None
        _ = self.units  # sets the compute duty (and the sustained clock) where the profile has a clock_table
        duty = self.compute_duty if self.compute_duty is not None else self._duty()
        tokens = self.micro_batch * self.model.seq_len
        flops = 2.0 * tokens * self.model.hidden * self.model.ffn_hidden / self.tp
        ops = tuple(sorted({p[2] for p in cm.overlap_table}))
        return (*cm.overlap_slowdowns(flops, duty), ops)

    def p2p_wait_slowdowns(self) -> tuple[float, float] | None:
        """How this step's kernels slow beside a posted p2p kernel that waits (profile ``p2p_wait_table``):
        ``(receive, send)`` at the layer's MLP GEMM, weighted by the compute duty; None without a table."""
        cm = self.compute
        if not cm.p2p_wait_table:
            return None
        _ = self.units
        duty = self.compute_duty if self.compute_duty is not None else self._duty()
        flops = 2.0 * self.micro_batch * self.model.seq_len * self.model.hidden * self.model.ffn_hidden / self.tp
        return cm.p2p_wait_slowdowns(flops, duty)

    def memory(self, capacity_bytes: float) -> dict:
        """Per-GPU memory of the fullest pipeline rank (bytes); see :func:`step_memory`."""
        return step_memory(self, capacity_bytes)

    def model_flops_per_step(self) -> float:
        """Model FLOPs of one optimizer step (whole job), the MFU numerator."""
        return self.model.model_flops_per_token() * self.training.global_batch * self.model.seq_len
