"""The sections of a scenario file: cluster, model, training, parallelism, a generic job's phases,
several jobs, simulation and faults.

Each section is a strict pydantic model holding its own fields, their defaults and the rules
that need only that section; the rules across sections live with the scenario that holds them
(:class:`clustersim.config.scenario.Scenario`), which re-exports every name here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_serializer, model_validator

from clustersim.config.base import StrictModel, bounded, capped
from clustersim.errors import ClusterSimError
from clustersim.units import parse_size

# Counts that scale work, each with its bound (clustersim.budget.BOUNDS: the value and the reason)
GPUs = bounded("gpus")
Nodes = bounded("nodes")
Layers = bounded("layers")
Width = bounded("model width")
Heads = bounded("heads")
Experts = bounded("experts")
SeqLen = bounded("seq_len")
Batch = bounded("global_batch")
Dtype = Literal["fp32", "bf16", "fp16", "fp8"]


class ScenarioClusterSection(StrictModel):
    """The ``cluster:`` section of a scenario: which hardware the scenario runs on."""

    topology: str = Field(description="Shipped topology name (hgx-h200) or a path, resolved against the scenario's folder, then the cwd.")
    gpus: GPUs | None = Field(None, description="Use the first N GPUs of the topology (default: all).")
    nodes: Nodes | None = Field(None, description="Replicate the node preset N times on the topology's fabric (clusters).")
    gpus_per_node: GPUs | None = Field(None, description="Place ranks on the first N GPUs of every node only (default: all): "
                                       "rack-aware placement, e.g. 64 of each NVL72 rack's 72 so that one EP64 group "
                                       "lies in each rack of a 256-GPU job on four racks.")
    profile: str | None = Field(None, description="Calibration profile file or shipped name; default: the topology's default profile.")
    nvls: bool | None = Field(None, description="In-network reduction on NVSwitch/SHARP: true, false, or null (the profile decides).")
    p2p: bool = Field(True, description="GPU peer-to-peer over NVLink/PCIe; false stages through host memory.")
    gpudirect_rdma: bool = Field(True, description="NIC reads/writes GPU memory directly; false stages through host memory.")


class MoESection(StrictModel):
    """Mixture-of-experts MLPs (``model.moe``): routed experts, optional shared experts, and which layers have them."""

    experts: Experts = Field(description="Routed experts per MoE layer.")
    top_k: Experts = Field(description="Experts each token is sent to.")
    expert_ffn_hidden: Width = Field(description="Inner width of one expert's MLP (same activation as model.mlp).")
    shared_experts: bounded("experts", minimum=0) = Field(0, description="Always-active experts per MoE layer (a dense MLP of shared_experts*expert_ffn_hidden, TP-split).")
    moe_every: Layers = Field(1, description="Every n-th layer (after first_dense_layers) is MoE; 1 = all of them.")
    first_dense_layers: bounded("layers", minimum=0) = Field(0, description="Leading layers that keep the dense MLP (model.ffn_hidden).")
    capacity_factor: float | None = Field(None, gt=0, description="Tokens an expert takes, as a multiple of the mean load; null = dropless.")
    router_skew: float = Field(0.0, ge=0, description="Zipf exponent of expert popularity (seeded by simulation.seed); 0 = uniform routing.")
    implementation: Literal["grouped", "loop", "loop_modules"] = Field(
        "grouped", description="grouped: one grouped GEMM per weight over the local experts (Megatron-Core, torchtitan, "
        "torch._grouped_mm); loop: a Python loop over the experts as Hugging Face models run it (torch.where per expert, "
        "which waits for the GPU, then the expert's own GEMMs and kernels) on stacked expert weights indexed per expert "
        "(transformers' GPT-OSS / Qwen3-MoE); loop_modules: the same loop over one module per expert (Mixtral).")

    @model_validator(mode="after")
    def _k(self) -> "MoESection":
        if self.top_k > self.experts:
            raise ValueError(f"model.moe.top_k ({self.top_k}) exceeds model.moe.experts ({self.experts})")
        return self


class MLASection(StrictModel):
    """DeepSeek's multi-head latent attention (``model.mla``; DeepSeek-V2 arXiv 2405.04434 section 2.1, V3
    arXiv 2412.19437 section 2.1.1), with the Hugging Face config's names.

    Per layer: queries through a low-rank ``hidden -> q_lora_rank -> heads x (qk_nope + qk_rope)`` pair of
    projections (one ``hidden -> heads x qk`` projection without ``q_lora_rank``), keys and values through one
    shared latent ``hidden -> kv_lora_rank + qk_rope`` (the rope part is one key head shared by every head),
    then ``kv_lora_rank -> heads x (qk_nope + v_head_dim)``, and the output projection ``heads x v_head_dim ->
    hidden``; an RMSNorm on each latent. The down projections are replicated over TP ranks, the up
    projections and the output split by heads (Megatron-Core's MLA)."""

    q_lora_rank: Width | None = Field(None, description="Rank of the query compression (DeepSeek-V3 1536); null: "
                                      "one full-rank query projection (DeepSeek-V2-Lite).")
    kv_lora_rank: Width = Field(description="Rank of the joint key/value compression (DeepSeek-V3 512).")
    qk_nope_head_dim: Width = Field(description="Per-head query/key width without rotary embedding (DeepSeek-V3 128).")
    qk_rope_head_dim: Width = Field(description="Per-head query/key width with rotary embedding, the decoupled "
                                    "rope key shared by all heads (DeepSeek-V3 64).")
    v_head_dim: Width = Field(description="Per-head value width (DeepSeek-V3 128).")


#: model fields left out of a dump while null, so that the scenarios written before they existed dump as before
_DUMP_IF_SET = ("head_dim", "mla", "hf_config")


class ModelSection(StrictModel):
    """A decoder-only transformer. ``preset`` (or ``hf_config``) fills every field; explicit fields override it."""

    hf_config: str | None = Field(None, description="A Hugging Face config.json (path, relative to the scenario's "
                                  "folder) whose architecture fills the model fields as `clustersim scenario "
                                  "from-hf` maps them (docs/inputs.md); explicit fields override it.")
    preset: str | None = Field(None, description="gpt3-175b | llama3-8b | llama3-70b | llama3-405b | gpt-1b | ... (see clustersim.config.presets).")
    layers: Layers | None = Field(None, description="Transformer layers.")
    hidden: Width | None = Field(None, description="Model width h.")
    heads: Heads | None = Field(None, description="Attention (query) heads.")
    kv_heads: Heads | None = Field(None, description="Key/value heads (GQA); default = heads.")
    head_dim: Width | None = Field(None, description="Width of one attention head; default hidden/heads. Set it "
                                   "when the attention width is decoupled from hidden (Qwen3-30B-A3B: 32 heads x 128 "
                                   "= 4096 query channels on hidden 2048; GPT-OSS: 64 x 64 on 2880): Q and the "
                                   "output projection's input are heads*head_dim wide, K and V kv_heads*head_dim.")
    ffn_hidden: Width | None = Field(None, description="MLP inner width; default 4*hidden.")
    vocab: Width | None = Field(None, description="Vocabulary size.")
    seq_len: SeqLen | None = Field(None, description="Sequence length in tokens.")
    mlp: Literal["gelu", "swiglu"] | None = Field(None, description="gelu: two matrices; swiglu: three.")
    norm: Literal["layernorm", "rmsnorm"] | None = Field(None, description="Normalisation layers.")
    bias: bool | None = Field(None, description="Linear layers carry biases.")
    tied_embeddings: bool | None = Field(None, description="LM head shares the input embedding matrix.")
    position_embedding: Literal["learned", "rope", "none"] | None = Field(None, description="learned adds a seq_len x hidden table.")
    attention: Literal["flash", "eager"] | None = Field(None, description="flash: fused, no s^2 scores stored; eager: materialised scores.")
    moe: MoESection | None = Field(None, description="Mixture-of-experts MLPs; null = dense model.")
    mla: MLASection | None = Field(None, description="Multi-head latent attention (DeepSeek-V2/V3) instead of "
                                   "Q/K/V projections; needs kv_heads = heads; null = multi-head/grouped attention.")

    @model_validator(mode="before")
    @classmethod
    def _from_hf(cls, data: Any, info: ValidationInfo) -> Any:
        """Fill the fields from ``hf_config`` (explicit fields win; the path resolves against the folder of
        the file being validated, then the cwd)."""
        if not isinstance(data, dict) or not isinstance(data.get("hf_config"), str):
            return data
        from clustersim.config.hf import model_fields_from_file

        base = (info.context or {}).get("base_dir") if info is not None else None
        fields = model_fields_from_file(data["hf_config"], base=base, field="model.hf_config")
        return {**fields, **data}

    @model_serializer(mode="wrap")
    def _dump(self, handler) -> dict[str, Any]:
        out = handler(self)
        for key in _DUMP_IF_SET:
            if out.get(key) is None:
                out.pop(key, None)
        return out

    @model_validator(mode="after")
    def _fill(self) -> "ModelSection":
        from clustersim.config.presets import MODEL_DEFAULTS, MODEL_PRESETS

        base: dict[str, Any] = dict(MODEL_DEFAULTS)
        if self.preset is not None:
            if self.preset not in MODEL_PRESETS:
                raise ValueError(f"unknown model preset {self.preset!r} (known: {', '.join(sorted(MODEL_PRESETS))})")
            base.update(MODEL_PRESETS[self.preset])
        explicit = {k: v for k, v in self.__dict__.items() if v is not None}
        base.update(explicit)
        for key in ("layers", "hidden", "heads", "vocab", "seq_len"):
            if base.get(key) is None:
                raise ValueError(f"model.{key} is required (give it or a preset)")
        if base.get("kv_heads") is None:
            base["kv_heads"] = base["heads"]
        if base.get("ffn_hidden") is None:
            base["ffn_hidden"] = 4 * base["hidden"]
        if base.get("head_dim") is None and base.get("mla") is None and base["hidden"] % base["heads"]:
            raise ValueError(f"hidden ({base['hidden']}) must be divisible by heads ({base['heads']}), "
                             "or give model.head_dim")
        if base.get("mla") is not None and base["kv_heads"] != base["heads"]:
            raise ValueError(f"model.mla needs kv_heads = heads (every head has its own key and value after the "
                             f"latent up-projection), got kv_heads {base['kv_heads']} and heads {base['heads']}")
        if base.get("mla") is not None and base.get("head_dim") is not None:
            raise ValueError("give model.head_dim or model.mla, not both (mla sets the head widths)")
        if base["heads"] % base["kv_heads"]:
            raise ValueError(f"heads ({base['heads']}) must be divisible by kv_heads ({base['kv_heads']})")
        for k, v in base.items():
            object.__setattr__(self, k, v)
        return self


class PrecisionSection(StrictModel):
    """Number formats of model state. Pure bf16: params bf16, grads bf16, optimizer_states bf16, master_weights false."""

    params: Dtype = Field("bf16", description="Working copy of the weights used in forward/backward.")
    grads: Dtype = Field("fp32", description="Gradient accumulation buffer (Megatron main grads are fp32).")
    optimizer_states: Dtype = Field("fp32", description="AdamW moments (m, v).")
    master_weights: bool = Field(True, description="Keep an fp32 master copy of the weights for the update.")
    fp8_recipe: Literal["tensorwise", "rowwise"] = Field(
        "tensorwise", description="With params: fp8, how GEMM operands are scaled to e4m3: tensorwise (one scale per "
        "tensor, Transformer Engine's default) or rowwise (one per row, torchao's rowwise recipe). The weights stay "
        "16-bit and are cast per GEMM; attention, norms and communication stay 16-bit.")


class TrainingSection(StrictModel):
    """Batch, optimizer and memory-saving settings."""

    global_batch: Batch = Field(8, description="Sequences per optimizer step (all DP replicas together).")
    micro_batch: Batch = Field(1, description="Sequences per forward/backward pass on one rank.")
    optimizer: Literal["adamw", "sgd"] = Field("adamw", description="adamw keeps two moments per parameter; sgd none (no momentum).")
    optimizer_impl: Literal["foreach", "fused", "distributed"] = Field(
        "foreach", description="How the optimizer step is run, which decides its temporaries: foreach (torch.optim "
        "AdamW's default multi-tensor path, which allocates sqrt(v) for every parameter it updates), fused (torch "
        "fused=True, apex / Transformer Engine FusedAdam: one kernel per tensor chunk, no temporary) or distributed "
        "(Megatron's distributed optimizer: the fused kernel on the rank's shard; needs parallelism.zero >= 1).")
    recompute: Literal["none", "selective", "full"] = Field("none", description="Activation recomputation.")
    recompute_layers: Layers | None = Field(
        None, description="With recompute: full, only the first N layers of each model chunk (pipeline stage, or "
        "virtual stage) recompute; the others keep their activations (Megatron --recompute-method block "
        "--recompute-num-layers N). null: every layer.")
    precision: PrecisionSection = Field(default_factory=PrecisionSection)
    kernel_fusion: Literal["fused", "none"] = Field(
        "fused", description="fused: one kernel per RoPE, SwiGLU and masked softmax, native GQA (Megatron-LM, "
        "Transformer Engine, compiled code); none: the separate PyTorch eager kernels (reference/train_gpt.py): "
        "RoPE as neg/cat/mul/add, silu then mul, repeat_interleave of k and v, scale/masked_fill/softmax.")
    steps: bounded("steps") = Field(1, description="Optimizer steps to simulate (the report is per step).")


class ParallelismSection(StrictModel):
    """Degrees of parallelism and how they are scheduled (dp*tp*pp*ep*cp = GPUs)."""

    dp: GPUs = Field(1, description="Data-parallel replicas.")
    tp: GPUs = Field(1, description="Tensor-parallel degree (Megatron column/row split).")
    pp: GPUs = Field(1, description="Pipeline stages.")
    ep: GPUs = Field(1, description="Expert-parallel degree (needs model.moe). Megatron-Core convention: EP is carved "
                       "out of the dp*tp ranks of a pipeline stage and does not multiply the GPU count; expert "
                       "data parallel = dp*tp/(ep*expert_tp).")
    expert_tp: GPUs = Field(1, description="Tensor-parallel degree inside each expert (splits expert_ffn_hidden).")
    ep_dispatcher: Literal["alltoall", "allgather"] = Field(
        "alltoall", description="Token dispatch/combine: all-to-all over the EP group, or all-gather then reduce-scatter.")
    ep_transport: Literal["nccl", "nvshmem"] = Field(
        "nccl", description="Transport of the EP dispatch/combine: nccl (an all-to-all collective, launched per call) "
        "or nvshmem (one-sided GPU-initiated puts as DeepEP sends them: a few us per message, no collective launch, "
        "the same bandwidth; needs ep_dispatcher: alltoall).")
    ep_max_nodes: Nodes | None = Field(
        None, description="Node-limited routing (DeepSeek-V3, arXiv 2412.19437 section 2.1.2): each token's top_k routed "
        "experts lie on at most this many nodes of its EP group, and the dispatch/combine runs as DeepEP does: one "
        "copy per target node over the network, then NVLink to the experts. null: unrestricted routing, one "
        "all-to-all. At most the nodes the EP group spans; needs ep_dispatcher: alltoall.")
    ep_comm_overlap: bool = Field(False, description="MoE batch-level overlap (Megatron-Core >= 0.14 --overlap-moe-expert-parallel-comm): "
                                  "each layer's EP dispatch/combine runs beside the attention and shared-expert compute of "
                                  "another micro-batch; modelled as hidden behind the same amount of the layer's own dense compute.")
    cp: GPUs = Field(1, description="Context-parallel degree: the sequence split over cp ranks (zig-zag, 2*cp chunks); "
                       "the ranks hold the same weights, so gradients reduce over dp*cp.")
    cp_algorithm: Literal["ring", "allgather", "alltoall"] = Field(
        "ring", description="ring: K/V blocks passed point to point around the CP group, each overlapped with the "
                            "attention block it feeds (TransformerEngine p2p); allgather: K/V all-gathered before "
                            "attention, dK/dV reduce-scattered after it (Llama 3); alltoall: DeepSpeed-Ulysses, "
                            "Q/K/V all-to-all from sequence to head split before attention and the output back "
                            "after it (TE a2a; needs heads/tp and kv_heads/tp divisible by cp).")
    sequence_parallel: bool = Field(False, description="With tp > 1: norms/dropout split along the sequence (RS/AG instead of AR).")
    tp_comm_overlap: bool = Field(False, description="With tp > 1 and sequence_parallel: each TP all-gather/reduce-scatter "
                                  "runs beside the GEMM it feeds or drains (Megatron-Core --tp-comm-overlap, TE userbuffers).")
    vocab_parallel: bool = Field(True, description="With tp > 1: embedding and LM head split across TP ranks; false replicates them.")
    zero: Literal[0, 1, 2, 3] = Field(0, description="0 = DDP, 1 = shard optimizer states, 2 = + gradients, 3 = + parameters (FSDP).")
    fsdp_shard_size: GPUs | None = Field(
        None, description="HSDP (zero: 3): parameters, gradients and optimizer states shard over groups of this many "
        "consecutive DP ranks (8: one node with tp 1) and replicate across the groups: all-gathers and "
        "reduce-scatters inside a shard group, then an all-reduce of each gradient shard across the replicas "
        "(torch fully_shard on a 2-D mesh). null: one shard group of all dp ranks (FSDP). Divides dp, at least 2.")
    schedule: Literal["gpipe", "1f1b", "interleaved", "zb_h1", "zb_v", "dualpipe", "dualpipe_v"] = Field(
        "1f1b", description="Pipeline schedule (zb_*: zero-bubble, backward split into input and weight "
                            "gradients; dualpipe*: DeepSeek-V3's bidirectional schedules).")
    virtual_stages: Layers = Field(1, description="Model chunks per pipeline rank (interleaved; 2 for zb_v and dualpipe_v).")
    pp_p2p: Literal["when_ready", "torch"] = Field(
        "when_ready", description="Pipeline point-to-point program. when_ready: each chunk's output goes to the next "
        "stage when it is ready and the receiver waits for it; nothing waits resident on the GPU (an idealised program "
        "that posts every exchange as it needs it). torch: torch.distributed.pipelining's programs (torch 2.11 "
        "Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B; schedules 1f1b, gpipe, interleaved): sends and receives "
        "in batches coalesced on one NCCL stream per rank, receives posted ahead of need, and a posted kernel that waits for "
        "its peer slows the compute beside it (profile compute.p2p_wait_table).")
    ddp_bucket_mb: float = Field(25.0, gt=0, le=1e9, description="DDP gradient bucket size in MB (PyTorch default 25).")
    dp_overlap: bool = Field(True, description="DDP / ZeRO-1/2: gradient reduction bucket by bucket during the backward (PyTorch DDP, "
                             "Megatron --overlap-grad-reduce); false: all buckets after the whole backward (Megatron "
                             "before --overlap-grad-reduce, most published A100 runs).")
    order: str = Field("tp-cp-ep-dp-pp", description="Rank layout, innermost first: tp ranks are adjacent (same node), pp outermost.")

    @field_validator("zero", mode="before")
    @classmethod
    def _zero_not_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):  # a Literal of ints would take true as 1
            raise ValueError(f"must be 0, 1, 2 or 3, got {str(v).lower()} (a boolean)")
        return v

    @field_validator("order")
    @classmethod
    def _order(cls, v: str) -> str:
        parts = v.split("-")
        if sorted(parts) != sorted(["tp", "cp", "ep", "dp", "pp"]):
            raise ValueError("order must be a permutation of tp-cp-ep-dp-pp")
        return v


