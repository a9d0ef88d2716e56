"""Cost units of a transformer: the kernels, FLOPs-derived seconds, bytes and TP collectives of
one layer, the embedding and the LM head, forward and backward, for one micro-batch on one TP rank.

A :class:`Unit` is the segment list of one such pass (see :mod:`clustersim.workload.segments`)
plus the parameters it holds and the gradient bytes it produces. Per layer (Megatron-LM; see
``docs/training.md``): norm, QKV GEMM (column parallel), RoPE, attention core (flash: one fused
kernel that skips the masked half of the causal score matrix; eager: two batched GEMMs plus a
memory-bound masked softmax and dropout over ``s^2``), output projection (row parallel), the TP
region's collectives (:mod:`clustersim.workload.tensor_parallel`), bias-dropout-add, norm, MLP
(GELU or SwiGLU), bias-dropout-add. Backward: every GEMM twice (dgrad and wgrad shapes), flash
attention 2.5x its forward FLOPs (FlashAttention-2 recomputes the scores: 5 GEMMs against 2),
memory-bound kernels twice their bytes, and the conjugate TP collectives.

Notation in the byte counts: ``tokens = b s`` of one micro-batch, ``tokens_local`` the tokens a
rank holds outside the TP region (``tokens / tp`` with sequence parallelism), ``hidden`` = ``h``,
``act_bytes`` = 2 (16-bit activations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from clustersim.workload.compute import ComputeModel
from clustersim.workload.context_parallel import ContextParallel, attention_segments
from clustersim.workload.fp8 import cast_segments
from clustersim.workload.model import ModelDims
from clustersim.workload.moe_costs import ExpertParallel, moe_layer_params, moe_mlp_block
from clustersim.workload.segments import ComputeSegment, TPCommSegment, UnitSegment
from clustersim.workload.tensor_parallel import overlap_tp, tp_input_regather, tp_region_entry, tp_region_exit

ACTIVATION_BYTES = 2  # 16-bit activations


@dataclass
class Unit:
    """Forward or backward work of one layer-like unit on one TP rank for one micro-batch."""

    name: str
    segments: list[UnitSegment]
    grad_bytes: float  # gradient bytes this unit produces (per TP rank)
    param_count: float  # parameters of the unit held per TP rank
    tensors: int = 0  # parameter tensors of the unit (one AccumulateGrad / DDP hook / optimizer entry each)
    #: a backward unit built with the backward split (zero-bubble schedules): ``segments`` are the
    #: input-gradient pass and these the weight-gradient GEMMs, run later as their own pass
    weight_grad: list[UnitSegment] | None = None
    #: the unit's weight matrices (0: as ``tensors``): the most DDP buckets its gradient can fill, the norms'
    #: and biases' small tensors (KBs) joining a matrix's bucket (:func:`clustersim.workload.step_pipeline.fill_buckets`)
    matrices: int = 0


class UnitPair(NamedTuple):
    """Forward and backward unit of the embedding or the LM head."""

    forward: Unit
    backward: Unit


class LayerUnits(NamedTuple):
    """Forward and backward unit of one transformer layer, and the forward work selective
    recomputation repeats before the backward (None without it)."""

    forward: Unit
    backward: Unit
    recompute: Unit | None


class _Passes:
    """Forward and backward segment lists of a unit being built.

    The backward list is kept in forward order and reversed by the caller once complete. With
    ``split`` the weight-gradient GEMMs go to ``weight`` instead of ``backward`` (zero-bubble
    schedules run them as a pass of their own). With ``two_gemms`` a linear's backward is two
    segments, dgrad then wgrad once reversed (each pairs with its own collective under TP
    communication overlap).
    """

    def __init__(self, compute: ComputeModel, split: bool = False, two_gemms: bool = False, chunks: int = 1):
        self.compute = compute
        self.forward: list[UnitSegment] = []
        self.backward: list[UnitSegment] = []
        self.split = split
        self.two_gemms = two_gemms
        self.chunks = chunks  # TP overlap: a linear's forward GEMM split into this many token chunks
        self.weight: list[UnitSegment] = []
        #: FP8 casts as fused (generated) kernels, not the unfused PyTorch sequence (training.kernel_fusion)
        self.fused = True

    def backward_gemms(self, dgrad_s: float, wgrad_s: float, flops: float = 0.0) -> None:
        """The backward of a linear layer: the input-gradient (dgrad) and weight-gradient (wgrad)
        GEMMs, one kernel each (``flops`` each); one segment, or two apart with ``split``."""
        if self.split:
            self.backward.append(ComputeSegment(dgrad_s, 1))
            self.weight.append(ComputeSegment(wgrad_s, 1))
        elif self.two_gemms:  # forward order: reversed with the list, the dgrad GEMM runs first
            self.backward += [ComputeSegment(wgrad_s, 1, flops=flops), ComputeSegment(dgrad_s, 1, flops=flops)]
        else:
            self.backward.append(ComputeSegment(dgrad_s + wgrad_s, 2))

    def chunk_seconds(self, tokens: int, out_features: int, in_features: int, fp8: bool = False) -> float:
        """One of :attr:`chunks` token chunks of a linear's forward GEMM at that smaller shape's own efficiency
        (the clock in force, the kernel gap; not tallied: the whole GEMM already is); in FP8 for a block's linear
        under an FP8 recipe."""
        cm, m = self.compute, max(1, tokens // self.chunks)
        if fp8 and cm.fp8_recipe is not None:
            tally = list(cm.tally)
            t = cm.block_linear(m, out_features, in_features, "fwd")
            cm.tally[:] = tally  # not tallied: the whole GEMM already is
            return t
        eff = cm.linear_efficiency(m, out_features, in_features, "fwd") or cm.efficiency(m, out_features, in_features)
        return 2.0 * m * out_features * in_features / (cm.peak_flops * eff) * cm.clock_slowdown + cm.kernel_launch_s

    def extend(self, pair: tuple[list, list]) -> None:
        """Append (forward items, backward items)."""
        self.forward += pair[0]
        self.backward += pair[1]

    def memory(self, nbytes: float) -> None:
        """An uncalibrated memory-bound kernel moving ``nbytes`` forward, twice that backward."""
        cm = self.compute
        self.forward.append(ComputeSegment(cm.memory(nbytes, 1), 1))
        self.backward.append(ComputeSegment(cm.memory(2 * nbytes, 1), 1))

    def memory_class(self, op_fwd: str, min_fwd: float, op_bwd: str, min_bwd: float, legacy_bytes: float,
                     kernels_bwd: int = 1, hidden: int | None = None) -> None:
        """A measured memory-bound class (:meth:`ComputeModel.memory_op`): forward ``op_fwd`` moving
        ``min_fwd`` bytes, backward ``op_bwd`` moving ``min_bwd``; ``legacy_bytes``: bytes of the
        uncalibrated model (forward; backward twice that); ``hidden``: the row length of a row-wise class."""
        cm = self.compute
        self.forward.append(ComputeSegment(cm.memory_op(op_fwd, min_fwd, legacy_bytes, 1, hidden=hidden), 1))
        self.backward.append(ComputeSegment(cm.memory_op(op_bwd, min_bwd, 2 * legacy_bytes, kernels_bwd,
                                                         hidden=hidden), kernels_bwd))

    def measured_pair(self, op: str, min_fwd: float, min_bwd: float, kernels_fwd: int, kernels_bwd: int) -> None:
        """An unfused sequence measured forward + backward together (``op``, a ``memory_table``
        class of ``min_fwd + min_bwd`` minimum bytes): each direction at the class's efficiency;
        the same bytes at the copy bandwidth when the profile lacks the class."""
        cm, size = self.compute, min_fwd + min_bwd
        self.forward.append(ComputeSegment(cm.memory_op(op, min_fwd, min_fwd, kernels_fwd, size_bytes=size),
                                           kernels_fwd))
        self.backward.append(ComputeSegment(cm.memory_op(op, min_bwd, min_bwd, kernels_bwd, size_bytes=size),
                                            kernels_bwd))

    def linear(self, tokens: int, out_features: int, in_features: int, fp8: bool = True) -> None:
        """A linear layer of a block: forward NT GEMM, backward dgrad NN + wgrad TN (two kernels); in FP8
        (``compute.fp8_recipe``, unless ``fp8`` is false: a router) with its casts (:mod:`clustersim.workload.fp8`)
        before each pass's GEMMs."""
        cm = self.compute
        gemm = cm.block_linear if fp8 else cm.linear
        flops = 2.0 * tokens * out_features * in_features
        fwd = gemm(tokens, out_features, in_features, "fwd")
        if self.chunks > 1:
            self.forward.append(ComputeSegment(fwd, 1, chunk_s=self.chunk_seconds(tokens, out_features, in_features,
                                                                                  fp8=fp8),
                                               flops=flops / self.chunks))
        else:
            self.forward.append(ComputeSegment(fwd, 1))
        casts = fp8 and cm.fp8_recipe is not None
        if casts:
            cast_fwd, cast_bwd = cast_segments(cm, cm.fp8_recipe, tokens, out_features, in_features, fused=self.fused)
            self.forward[-1:-1] = cast_fwd
        self.backward_gemms(gemm(tokens, out_features, in_features, "dgrad"),
                            gemm(tokens, out_features, in_features, "wgrad"), flops)
        if casts:
            self.backward += cast_bwd  # forward order: once reversed they run before the backward GEMMs


