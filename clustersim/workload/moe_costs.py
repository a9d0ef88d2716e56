"""Cost of the MoE MLP of one layer on one rank for one micro-batch: router, token permutation,
dispatch and combine over the expert-parallel group, grouped expert GEMMs, shared experts.

Forward, in order (Megatron-Core's MoE layer; backward is the conjugate, reversed):

* shared experts (``shared_experts * expert_ffn_hidden`` wide, TP-split like the dense MLP);
* router GEMM ``tokens_routed x experts x hidden`` and the fp32 softmax / top-k over its logits;
* permutation: each token copied once per chosen expert (read and write ``tokens x top_k x h``);
* dispatch: ``all_to_all`` of ``tokens_routed x top_k x hidden x 2`` bytes per rank over the EP
  group (``ep_dispatcher: allgather``: all-gather of every EP rank's tokens instead;
  ``ep_transport: nvshmem``: the same bytes as one-sided puts, algorithm ``nvshmem``); with
  ``expert_tp > 1`` the received tokens are all-gathered over the expert-TP group. With
  node-limited routing (``parallelism.ep_max_nodes``) over an EP group spanning several nodes, two
  stages as DeepEP's normal kernels: an ``all_to_all`` over the rank's rail group (its EP peers
  with the same in-node index, one per node) of ``tokens x min(top_k, M) x hidden x 2`` bytes
  (one copy per target node), then an ``all_to_all`` over the rank's node group of the full
  ``tokens x top_k x hidden x 2`` (NVLink forwards each copy to its experts); the combine runs
  the stages in the other order (:func:`ep_exchange`);
* grouped GEMMs on the most loaded EP rank: each local expert at its own token count ``M``
  (:class:`~clustersim.workload.moe.Routing`), with the efficiency the compute model gives that
  ``M`` (one grouped kernel per weight, one launch); activation over all its tokens;
* combine (the conjugate collectives), un-permutation and the probability-weighted sum.

The collectives are :class:`~clustersim.workload.segments.TPCommSegment` items with axis ``ep``
(``etp`` for expert-TP; ``ep_inter`` and ``ep_intra`` for the two node-limited stages), bound to
their groups by the pipeline builder: their exposed time is the breakdown's ``comm_ep``.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.moe import Routing, expert_params_per_rank, target_nodes
from clustersim.workload.segments import ComputeSegment, TPCommSegment

ACT_BYTES = 2  # 16-bit activations and dispatched tokens
#: axes of the token dispatch/combine: one all-to-all (``ep``), or the node-limited rail and node stages
EP_AXES = ("ep", "ep_inter", "ep_intra")


@dataclass(frozen=True)
class ExpertParallel:
    """Expert-parallel degrees, dispatcher and the routing load of a scenario."""

    ep: int
    expert_tp: int
    dispatcher: str  # alltoall | allgather
    routing: Routing
    comm_overlap: bool = False  # batch-level overlap of the EP collectives with dense compute
    transport: str = "nccl"  # nccl | nvshmem (parallelism.ep_transport)
    max_nodes: int | None = None  # node-limited routing: a token's experts on at most this many nodes
    nodes: int = 1  # nodes the EP group spans

    @property
    def algorithm(self) -> str:
        """Collective algorithm of the dispatch/combine: ``nvshmem`` puts, or NCCL's own choice."""
        return "nvshmem" if self.transport == "nvshmem" else "auto"

    @property
    def node_limited(self) -> bool:
        """Dispatch/combine in two stages (network to each target node once, then NVLink): node-limited
        routing asked for, an all-to-all dispatcher and an EP group over more than one node."""
        return self.max_nodes is not None and self.nodes > 1 and self.dispatcher == "alltoall"


