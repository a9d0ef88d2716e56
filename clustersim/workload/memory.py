"""Memory per GPU: model states from the precision fields (with ZeRO sharding) and activations.

Model states per parameter (bytes), with ``P`` = params dtype, ``G`` = grads dtype, ``O`` =
optimizer-state dtype:

* weights ``P``; gradients ``G``; optimizer ``2 O`` for AdamW (m and v; 0 for plain SGD) plus
  4 for an fp32 master copy when ``master_weights`` and the params are not already fp32.
* Megatron mixed precision (bf16 params, fp32 main grads, fp32 master + moments) = 2 + 4 + 12 = 18;
  with bf16 grads (ZeRO paper's ``K = 12`` case) = 16; pure bf16 AdamW (bf16 params, grads,
  moments, no master) = 2 + 2 + 4 = 8.
* ZeRO-1 shards the optimizer bytes over DP, ZeRO-2 also the gradients, ZeRO-3 also the weights
  (ZeRO paper §5; ``P_os = 4 + K/N_d`` with 16-bit grads).

:func:`step_memory` adds the activations a pipeline rank keeps for the micro-batches in flight
(Korthikanti Table 2 per layer, :meth:`ModelDims.layer_activation_bytes`) and the transients of a
step (logits, gathered ZeRO-3 layers), and returns the fullest pipeline rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.context_parallel import cp_buffer_bytes, kv_block_bytes
from clustersim.workload.model import DTYPE_BYTES, ModelDims
from clustersim.workload.moe import moe_mlp_activation_bytes

MiB = 2 ** 20



@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each kind of model state (before ZeRO sharding)."""

    params: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        """Sum of the three."""
        return self.params + self.grads + self.optimizer


def weight_bytes(precision) -> int:
    """Bytes per element of the weights kept between steps: the params dtype, but 16-bit for ``fp8`` (FP8
    recipes, Transformer Engine's and torchao's defaults and the reference program's, keep 16-bit weights
    and cast them to e4m3 at every GEMM).

    >>> from clustersim.config.scenario import PrecisionSection
    >>> weight_bytes(PrecisionSection(params="fp8")), weight_bytes(PrecisionSection(params="fp32"))
    (2, 4)
    """
    return 2 if precision.params == "fp8" else DTYPE_BYTES[precision.params]


def state_bytes_per_param(precision, optimizer: str) -> StateBytes:
    """Bytes per parameter of weights, gradients and optimizer state.

    Examples
    --------
    >>> from clustersim.config.scenario import PrecisionSection
    >>> state_bytes_per_param(PrecisionSection(), "adamw").total
    18
    >>> state_bytes_per_param(PrecisionSection(grads="bf16", optimizer_states="bf16", master_weights=False), "adamw").total
    8
    """
    p = weight_bytes(precision)
    g = DTYPE_BYTES[precision.grads]
    o = 2 * DTYPE_BYTES[precision.optimizer_states] if optimizer == "adamw" else 0
    if precision.master_weights and precision.params != "fp32":
        o += 4
    return StateBytes(p, g, o)


def sharded_states(n_params: float, sb: StateBytes, zero: int, dp: int) -> dict[str, float]:
    """Bytes of params, grads and optimizer held by one GPU for ``n_params`` under ZeRO stage ``zero``.

    1B parameters, bf16 weights with fp32 grads and Adam states (2 + 4 + 12 bytes), ZeRO-1 over 8 GPUs:

    >>> {k: v / 1e9 for k, v in sharded_states(1e9, StateBytes(2, 4, 12), zero=1, dp=8).items()}
    {'params': 2.0, 'grads': 4.0, 'optimizer': 1.5}
    """
    d = max(dp, 1)
    return {
        "params": n_params * sb.params / (d if zero >= 3 else 1),
        "grads": n_params * sb.grads / (d if zero >= 2 else 1),
        "optimizer": n_params * sb.optimizer / (d if zero >= 1 else 1),
    }


