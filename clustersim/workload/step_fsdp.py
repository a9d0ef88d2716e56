"""ZeRO-3 / FSDP2 part of a training step's DAG (``zero: 3``, ``pp = 1``), and HSDP.

HSDP (``parallelism.fsdp_shard_size``): the all-gathers and reduce-scatters run inside shard groups
of that many consecutive DP ranks, and every reduce-scatter is followed, on the same stream, by an
all-reduce of the gradient shard across the groups (torch ``fully_shard`` on a 2-D device mesh:
``foreach_reduce`` reduce-scatters, then all-reduces over the replicate dimension).

Each unit (layer, embedding, head) is one compute op. Its weights are all-gathered before its
forward and again before its backward (blocks only: FSDP2 keeps the root module, embedding and
head, unsharded from its forward to its backward), prefetched one unit ahead (two units
resident), and its gradients are reduce-scattered after every micro-batch's backward (FSDP2's
default without ``set_requires_gradient_sync(False)``, which reference/train_gpt.py does not set).

All-gathers and reduce-scatters go through one process group, whose NCCL calls run on one
stream in issue order: within a pass the next unit's all-gather is issued before this unit's
reduce-scatter (pre-forward / pre-backward prefetch), and the first all-gather of the next
micro-batch after the last reduce-scatter of this one (the root's post-backward callback).

FSDP2 (``fully_shard`` per block, the default ``reshard_after_forward``) gathers a unit's
parameters through a copy-in kernel (the local shards into one flat buffer), the all-gather and
a copy-out kernel (``split_with_sizes_copy`` into the unsharded parameters). Its reduce-scatter
is a copy-in kernel (``chunk_cat`` of the gradients), the collective (averaging in NCCL for bf16
and fp32 gradients, else a division kernel), and from the second micro-batch on an add into the
sharded gradient.

Each hook (a unit's pre-forward all-gather, pre-backward all-gather, post-backward reduce-scatter)
costs the issue thread ``step.fsdp_hook_s`` when the profile measured it (``host.fsdp_hook_us``, the
host probe of profiles/fsdp_hook.py), else an estimate from the call and kernel costs:
:func:`hook_host_s`. A hook is an op of its own on the rank's ``host`` stream (no GPU time, its host
seconds in issue order), and the collective it calls waits for it: a GPU cannot start an all-gather
or reduce-scatter its host has not issued yet. A forward all-gather is issued in its unit's
pre-forward hook (after the previous unit's kernels), a backward one prefetched in the pre-backward
hook of the unit before it, a reduce-scatter in the post-backward hook after its unit's kernels
(``_fsdp_state._pre_forward``, ``_fsdp_param_group.pre_backward`` / ``post_backward``).

The optimizer's host time is measured where the profile has it (``host.fsdp_optimizer_us``: AdamW over
FSDP2's DTensor shards held the host 4-16 ms, 2.7-5.6 ms plus 39-53 us per parameter tensor, on H100 and
H200 hosts, profiles/fsdp_hook.py), else estimated as one dispatch per tensor and foreach operation.

Every function takes ``step``, the :class:`~clustersim.workload.transformer.TransformerStep` being
built (its degrees, units and per-rank costs); this module does not import it, so the workload
modules import each other in one direction only.
"""

from __future__ import annotations


from clustersim.workload.ops import Coll, Graph
from clustersim.workload.segments import ComputeSegment, op_segments

#: units of FSDP2's root module (``fully_shard(model)`` holds what no block holds)
ROOT_UNITS = ("embedding", "head")


#: streams of the hooks' collectives: one all-gather op per gather hook, one reduce-scatter op per
#: reduce-scatter hook
HOOK_STREAMS = ("dp_ag", "dp_rs")


def hook_host_s(step, tensors: int) -> float:
    """Host seconds of one FSDP2 hook of a unit of ``tensors`` parameters.

    The profile's measured hook time (``step.fsdp_hook_s``) when set, replacing the estimate: the
    collective call plus, per parameter, the storage alloc/free (gather) or the gradient view and
    DTensor wrapping (reduce-scatter), two kernel issues each, and two for the copies.

    >>> from types import SimpleNamespace
    >>> est = SimpleNamespace(fsdp_hook_s=None, host_call_s=8e-6, host_kernel_s=10e-6)
    >>> round(hook_host_s(est, 12) * 1e6, 1)  # 8 + (2 + 2 x 12) x 10 us
    268.0
    >>> hook_host_s(SimpleNamespace(fsdp_hook_s=1.3e-3, host_call_s=8e-6, host_kernel_s=10e-6), 12)
    0.0013
    """
    if step.fsdp_hook_s is not None:
        return step.fsdp_hook_s
    return step.host_call_s + (2 + 2 * tensors) * step.host_kernel_s