def ep_exchange(xp: ExpertParallel, tokens: float, top_k: int, hidden: int, combine: bool) -> tuple[list, list]:
    """(forward, backward) collective items of the dispatch (or, ``combine``, the combine) of
    ``tokens`` routed tokens of ``hidden`` width, all-to-all dispatcher.

    Unrestricted: one ``all_to_all`` of ``tokens x top_k x hidden x 2`` over the EP group.
    Node-limited (:attr:`ExpertParallel.node_limited`): the rail stage (``ep_inter``, one copy per
    target node, :func:`~clustersim.workload.moe.target_nodes`) and the NVLink stage (``ep_intra``,
    every expert copy), dispatch network first, combine NVLink first (DeepEP reduces a token's
    expert outputs on the node before sending it back: DeepSeek-V3 arXiv 2412.19437 section
    3.2.2). The backward list is in forward order (the caller reverses it), so the backward of the
    dispatch runs the combine's order and vice versa. The two stages are costed one after the
    other; DeepEP pipelines them in chunks, so this is an upper bound of up to the shorter stage.

    >>> from clustersim.workload.moe import Routing
    >>> r = Routing(1.0, 1.0, (1,), 1.0, 0.0)
    >>> xp = ExpertParallel(ep=64, expert_tp=1, dispatcher="alltoall", routing=r, max_nodes=4, nodes=8)
    >>> fwd, _ = ep_exchange(xp, 4096, 8, 7168, combine=False)
    >>> [(s.axis, s.size_bytes / (4096 * 7168 * 2)) for s in fwd]
    [('ep_inter', 4.0), ('ep_intra', 8.0)]
    """
    full = tokens * top_k * hidden * ACT_BYTES
    if not xp.node_limited:
        return dispatch_pair("all_to_all", "all_to_all", full, "ep", xp.algorithm)
    inter = TPCommSegment("all_to_all", tokens * target_nodes(top_k, xp.max_nodes, xp.nodes) * hidden * ACT_BYTES,
                          axis="ep_inter", algorithm=xp.algorithm)
    intra = TPCommSegment("all_to_all", full, axis="ep_intra", algorithm=xp.algorithm)
    order = [intra, inter] if combine else [inter, intra]
    return order, list(order)


def dispatch_pair(op_fwd: str, op_bwd: str, size_bytes: float, axis: str, algorithm: str = "auto") -> tuple[list, list]:
    """(forward, backward) collective items of one dispatch or combine step."""
    return ([TPCommSegment(op_fwd, size_bytes, axis=axis, algorithm=algorithm)],
            [TPCommSegment(op_bwd, size_bytes, axis=axis, algorithm=algorithm)])


def _grouped_linear(passes, tokens: tuple[int, ...], out_features: int, in_features: int) -> None:
    """A grouped GEMM over the local experts (``tokens[e]`` rows each), one kernel per pass role:
    the profile's measured grouped GEMMs (``grouped_gemm_table``) where it has them, else every expert
    at the efficiency of its own ``M`` (:meth:`~clustersim.workload.compute.ComputeModel.grouped_linear`)."""
    cm = passes.compute
    if not cm.grouped_table:  # as before the grouped table: the dense layout table at each expert's M
        launch = cm.kernel_launch_s

        def role_time(role: str) -> float:
            per = [t - launch for t in cm.linears([m for m in tokens if m > 0], out_features, in_features, role)]
            return sum(per) + launch if per else 0.0
    else:
        def role_time(role: str) -> float:
            return cm.grouped_linear(tokens, out_features, in_features, role)

    passes.forward.append(ComputeSegment(role_time("fwd"), 1))
    passes.backward_gemms(role_time("dgrad"), role_time("wgrad"))


#: kernels of one expert of the loop: forward (index, 2 GEMMs, SiLU, multiply, probability index and
#: multiply, index_add_), backward (autograd: the 4 GEMMs, index_select, 3 for the weighting, 2 for the
#: probability index, 2 for the product, SiLU, 5 for the two slices and their sum, 2 + 3 for the gather's
#: zero-filled gradient and its sorted accumulation): reference/train_gpt_fp8_moe.py MoEMLP._loop
LOOP_KERNELS_FWD, LOOP_KERNELS_BWD = 9, 24
#: HBM passes over a stacked expert weight per expert in the backward of ``w[e]``: PyTorch's select backward
#: writes a zero tensor of the whole stacked weight and copies the expert's slice in; autograd adds it to the
#: weight's gradient buffer (read both, write one)
STACKED_PASSES = 4