def optimizer_update_bytes(precision, optimizer: str) -> float:
    """HBM bytes the fused optimizer step reads and writes per parameter it updates.

    AdamW: read grad, read+write m and v, read+write the master (or the weights), write the
    16-bit working copy when a master exists; SGD: read grad, read+write the weights (master).
    Plus one read of the gradients for the global-norm clip.
    """
    g = DTYPE_BYTES[precision.grads]
    p = weight_bytes(precision)
    master = precision.master_weights and precision.params != "fp32"
    w = 4 if master else p
    total = g + 2 * w + g  # grad read (update) + weight read/write + grad read (norm)
    if optimizer == "adamw":
        total += 4 * DTYPE_BYTES[precision.optimizer_states]
    if master:
        total += p
    return float(total)


# --------------------------------------------------------------------------------------------------
# Activations of one transformer layer
# --------------------------------------------------------------------------------------------------

def eager_layer_bytes(model: ModelDims, *, micro_batch: int, tp: int = 1, recompute: str = "none",
                      act_bytes: int = 2) -> float:
    """Bytes one layer of the plain-PyTorch GPT (reference/train_gpt_model.py) saves for its backward.

    Counted tensor by tensor from what autograd keeps (no dropout in that model), per token:

    * replicated over TP: the layer input (kept by the first norm), the first norm's output (by the
      QKV GEMM), the residual sum (by the second norm), its output (by the first MLP GEMM): ``4 x 2h``,
      plus the norms' fp32 statistics (LayerNorm mean + rstd 8 bytes, RMSNorm rstd 4, per norm);
    * flash attention: the q, k, v that SDPA saves (the fused QKV output ``2(h + 2 h_kv)`` while a
      view of it is saved; RoPE makes new q and k; GQA's ``repeat_interleave`` makes new k and v of
      width h), its output ``2h`` (the O projection's input is a view of it) and the fp32
      log-sum-exp (4 bytes per head);
    * eager attention: the bmm operands q, k, v (``3 x 2h``), the softmax output ``2 a s`` bytes, the
      attention output copied for the O projection ``2h``, and the causal mask (``s^2`` bytes, per layer);
    * MLP: GELU keeps its input and output (``2 x 2f``); SwiGLU the gate output, its SiLU, the up
      output and the product (``4 x 2f``).

    Everything but the replicated part is split over TP ranks; ``act_bytes`` is the activations'
    dtype (the weights' dtype: 4 for an fp32 model, whose SDPA takes the memory-efficient kernel,
    which saves the same tensors). Full recompute (checkpoint of the
    block) keeps the layer input ``2h``.

    Examples
    --------
    >>> m = ModelDims(layers=1, hidden=1024, heads=16, kv_heads=16, ffn_hidden=4096, vocab=1, seq_len=2048)
    >>> round(eager_layer_bytes(m, micro_batch=1) / (2048 * 1024), 2)  # 32 s b h + norm statistics
    32.08
    """
    s, b, h, a = model.seq_len, micro_batch, model.hidden, model.heads
    tokens = s * b
    scale = act_bytes / 2  # the counts below are for 16-bit activations
    if recompute == "full":
        return 2.0 * h * tokens * scale
    kv, q, o = model.kv_hidden, model.q_hidden, model.attn_out_hidden  # q = o = h unless the head width is decoupled
    gqa, rope = model.kv_heads != model.heads, model.position_embedding == "rope"
    stats = 8 if model.norm == "layernorm" else 4
    replicated = 4 * 2 * h * scale + 2 * stats
    per_layer_extra = 0.0
    if model.attention == "flash":
        qkv_view_saved = (not rope) or (not gqa)  # q or v is saved as a view of the fused QKV output
        att = (2 * (q + 2 * kv) if qkv_view_saved else 0) + (2 * q if rope else 0)
        att += 4 * q if gqa else (2 * kv if rope else 0)  # repeated k and v / rotated k
        att = att * scale + 2 * o * scale + 4 * a  # output, fp32 log-sum-exp
    else:
        att = (3 * 2 * q + 2 * o + (0 if recompute == "selective" else 2 * a * s)) * scale
        per_layer_extra = s * s  # bool causal mask, built per layer call
    mlp = (4 if model.mlp == "swiglu" else 2) * 2 * model.ffn_hidden * scale
    return (replicated + (att + mlp) / tp) * tokens + per_layer_extra


