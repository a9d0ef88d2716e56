"""Context parallelism: the sequence of every micro-batch split over the ``cp`` ranks of a CP
group, attention computed over the whole sequence by exchanging keys and values.

Conventions (Megatron-Core with TransformerEngine, Llama 3 §3.3.2; ``docs/training.md``):

* Split, zig-zag: the sequence is cut into ``2 cp`` chunks of ``c = s / (2 cp)`` tokens and rank
  ``i`` holds chunks ``i`` and ``2 cp - 1 - i``. Every rank then does the same causal work: step 0
  is the causal diagonal of its own two chunks (``2 c^2`` score elements per head), every later
  step either its whole query against the first half of a remote KV block or its second chunk
  against the whole remote block (``2 c^2`` either way), ``s^2 / (2 cp)`` in all. The ranks are
  identical, so one CP rank is simulated (as one DP replica is) while the CP traffic runs on the
  full CP groups.
* Work per rank: every per-token op (GEMMs, norms, element-wise kernels, TP collectives, pipeline
  sends) runs on the ``b s / cp`` local tokens; attention does its local queries against the whole
  sequence, ``4 b (s / cp) s d a_tp / 2`` FLOPs forward (causal half), FlashAttention-2's 2.5x
  backward.
* ``ring`` (TE ``cp_comm_type=p2p``): ``cp`` steps. At each step but the last the rank computes the
  attention block of the KV it holds while it sends that block to the next rank of the ring and
  receives the next one (one ``send_recv`` ring step on the CP group); the pair takes
  ``max(transfer, block)``, i.e. ``max(0, transfer - block)`` of it is exposed. KV block:
  ``2 b (s / cp) h_kv / tp`` elements of 2 bytes (K and V of the local tokens, this TP rank's KV
  heads). Forward: ``cp - 1`` KV transfers. Backward: the KV block travels again together with the
  dKV accumulated so far (two blocks per step, ``cp - 1`` steps overlapped with the block
  backward) and the dKV takes one last hop back to its owner (exposed): ``2 cp - 1`` blocks. After
  every step but the first, the partial outputs (forward) and query gradients (backward) are merged
  into fp32 accumulators (one memory-bound kernel each).
* ``allgather`` (Llama 3, TE ``cp_comm_type=all_gather``): K and V all-gathered over the CP group
  before attention (``cp`` blocks gathered, nccl-tests size), exposed (Llama 3: "the all-gather
  latency is exposed"); backward re-gathers them (only the local K, V are saved) and
  reduce-scatters dK, dV.
* ``alltoall`` (DeepSpeed-Ulysses, arXiv 2309.14509; Megatron-Core ``cp_comm_type=a2a``): before
  attention one all-to-all over the CP group turns the rank's Q, K and V of its local tokens and
  all its heads into the whole sequence of ``1 / cp`` of the heads; attention runs there (every
  rank the full causal ``s x s`` of its heads, the same FLOPs as a ring rank), and a second
  all-to-all turns the output back. Both are exposed (the attention needs the whole of its
  heads). Backward: the output gradient goes the same way (an all-to-all before the attention
  backward) and dQ, dK, dV return by one after it. Sizes (nccl-tests ``all_to_all``: the per-rank
  buffer): ``b (s / cp) (h_q + 2 h_kv) / tp`` and ``b (s / cp) h_q / tp`` values of 2 bytes. The
  query and KV heads of a TP rank must split over the CP ranks (``heads / tp`` and
  ``kv_heads / tp`` divisible by ``cp``, Ulysses' head constraint).
* Memory: activations follow the local tokens (``1 / cp``). Buffers beside them: ring, the KV and
  dKV blocks being sent and received (4 blocks); all-gather, one layer's gathered K, V and dK, dV
  (``2 cp`` blocks); all-to-all, one layer's exchanged Q, K, V and output, sent and received
  (``2 (h_q + 2 h_kv + h_q) / (2 h_kv)`` blocks, :func:`cp_buffer_bytes`).
* Data parallelism: the CP ranks hold the same weights, so gradients are reduced and ZeRO shards
  over the ``dp * cp`` ranks (Megatron's data-parallel group with context parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.segments import ComputeSegment, TPCommSegment

ALGORITHMS = ("ring", "allgather", "alltoall")
ACT_BYTES = 2  # 16-bit K, V and their gradients
ACC_BYTES = 4  # fp32 accumulators of the partial outputs and query gradients (TE)


@dataclass(frozen=True)
class ContextParallel:
    """Context-parallel degree and algorithm of a scenario.

    >>> ContextParallel(4, "ring").local(8192)
    2048
    """

    cp: int
    algorithm: str = "ring"

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"cp algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")

    def local(self, tokens: int) -> int:
        """Tokens of ``tokens`` (one micro-batch's) that one CP rank holds."""
        return tokens // self.cp


def kv_block_bytes(micro_batch: int, seq_len: int, kv_hidden: int, tp: int, cp: int,
                   act_bytes: int = ACT_BYTES) -> float:
    """Bytes of K and V of one CP rank's local tokens on one TP rank: ``2 b (s/cp) (h_kv/tp) bytes``.

    Llama 3 405B at 131,072 tokens, 8 KV heads of 128 (``h_kv`` = 1,024), TP 8, CP 16:

    >>> kv_block_bytes(1, 131072, 1024, 8, 16)
    4194304.0
    """
    return 2.0 * micro_batch * (seq_len / cp) * (kv_hidden / tp) * act_bytes


def cp_send_bytes(cp: int, algorithm: str, kv_bytes: float) -> dict[str, float]:
    """Bytes one rank sends per layer and micro-batch over the CP group, forward and backward.

    Ring: ``cp - 1`` KV blocks forward; ``cp - 1`` KV and ``cp`` dKV blocks backward. All-gather:
    ``(cp - 1) / cp`` of the gathered ``cp`` blocks forward; a re-gather and a reduce-scatter backward.

    >>> cp_send_bytes(4, "ring", 1.0)
    {'forward': 3.0, 'backward': 7.0}
    >>> cp_send_bytes(4, "allgather", 1.0)
    {'forward': 3.0, 'backward': 6.0}
    """
    if cp <= 1:
        return {"forward": 0.0, "backward": 0.0}
    if algorithm == "alltoall":  # kv_bytes here: the Q, K, V and output buffers of one all-to-all pair
        return {"forward": (cp - 1) / cp * kv_bytes, "backward": (cp - 1) / cp * kv_bytes}
    if algorithm == "ring":
        return {"forward": (cp - 1) * kv_bytes, "backward": (2 * cp - 1) * kv_bytes}
    return {"forward": (cp - 1) * kv_bytes, "backward": 2.0 * (cp - 1) * kv_bytes}


def attention_segments(ctx: ContextParallel, compute, *, micro_batch: int, seq_len: int, head_dim: int,
                       heads_local: int, kv_hidden_local: int) -> tuple[list, list]:
    """(forward, backward) segments of the attention core of one layer on one CP rank, each in
    execution order, with the CP collectives as :class:`TPCommSegment` items of axis ``cp``.

    ``compute``: the :class:`~clustersim.workload.compute.ComputeModel`; ``heads_local`` and
    ``kv_hidden_local``: query heads and KV width of this TP rank.

    >>> from clustersim.workload.compute import ComputeModel
    >>> cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12)
    >>> fwd, bwd = attention_segments(ContextParallel(4, "ring"), cm, micro_batch=1, seq_len=8192,
    ...                               head_dim=128, heads_local=16, kv_hidden_local=128)
    >>> [s.op for s in fwd if isinstance(s, TPCommSegment)], [s.op for s in bwd if isinstance(s, TPCommSegment)]
    (['send_recv', 'send_recv', 'send_recv'], ['send_recv', 'send_recv', 'send_recv', 'send_recv'])
    """
    cp = ctx.cp
    local = seq_len // cp
    kv = 2.0 * micro_batch * local * kv_hidden_local * ACT_BYTES
    flops = 4.0 * micro_batch * local * seq_len * head_dim * heads_local * 0.5  # local queries x all keys, causal half
    q_acc = micro_batch * local * heads_local * head_dim * ACC_BYTES  # one fp32 accumulator of the local queries
    if ctx.algorithm == "alltoall":
        qkv = micro_batch * local * (heads_local * head_dim + 2 * kv_hidden_local) * ACT_BYTES
        out = micro_batch * local * heads_local * head_dim * ACT_BYTES
        # the whole sequence of heads_local / cp heads: the same causal FLOPs as the local queries x all keys
        t_f = compute.attention(flops, 1, "fwd", seq=seq_len, head_dim=head_dim)
        t_b = compute.attention(2.5 * flops, 3, "bwd", seq=seq_len, head_dim=head_dim)
        fwd = [TPCommSegment("all_to_all", qkv, axis="cp"), ComputeSegment(t_f, 1),
               TPCommSegment("all_to_all", out, axis="cp")]
        bwd = [TPCommSegment("all_to_all", out, axis="cp"), ComputeSegment(t_b, 3),
               TPCommSegment("all_to_all", qkv, axis="cp")]
        return fwd, bwd
    if ctx.algorithm == "ring":
        blk = flops / cp  # zig-zag: every step the same work
        t_f = compute.attention(blk, 1, "fwd", seq=local, head_dim=head_dim)
        t_b = compute.attention(2.5 * blk, 3, "bwd", seq=local, head_dim=head_dim)
        merge = compute.memory(3 * q_acc, 1)  # read the partial result, read and write the accumulator
        fwd: list = []
        bwd: list = []
        for step in range(cp - 1):  # blocks 0 .. cp-2, each beside the transfer of the next block
            fwd += [ComputeSegment(merge if step else 0.0, 2 if step else 1),
                    TPCommSegment("send_recv", kv, t_f, axis="cp")]
            bwd += [ComputeSegment(merge if step else 0.0, 4 if step else 3),
                    TPCommSegment("send_recv", 2 * kv, t_b, axis="cp")]
        fwd.append(ComputeSegment(t_f + merge, 2))
        bwd += [ComputeSegment(t_b + merge, 4), TPCommSegment("send_recv", kv, axis="cp")]  # dKV home
        return fwd, bwd
    gathered = cp * kv
    # the gathered K, V reordered from the zig-zag chunks into sequence order (read + write)
    reorder = compute.memory(2 * gathered, 1)
    t_f = compute.attention(flops, 2, "fwd", seq=local, head_dim=head_dim)  # one kernel per local chunk
    t_b = compute.attention(2.5 * flops, 6, "bwd", seq=local, head_dim=head_dim)
    fwd = [TPCommSegment("all_gather", gathered, axis="cp"), ComputeSegment(reorder + t_f, 3)]
    bwd = [TPCommSegment("all_gather", gathered, axis="cp"), ComputeSegment(reorder + t_b + reorder, 8),
           TPCommSegment("reduce_scatter", gathered, axis="cp")]
    return fwd, bwd


def cp_buffer_bytes(ctx: ContextParallel | None, kv_bytes: float, q_over_kv: float = 1.0) -> float:
    """Transient bytes of the CP exchange beside the activations (one layer at a time).

    ``q_over_kv``: query width over KV width (``heads / kv_heads``); the all-to-all exchanges the
    queries and the output too: Q, K, V and O sent and received, ``(2 q/kv + 2) / 2`` KV blocks each way.

    >>> cp_buffer_bytes(ContextParallel(8, "ring"), 1.0), cp_buffer_bytes(ContextParallel(8, "allgather"), 1.0)
    (4.0, 16.0)
    >>> cp_buffer_bytes(ContextParallel(8, "alltoall"), 1.0, q_over_kv=4.0)
    10.0
    """
    if ctx is None or ctx.cp <= 1:
        return 0.0
    if ctx.algorithm == "alltoall":
        return 2.0 * (2.0 * q_over_kv + 2.0) / 2.0 * kv_bytes
    return 4.0 * kv_bytes if ctx.algorithm == "ring" else 2.0 * ctx.cp * kv_bytes


def cp_groups(layout, tp: int, replica: int, stage: int) -> list[list[int]]:
    """The CP group of every TP rank of the executor rank of (``replica``, ``stage``): the groups
    the CP collectives bind to, all at once (their traffic shares the links).

    One ``send_recv`` on a CP group is one ring step: every rank sends its block to the next rank
    of the group (nccl-tests' sendrecv pattern, :mod:`clustersim.collectives.flow`); its closed form
    takes the inter-node rate as soon as the group spans nodes, the slowest edge every rank waits for.

    >>> from clustersim.workload.layout import Layout
    >>> lay = Layout({"tp": 2, "cp": 4, "ep": 1, "dp": 1, "pp": 1}, "tp-cp-ep-dp-pp")
    >>> cp_groups(lay, 2, 0, 0)
    [[0, 2, 4, 6], [1, 3, 5, 7]]
    """
    return [layout.group("cp", tp=t, dp=replica, pp=stage) for t in range(tp)]


def data_parallel_groups(layout, tp: int, stage: int) -> list[list[int]]:
    """The gradient-reduction group of every TP rank of pipeline rank ``stage``: its DP and CP
    ranks together (they hold the same weights), in rank order.

    >>> from clustersim.workload.layout import Layout
    >>> lay = Layout({"tp": 2, "cp": 2, "ep": 1, "dp": 2, "pp": 1}, "tp-cp-ep-dp-pp")
    >>> data_parallel_groups(lay, 2, 0)
    [[0, 2, 4, 6], [1, 3, 5, 7]]
    """
    cp, dp = layout.sizes["cp"], layout.sizes["dp"]
    return [sorted(layout.rank(tp=t, cp=c, dp=d, pp=stage) for d in range(dp) for c in range(cp))
            for t in range(tp)]


def cp_report(step) -> dict:
    """The ``cp`` entry of a run's result: degree, algorithm, local tokens, the KV block and the
    bytes each rank sends per layer and micro-batch (``step``: a
    :class:`~clustersim.workload.transformer.TransformerStep` with context parallelism)."""
    ctx, model = step.context, step.model
    kv = kv_block_bytes(step.micro_batch, model.seq_len, model.kv_pair_hidden, step.tp, ctx.cp)
    # the all-to-all's pair of buffers per pass: Q, K, V there and the output back (2 h_q + 2 h_kv wide)
    sent = kv * (model.heads / model.kv_heads + 1.0) if ctx.algorithm == "alltoall" else kv
    return {"cp": ctx.cp, "algorithm": ctx.algorithm, "local_tokens": ctx.local(step.micro_batch * model.seq_len),
            "kv_block_bytes": kv, "send_bytes_per_layer": cp_send_bytes(ctx.cp, ctx.algorithm, sent),
            "grad_reduction_ranks": step.grad_dp}