#: Simulated time of a run, bounded: beyond 10^6 s (11.6 days of one step) the clock's double has a
#: resolution of 1.2e-10 s and climbing (1.2e-4 s at 10^12 s, coarser than NCCL's microsecond
#: latencies, so events stop advancing the clock); no training step or job phase lasts that long.
MAX_SIMULATED_S = 1e6
_TIME_WHY = "10^6 s, 11.6 days; the simulated clock loses its microsecond resolution beyond"
PhaseSeconds = capped(MAX_SIMULATED_S, _TIME_WHY)


class ComputePhase(StrictModel):
    """Work on each rank's GPU: by FLOPs and bytes (roofline with the profile) or by seconds."""

    flops: capped(1e24, "10^6 s of a 10^18 FLOP/s job; 100x the compute of the largest training runs") | None = Field(
        None, ge=0, description="Floating-point operations per rank (after divide_among_ranks).")
    bytes: capped(1e19, "10^6 s at 10 TB/s, twice the HBM bandwidth of a B200") | None = Field(
        None, ge=0, description="HBM bytes moved per rank.")
    seconds: PhaseSeconds | None = Field(None, ge=0, description="Fixed duration; overrides flops/bytes.")
    dtype: Dtype = Field("bf16", description="Arithmetic type: selects the peak FLOP/s of the GPU.")
    efficiency: float | None = Field(None, gt=0, le=1, description="Fraction of peak reached; default: the profile's GEMM efficiency.")
    divide_among_ranks: bool = Field(False, description="Strong scaling: flops/bytes are job totals split evenly over the ranks.")

    @model_validator(mode="after")
    def _some(self) -> "ComputePhase":
        if self.flops is None and self.bytes is None and self.seconds is None:
            raise ValueError("compute needs flops, bytes or seconds")
        return self