def layer_saved_bytes(model: ModelDims, *, micro_batch: int, tp: int = 1, sp: bool = False,
                      recompute: str = "none", kernel_fusion: str = "fused", act_bytes: int = 2) -> float:
    """Activation bytes per GPU of one layer: Megatron's layer (Korthikanti Table 2, with dropout) when
    ``kernel_fusion`` is ``fused``, the plain-PyTorch reference layer (:func:`eager_layer_bytes`) when ``none``.

    Examples
    --------
    >>> m = ModelDims(layers=1, hidden=12288, heads=96, kv_heads=96, ffn_hidden=49152, vocab=1, seq_len=2048, attention="eager")
    >>> layer_saved_bytes(m, micro_batch=1) / (2048 * 12288)  # 34 + 5 a s / h = 34 + 80
    114.0
    """
    if kernel_fusion == "none":
        return eager_layer_bytes(model, micro_batch=micro_batch, tp=tp, recompute=recompute, act_bytes=act_bytes)
    return model.layer_activation_bytes(micro_batch, tp, sp, recompute)


# --------------------------------------------------------------------------------------------------
# The step
# --------------------------------------------------------------------------------------------------

# Loss bytes per logit. Saved for the backward: the fp32 log-softmax (F.cross_entropy of the upcast
# logits) or the fp32 softmax (vocab-parallel cross entropy), 4 bytes, per micro-batch in flight.
# Transient at the start of the loss backward, one micro-batch: F.cross_entropy allocates the fp32
# gradient of the log-softmax output and the fp32 gradient of its input (4 + 4); the reference
# vocab-parallel cross entropy (reference/train_gpt_model.py::_VocabParallelCE) a one-hot, the
# difference and the scaled gradient (3 x 4); Megatron's fused cross entropy works in place on the saved
# softmax and keeps only the 16-bit logits (2).
LOSS_SAVED_PER_LOGIT = 4
LOSS_TRANSIENT_PER_LOGIT = {"cross_entropy": 8, "vocab_parallel_reference": 12, "megatron": 2}