def loop_experts(costs, passes, routed: tuple[int, ...], f: int) -> None:
    """The experts of one MoE layer as a Hugging Face style loop (``model.moe.implementation: loop`` or
    ``loop_modules``).

    Per expert, ``torch.where`` on its mask waits for the GPU, so host and GPU take turns: each expert costs
    the wall time measured for an expert of such a loop in training at its token count
    (``compute.moe_loop_table``, forward and backward apart, autograd on, per-expert weights). ``loop`` indexes
    one stacked weight per projection (``w[e]``, transformers' GPT-OSS / Qwen3-MoE style): its backward also
    materialises a gradient of the whole stacked weight per expert and adds it up (:data:`STACKED_PASSES` passes
    of ``experts x 3 f h`` 16-bit elements at the copy bandwidth). Without the table: the measured host cost per
    expert (``moe_loop_expert_us``) and the experts' own kernels, a lower bound.
    """
    cm, h = passes.compute, costs.model.hidden
    tokens = costs.tokens_local
    stacked = costs.model.moe.implementation == "loop"
    grad_copy = cm.memory(STACKED_PASSES * len(routed) * 3 * f * h * ACT_BYTES, 1) if stacked else 0.0
    fwd = bwd = 0.0
    for m in routed:
        measured = cm.loop_expert(h, f, m)
        if measured is not None:
            fwd += measured[0]
            bwd += measured[1] + grad_copy
            continue
        gap = cm.kernel_launch_s
        gemm_f = cm.expert_linear(m, 2 * f, h, "fwd") + cm.expert_linear(m, h, f, "fwd") - 2 * gap
        gemm_b = sum(cm.expert_linear(m, o, i, r) for o, i in ((2 * f, h), (h, f)) for r in ("dgrad", "wgrad"))
        # gather x[tok], SiLU and product (read 2f, write f and f), weighting and index_add_ of m x h rows
        mem_f = ACT_BYTES * m * (2 * h + 4 * f + 2 * h + 3 * h)
        fwd += (cm.moe_loop_expert_s or 0.0) + gemm_f + cm.memory(mem_f, 0)
        bwd += gemm_b + cm.memory(2 * mem_f + tokens * h * ACT_BYTES, LOOP_KERNELS_BWD - 4) + grad_copy
    # the wall times hold the host's issue: no kernels counted for the host on top
    passes.forward.append(ComputeSegment(cm.memory(tokens * h * ACT_BYTES, 1) + fwd, 0))  # zeros_like, the loop
    passes.backward.append(ComputeSegment(bwd, 0))


def overlap_ep(segments: list, dense_end: int) -> list:
    """``segments`` (one pass of one MoE layer, forward order) with the EP collectives hidden
    behind the dense compute before index ``dense_end`` (norms, attention, shared experts, router):
    that compute moves, split evenly, into the collectives' ``overlapped_gemm_s`` (each pair then
    takes ``max(comm, compute)``), its kernels stay where they were."""
    ep = [i for i, seg in enumerate(segments) if isinstance(seg, TPCommSegment) and seg.axis in EP_AXES]
    dense = [i for i in range(dense_end) if isinstance(segments[i], ComputeSegment)]
    if not ep or not dense:
        return segments
    share = sum(segments[i].seconds for i in dense) / len(ep)
    out = list(segments)
    for i in dense:
        out[i] = ComputeSegment(0.0, segments[i].kernels)
    for i in ep:
        out[i] = TPCommSegment(segments[i].op, segments[i].size_bytes, share, axis=segments[i].axis,
                               algorithm=segments[i].algorithm)
    return out


def moe_mlp_block(costs, passes) -> None:
    """Append the norm, MoE MLP and residual of one layer to ``passes`` (``costs``: the
    :class:`~clustersim.workload.layer_costs.LayerCosts` of the scenario)."""
    moe_mlp_segments(costs, passes)
    xp = costs.experts
    if xp.comm_overlap:
        dense_fwd, dense_bwd = passes.dense_marks
        passes.forward[:] = overlap_ep(passes.forward, dense_fwd)
        passes.backward[:] = overlap_ep(passes.backward, dense_bwd)