class LayerCosts:
    """Builds the cost units of a transformer on one TP rank for one micro-batch.

    Parameters
    ----------
    model: the resolved model dimensions.
    compute: the :class:`ComputeModel` of the GPU (its kernel tables and clock in force).
    tp: tensor-parallel degree.
    sequence_parallel: SP on (only meaningful with ``tp > 1``).
    vocab_parallel: embedding and LM head split across the TP ranks (always true with ``tp = 1``).
    micro_batch: sequences per micro-batch.
    kernel_fusion: ``"fused"`` (Megatron/TE kernels) or ``"none"`` (plain PyTorch eager kernels).
    recompute: ``"none"``, ``"selective"`` or ``"full"`` activation recomputation.
    tp_comm_overlap: each SP collective runs beside the GEMM it feeds or drains.
    grad_dtype_bytes: bytes per gradient element.
    experts: MoE degrees and routing load (None: dense model).
    context: context-parallel degree and algorithm (None: no CP); every per-token cost then
        counts the local ``b s / cp`` tokens (:mod:`clustersim.workload.context_parallel`).
    """

    def __init__(self, *, model: ModelDims, compute: ComputeModel, tp: int, sequence_parallel: bool,
                 vocab_parallel: bool, micro_batch: int, kernel_fusion: str, recompute: str,
                 tp_comm_overlap: bool, grad_dtype_bytes: int, experts: ExpertParallel | None = None,
                 context: ContextParallel | None = None):
        self.model = model
        self.compute = compute
        self.tp = tp
        self.sequence_parallel = sequence_parallel
        self.vocab_parallel = vocab_parallel
        self.micro_batch = micro_batch
        self.unfused = kernel_fusion == "none"
        self.recompute = recompute
        self.tp_comm_overlap = tp_comm_overlap
        self.grad_dtype_bytes = grad_dtype_bytes
        self.context = context if context is not None and context.cp > 1 else None
        self.tokens = micro_batch * model.seq_len
        if self.context is not None:  # the tokens of this CP rank's sequence chunks
            self.tokens = self.context.local(self.tokens)
        self.tokens_local = self.tokens // tp if sequence_parallel else self.tokens
        self.full_activation = self.tokens * model.hidden * ACTIVATION_BYTES  # one b s h activation, bytes
        self.experts = experts  # MoE: expert-parallel degrees and the routing load (None: dense model)

    # ------------------------------------------------------------------ one transformer layer
    def layer(self, moe: bool = False, split: bool = False) -> LayerUnits:
        """Forward, backward and (selective-recompute extra) units of one transformer layer
        (``moe``: with routed experts instead of the dense MLP, :mod:`clustersim.workload.moe_costs`;
        ``split``: the backward unit is the input-gradient pass and carries the weight-gradient
        GEMMs in ``weight_grad``)."""
        model, tp = self.model, self.tp
        overlap = self.sequence_parallel and self.tp_comm_overlap and tp > 1
        passes = _Passes(self.compute, split, two_gemms=overlap, chunks=tp if overlap else 1)
        passes.fused = not self.unfused
        recompute_extra = self._attention_block(passes)
        if moe:
            moe_mlp_block(self, passes)
        else:
            self._mlp_block(passes)
        fwd, bwd = passes.forward, passes.backward
        bwd.reverse()
        if overlap:  # forward chunked (ring exchange / pipelined), backward in bulk (tensor_parallel.overlap_tp)
            def slow(flops: float, op: str) -> tuple[float, float]:
                return self.compute.overlap_slowdowns(flops, 1.0, (op,))
            fwd, bwd = overlap_tp(fwd, tp, slow), overlap_tp(bwd, 1, slow)
        replicated = model.attention_replicated_params  # MLA's down-projections: whole on every TP rank
        params_local = (model.layer_matmul_params - replicated) / tp + replicated + model.layer_other_params
        matrices = model.attention_matrices + (3 if model.mlp == "swiglu" else 2)  # QKV, output, MLP matrices
        if moe:
            params_local, matrices = moe_layer_params(self)
        norm_tensors = 2 if (model.norm == "layernorm" and model.bias) else 1
        tensors = matrices * (2 if model.bias else 1) + 2 * norm_tensors
        if model.mla is not None:  # the RMSNorm gains of the latents
            tensors += 2 if model.mla.q_lora_rank else 1
        forward = Unit("layer", fwd, 0.0, params_local, tensors)
        backward = Unit("layer", bwd, params_local * self.grad_dtype_bytes, params_local, tensors,
                        weight_grad=passes.weight[::-1] if split else None, matrices=matrices)
        extra = Unit("recompute", recompute_extra, 0.0, 0.0) if recompute_extra else None
        return LayerUnits(forward, backward, extra)

    def _norm(self, passes: _Passes) -> None:
        """LayerNorm or RMSNorm (torch's fused F.rms_norm, TE, apex): one forward kernel; backward
        a dx kernel and a gain/bias-gradient kernel."""
        hidden, act_bytes, tokens_local = self.model.hidden, ACTIVATION_BYTES, self.tokens_local
        norm_bytes = 2 * tokens_local * hidden * act_bytes  # read x, write y (statistics negligible)
        kind = "layernorm" if self.model.norm == "layernorm" else "rmsnorm"
        passes.memory_class(f"{kind}_fwd", 2 * tokens_local * hidden * act_bytes, f"{kind}_bwd",
                            3 * tokens_local * hidden * act_bytes, norm_bytes, kernels_bwd=2, hidden=hidden)

    def _residual(self, passes: _Passes) -> None:
        """Bias-dropout-add. Uncalibrated: read x and residual (2+2), write 2, mask 1 byte per
        element; measured class: an add (read 2, write 1) forward, and backward the add that
        accumulates the residual-stream gradient with the branch's."""
        hidden, act_bytes, tokens_local = self.model.hidden, ACTIVATION_BYTES, self.tokens_local
        passes.memory_class("add", 3 * tokens_local * hidden * act_bytes, "add", 3 * tokens_local * hidden * act_bytes,
                            7 * tokens_local * hidden)

    def _attention_block(self, passes: _Passes) -> list[UnitSegment] | None:
        """Norm, QKV, RoPE, attention core, output projection, TP region, residual; returns the
        forward segments selective recomputation repeats (None: nothing to repeat)."""
        model, cm, tp, act_bytes = self.model, self.compute, self.tp, ACTIVATION_BYTES
        hidden, tokens = model.hidden, self.tokens
        self._norm(passes)
        passes.extend(tp_region_entry(tp, self.sequence_parallel, self.full_activation))
        qkv_width = model.q_hidden + model.kv_hidden + model.v_hidden  # h + 2 h_kv unless decoupled or MLA
        if model.mla is not None:
            self._mla_projections(passes)
        else:
            passes.linear(tokens, qkv_width // tp, hidden)
        passes.backward += tp_input_regather(tp, self.sequence_parallel, self.full_activation)
        # the fused QKV output is split into q, k, v views; backward concatenates their gradients
        qkv_bytes = 2 * tokens * qkv_width // tp * act_bytes
        passes.backward.append(ComputeSegment(cm.memory(qkv_bytes), 1))
        q_elems, kv_elems = tokens * model.q_hidden // tp, tokens * model.kv_hidden // tp  # of q and of k on this rank
        qk_bytes = 2 * (q_elems + kv_elems) * act_bytes  # read and write q and k
        if model.position_embedding == "rope":
            if self.unfused:  # per tensor (q, k): neg, cat, 2 mul, add forward; the same count backward
                passes.measured_pair("rope", qk_bytes, qk_bytes, 10, 10)
            else:
                passes.memory(qk_bytes)
        if self.unfused and model.kv_heads != model.heads:
            # GQA by repeat_interleave of k and v to the query heads: a copy forward, a sum backward
            kv_repeat_bytes = 2 * (kv_elems + q_elems) * act_bytes
            passes.measured_pair("repeat_kv", kv_repeat_bytes, kv_repeat_bytes, 2, 2)
        recompute_extra = self._attention_core(passes)
        passes.linear(tokens, hidden, model.attn_out_hidden // tp)
        passes.extend(tp_region_exit(tp, self.sequence_parallel, self.full_activation))
        self._residual(passes)
        return recompute_extra

    def _mla_projections(self, passes: _Passes) -> None:
        """MLA's projections on this TP rank (Megatron-Core's MLA): the query and key/value down-projections
        whole on every rank (replicated weights, all the tokens of the TP region), an RMSNorm on each latent,
        the up-projections split by heads."""
        model, tp, tokens, mla = self.model, self.tp, self.tokens, self.model.mla
        hidden, heads_local = model.hidden, model.heads // tp
        if mla.q_lora_rank:
            passes.linear(tokens, mla.q_lora_rank, hidden)
            self._latent_norm(passes, mla.q_lora_rank)
            passes.linear(tokens, heads_local * mla.qk_head_dim, mla.q_lora_rank)
        else:
            passes.linear(tokens, heads_local * mla.qk_head_dim, hidden)
        passes.linear(tokens, mla.kv_lora_rank + mla.qk_rope_head_dim, hidden)
        self._latent_norm(passes, mla.kv_lora_rank)
        passes.linear(tokens, heads_local * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank)

    def _latent_norm(self, passes: _Passes, width: int) -> None:
        """RMSNorm of an MLA latent of ``width`` over every token of the TP region (as :meth:`_norm`)."""
        row = self.tokens * width * ACTIVATION_BYTES
        passes.memory_class("rmsnorm_fwd", 2 * row, "rmsnorm_bwd", 3 * row, 2 * row, kernels_bwd=2, hidden=width)

    def _attention_core(self, passes: _Passes) -> list[UnitSegment] | None:
        """Softmax(QK^T)V on this rank's heads; returns the selective-recompute forward segments."""
        model, cm, act_bytes = self.model, self.compute, ACTIVATION_BYTES
        micro_batch, seq, head_dim = self.micro_batch, model.seq_len, model.head_dim
        flops_dim = model.attention_flops_head_dim  # head_dim unless MLA's values are narrower than its keys
        heads_local = model.heads // self.tp
        if self.context is not None:  # ring or all-gather attention over the CP group (flash only)
            fwd, bwd = attention_segments(self.context, cm, micro_batch=micro_batch, seq_len=seq, head_dim=flops_dim,
                                          heads_local=heads_local, kv_hidden_local=model.kv_pair_hidden // self.tp)
            passes.forward += fwd
            passes.backward += bwd[::-1]  # the backward list is kept in forward order until the layer is done
            return None
        selective = self.recompute == "selective"
        score_elems = micro_batch * heads_local * seq * seq  # elements of the materialised score matrix
        if model.attention == "eager" and self.unfused and cm.memory_table.get("eager_attention_fwd") \
                and cm.memory_table.get("eager_attention_bwd"):
            # train_gpt's sequence, measured as a whole (bench eager_attention_*): q k^T, scale,
            # causal masked_fill (out of place), softmax, @ v; backward: 4 bmm, softmax, mask, scale
            fwd_s = cm.memory_op("eager_attention_fwd", 2 * score_elems * act_bytes, 2 * score_elems * act_bytes, 8)
            bwd_s = cm.memory_op("eager_attention_bwd", 3 * score_elems * act_bytes, 3 * score_elems * act_bytes, 7)
            passes.forward.append(ComputeSegment(fwd_s, 8))
            passes.backward.append(ComputeSegment(bwd_s, 7))
            return [ComputeSegment(fwd_s, 8)] if selective else None
        if model.attention == "flash":
            flops = 4.0 * micro_batch * seq * seq * flops_dim * heads_local * 0.5  # QK^T and PV, causal half skipped
            passes.forward.append(ComputeSegment(cm.attention(flops, 1, "fwd", seq=seq, head_dim=head_dim), 1))
            # FlashAttention-2 backward: softmax-denominator (dO.O) pre-pass, the main kernel, dQ conversion
            passes.backward.append(ComputeSegment(cm.attention(2.5 * flops, 3, "bwd", seq=seq, head_dim=head_dim), 3))
            return None
        batch = micro_batch * heads_local
        scores = batch * seq * seq
        qk = cm.bmm("score", batch, seq, head_dim)
        if qk is not None:  # measured batched GEMMs (bmm_table), each at the run's own shape
            pv = cm.bmm("context", batch, seq, model.v_head_dim)
            pv_t = cm.bmm("context_t", batch, seq, model.v_head_dim)
            # backward: dP = dO v^T (score-shaped), dQ = dS k (context), dV = p^T dO and dK = dS^T q (context_t)
            (qk_bwd, n_qk), (pv_bwd, n_pv) = (qk, 1), (pv + 2 * pv_t, 3)
        else:  # batched GEMM as one kernel (efficiency from total FLOPs)
            qk = cm.gemm(seq, seq, head_dim * batch)
            pv = cm.gemm(seq, model.v_head_dim * batch, seq)
            (qk_bwd, n_qk), (pv_bwd, n_pv) = (2 * qk, 2), (2 * pv, 2)
        softmax_fwd = cm.memory(scores * 9.0, 2)  # scale-mask-softmax (r2 w2) + dropout (r2 w2 mask1)
        softmax_bwd = cm.memory(scores * 11.0, 2)  # dropout bwd (r2 mask1 w2) + softmax bwd (r4 w2)
        passes.forward += [ComputeSegment(qk, 1), ComputeSegment(softmax_fwd, 2), ComputeSegment(pv, 1)]
        passes.backward += [ComputeSegment(qk_bwd, n_qk), ComputeSegment(softmax_bwd, 2), ComputeSegment(pv_bwd, n_pv)]
        return [ComputeSegment(qk + softmax_fwd + pv, 4)] if selective else None

    def _mlp_block(self, passes: _Passes) -> None:
        """Norm, TP region, MLP up, activation (GELU, or SwiGLU reading two inputs), MLP down, residual."""
        self._norm(passes)
        self.dense_mlp(passes, self.model.ffn_hidden)
        self._residual(passes)

    def dense_mlp(self, passes: _Passes, ffn_hidden: int) -> None:
        """TP region, MLP up, activation, MLP down of a TP-split MLP of width ``ffn_hidden``."""
        model, tp, act_bytes, tokens = self.model, self.tp, ACTIVATION_BYTES, self.tokens
        passes.extend(tp_region_entry(tp, self.sequence_parallel, self.full_activation))
        mlp_in = 2 * ffn_hidden if model.mlp == "swiglu" else ffn_hidden
        passes.linear(tokens, mlp_in // tp, model.hidden)
        passes.backward += tp_input_regather(tp, self.sequence_parallel, self.full_activation)
        ffn_local = ffn_hidden // tp
        if model.mlp == "gelu":  # GELU forward (read, write), backward (read dy and x, write dx)
            passes.memory_class("gelu_fwd", 2 * tokens * ffn_local * act_bytes, "gelu_bwd",
                                3 * tokens * ffn_local * act_bytes, 2 * tokens * ffn_local * act_bytes)
        elif self.unfused:  # silu, mul forward; mul, mul, silu_backward backward
            passes.measured_pair("swiglu", 3 * tokens * ffn_local * act_bytes, 5 * tokens * ffn_local * act_bytes, 2, 3)
        else:
            passes.memory(3 * tokens * ffn_local * act_bytes)
        passes.linear(tokens, model.hidden, ffn_local)
        passes.extend(tp_region_exit(tp, self.sequence_parallel, self.full_activation))

    # ------------------------------------------------------------------ embedding and LM head
    def embedding(self) -> UnitPair:
        """Forward and backward unit of the token (and learned position) embedding."""
        model, cm, tp, tokens = self.model, self.compute, self.tp, self.tokens
        hidden, full = model.hidden, self.full_activation
        learned = model.position_embedding == "learned"
        fwd: list[UnitSegment] = [ComputeSegment(cm.memory(2 * full), 1)]  # gather rows + write
        if learned:
            fwd.append(ComputeSegment(cm.memory(3 * full), 1))
        # embedding_dense_backward: zero the table gradient, sort the indices, segment-reduce the
        # rows (fp32 partials) and cast: ~5 kernels; the table gradient is written whole
        vocab_rows = model.vocab / (tp if self.vocab_parallel else 1)
        bwd: list[UnitSegment] = [
            ComputeSegment(cm.memory(full + 2 * tokens * hidden * 4 + vocab_rows * hidden * self.grad_dtype_bytes), 5)]
        if learned:
            # broadcast-add backward: sum over the batch, then slice-backward (zeros + copy)
            bwd.append(ComputeSegment(cm.memory(3 * full), 3))
        if tp > 1 and self.vocab_parallel:
            # masked lookup: shift, two compares, or, masked_fill before and after the gather
            fwd.append(ComputeSegment(cm.memory(6 * tokens * 8 + 2 * full), 6))
            fwd.append(TPCommSegment("reduce_scatter" if self.sequence_parallel else "all_reduce", full))
            if self.sequence_parallel:
                bwd.insert(0, TPCommSegment("all_gather", full))
        params = (model.vocab / (tp if self.vocab_parallel else 1)) * hidden
        tensors = 1
        if learned:
            params += model.seq_len * hidden
            tensors += 1
        return UnitPair(Unit("embedding", fwd, 0.0, params, tensors),
                        Unit("embedding", bwd[::-1], params * self.grad_dtype_bytes, params, tensors))

    def head(self, split: bool = False) -> UnitPair:
        """Forward and backward unit of the final norm, the LM head GEMM and the cross-entropy loss
        (``split``: the head GEMM's weight gradient apart, as :meth:`layer`)."""
        model, cm, tp, tokens = self.model, self.compute, self.tp, self.tokens
        hidden, act_bytes, tokens_local, full = model.hidden, ACTIVATION_BYTES, self.tokens_local, self.full_activation
        vocab_parallel = self.vocab_parallel and tp > 1
        vocab_local = model.vocab // tp if vocab_parallel else model.vocab
        kind = "layernorm" if model.norm == "layernorm" else "rmsnorm"  # measured classes when the profile has them
        row_bytes = tokens_local * hidden * act_bytes  # one activation tensor this rank holds
        fwd: list[UnitSegment] = [ComputeSegment(cm.memory_op(f"{kind}_fwd", 2 * row_bytes, 2 * row_bytes, 1,
                                                              hidden=hidden), 1)]
        bwd: list[UnitSegment] = [ComputeSegment(cm.memory_op(f"{kind}_bwd", 3 * row_bytes, 4 * row_bytes, 2,
                                                              hidden=hidden), 2)]
        if self.sequence_parallel:
            fwd.append(TPCommSegment("all_gather", full))
            bwd.append(TPCommSegment("reduce_scatter", full))
        elif vocab_parallel:
            bwd.append(TPCommSegment("all_reduce", full))
        fwd.append(ComputeSegment(cm.linear(tokens, vocab_local, hidden, "fwd"), 1))
        wgrad_s = cm.linear(tokens, vocab_local, hidden, "wgrad")
        if split:
            bwd.append(ComputeSegment(cm.linear(tokens, vocab_local, hidden, "dgrad"), 1))
        else:
            bwd.append(ComputeSegment(cm.linear(tokens, vocab_local, hidden, "dgrad") + wgrad_s, 2))
        fwd_loss, bwd_loss = self._cross_entropy(vocab_local, vocab_parallel)
        fwd += fwd_loss
        bwd += bwd_loss
        params = 0.0 if model.tied_embeddings else vocab_local * hidden
        params += 2 * hidden if model.norm == "layernorm" else hidden
        tensors = (0 if model.tied_embeddings else 1) + (2 if (model.norm == "layernorm" and model.bias) else 1)
        weight = [ComputeSegment(wgrad_s, 1)] if split else None
        return UnitPair(Unit("head", fwd, 0.0, params, tensors),
                        Unit("head", bwd[::-1], params * self.grad_dtype_bytes, params, tensors, weight))

    def _cross_entropy(self, vocab_local: int, vocab_parallel: bool) -> tuple[list, list]:
        """Forward and backward segments of the loss over fp32 logits (``tokens x vocab_local``)."""
        cm, tokens = self.compute, self.tokens
        if vocab_parallel:
            # vocab-parallel CE (train_gpt._VocabParallelCE): float cast, max, subtract, target mask
            # (sub, 2 compares, or, masked_fill), gather, masked_fill, exp, sum, log, sub, softmax
            # divide, mean and the 1/micro-batches scale: 17 kernels; three 4-byte-per-token all-reduces
            fwd: list[UnitSegment] = [ComputeSegment(cm.memory(tokens * vocab_local * 26.0, 17), 17)]
            fwd += [TPCommSegment("all_reduce", tokens * 4) for _ in range(3)]  # max, target logit, sum of exp
            # backward: zeros_like + scatter (one-hot), masked_fill, subtract, scale, cast to bf16
            return fwd, [ComputeSegment(cm.memory(tokens * vocab_local * 22.0, 6), 6)]
        # F.cross_entropy(logits.float()): cast (r2 w4), log_softmax (r4 w4), nll, the 1/micro-batches
        # scale and the running loss sum. Measured class (bench: fwd + bwd together, minimum traffic:
        # the 16-bit logits read in the forward and in the backward, their gradient written): half of
        # it to each pass. Backward: nll backward (zero + scatter), log_softmax backward (r4 r4 w4),
        # cast back (r4 w2), scale.
        ce_min = tokens * vocab_local * 3.0 * ACTIVATION_BYTES
        fwd_s = cm.memory_op("cross_entropy", ce_min / 2, tokens * vocab_local * 18.0, 5, size_bytes=ce_min)
        bwd_s = cm.memory_op("cross_entropy", ce_min / 2, tokens * vocab_local * 18.0, 5, size_bytes=ce_min)
        return [ComputeSegment(fwd_s, 5)], [ComputeSegment(bwd_s, 5)]