# "Total needed" terms beyond the caching allocator's peak. Measured on one H100 (validation/memory-peak_h100_2026-11-25,
# 7 runs of 2026-11-25, torch.cuda.mem_get_info and max_memory_reserved beside max_memory_allocated).
CUDA_CONTEXT_BYTES = 767 * MiB
"""Device memory in use outside the caching allocator (CUDA context, kernel images, library handles):
``device_used_bytes - peak_reserved_bytes`` = 766.8 MiB in 6 of the 7 runs (750.8 in the 7th)."""
# NCCL's device memory outside the caching allocator, measured step by step on 2x H100 80GB HBM3 with NCCL 2.28.9,
# NVLS off (validation/probes/nccl-memory-outside-allocator/nccl_memory.py, validation/probes/nccl-memory-outside-allocator/h100x2, 2026-11-27; cudaMemGetInfo less the
# allocator's reserved bytes after each step): creating the process group's communicator +372.1 MiB, its first
# collective +474.0 MiB (later collectives of any kind +0), the first point-to-point +446.0 MiB, a second
# communicator with a collective +486.0 MiB and its point-to-point +384.0 MiB.
NCCL_FIRST_COMMUNICATOR_BYTES = int((372.1 + 474.0) * MiB)
"""The first communicator of a process (the default group's) once it ran a collective: kernels, channels, buffers."""
NCCL_MORE_COMMUNICATOR_BYTES = 486 * MiB
"""Each further communicator (a process group per parallel axis) once it ran a collective."""
NCCL_P2P_BYTES = 384 * MiB
"""Point-to-point connections of a further communicator (a pipeline's or context-parallel ring's sends, expert
parallelism's all-to-all)."""
CUBLAS_WORKSPACE_BYTES = 2 * 32 * MiB
"""PyTorch's cuBLAS workspace on Hopper (sm90: 4096 x 8 KiB = 32 MiB, CublasHandlePool.cpp), allocated
through the caching allocator once per cuBLAS handle, i.e. per thread: the forward's (Python) thread
and autograd's device thread run the GEMMs of the backward."""
FRAGMENTATION_FRACTION = 0.132
"""Caching-allocator rounding and fragmentation, reserved over allocated minus one: 4.6% to 13.2% in the
7 H100 runs (largest with full recompute and with 8k sequences); the largest is taken, so that the total needed
(the device memory a run holds where it has room) errs on the safe side."""
FRAGMENTATION_FLOOR_FRACTION = 0.016
"""What the caching allocator keeps over the allocated peak when memory runs short: before it raises out-of-memory,
PyTorch's CUDACachingAllocator frees every cached block no tensor uses (``release_cached_blocks``) and retries the
cudaMalloc, so the reserved excess of a run with room (:data:`FRAGMENTATION_FRACTION`) is given back under pressure;
what stays is rounding and blocks split between live tensors. Taken as the smallest reserved-over-allocated excess
of the measured runs, 1.6% (a 2x and a 4x H100 DDP run at 33.8 GiB, validation/blind11-fsdp2-skew_h100x2_2026-11-27,
validation/blind12-4gpu_h100x4_2026-11-27; 1.6-44% over the 282 run rows of validation/ with both numbers), an upper
bound of what the allocator cannot give back. ``fits`` uses it (an 8-micro-batch run held 136.7 GiB reserved on a 139.8 GiB H200,
issue 32, where the 13.2% allowance said it would not fit)."""


def _act_bytes(precision) -> int:
    """Bytes of an activation: the weights' dtype, at least 16-bit (fp8 GEMMs still emit 16-bit outputs)."""
    return max(DTYPE_BYTES[precision.params], 2)


def _loss_kind(step) -> str:
    if step.training.kernel_fusion == "fused":
        return "megatron"
    return "vocab_parallel_reference" if (step.tp > 1 and step.vocab_parallel) else "cross_entropy"