def moe_mlp_segments(costs, passes) -> None:
    """The segments of :func:`moe_mlp_block`, without overlap; records where the dense part ends."""
    model, moe, xp = costs.model, costs.model.moe, costs.experts
    h, k = model.hidden, moe.top_k
    tokens = costs.tokens_local  # tokens this rank routes (b s / tp with sequence parallelism)
    costs._norm(passes)
    if moe.shared_experts:
        costs.dense_mlp(passes, moe.shared_experts * moe.expert_ffn_hidden)
    passes.linear(tokens, moe.experts, h, fp8=False)  # router (16-bit in FP8 recipes)
    slot_bytes = tokens * k * h * ACT_BYTES  # this rank's routed token copies
    loop = moe.implementation in ("loop", "loop_modules")
    if costs.unfused:  # the reference program's PyTorch sequences, measured (bench --kernels experts)
        n = tokens * moe.experts
        passes.forward.append(ComputeSegment(cm_route(costs, "moe_router", n * (ACT_BYTES + 4) + tokens * k * 8), 2))
        passes.backward.append(ComputeSegment(costs.compute.memory(n * 4 * 3, 3), 3))
        if not loop:  # argsort, counts, then index_select of each token once per expert
            passes.forward.append(ComputeSegment(cm_route(costs, "moe_permute", 2 * slot_bytes)
                                                 + costs.compute.memory(tokens * k * 8 * 4, 3), 4))
            passes.backward.append(ComputeSegment(cm_route(costs, "moe_unpermute", slot_bytes
                                                           + 2 * tokens * h * ACT_BYTES), 2))
    else:
        passes.memory(tokens * moe.experts * 4 * 3)  # fp32 logits read, softmax written, top-k read
        passes.memory(2 * slot_bytes)  # permute: gather each token once per expert
    passes.dense_marks = (len(passes.forward), len(passes.backward))
    if xp.ep > 1:
        if xp.dispatcher == "alltoall":
            passes.extend(ep_exchange(xp, tokens, k, h, combine=False))
        else:  # every EP rank's tokens to every EP rank (nccl-tests size: the gathered buffer)
            passes.extend(dispatch_pair("all_gather", "reduce_scatter", xp.ep * tokens * h * ACT_BYTES, "ep"))
    routed = xp.routing.local_tokens
    if xp.expert_tp > 1:
        passes.extend(dispatch_pair("all_gather", "reduce_scatter", float(sum(routed)) * h * ACT_BYTES, "etp"))
    f_local = moe.expert_ffn_hidden // xp.expert_tp
    mlp_in = 2 * f_local if model.mlp == "swiglu" else f_local
    if loop:
        loop_experts(costs, passes, routed, f_local)
        costs._residual(passes)
        return
    _grouped_linear(passes, routed, mlp_in, h)
    expert_tokens = float(sum(routed))
    act = ("gelu_fwd", 2, "gelu_bwd", 3) if model.mlp == "gelu" else None
    if act:
        passes.memory_class(act[0], act[1] * expert_tokens * f_local * ACT_BYTES, act[2],
                            act[3] * expert_tokens * f_local * ACT_BYTES, 2 * expert_tokens * f_local * ACT_BYTES)
    else:  # fused SwiGLU: read gate and up, write the product
        passes.memory(3 * expert_tokens * f_local * ACT_BYTES)
    _grouped_linear(passes, routed, h, f_local)
    if xp.expert_tp > 1:
        passes.extend(dispatch_pair("reduce_scatter", "all_gather", expert_tokens * h * ACT_BYTES, "etp"))
    if xp.ep > 1:
        if xp.dispatcher == "alltoall":
            passes.extend(ep_exchange(xp, tokens, k, h, combine=True))
        else:
            passes.extend(dispatch_pair("reduce_scatter", "all_gather", xp.ep * tokens * h * ACT_BYTES, "ep"))
    if costs.unfused:  # weighting and index_add_ back (measured); backward its index_select
        passes.forward.append(ComputeSegment(cm_route(costs, "moe_unpermute", slot_bytes + 2 * tokens * h * ACT_BYTES)
                                             + costs.compute.memory(tokens * h * ACT_BYTES, 1), 3))
        passes.backward.append(ComputeSegment(cm_route(costs, "moe_permute", 2 * slot_bytes)
                                              + costs.compute.memory(2 * slot_bytes, 3), 4))
    else:
        passes.memory(2 * slot_bytes + tokens * h * ACT_BYTES)  # un-permute and the weighted sum over top_k
    costs._residual(passes)


def cm_route(costs, op: str, nbytes: float) -> float:
    """Seconds of a measured routing class ``op`` moving ``nbytes`` (the copy bandwidth without it); one kernel
    gap per call is the caller's segment's."""
    cm = costs.compute
    return cm.memory_op(op, nbytes, nbytes, 0)


def moe_layer_params(costs) -> tuple[float, int]:
    """(parameters one rank holds of an MoE layer, its GEMM weight tensors): attention and shared
    experts split by TP, the router replicated, the routed experts split by ep and expert_tp."""
    model, moe, xp, tp = costs.model, costs.model.moe, costs.experts, costs.tp
    mats = model.mlp_matrices
    shared = moe.shared_experts * mats * model.hidden * moe.expert_ffn_hidden
    params = ((model.attention_split_params + shared) / tp + model.attention_replicated_params
              + model.hidden * moe.experts + expert_params_per_rank(moe, model.hidden, mats, xp.ep, xp.expert_tp)
              + model.layer_other_params)
    tensors = model.attention_matrices + 1 + (mats if moe.shared_experts else 0) + mats * (moe.experts // xp.ep)  # TE GroupedLinear: one weight per expert
    return params, tensors


def expert_layer_params(costs) -> float:
    """Routed-expert parameters one rank holds of one MoE layer (sharded over expert-DP by ZeRO)."""
    model, xp = costs.model, costs.experts
    return expert_params_per_rank(model.moe, model.hidden, model.mlp_matrices, xp.ep, xp.expert_tp)