def count_hooks(graph: Graph) -> int:
    """FSDP2 hooks in a step's graph: one per all-gather and per reduce-scatter op.

    >>> g = Graph()
    >>> _ = g.add(0, "dp_ag", "AG layer0", "comm_dp"), g.add(0, "compute", "F0.layer0", "compute")
    >>> count_hooks(g)
    1
    """
    return sum(op.stream in HOOK_STREAMS and not op.name.startswith("AR ") for op in graph.ops)  # HSDP's AR: no hook


def build_fsdp(graph: Graph, step) -> None:
    """Add the ops of one ZeRO-3 / FSDP2 step (one replica simulated; see the module docstring)."""
    layout, cm = step.layout, step.compute
    dp = step.shard_dp  # ranks one shard group spans (HSDP: fsdp_shard_size; FSDP: every dp rank)
    rank = layout.rank()
    full = [layout.group("dp", tp=i) for i in range(step.tp)]
    # shard groups (consecutive dp ranks) and, with HSDP, the replica groups across them (same shard index)
    groups = [g[k:k + dp] for g in full for k in range(0, len(g), dp)]
    replicas = [g[j::dp] for g in full for j in range(dp)] if dp < len(full[0]) else None
    tp_group = layout.group("tp")
    sharded = dp > 1
    host_kernel, host_call = step.host_kernel_s, step.host_call_s
    reduce_scatters: list[int] = []
    compute_ops: list[int] = []
    hooks: dict[int, int] = {}  # position in seq -> its pre-forward / pre-backward hook op (host stream)
    # every unit of the step in execution order: (kind, micro-batch, unit)
    seq = [(kind, mb, unit) for kind, mb, chunk in step.orders[0] for unit in step.chunk_units(chunk, kind)]
    gathers: dict[int, int] = {}  # position in seq -> its all-gather op
    last_nccl: list[int | None] = [None]  # the collective issued last: NCCL runs a group's calls in order

    def needs_gather(i: int) -> bool:
        kind, _, unit = seq[i]
        # the root module (embedding, head) is not resharded after forward (FSDP2 sets the root's
        # post-forward reshard off): its backward needs no second all-gather
        return sharded and unit.param_count > 0 and not (kind == "B" and unit.name in ROOT_UNITS)

    def add_gather(i: int, issued_by: int) -> None:
        unit = seq[i][2]
        # prefetch: may start once the unit two places earlier finished (2 units resident), and once the
        # hook that calls it (``issued_by``) has run on the host
        prefetch_after = compute_ops[i - 2] if i >= 2 else None
        param_bytes = unit.param_count * step.param_dtype_bytes
        gathers[i] = last_nccl[0] = graph.add(
            rank, "dp_ag", f"AG {unit.name}", "comm_dp", coll=Coll("all_gather", groups, param_bytes, "dp"),
            deps=[prefetch_after, last_nccl[0], hooks[issued_by]])

    for i, (kind, mb, unit) in enumerate(seq):
        segments, host_s = op_segments([unit.segments], [tp_group], host_call, host_kernel)
        if needs_gather(i):
            # the pre-forward / pre-backward hook (all-gather, alloc_storage and free_storage), unless the
            # previous unit's turn already placed it (forward)
            if i not in hooks:
                hooks[i] = graph.add(rank, "host", f"hook {kind}{mb}.{unit.name}", "host",
                                     host_s=hook_host_s(step, unit.tensors))
            if i not in gathers:
                add_gather(i, i)
            param_bytes = unit.param_count * step.param_dtype_bytes
            # copy-in (shards -> flat buffer) and copy-out (flat buffer -> parameters)
            copies = cm.memory(2 * param_bytes / dp, 1) + cm.memory(2 * param_bytes, 1)
            segments = [ComputeSegment(copies, 2)] + segments
        scatter = sharded and kind == "B" and unit.grad_bytes > 0
        if scatter:
            grad_bytes = unit.grad_bytes
            # chunk_cat copy-in (read + write the unit's gradients), the divide by the group size
            # only for 16-bit floats other than bf16 (bf16/fp32 reduce with NCCL's ReduceOp.AVG:
            # torch fsdp/_fully_shard/_fsdp_collectives.py _get_gradient_divide_factors), and from
            # the second micro-batch on the add into the sharded gradient (read 2, write 1)
            divide = 0 if step.training.precision.grads in ("bf16", "fp32") else 2
            shard_work = (divide + (3 if mb > 0 else 0)) * grad_bytes / dp
            kernels = 1 + (shard_work > 0)
            post = cm.memory(2 * grad_bytes, 1) + (cm.memory(shard_work, 1) if shard_work else 0.0)
            segments = segments + [ComputeSegment(post, kernels)]
        oid = graph.add(rank, "compute", f"{kind}{mb}.{unit.name}", "compute", segments=segments,
                        deps=[gathers.get(i)], micro_batch=mb, kind=kind, host_s=host_s)
        compute_ops.append(oid)
        # the next unit's all-gather: within a forward or backward pass it is issued before this
        # unit's reduce-scatter; in forward by the next unit's pre-forward hook (implicit prefetch: the
        # host reaches it after this unit's kernels), in backward by this unit's pre-backward hook
        # (explicit prefetch); the next pass's first gather only after this pass's last reduce-scatter
        # (the root's hooks)
        nxt = i + 1
        if nxt < len(seq) and seq[nxt][:2] == (kind, mb) and needs_gather(nxt):
            if kind == "F" or i not in hooks:  # the next unit's own hook calls it (the root has no hook)
                hooks[nxt] = graph.add(rank, "host", f"hook {kind}{mb}.{seq[nxt][2].name}", "host",
                                       host_s=hook_host_s(step, seq[nxt][2].tensors))
                add_gather(nxt, nxt)
            else:
                add_gather(nxt, i)
        if scatter:
            # the post-backward hook (reduce-scatter; per parameter an as_strided view of the output
            # shard, then a new sharded DTensor gradient (first micro-batch) or ``+=`` into it)
            post_hook = graph.add(rank, "host", f"post {kind}{mb}.{unit.name}", "host",
                                  host_s=hook_host_s(step, unit.tensors))
            last_nccl[0] = graph.add(rank, "dp_rs", f"RS {unit.name}", "comm_dp",
                                     coll=Coll("reduce_scatter", groups, unit.grad_bytes, "dp"),
                                     deps=[oid, last_nccl[0], post_hook])
            if replicas is not None:  # HSDP: the gradient shard all-reduced across the replicas
                last_nccl[0] = graph.add(rank, "dp_rs", f"AR {unit.name}", "comm_dp",
                                         coll=Coll("all_reduce", replicas, unit.grad_bytes / dp, "dp"),
                                         deps=[last_nccl[0]])
            reduce_scatters.append(last_nccl[0])
    shard = step.stage_params(0) / dp
    graph.add(rank, "compute", "optimizer", "optimizer", duration=step.optimizer_seconds(shard),
              deps=reduce_scatters, host_s=optimizer_host_s(step) if sharded else step.optimizer_host_seconds(0))


def optimizer_host_s(step) -> float:
    """Host seconds of ``optimizer.step()`` over FSDP2's DTensor shards.

    Measured where the profile has it (``step.fsdp_optimizer_host``: ``(base s, s per tensor)``), else
    one dispatch per parameter tensor and foreach operation (9 for AdamW, 1 for SGD): an upper bound,
    which the two measured hosts run 3-5 times faster.

    >>> from types import SimpleNamespace as NS
    >>> s = NS(fsdp_optimizer_host=(2.7e-3, 53e-6), stage_tensors=lambda stage: 100, host_kernel_s=20e-6,
    ...        training=NS(optimizer="adamw"))
    >>> round(optimizer_host_s(s) * 1e3, 2), round(optimizer_host_s(NS(**{**vars(s), "fsdp_optimizer_host": None})) * 1e3, 2)
    (8.0, 18.0)
    """
    tensors = step.stage_tensors(0)
    measured = getattr(step, "fsdp_optimizer_host", None)
    if measured is not None:
        return measured[0] + measured[1] * tensors
    foreach_ops = 9 if step.training.optimizer == "adamw" else 1
    return foreach_ops * tensors * step.host_kernel_s