def _stage_row(step, stage: int, state_bytes: StateBytes, act_layer: float, act_kept: float = 0.0) -> dict:
    """Peak allocated bytes of pipeline rank ``stage`` and the terms it is made of (see :func:`step_memory`)."""
    model, training, par = step.model, step.training, step.parallelism
    # ZeRO shards over the ranks holding the same weights: dp * cp (HSDP: its shard group)
    tp, dp = step.tp, getattr(step, "shard_dp", step.grad_dp)
    eager = training.kernel_fusion == "none"
    act = _act_bytes(training.precision)
    tokens = step.micro_batch * model.seq_len // step.cp  # this CP rank's tokens of a micro-batch
    sp_shard = tp if step.sequence_parallel else 1
    inflight = step.in_flight(stage)  # max_in_flight of the rank's order, cached per schedule
    n_params = step.stage_params(stage)
    expert = step.stage_expert_params(stage)
    states = sharded_states(n_params - expert, state_bytes, par.zero, dp)
    if expert:  # routed experts: ZeRO shards their states over expert-data-parallel (see workload.moe)
        for key, value in sharded_states(expert, state_bytes, par.zero, step.expert_dp).items():
            states[key] += value
    vstages = step.virtual_stages_of(stage)
    layers = sum(step.layers_per_virtual_stage[vs] for vs in vstages)
    first, last = 0 in vstages, step.n_virtual_stages - 1 in vstages
    # in-flight micro-batches of each chunk: the schedule's count spread over the rank's chunks
    per_chunk = layers / len(vstages)
    acts = inflight * per_chunk * act_layer
    kept = 0.0  # block recompute: share of a chunk's layers that keep their activations
    if training.recompute_layers is not None and per_chunk > training.recompute_layers:
        kept = (per_chunk - training.recompute_layers) / per_chunk
        acts = inflight * per_chunk * ((1 - kept) * act_layer + kept * act_kept)
    if step.experts:
        acts += inflight * moe_activation_delta(step, stage, kept) / len(vstages)
    if first and not eager:  # Megatron's embedding dropout output (Korthikanti sbhp/t over the pipeline)
        acts += inflight * tokens * model.hidden * 2 / sp_shard / len(vstages)
    if step.pp > 1 and eager:  # torch.distributed.pipelining keeps each chunk's output until its backward
        acts += inflight * tokens * model.hidden * act * (len(vstages) - (1 if last else 0)) / len(vstages)
    loss = pipeline_outputs = 0.0
    if last:
        vocab_local = model.vocab / (tp if (step.vocab_parallel and tp > 1) else 1)
        logits = tokens * vocab_local
        mb_at_loss = step.micro_batches if step.pp > 1 and par.schedule == "gpipe" else 1
        # final norm input and output (kept by the LM head GEMM), and the saved softmax, per micro-batch
        acts += mb_at_loss * (tokens * model.hidden * 2 * act / sp_shard + logits * LOSS_SAVED_PER_LOGIT)
        loss = logits * LOSS_TRANSIENT_PER_LOGIT[_loss_kind(step)]
        if step.pp > 1 and eager:
            # torch.distributed.pipelining's last stage appends every micro-batch's output (the 16-bit
            # logits) to output_chunks for the whole step and concatenates them when the step ends
            pipeline_outputs = step.micro_batches * logits * act
    recv_buffers = 0.0
    if step.pp > 1 and eager:  # torch.distributed.pipelining: a buffer per micro-batch and stage boundary
        recv_buffers = pipeline_recv_buffer_bytes(step, vstages, tokens * model.hidden * act / sp_shard)
    ddp_buckets = 0.0
    if par.zero == 0 and dp > 1:
        if step.pp == 1:  # torch DDP: a flat bucket copy of every gradient (gradient_as_bucket_view=False)
            ddp_buckets = n_params * state_bytes.grads
        else:  # pp x dp reduction of the reference script: one flattened bucket and its unflattened copy
            ddp_buckets = 2 * par.ddp_bucket_mb * 1e6
    gathered_layers = gathered_root = 0.0
    if par.zero == 3 and dp > 1:
        layer_params = step.units.layer.forward.param_count
        # FSDP2, in a layer's backward: that layer and the prefetched next one unsharded beside the layer's
        # unsharded gradients (2 P + G); then post_backward reshards the layer *before* its reduce-scatter
        # copies the gradients into the reduce-scatter input (P + 2 G; _fsdp_param_group.post_backward).
        # The layers are resharded after forward.
        p_bytes, g_bytes = step.param_dtype_bytes, step.grad_dtype_bytes
        gathered_layers = layer_params * max(2 * p_bytes + g_bytes, p_bytes + 2 * g_bytes)
        # the root (embedding, head) stays unsharded from its forward to the end of the backward: a
        # full-size copy beside its shard (FSDP2 copies the all-gather output into per-parameter storage)
        gathered_root = (n_params - layers * layer_params) * step.param_dtype_bytes
    gathered = gathered_layers + gathered_root
    # the loss's transients are freed when its backward ends, before the first layer's backward gathers
    # layers again: the larger of the two is the step's transient, not their sum
    # (the FSDP2 runs of h 2048-4096 on 2 and 4 ranks: +0.18..+0.69 GiB over with the sum, docs/validation.md 2d)
    step_transient = max(loss, gathered_layers)
    grads_during = states["grads"] if (step.micro_batches > 1 or step.pp > 1) else 0.0
    cp_buffers = cp_buffer_bytes(step.context, kv_block_bytes(step.micro_batch, model.seq_len, model.kv_pair_hidden, tp,
                                                              step.cp, act), model.heads / model.kv_heads) \
        if step.context is not None else 0.0
    forward_backward = (CUBLAS_WORKSPACE_BYTES + states["params"] + states["optimizer"] + ddp_buckets + gathered_root
                        + step_transient + acts + grads_during + pipeline_outputs + cp_buffers + recv_buffers)
    # the optimizer step: torch's foreach AdamW allocates sqrt(v) for every parameter it updates
    # (torch/optim/adamw.py _multi_tensor_adamw: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sq)); the fused
    # kernels (torch fused=True, apex / TE FusedAdam, Megatron's distributed optimizer on its shard) compute it in
    # registers and allocate nothing (training.optimizer_impl)
    opt_temp = 0.0
    if training.optimizer == "adamw" and training.optimizer_impl == "foreach":
        opt_temp = states["optimizer"] / 2 if not training.precision.master_weights \
            else n_params / (dp if par.zero >= 1 else 1) * DTYPE_BYTES[training.precision.optimizer_states]
    optimizer_step = CUBLAS_WORKSPACE_BYTES + states["params"] + states["grads"] + states["optimizer"] + ddp_buckets + opt_temp
    optimizer_step += pipeline_outputs + recv_buffers  # output_chunks are cleared at the next step's start
    step_end = (CUBLAS_WORKSPACE_BYTES + states["params"] + states["grads"] + states["optimizer"] + ddp_buckets
                + 2 * pipeline_outputs + recv_buffers)  # the concatenated outputs beside the chunks
    peak = max(forward_backward, optimizer_step, step_end)
    row = {"stage": stage, **states, "activations": acts, "loss_transient": loss, "ddp_buckets": ddp_buckets,
           "fsdp_gathered": gathered, "optimizer_transient": opt_temp, "pipeline_outputs": pipeline_outputs,
           "pipeline_recv_buffers": recv_buffers,
           "transient": step_transient + gathered_root + cp_buffers, "peak_allocated_bytes": peak}
    if step.context is not None:  # K/V exchange buffers of context parallelism (workload.context_parallel)
        row["cp_buffers"] = cp_buffers
    return row