class CollectivePhase(StrictModel):
    """A collective among a group of ranks (nccl-tests size conventions)."""

    op: Literal["broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                "scatter", "gather", "send_recv", "barrier"]
    size: str | int = Field(0, description="Bytes (4096, '8B', '256MiB'); nccl-tests convention per op.")
    group: Literal["all", "node", "dp", "tp", "pp"] | list[int] = Field("all", description="all ranks, the ranks of each node, or explicit ranks.")
    algorithm: str = Field("auto")
    protocol: str = Field("auto")

    @field_validator("size")
    @classmethod
    def _size(cls, v: str | int) -> str | int:
        try:
            parse_size(v)
        except ClusterSimError as exc:
            raise ValueError(exc.reason) from None
        return v


class Phase(StrictModel):
    """One step of a generic job; runs on every rank (or on ``ranks``) ``repeat`` times."""

    name: str
    compute: ComputePhase | None = None
    collective: CollectivePhase | None = None
    host_seconds: PhaseSeconds | None = Field(None, ge=0, description="Host-side time (launch, init, I/O) during which the GPU idles.")
    repeat: bounded("repeat") = 1
    ranks: list[Annotated[int, Field(ge=0)]] | None = Field(None, description="Ranks that run this phase (default: all).")

    @model_validator(mode="after")
    def _one(self) -> "Phase":
        n = sum(x is not None for x in (self.compute, self.collective, self.host_seconds))
        if n != 1:
            raise ValueError("a phase has exactly one of compute, collective, host_seconds")
        return self


class JobSection(StrictModel):
    """A generic job: per-rank phases instead of a transformer model."""

    ranks: GPUs | None = Field(None, description="Ranks (GPUs) taking part; default: all GPUs of the cluster.")
    iterations: bounded("iterations") = Field(1, description="Times the whole phase list runs.")
    samples_per_iteration: float | None = Field(None, gt=0, description="For throughput reporting (samples/s).")
    fresh_communicators: bool = Field(False, description=(
        "The timed run starts right after its communicators were created (as a program's timed section after "
        "ncclCommInitRank): the first collective of each communicator pays the profile's "
        "host.first_collective_us (NCCL's peer connection and kernel load). False: a steady state, no such cost."))
    phases: list[Phase] = Field(min_length=1)

    @model_validator(mode="after")
    def _simulated_time(self) -> "JobSection":
        # the fixed durations alone (host_seconds, compute.seconds) give a lower estimate of the run
        per = sum(p.repeat * ((p.host_seconds or 0.0) + ((p.compute.seconds or 0.0) if p.compute else 0.0))
                  for p in self.phases)
        total = self.iterations * per
        if total > MAX_SIMULATED_S:
            raise ValueError(f"the phases' fixed durations add up to {total:.3g} s of simulated time ({self.iterations:,} "
                             f"iteration(s) of {per:.3g} s), more than the bound of {MAX_SIMULATED_S:g} s ({_TIME_WHY})")
        return self


class JobEntry(StrictModel):
    """One job of a ``jobs:`` scenario: the sections of a one-job scenario plus where it runs.

    The cross-field rules of a one-job scenario apply to each entry, and the placement rules
    (sizes, overlaps, the cluster's GPU count) to all of them together: :mod:`clustersim.config.jobs`.
    """

    name: str = Field(description="Short unique name of the job (tables, traces).")
    model: ModelSection | None = Field(None, description="A transformer, as in a one-job scenario.")
    job: JobSection | None = Field(None, description="Generic phases, as in a one-job scenario (job.ranks: its size).")
    training: TrainingSection = Field(default_factory=TrainingSection)
    parallelism: ParallelismSection = Field(default_factory=ParallelismSection)
    placement: Literal["packed", "spread"] | list[Annotated[int, Field(ge=0)]] = Field(
        "packed", description="Cluster GPUs the job's ranks 0..n-1 run on: an explicit list of GPU ranks; packed: the "
        "lowest free GPUs (fewest nodes); spread: as evenly as it can over every node with free GPUs, each "
        "node's share contiguous. Explicit lists are placed first, then packed/spread jobs in file order.")


class SimulationSection(StrictModel):
    """How to simulate."""

    fidelity: Literal["flow", "analytical"] = Field("flow", description="flow: discrete-event with link sharing; analytical: closed forms.")
    seed: int = Field(0, ge=0, description="Seed for any randomness (none in the default models).")


class LinkSelector(StrictModel):
    """Links picked by kind and/or the node (host index) they touch."""

    kind: str | None = Field(None, description="Link kind: nvlink, pcie, infiniband, ethernet, cpu-interconnect...")
    node: int | None = Field(None, ge=0, description="Host index the link touches (h<node>.* on either end).")


LinkRef = Annotated[str | LinkSelector, Field(description='A link name "src->dst" as `clustersim topo show` lists it, or {kind:, node:}.')]


class LinkDown(StrictModel):
    """A failed link: routes that crossed it take another path, or the run fails naming the link."""

    link: LinkRef


class LinkDegraded(StrictModel):
    """A link running at a fraction of its line rate (flapping lanes, a bad cable, a throttled port)."""

    link: LinkRef
    fraction: float = Field(gt=0, le=1, description="Remaining share of the bandwidth, 0 < fraction <= 1.")


class Straggler(StrictModel):
    """One slow rank: every compute kernel of the rank takes ``slowdown`` times as long, and its host (the
    thread that issues its kernels and collectives) ``host_slowdown`` times as long."""

    rank: int = Field(ge=0)
    slowdown: capped(1000, "a rank 1,000x slower is a dead GPU, not a straggler (node_lost models one); reported "
                     "stragglers are 1.1-10x") = Field(1.0, ge=1, description="Compute-time factor (1.3 = 30 % slower).")
    host_slowdown: capped(1000, "a host 1,000x slower is a hung one, not a straggler") = Field(1.0, gt=0, description=(
        "Host-CPU-time factor of the rank's issue thread: its kernel and collective calls, FSDP2 hooks and "
        "optimizer (2.0: a CPU at half speed, e.g. a cloud VM's vCPU whose physical core another tenant shares; "
        "below 1: a host faster than the one the profile measured; docs/validation.md 6n). Moves the step only "
        "where the host is what the GPU waits for."))


class StragglerDistribution(StrictModel):
    """Every rank's compute-time factor drawn from a seeded distribution (values below 1 count as 1)."""

    distribution: Literal["lognormal"] = "lognormal"
    sigma: capped(1.0, "the slowest of 10^6 ranks then draws ~e^5 = 150x; measured spreads are 0.05-0.3") = Field(
        gt=0, description="Standard deviation of ln(factor); the median factor is 1.")
    seed: int | None = Field(None, description="Default: simulation.seed.")


class NodeLost(StrictModel):
    """A node (host) that dies ``at_s`` seconds into the run."""

    node: int = Field(ge=0)
    at_s: float = Field(ge=0)


class FaultsSection(StrictModel):
    """Faults injected into the simulated cluster; the run reports the slowdown against the healthy one."""

    link_down: list[LinkDown] = Field(default_factory=list)
    link_degraded: list[LinkDegraded] = Field(default_factory=list)
    stragglers: list[Straggler] | StragglerDistribution = Field(default_factory=list)
    node_lost: NodeLost | None = None
