"""Transformer training step: kernels per layer, parallel layout, and the op DAG of one step.

How a step is laid out (Megatron-LM semantics; see ``docs/training.md``):

* Ranks: ``parallelism.order`` lists the axes innermost first; ``tp-cp-ep-dp-pp`` puts the TP
  ranks of a group on adjacent GPUs (inside a node) and pipeline stages outermost.
* Per layer and micro-batch on each TP rank: norm, QKV GEMM (column parallel), RoPE, attention
  core (flash: one fused kernel that skips the masked half of the causal score matrix; eager:
  two batched GEMMs plus a memory-bound masked softmax and dropout over ``s^2``), output
  projection (row parallel), TP all-reduce (SP: all-gather before the column-parallel GEMM and
  reduce-scatter after the row-parallel one), bias-dropout-add, norm, MLP (GELU or SwiGLU),
  all-reduce, bias-dropout-add. Backward: every GEMM twice (dgrad and wgrad shapes), flash
  attention 2.5x its forward FLOPs (FlashAttention-2 recomputes the scores: 5 GEMMs against 2),
  memory-bound kernels twice their bytes, and the conjugate TP collectives.
* Pipeline: chunks ordered by :func:`clustersim.workload.schedule.pipeline_order`; activations
  (forward) and their gradients (backward) go point to point between TP rank ``i`` of adjacent
  stages, ``2 b s h / t`` bytes each (Megatron's scatter/gather optimisation, or the SP shard).
* DP: gradients reduced in buckets of ``ddp_bucket_mb`` in reverse layer order during the
  backward of the last micro-batch (gradient accumulation communicates once); ZeRO-1/2 reduce-scatter
  the buckets and all-gather the updated weights after the optimizer; ZeRO-3/FSDP all-gathers
  each layer's weights before its forward and backward (one layer prefetched ahead) and
  reduce-scatters its gradients after every micro-batch's backward (FSDP2's default).
* Host: every compute op carries ``host_s``, the CPU time of the kernel and collective calls the
  eager program makes for it (``docs/training.md``, "Host (CPU) issue thread").
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.compute import ComputeModel
from clustersim.workload.memory import optimizer_update_bytes, sharded_states, state_bytes_per_param
from clustersim.workload.model import DTYPE_BYTES, ModelDims
from clustersim.workload.ops import Coll, Graph
from clustersim.workload.schedule import max_in_flight, pipeline_order

AXES = ("tp", "cp", "ep", "dp", "pp")


def split_layers(layers: int, chunks: int) -> list[int]:
    """Layers of each virtual stage: as even as possible, the deficit taken from the ends.

    When ``chunks`` does not divide ``layers``, every stage gets ``ceil(layers/chunks)`` and the
    first and last stages (then the second and second-to-last, ...) give one back, as Llama 3
    does for its embedding and LM-head stages (126 layers on 16 stages: 7, 8 x 14, 7).

    >>> split_layers(126, 16)
    [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]
    """
    base = -(-layers // chunks)
    out = [base] * chunks
    deficit = base * chunks - layers
    lo, hi, k = 0, chunks - 1, 0
    while deficit > 0:
        idx = lo if k % 2 == 0 else hi
        out[idx] -= 1
        deficit -= 1
        if k % 2 == 0:
            lo += 1
        else:
            hi -= 1
        k += 1
    return out


class Layout:
    """Global rank of every (tp, cp, ep, dp, pp) coordinate, from ``parallelism.order``.

    Examples
    --------
    >>> lay = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 2, "pp": 2}, "tp-cp-ep-dp-pp")
    >>> lay.rank(tp=1, dp=1, pp=1)
    7
    """

    def __init__(self, sizes: dict[str, int], order: str):
        self.sizes = dict(sizes)
        self.order = order.split("-")
        self.stride: dict[str, int] = {}
        s = 1
        for ax in self.order:
            self.stride[ax] = s
            s *= self.sizes[ax]
        self.world = s
        self._groups: dict[tuple, tuple] = {}

    def rank(self, **coords: int) -> int:
        """Global rank of the coordinates (missing axes are 0)."""
        return sum(self.stride[ax] * coords.get(ax, 0) for ax in AXES)

    def coords(self, rank: int) -> dict[str, int]:
        """Coordinates of a global rank (inverse of :meth:`rank`)."""
        return {ax: (rank // self.stride[ax]) % self.sizes[ax] for ax in AXES}

    def group(self, axis: str, **coords: int) -> list[int]:
        """Ranks along ``axis`` with the other coordinates fixed."""
        key = (axis, tuple(sorted(coords.items())))
        hit = self._groups.get(key)
        if hit is not None:
            return list(hit)
        out = self._group(axis, **coords)
        self._groups[key] = tuple(out)
        return out

    def _group(self, axis: str, **coords: int) -> list[int]:
        out = []
        for i in range(self.sizes[axis]):
            c = dict(coords)
            c[axis] = i
            out.append(self.rank(**c))
        return out


@dataclass
class Unit:
    """Forward or backward work of one layer-like unit on one TP rank for one micro-batch."""

    name: str
    segments: list  # ("c", seconds, kernels) | ("tp", op, size_bytes)
    grad_bytes: float  # gradient bytes this unit produces (per TP rank)
    param_count: float  # parameters of the unit held per TP rank
    tensors: int = 0  # parameter tensors of the unit (one AccumulateGrad / DDP hook / optimizer entry each)


def _overlap_tp(segs: list) -> list:
    """TP communication overlap (Megatron-Core ``--tp-comm-overlap``, sequence parallel): each
    all-gather runs beside the GEMM it feeds (the next compute item), each reduce-scatter beside the
    GEMM it drains (the previous one). The GEMM's seconds move into the collective's segment as a
    4th element, ``("tp", op, size, gemm_seconds)``: the pair takes ``max(comm, gemm)``; the GEMM
    item keeps its kernel count (host issue) with no GPU time of its own."""
    out = list(segs)
    for i, sg in enumerate(out):
        if sg[0] != "tp" or len(sg) > 3:
            continue
        j = i + 1 if sg[1] == "all_gather" else i - 1
        if 0 <= j < len(out) and out[j][0] == "c" and out[j][1] > 0:
            out[i] = ("tp", sg[1], sg[2], out[j][1])
            out[j] = ("c", 0.0, out[j][2])
    return out


class TransformerStep:
    """Builds the op DAG of one training step of a transformer scenario.

    Parameters
    ----------
    scenario: a validated :class:`clustersim.config.scenario.Scenario` with a model.
    compute: the :class:`ComputeModel` of the GPU.
    host_call_s: host CPU seconds to issue one kernel or collective (profile ``host.per_call_overhead_us``).
    reduced: simulate one DP replica (the symmetry reduction); False simulates every replica.
    """

    def __init__(self, scenario, compute: ComputeModel, host_call_s: float = 0.0, reduced: bool = True,
                 host_kernel_s: float | None = None):
        self.sc = scenario
        self.m = ModelDims.from_section(scenario.model)
        self.cm = compute
        self.host_call_s = host_call_s
        self.host_kernel_s = host_call_s if host_kernel_s is None else host_kernel_s
        par, tr = scenario.parallelism, scenario.training
        self.par, self.tr = par, tr
        self.t, self.p, self.d, self.v = par.tp, par.pp, par.dp, par.virtual_stages
        self.b = tr.micro_batch
        self.n_mb = scenario.micro_batches
        self.sp = par.sequence_parallel and par.tp > 1
        self.vocab_par = par.vocab_parallel or par.tp == 1
        self.layout = Layout({"tp": par.tp, "cp": par.cp, "ep": par.ep, "dp": par.dp, "pp": par.pp}, par.order)
        self.reduced = reduced or par.zero == 3
        self.a_bytes = 2  # 16-bit activations
        self.pb = DTYPE_BYTES[tr.precision.params]
        self.gb = DTYPE_BYTES[tr.precision.grads]
        self.n_vstages = self.p * self.v
        self.vs_layers = split_layers(self.m.layers, self.n_vstages)
        self.layers_per_chunk = max(self.vs_layers)
        self.compute_duty: float | None = None  # set when the profile has a clock_table

    # ------------------------------------------------------------------ kernels of one unit
    def _tp(self, op: str, size: float) -> tuple:
        return ("tp", op, size)

    def _layer_units(self) -> tuple[Unit, Unit, Unit | None]:
        """Forward, backward and (selective-recompute extra) units of one transformer layer."""
        m, cm, t, b, s = self.m, self.cm, self.t, self.b, self.m.seq_len
        h, a = m.hidden, m.heads
        T = b * s
        Tn = T // t if self.sp else T  # tokens a rank holds outside the TP region
        ab = self.a_bytes
        full = T * h * ab  # one full activation tensor in bytes
        fwd: list = []
        bwd: list = []

        def mem(nbytes, k=1, both=True, kb=None):
            fwd.append(("c", cm.memory(nbytes, k), k))
            if both:
                kb = k if kb is None else kb
                bwd.append(("c", cm.memory(2 * nbytes, kb), kb))

        def mop(op, min_f, op_b, min_b, legacy, kb=1):
            """A measured memory-bound class (ComputeModel.memory_op): forward ``op`` moving
            ``min_f`` bytes, backward ``op_b`` moving ``min_b``; ``legacy``: bytes of the
            uncalibrated model (forward; backward twice that)."""
            fwd.append(("c", cm.memory_op(op, min_f, legacy, 1), 1))
            bwd.append(("c", cm.memory_op(op_b, min_b, 2 * legacy, kb), kb))

        def pair(op, min_f, min_b, kf, kb):
            """An unfused sequence measured forward + backward together (``op``, a ``memory_table``
            class of ``min_f + min_b`` minimum bytes): each direction at the class's efficiency; the
            same bytes at the copy bandwidth when the profile lacks the class."""
            size = min_f + min_b
            fwd.append(("c", cm.memory_op(op, min_f, min_f, kf, size_bytes=size), kf))
            bwd.append(("c", cm.memory_op(op, min_b, min_b, kb, size_bytes=size), kb))

        unfused = self.tr.kernel_fusion == "none"

        def gemm(M, N, K):  # a linear layer: forward NT, backward dgrad NN + wgrad TN
            fwd.append(("c", cm.linear(M, N, K, "fwd"), 1))
            bwd.append(("c", cm.linear(M, N, K, "dgrad") + cm.linear(M, N, K, "wgrad"), 2))

        def norm():
            if m.norm == "layernorm":  # LayerNorm backward: dx kernel and gain/bias-gradient kernel
                mop("layernorm_fwd", 2 * Tn * h * ab, "layernorm_bwd", 3 * Tn * h * ab, norm_bytes, kb=2)
            else:  # RMSNorm (torch's fused F.rms_norm, TE, apex): the same two backward kernels
                mop("rmsnorm_fwd", 2 * Tn * h * ab, "rmsnorm_bwd", 3 * Tn * h * ab, norm_bytes, kb=2)

        def residual():
            # bias-dropout-add (uncalibrated: read x and residual (2+2), write 2, mask 1); measured
            # class: an add (read 2, write 1) forward, and backward the add that accumulates the
            # residual-stream gradient with the branch's
            mop("add", 3 * Tn * h * ab, "add", 3 * Tn * h * ab, 7 * Tn * h)

        def tp_in():  # "f" operator of Megatron: identity fwd / AR bwd (SP: AG fwd / RS bwd)
            if t == 1:
                return
            # the operator is a Python autograd.Function: its identity pass is a host call too
            (bwd if self.sp else fwd).append(("h", 1))
            if self.sp:
                fwd.append(self._tp("all_gather", full))
                bwd.append(self._tp("reduce_scatter", full))
            else:
                bwd.append(self._tp("all_reduce", full))

        def tp_out():  # "g" operator: AR fwd / identity bwd (SP: RS fwd / AG bwd)
            if t == 1:
                return
            if not self.sp:
                bwd.append(("h", 1))  # identity backward of the Python autograd.Function
            if self.sp:
                fwd.append(self._tp("reduce_scatter", full))
                bwd.append(self._tp("all_gather", full))
            else:
                fwd.append(self._tp("all_reduce", full))

        norm_bytes = 2 * Tn * h * ab  # read x, write y (statistics negligible)
        # --- attention block (norm backward: one dx kernel and one gain/bias-gradient kernel)
        norm()
        tp_in()
        gemm(T, (h + 2 * m.kv_hidden) // t, h)
        # the fused QKV output is split into q, k, v views; backward concatenates their gradients
        bwd.append(("c", cm.memory(2 * T * (h + 2 * m.kv_hidden) // t * ab), 1))
        q_el, kv_el = T * h // t, T * m.kv_hidden // t  # elements of q and of k (= v) on this rank
        if m.position_embedding == "rope":
            if unfused:  # per tensor (q, k): neg, cat, 2 mul, add forward; the same count backward
                pair("rope", 2 * (q_el + kv_el) * ab, 2 * (q_el + kv_el) * ab, 10, 10)
            else:
                mem(2 * (q_el + kv_el) * ab)
        if unfused and m.kv_heads != m.heads:
            # GQA by repeat_interleave of k and v to the query heads: a copy forward, a sum backward
            pair("repeat_kv", 2 * (kv_el + q_el) * ab, 2 * (kv_el + q_el) * ab, 2, 2)
        heads_local = a // t
        d = m.head_dim
        extra = None
        eager_sc = b * heads_local * s * s  # score-matrix elements of the materialised attention
        if m.attention == "eager" and unfused and cm.memory_table.get("eager_attention_fwd") \
                and cm.memory_table.get("eager_attention_bwd"):
            # train_gpt's sequence, measured as a whole (bench eager_attention_*): q k^T, scale,
            # causal masked_fill (out of place), softmax, @ v; backward: 4 bmm, softmax, mask, scale
            ea_f = cm.memory_op("eager_attention_fwd", 2 * eager_sc * ab, 2 * eager_sc * ab, 8)
            ea_b = cm.memory_op("eager_attention_bwd", 3 * eager_sc * ab, 3 * eager_sc * ab, 7)
            fwd.append(("c", ea_f, 8))
            bwd.append(("c", ea_b, 7))
            if self.tr.recompute == "selective":
                extra = [("c", ea_f, 8)]
        elif m.attention == "flash":
            f_fl = 4.0 * b * s * s * d * heads_local * 0.5  # QK^T and PV, causal half skipped
            fwd.append(("c", cm.attention(f_fl, 1, "fwd", seq=s, head_dim=d), 1))
            # FlashAttention-2 backward: softmax-denominator (dO.O) pre-pass, the main kernel, dQ conversion
            bwd.append(("c", cm.attention(2.5 * f_fl, 3, "bwd", seq=s, head_dim=d), 3))
        else:
            batch = b * heads_local
            scores = batch * s * s
            qk = cm.gemm(s, s, d * batch)  # batched GEMM as one kernel (efficiency from total FLOPs)
            pv = cm.gemm(s, d * batch, s)
            sm_f = cm.memory(scores * 9.0, 2)  # scale-mask-softmax (r2 w2) + dropout (r2 w2 mask1)
            sm_b = cm.memory(scores * 11.0, 2)  # dropout bwd (r2 mask1 w2) + softmax bwd (r4 w2)
            fwd += [("c", qk, 1), ("c", sm_f, 2), ("c", pv, 1)]
            bwd += [("c", 2 * qk, 2), ("c", sm_b, 2), ("c", 2 * pv, 2)]
            if self.tr.recompute == "selective":
                extra = [("c", qk + sm_f + pv, 4)]
        gemm(T, h, h // t)
        tp_out()
        residual()
        # --- MLP block
        norm()
        tp_in()
        gemm(T, m.mlp_in_width // t, h)
        f_loc = m.ffn_hidden // t
        if m.mlp == "gelu":  # GELU forward (read, write), backward (read dy and x, write dx)
            mop("gelu_fwd", 2 * T * f_loc * ab, "gelu_bwd", 3 * T * f_loc * ab, 2 * T * f_loc * ab)
        elif unfused:  # silu, mul forward; mul, mul, silu_backward backward
            pair("swiglu", 3 * T * f_loc * ab, 5 * T * f_loc * ab, 2, 3)
        else:
            mem(3 * T * f_loc * ab)
        gemm(T, h, f_loc)
        tp_out()
        residual()
        bwd.reverse()
        if self.sp and self.par.tp_comm_overlap:
            fwd, bwd = _overlap_tp(fwd), _overlap_tp(bwd)
        n_local = m.layer_matmul_params / t + m.layer_other_params
        mats = 5 if m.mlp == "swiglu" else 4  # QKV, output, MLP matrices
        norm_t = 2 if (m.norm == "layernorm" and m.bias) else 1
        nt = mats * (2 if m.bias else 1) + 2 * norm_t
        fu = Unit("layer", fwd, 0.0, n_local, nt)
        bu = Unit("layer", bwd, n_local * self.gb, n_local, nt)
        eu = Unit("recompute", extra, 0.0, 0.0) if extra else None
        return fu, bu, eu

    def _embed_units(self) -> tuple[Unit, Unit]:
        m, cm, t, T = self.m, self.cm, self.t, self.b * self.m.seq_len
        h, ab = m.hidden, self.a_bytes
        full = T * h * ab
        fwd: list = [("c", cm.memory(2 * full), 1)]  # gather rows + write
        if m.position_embedding == "learned":
            fwd.append(("c", cm.memory(3 * full), 1))
        # embedding_dense_backward: zero the table gradient, sort the indices, segment-reduce the
        # rows (fp32 partials) and cast: ~5 kernels; the table gradient is written whole
        vrows = m.vocab / (t if self.vocab_par else 1)
        bwd: list = [("c", cm.memory(full + 2 * T * h * 4 + vrows * h * self.gb), 5)]
        if m.position_embedding == "learned":
            # broadcast-add backward: sum over the batch, then slice-backward (zeros + copy)
            bwd.append(("c", cm.memory(3 * full), 3))
        if t > 1 and self.vocab_par:
            # masked lookup: shift, two compares, or, masked_fill before and after the gather
            fwd.append(("c", cm.memory(6 * T * 8 + 2 * full), 6))
        if t > 1 and self.vocab_par:
            fwd.append(self._tp("reduce_scatter" if self.sp else "all_reduce", full))
            if self.sp:
                bwd.insert(0, self._tp("all_gather", full))
        n = (m.vocab / (t if self.vocab_par else 1)) * h
        nt = 1
        if m.position_embedding == "learned":
            n += m.seq_len * h
            nt += 1
        return Unit("embedding", fwd, 0.0, n, nt), Unit("embedding", bwd[::-1], n * self.gb, n, nt)

    def _head_units(self) -> tuple[Unit, Unit]:
        m, cm, t, T = self.m, self.cm, self.t, self.b * self.m.seq_len
        h, ab = m.hidden, self.a_bytes
        Tn = T // t if self.sp else T
        full = T * h * ab
        vloc = m.vocab // t if (self.vocab_par and t > 1) else m.vocab
        if m.norm == "layernorm":  # final norm (measured classes when the profile has them)
            fwd: list = [("c", cm.memory_op("layernorm_fwd", 2 * Tn * h * ab, 2 * Tn * h * ab, 1), 1)]
            bwd: list = [("c", cm.memory_op("layernorm_bwd", 3 * Tn * h * ab, 4 * Tn * h * ab, 2), 2)]
        else:
            fwd = [("c", cm.memory_op("rmsnorm_fwd", 2 * Tn * h * ab, 2 * Tn * h * ab, 1), 1)]
            bwd = [("c", cm.memory_op("rmsnorm_bwd", 3 * Tn * h * ab, 4 * Tn * h * ab, 2), 2)]
        if self.sp:
            fwd.append(self._tp("all_gather", full))
            bwd.append(self._tp("reduce_scatter", full))
        elif t > 1 and self.vocab_par:
            bwd.append(self._tp("all_reduce", full))
        fwd.append(("c", cm.linear(T, vloc, h, "fwd"), 1))
        bwd.append(("c", cm.linear(T, vloc, h, "dgrad") + cm.linear(T, vloc, h, "wgrad"), 2))
        # cross-entropy over fp32 logits: cast (r2 w4), max/sum-exp/loss passes (~3 reads of 4)
        if t > 1 and self.vocab_par:
            # vocab-parallel CE (train_gpt._VocabParallelCE): float cast, max, subtract, target mask
            # (sub, 2 compares, or, masked_fill), gather, masked_fill, exp, sum, log, sub, softmax
            # divide, mean and the 1/micro-batches scale: 17 kernels; three 4-byte-per-token all-reduces
            fwd.append(("c", cm.memory(T * vloc * 26.0, 17), 17))
            for _ in range(3):  # max, target logit, sum of exp
                fwd.append(self._tp("all_reduce", T * 4))
            # backward: zeros_like + scatter (one-hot), masked_fill, subtract, scale, cast to bf16
            bwd.append(("c", cm.memory(T * vloc * 22.0, 6), 6))
        else:
            # F.cross_entropy(logits.float()): cast (r2 w4), log_softmax (r4 w4), nll, the 1/micro-batches
            # scale and the running loss sum
            # measured class (bench: fwd + bwd together, minimum traffic: the 16-bit logits read in
            # the forward and in the backward, their gradient written): half of it to each pass
            ce_min = T * vloc * 3.0 * ab
            fwd.append(("c", cm.memory_op("cross_entropy", ce_min / 2, T * vloc * 18.0, 5, size_bytes=ce_min), 5))
            # nll backward (zero + scatter), log_softmax backward (r4 r4 w4), cast back (r4 w2), scale
            bwd.append(("c", cm.memory_op("cross_entropy", ce_min / 2, T * vloc * 18.0, 5, size_bytes=ce_min), 5))
        n = 0.0 if m.tied_embeddings else vloc * h
        n += 2 * h if m.norm == "layernorm" else h
        nt = (0 if m.tied_embeddings else 1) + (2 if (m.norm == "layernorm" and m.bias) else 1)
        return Unit("head", fwd, 0.0, n, nt), Unit("head", bwd[::-1], n * self.gb, n, nt)

    # ------------------------------------------------------------------ helpers
    @property
    def units(self) -> tuple:
        """((layer F, layer B, selective extra), (embedding F, B), (head F, B)), built once."""
        if not hasattr(self, "_cache_units"):
            cm = self.cm
            if cm.clock_table:
                # sustained clocks: the compute duty of the step's kernels (layers x L, embedding and
                # head once; per micro-batch) picks the slowdown of compute-bound kernels from the
                # profile's clock_table; one more pass with that slowdown, since it raises the duty
                cm.clock_slowdown = 1.0
                for _ in range(2):
                    self.compute_duty = self._duty()
                    cm.clock_slowdown = cm.slowdown_at(self.compute_duty)
            self._cache_units = (self._layer_units(), self._embed_units(), self._head_units())
        return self._cache_units

    def _duty(self) -> float:
        """Fraction of the GPU time of one micro-batch's kernels spent in compute-bound ones."""
        cm, L = self.cm, self.m.layers
        cm.tally[:] = [0.0, 0.0]
        self._layer_units()
        lc, lm = cm.tally
        cm.tally[:] = [0.0, 0.0]
        self._embed_units()
        self._head_units()
        ec, em = cm.tally
        tot = L * (lc + lm) + ec + em
        return (L * lc + ec) / tot if tot > 0 else 0.0

    def _extra(self, u: Unit, mb: int | None) -> Unit:
        """``u`` (a backward unit) with the per-parameter work of micro-batch ``mb`` appended.

        Plain autograd gradients (``precision.grads`` equal to ``params``: PyTorch ``.grad``):

        * Gradient accumulation: the first micro-batch's backward hands its gradients to
          ``.grad`` (AccumulateGrad steals the buffer); every later one adds into it: one ``add_``
          kernel per parameter tensor (read both, write one).
        * DDP (``zero: 0``, ``dp > 1``), last micro-batch: the reducer's autograd hook copies each
          gradient into its bucket, and after the all-reduce copies it back (``bucket_cap_mb``
          buckets, ``gradient_as_bucket_view`` off): two copy kernels per tensor.
        """
        if mb is None or not u.tensors or self.tr.precision.grads != self.tr.precision.params:
            # 16-bit weights with fp32 gradients are Megatron's main_grad buffers: the wgrad GEMM
            # accumulates into them (gradient-accumulation fusion) and they are the DDP bucket
            # memory, so there is neither an add nor a bucket copy
            return u
        extra = []
        if mb > 0:
            extra.append(("c", self.cm.memory_op("add", 3 * u.grad_bytes, 3 * u.grad_bytes, u.tensors), u.tensors))
        if mb == self.n_mb - 1 and self.d > 1 and self.par.zero == 0:
            extra.append(("c", self.cm.memory(4 * u.grad_bytes, 2 * u.tensors), 2 * u.tensors))
        if not extra:
            return u
        return Unit(u.name, list(u.segments) + extra, u.grad_bytes, u.param_count, u.tensors)

    def chunk_units(self, vs: int, kind: str, mb: int | None = None) -> list[Unit]:
        """Units of virtual stage ``vs`` in execution order for ``kind`` F or B (``mb``: micro-batch)."""
        if mb is not None and kind == "B":
            key = (vs, mb > 0, mb == self.n_mb - 1)
            cache = self.__dict__.setdefault("_cu_cache", {})
            if key not in cache:
                cache[key] = [self._extra(u, mb) for u in self.chunk_units(vs, kind)]
            return cache[key]
        (lf, lb, le), (ef, eb), (hf, hb) = self.units
        units: list[Unit] = []
        if kind == "F":
            if vs == 0:
                units.append(ef)
            units += [lf] * self.vs_layers[vs]
            if vs == self.n_vstages - 1:
                units.append(hf)
            return units
        if vs == self.n_vstages - 1:
            units.append(hb)
        lay = lb
        pre: list = []
        if self.tr.recompute == "full":
            pre = list(lf.segments)
        elif self.tr.recompute == "selective" and le is not None:
            pre = list(le.segments)
        if pre:
            lay = Unit("layer", pre + lb.segments, lb.grad_bytes, lb.param_count, lb.tensors)
        units += [lay] * self.vs_layers[vs]
        if vs == 0:
            units.append(eb)
        return units

    def stage_params(self, j: int) -> float:
        """Parameters held per GPU on pipeline rank ``j`` (all its model chunks)."""
        (lf, _, _), (ef, _), (hf, _) = self.units
        vss = [c * self.p + j for c in range(self.v)]
        n = sum(self.vs_layers[vs] for vs in vss) * lf.param_count
        if 0 in vss:
            n += ef.param_count
        if self.n_vstages - 1 in vss:
            n += hf.param_count
            if self.m.tied_embeddings and self.p > 1:
                n += ef.param_count  # a copy of the embedding for the tied head
        return n

    def stage_tensors(self, j: int) -> int:
        """Parameter tensors on pipeline rank ``j`` (entries in the optimizer's lists)."""
        (lf, _, _), (ef, _), (hf, _) = self.units
        vss = [c * self.p + j for c in range(self.v)]
        n = sum(self.vs_layers[vs] for vs in vss) * lf.tensors
        if 0 in vss:
            n += ef.tensors
        if self.n_vstages - 1 in vss:
            n += hf.tensors
        return n

    def _optimizer_time(self, n: float, upd: float) -> float:
        """GPU seconds of the optimizer step over ``n`` parameters (``upd`` bytes each,
        :func:`optimizer_update_bytes`, which includes one gradient read for the norm clip).

        AdamW with a measured ``adamw`` class (bench ``--kernels``: one foreach step): the step's
        bytes at the measured fraction of HBM bandwidth, the norm's gradient read at full copy
        bandwidth; otherwise all ``upd`` bytes at HBM bandwidth.
        """
        if self.tr.optimizer == "adamw" and self.cm.memory_table.get("adamw"):
            norm = n * self.gb
            return self.cm.memory_op("adamw", n * upd - norm, n * upd, 2) + self.cm.memory(norm, 0)
        return self.cm.memory(n * upd, 2)

    def _optimizer_host(self, j: int) -> float:
        """Host seconds of ``optimizer.step()``: torch's multi-tensor (foreach) AdamW walks its
        parameter list in Python once (state, grads, step counters: one call's worth per tensor)
        and issues 9 foreach operations (decay, lerp, mul, addcmul, sqrt, div, add, addcdiv, step
        increment); SGD 1."""
        ops = 9 if self.tr.optimizer == "adamw" else 1
        return (ops + self.stage_tensors(j)) * self.host_kernel_s

    def _segs(self, units: list[Unit]) -> tuple[list, float]:
        """Merge consecutive compute items; return segments and host-issue seconds."""
        out: list = []
        calls = 0
        kernels = 0
        for u in units:
            for sg in u.segments:
                if sg[0] == "h":  # host-only work (Python, no kernel)
                    calls += sg[1]
                    continue
                if sg[0] == "c":
                    kernels += sg[2]
                    if out and out[-1][0] == "c":
                        out[-1] = ("c", out[-1][1] + sg[1])
                    else:
                        out.append(("c", sg[1]))
                else:
                    calls += 1
                    out.append(sg)
        return out, calls * self.host_call_s + kernels * self.host_kernel_s

    # ------------------------------------------------------------------ the DAG
    def build(self) -> Graph:
        """The op DAG of one step (on the executor ranks)."""
        g = Graph()
        lay, p, v, t = self.layout, self.p, self.v, self.t
        replicas = [0] if self.reduced else list(range(self.d))
        self.replicas = replicas
        self.exec_ranks = [lay.rank(dp=d, pp=j) for d in replicas for j in range(p)]
        sched = self.par.schedule if p > 1 or v > 1 else "1f1b"
        self.orders = {j: pipeline_order(sched, p, self.n_mb, j, v) for j in range(p)}
        if self.par.zero == 3:
            self._build_fsdp(g)
            return g
        dp_on = self.d > 1
        bucket_bytes = self.par.ddp_bucket_mb * 1e6
        chunk_op: dict[tuple, int] = {}
        send_op: dict[tuple, int] = {}
        buckets: dict[tuple[int, int], list[tuple[int, float]]] = {}  # (d, j) -> [(op, bytes)]
        last_mb = self.n_mb - 1
        seg_cache: dict[tuple, tuple] = {}  # identical chunks share one segment list
        # ZeRO-1/2: updated weights are all-gathered bucket by bucket while the next step's first
        # micro-batch runs forward (Megatron-Core --overlap-param-gather); in the steady state that
        # is this step's first forward, so each layer's first forward waits for its bucket
        gather_on = self.par.zero in (1, 2) and dp_on
        fwd_units: dict[tuple[int, int], list[tuple[int, float]]] = {}

        def tp_group(d, j):
            return lay.group("tp", dp=d, pp=j)

        for d in replicas:
            for j in range(p):
                r = lay.rank(dp=d, pp=j)
                tpg = tp_group(d, j)
                acc, blist = 0.0, []
                for kind, mb, c in self.orders[j]:
                    vs = c * p + j
                    units = self.chunk_units(vs, kind, mb)
                    split = (kind == "B" and mb == last_mb and dp_on) or (kind == "F" and mb == 0 and gather_on)
                    groups = [[u] for u in units] if split else [units]
                    for gi, us in enumerate(groups):
                        key = (d, j, vs, kind, split, gi, kind == "B" and mb > 0, kind == "B" and mb == last_mb)
                        hit = seg_cache.get(key)
                        if hit is None:
                            segs, host = self._segs(us)
                            segs = [s if s[0] == "c" else ("tp", Coll(s[1], [tpg], s[2], "tp"), *s[3:]) for s in segs]
                            hit = seg_cache[key] = (segs, host)
                        segs, host = hit
                        name = f"{kind}{mb}" + (f".c{c}" if v > 1 else "") + (f".{us[0].name}" if split else "")
                        oid = g.add(r, "compute", name, "compute", segments=segs, mb=mb, chunk=c, kind=kind,
                                    host_s=host)
                        if gi == 0:
                            chunk_op[(d, j, kind, mb, c, "first")] = oid
                        chunk_op[(d, j, kind, mb, c)] = oid
                        if split and kind == "F":
                            fwd_units.setdefault((d, j), []).append((oid, us[0].param_count * self.pb))
                        elif split:
                            acc += sum(u.grad_bytes for u in us)
                            if acc >= bucket_bytes:
                                blist.append((oid, acc))
                                acc = 0.0
                # flush the remainder after the rank's last backward
                if dp_on:
                    last_b = [x for x in self.orders[j] if x[0] == "B"][-1]
                    if acc > 0:
                        blist.append((chunk_op[(d, j, "B", last_b[1], last_b[2])], acc))
                    buckets[(d, j)] = blist
        # pipeline point-to-point
        act = 2 * self.b * self.m.seq_len * self.m.hidden / t
        for d in replicas:
            for j in range(p):
                r = lay.rank(dp=d, pp=j)
                for kind, mb, c in self.orders[j]:
                    vs = c * p + j
                    nvs = vs + 1 if kind == "F" else vs - 1
                    if nvs < 0 or nvs >= self.n_vstages:
                        continue
                    nj, nc = nvs % p, nvs // p
                    if nj == j:  # same GPU: no transfer, direct dependency
                        g.ops[chunk_op[(d, nj, kind, mb, nc, "first")]].deps.append(chunk_op[(d, j, kind, mb, c)])
                        continue
                    src = lay.group("tp", dp=d, pp=j)
                    dst = lay.group("tp", dp=d, pp=nj)
                    coll = Coll("send_recv", [[a, bb] for a, bb in zip(src, dst)], act, "pp")
                    sid = g.add(r, "pp_" + ("f" if kind == "F" else "b"), f"send {kind}{mb}", "comm_pp",
                                coll=coll, deps=[chunk_op[(d, j, kind, mb, c)]])
                    # the sender's host issues the send and the receiver's host the matching recv
                    # (torch.distributed.pipelining: one batch_isend_irecv call each)
                    for key in ((d, j, kind, mb, c), (d, nj, kind, mb, nc, "first")):
                        a = g.ops[chunk_op[key]].args
                        a["host_s"] = a.get("host_s", 0.0) + self.host_call_s
                    send_op[(d, j, kind, mb, c)] = sid
                    g.ops[chunk_op[(d, nj, kind, mb, nc, "first")]].deps.append(sid)
                # backward of the last virtual stage waits for its own forward
                for kind, mb, c in self.orders[j]:
                    if kind == "B":
                        g.ops[chunk_op[(d, j, "B", mb, c, "first")]].deps.append(chunk_op[(d, j, "F", mb, c)])
        if gather_on:
            for j in range(p):
                groups = [lay.group("dp", tp=i, pp=j) for i in range(t)]
                r0 = lay.rank(dp=replicas[0], pp=j)
                extra = [(lay.rank(dp=d, pp=j), "dp_ag") for d in replicas[1:]]
                units0 = fwd_units[(replicas[0], j)]
                acc_b, members = 0.0, []
                for k, (_, nbytes) in enumerate(units0):
                    acc_b += nbytes
                    members.append(k)
                    if acc_b >= bucket_bytes or k == len(units0) - 1:
                        ag = g.add(r0, "dp_ag", "param all_gather", "comm_dp",
                                   coll=Coll("all_gather", groups, acc_b, "dp"), extra_streams=extra)
                        for d in replicas:
                            for kk in members:
                                g.ops[fwd_units[(d, j)][kk][0]].deps.append(ag)
                        acc_b, members = 0.0, []
        # data-parallel gradient reduction, shared by all replicas
        dp_ops: dict[int, list[int]] = {j: [] for j in range(p)}
        if dp_on:
            op = "all_reduce" if self.par.zero == 0 else "reduce_scatter"
            for j in range(p):
                groups = [lay.group("dp", tp=i, pp=j) for i in range(t)]
                r0 = lay.rank(dp=replicas[0], pp=j)
                for k, (oid0, nbytes) in enumerate(buckets[(replicas[0], j)]):
                    # dp_overlap off: every bucket waits for the rank's last backward (the last bucket's op)
                    deps = [buckets[(d, j)][k if self.par.dp_overlap else -1][0] for d in replicas]
                    for d in replicas:  # the reducer's hook issues the bucket's collective from the host
                        a = g.ops[buckets[(d, j)][k][0]].args
                        a["host_s"] = a.get("host_s", 0.0) + self.host_call_s
                    extra = [(lay.rank(dp=d, pp=j), "dp") for d in replicas[1:]]
                    dp_ops[j].append(g.add(r0, "dp", f"grad {op} b{k}", "comm_dp",
                                           coll=Coll(op, groups, nbytes, "dp"), deps=deps, extra_streams=extra))
        # tied embedding gradient between first and last stage
        tied_ops: dict[tuple[int, int], int] = {}
        if self.m.tied_embeddings and p > 1:
            n = (self.m.vocab / (t if self.vocab_par else 1)) * self.m.hidden * self.gb
            for d in replicas:
                r0, r1 = lay.rank(dp=d, pp=0), lay.rank(dp=d, pp=p - 1)
                groups = [[a, bb] for a, bb in zip(lay.group("tp", dp=d, pp=0), lay.group("tp", dp=d, pp=p - 1))]
                oid = g.add(r0, "dp", "tied-embedding all_reduce", "comm_dp", coll=Coll("all_reduce", groups, n, "dp"),
                            deps=[g.last(r0, "compute"), g.last(r1, "compute")], extra_streams=[(r1, "dp")])
                tied_ops[(d, 0)] = tied_ops[(d, p - 1)] = oid
        # global gradient norm for clipping: one fp32 all-reduce over the model-parallel group
        # (Megatron clip_grad_norm); it also makes every stage wait for the slowest one
        norm_ops: dict[int, int] = {}
        if p * t > 1:
            for d in replicas:
                mp = sorted(r for j in range(p) for r in lay.group("tp", dp=d, pp=j))
                r0 = lay.rank(dp=d, pp=0)
                deps = [g.last(lay.rank(dp=d, pp=j), "compute") for j in range(p)]
                deps += [x for j in range(p) for x in dp_ops[j]]
                deps += [tied_ops[(d, 0)]] if (d, 0) in tied_ops else []
                extra = [(lay.rank(dp=d, pp=j), "dp") for j in range(1, p)]
                norm_ops[d] = g.add(r0, "dp", "grad-norm all_reduce", "comm_pp",
                                    coll=Coll("all_reduce", [mp], 4, "pp"), deps=deps, extra_streams=extra,
                                    after_compute=True)
        # optimizer and (ZeRO-1/2) weight all-gather
        upd = optimizer_update_bytes(self.tr.precision, self.tr.optimizer)
        for d in replicas:
            for j in range(p):
                r = lay.rank(dp=d, pp=j)
                n = self.stage_params(j)
                shard = n / self.d if self.par.zero >= 1 else n
                deps = list(dp_ops[j])
                if (d, j) in tied_ops:
                    deps.append(tied_ops[(d, j)])
                if d in norm_ops:
                    deps.append(norm_ops[d])
                dur, host = self._optimizer_time(shard, upd), self._optimizer_host(j)
                if p > 1 and self.tr.precision.grads == self.tr.precision.params:
                    # torch.distributed.pipelining (plain autograd gradients) scales the accumulated
                    # gradients by 1/micro-batches after the last backward: one div_ per tensor
                    nt = self.stage_tensors(j)
                    dur += self.cm.memory(2 * n * self.gb, nt)
                    host += nt * self.host_kernel_s
                g.add(r, "compute", "optimizer", "optimizer", duration=dur, deps=deps, host_s=host)
        return g

    def _build_fsdp(self, g: Graph) -> None:
        """ZeRO-3 / FSDP2 (pp = 1): per-unit all-gather before forward and backward (prefetch one
        ahead), per-unit reduce-scatter after every micro-batch's backward.

        FSDP2 (``fully_shard`` per block, the default ``reshard_after_forward``) gathers a unit's
        parameters through a copy-in kernel (the local shards into one flat buffer), the
        all-gather and a copy-out kernel (``split_with_sizes_copy`` into the unsharded
        parameters). Without ``set_requires_gradient_sync(False)`` it reduce-scatters every
        micro-batch: a copy-in kernel (``chunk_cat`` of the gradients), the reduce-scatter, the
        averaging division, and from the second micro-batch on an add into the sharded gradient.
        """
        lay, t = self.layout, self.t
        r = lay.rank()
        groups = [lay.group("dp", tp=i) for i in range(t)]
        tpg = lay.group("tp")
        dp_on = self.d > 1
        rs_ops = []
        comp_hist: list[int] = []
        cm = self.cm
        hk, hc = self.host_kernel_s, self.host_call_s
        for kind, mb, c in self.orders[0]:
            units = self.chunk_units(c, kind)
            for ui, u in enumerate(units):
                ag = None
                segs, host = self._segs([u])
                segs = [s if s[0] == "c" else ("tp", Coll(s[1], [tpg], s[2], "tp"), *s[3:]) for s in segs]
                if dp_on and u.param_count > 0:
                    # prefetch: may start once the unit two places earlier finished (2 units resident)
                    pre = comp_hist[-2] if len(comp_hist) >= 2 else None
                    pbytes = u.param_count * self.pb
                    ag = g.add(r, "dp_ag", f"AG {u.name}", "comm_dp",
                               coll=Coll("all_gather", groups, pbytes, "dp"), deps=[pre])
                    # copy-in (shards -> flat buffer) and copy-out (flat buffer -> parameters)
                    segs = [("c", cm.memory(2 * pbytes / self.d, 1) + cm.memory(2 * pbytes, 1))] + segs
                    # the all-gather call; per parameter: alloc_storage before, free_storage at reshard
                    host += hc + (2 + 2 * u.tensors) * hk
                rs_on = dp_on and kind == "B" and u.grad_bytes > 0
                if rs_on:
                    gb = u.grad_bytes
                    # chunk_cat copy-in, the divide by the group size, (accumulate into the shard)
                    segs = segs + [("c", cm.memory(2 * gb, 1) + cm.memory((2 + (3 if mb > 0 else 0)) * gb / self.d, 1))]
                    # the reduce-scatter call; per parameter: as_strided view of the output shard,
                    # then a new sharded DTensor gradient (first micro-batch) or ``+=`` into it
                    host += hc + (2 + 2 * u.tensors) * hk
                oid = g.add(r, "compute", f"{kind}{mb}.{u.name}", "compute", segments=segs, deps=[ag],
                            mb=mb, kind=kind, host_s=host)
                comp_hist.append(oid)
                if rs_on:
                    rs_ops.append(g.add(r, "dp_rs", f"RS {u.name}", "comm_dp",
                                        coll=Coll("reduce_scatter", groups, u.grad_bytes, "dp"), deps=[oid]))
        upd = optimizer_update_bytes(self.tr.precision, self.tr.optimizer)
        shard = self.stage_params(0) / self.d
        # FSDP2 parameters are DTensors: every foreach op of the optimizer is dispatched per tensor
        ops = 9 if self.tr.optimizer == "adamw" else 1
        opt_host = ops * self.stage_tensors(0) * self.host_kernel_s if dp_on else self._optimizer_host(0)
        g.add(r, "compute", "optimizer", "optimizer", duration=self._optimizer_time(shard, upd), deps=rs_ops,
              host_s=opt_host)

    # ------------------------------------------------------------------ memory
    def memory(self, capacity_bytes: float) -> dict:
        """Per-GPU memory of the fullest pipeline rank (bytes)."""
        sb = state_bytes_per_param(self.tr.precision, self.tr.optimizer)
        act_layer = self.m.layer_activation_bytes(self.b, self.t, self.sp, self.tr.recompute)
        T = self.b * self.m.seq_len
        best = None
        sched = self.par.schedule if self.p > 1 or self.v > 1 else "1f1b"
        for j in range(self.p):
            order = pipeline_order(sched, self.p, self.n_mb, j, self.v)
            inflight = max_in_flight(order)
            n = self.stage_params(j)
            st = sharded_states(n, sb, self.par.zero, self.d)
            vss = [c * self.p + j for c in range(self.v)]
            acts = inflight * (sum(self.vs_layers[vs] for vs in vss) / len(vss)) * act_layer
            if 0 in vss:  # embedding dropout output per micro-batch in flight
                acts += inflight * T * self.m.hidden * 2 / (self.t if self.sp else 1) / max(self.v, 1)
            transient = 0.0
            if self.n_vstages - 1 in vss:
                vloc = self.m.vocab / (self.t if (self.vocab_par and self.t > 1) else 1)
                transient += T * vloc * (4 + 2)  # fp32 logits + their 16-bit source, one micro-batch
            if self.par.zero == 3 and self.d > 1:
                (lf, _, _) = self.units[0]
                transient += 2 * lf.param_count * (self.pb + self.gb)  # gathered layer + its grads
            peak = st["params"] + st["grads"] + st["optimizer"] + acts + transient
            row = {"stage": j, **st, "activations": acts, "transient": transient, "peak_bytes_per_gpu": peak}
            if best is None or peak > best["peak_bytes_per_gpu"]:
                best = row
        best["capacity_bytes"] = capacity_bytes
        best["fits"] = best["peak_bytes_per_gpu"] <= capacity_bytes
        best["bytes_per_param"] = {"params": sb.params, "grads": sb.grads, "optimizer": sb.optimizer}
        return best

    def model_flops_per_step(self) -> float:
        """Model FLOPs of one optimizer step (whole job), the MFU numerator."""
        return self.m.model_flops_per_token() * self.tr.global_batch * self.m.seq_len