def pipeline_recv_buffer_bytes(step, vstages, act_bytes: float) -> float:
    """Bytes of the receive buffers ``torch.distributed.pipelining`` keeps on one pipeline rank.

    A ``PipelineStage`` allocates, when its schedule first runs, one activation receive buffer per
    micro-batch for every stage that is not the first (``_setup_forward_recv_info``) and one gradient
    receive buffer per micro-batch for every stage that is not the last (``_setup_backward_recv_info``),
    each of the stage boundary's shape, and keeps them for the whole run (torch 2.4 to 2.13; read in
    ``torch/distributed/pipelining/stage.py``). ``vstages``: the rank's virtual stages;
    ``act_bytes``: one micro-batch's boundary tensor (tokens x hidden x bytes).

    >>> from types import SimpleNamespace
    >>> step = SimpleNamespace(n_virtual_stages=8, micro_batches=16)
    >>> # rank 0 of pp 4 with 2 chunks: stage 0 receives no activation, stages 0 and 4 receive gradients
    >>> pipeline_recv_buffer_bytes(step, [0, 4], 32 * 2**20) / 2**30
    1.5
    """
    fwd = sum(1 for vs in vstages if vs != 0)
    bwd = sum(1 for vs in vstages if vs != step.n_virtual_stages - 1)
    return (fwd + bwd) * step.micro_batches * act_bytes


def nccl_bytes(step) -> float:
    """NCCL's device memory outside the caching allocator on one GPU of a training step (bytes).

    A distributed program has its default communicator (every rank; barriers and the like) and one
    communicator per parallel axis of more than one rank, as torch.distributed's ``new_group`` and
    Megatron create them, whether or not the axis spans every rank (expert parallelism and expert
    tensor parallelism included); the pipeline's, the context-parallel ring's and expert parallelism's
    (all-to-all) communicators also open point-to-point connections. Each costs what the
    NCCL probe measured (:data:`NCCL_FIRST_COMMUNICATOR_BYTES` and the constants beside it); a single
    GPU none.

    >>> from types import SimpleNamespace
    >>> def step(dp=1, pp=1, ep=1):
    ...     return SimpleNamespace(dp=dp, tp=1, pp=pp, cp=1, parallelism=SimpleNamespace(ep=ep, expert_tp=1))
    >>> [round(nccl_bytes(s) / MiB) for s in (step(), step(dp=2), step(dp=2, pp=2), step(dp=8, ep=8))]
    [0, 1332, 2202, 2202]
    """
    ep, etp = step.parallelism.ep, step.parallelism.expert_tp
    axes = [n for n in (step.dp, step.tp, step.pp, step.cp, ep, etp) if n > 1]
    if not axes:
        return 0.0
    # expert parallelism's all-to-all runs on NCCL's point-to-point connections too
    p2p = sum(1 for n in (step.pp, step.cp, ep) if n > 1)
    return float(NCCL_FIRST_COMMUNICATOR_BYTES + len(axes) * NCCL_MORE_COMMUNICATOR_BYTES + p2p * NCCL_P2P_BYTES)


def step_memory(step, capacity_bytes: float) -> dict:
    """Per-GPU memory of the fullest pipeline rank of a training step (bytes).

    ``step``: a :class:`~clustersim.workload.transformer.TransformerStep` (not imported here: the
    step module imports this one). Per pipeline rank, the peak allocated is the larger of

    * the forward/backward peak: weights and optimizer states (ZeRO-sharded), the gradients once a
      first backward has allocated them (more than one micro-batch), torch DDP's flat gradient
      buckets, FSDP's unsharded layers, the activations of the micro-batches the schedule keeps in
      flight (:func:`layer_saved_bytes` per layer, the final norm, the saved fp32 softmax of the
      loss; GPipe keeps every micro-batch's), the loss backward's fp32 transients, and (plain-PyTorch
      pipelines) the last stage's outputs of every micro-batch, which torch.distributed.pipelining keeps,
      and its receive buffers, one per micro-batch and stage boundary (:func:`pipeline_recv_buffer_bytes`);
    * the optimizer step: states, gradients, DDP buckets, AdamW's ``sqrt(v)`` temporary and the
      pipeline's outputs and receive buffers;
    * the pipeline step's end: those outputs and their concatenation.

    The total a GPU needs adds the CUDA context and allocator fragmentation (measured on an H100) and
    NCCL's communicators (measured by a probe, :func:`nccl_bytes`), each stated in this module: the device memory a
    run holds where it has room. ``fits`` compares ``min_needed_bytes`` with ``capacity_bytes``: the same with only
    the fragmentation the allocator cannot give back under pressure (:data:`FRAGMENTATION_FLOOR_FRACTION`);
    ``tight``: it fits, but not with the full allowance (the allocator will free its cache and retry). ``ddp_rebuild_transient_bytes``: what torch DDP may hold once more at its
    second step (its bucket set), beside the total.
    Returns the fullest rank's row (``peak_bytes_per_gpu`` is kept as the peak allocated).
    """
    model, training, par = step.model, step.training, step.parallelism
    state_bytes = state_bytes_per_param(training.precision, training.optimizer)
    act_layer = layer_saved_bytes(model, micro_batch=step.micro_batch, tp=step.tp, sp=step.sequence_parallel,
                                  recompute=training.recompute, kernel_fusion=training.kernel_fusion,
                                  act_bytes=_act_bytes(training.precision))
    act_kept = 0.0  # block recompute (training.recompute_layers): a layer that does not recompute keeps these
    if training.recompute_layers is not None:
        act_kept = layer_saved_bytes(model, micro_batch=step.micro_batch, tp=step.tp, sp=step.sequence_parallel,
                                     recompute="none", kernel_fusion=training.kernel_fusion,
                                     act_bytes=_act_bytes(training.precision))
    if step.cp > 1:  # flash attention keeps no s^2 term: a layer's activations follow its local b s / cp tokens
        act_layer /= step.cp
        act_kept /= step.cp
    best = None
    for stage in range(step.pp):
        row = _stage_row(step, stage, state_bytes, act_layer, act_kept)
        if best is None or row["peak_allocated_bytes"] > best["peak_allocated_bytes"]:
            best = row
    peak = best["peak_allocated_bytes"]
    best["peak_bytes_per_gpu"] = peak
    best["activation_bytes_per_layer"] = act_layer
    best["cuda_context_bytes"] = float(CUDA_CONTEXT_BYTES)
    best["nccl_buffer_bytes"] = nccl_bytes(step)
    best["fragmentation_bytes"] = FRAGMENTATION_FRACTION * peak
    best["total_needed_bytes"] = (peak + best["cuda_context_bytes"] + best["nccl_buffer_bytes"]
                                  + best["fragmentation_bytes"])
    best["capacity_bytes"] = capacity_bytes
    # the least the GPU must hold: under memory pressure the allocator gives back its cached blocks
    best["min_needed_bytes"] = (peak * (1 + FRAGMENTATION_FLOOR_FRACTION) + best["cuda_context_bytes"]
                                + best["nccl_buffer_bytes"])
    best["fits"] = best["min_needed_bytes"] <= capacity_bytes
    # fits only with the allocator at its limit (it will free and retry cudaMalloc; no room for its cache)
    best["tight"] = best["fits"] and best["total_needed_bytes"] > capacity_bytes
    # torch DDP (no pipeline): the reducer rebuilds its buckets at the second step, and in some runs the first set is
    # still alive then -- once, one more bucket set above the steady peak (4 of 23 multi-GPU DDP runs, every run of the
    # one-rank probe; docs/validation.md 6g, 6p). Stated beside the total, not in it: most runs never hold it
    best["ddp_rebuild_transient_bytes"] = best["ddp_buckets"] if step.pp == 1 else 0.0
    best["bytes_per_param"] = {"params": state_bytes.params, "grads": state_bytes.grads,
                               "optimizer": state_bytes.optimizer}
    return best


def moe_activation_delta(step, stage: int, kept: float = 0.0) -> float:
    """Activation bytes the MoE layers of pipeline rank ``stage`` keep beyond the dense layer of
    :meth:`ModelDims.layer_activation_bytes` (per micro-batch): each swaps the dense MLP's split
    intermediate tensors for its router, dispatched tokens and expert intermediates
    (:func:`clustersim.workload.moe.moe_mlp_activation_bytes`); none under full recomputation, except
    for the ``kept`` share of the layers that block recompute leaves out."""
    model, training = step.model, step.training
    if training.recompute == "full" and not kept:
        return 0.0
    n_moe = sum(model.is_moe_layer(i) for vs in step.virtual_stages_of(stage) for i in step.layer_indices(vs))
    sbh = step.micro_batch * model.seq_len * model.hidden
    f = model.ffn_hidden / model.hidden
    dense_mlp = ((4 * f if model.mlp == "swiglu" else 2 * f) + 2 * f) / step.tp * sbh  # Korthikanti's split MLP terms
    tokens_routed = step.micro_batch * model.seq_len / (step.tp if step.sequence_parallel else 1)
    mlp_in_factor = 2 if model.mlp == "swiglu" else 1
    moe = moe_mlp_activation_bytes(model.moe, model.hidden, mlp_in_factor, tokens_routed, step.experts.routing,
                                   step.experts.expert_tp, step.tp)
    return n_moe * (moe - dense_mlp) * (kept if training.recompute == "full" else 1.0)
