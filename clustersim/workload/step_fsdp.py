"""ZeRO-3 / FSDP2 part of a training step's DAG (``zero: 3``, ``pp = 1``).

Each unit (layer, embedding, head) is one compute op. Its weights are all-gathered before its
forward and again before its backward, prefetched one unit ahead (two units resident), and its
gradients are reduce-scattered after every micro-batch's backward (FSDP2's default without
``set_requires_gradient_sync(False)``).

FSDP2 (``fully_shard`` per block, the default ``reshard_after_forward``) gathers a unit's
parameters through a copy-in kernel (the local shards into one flat buffer), the all-gather and
a copy-out kernel (``split_with_sizes_copy`` into the unsharded parameters). Its reduce-scatter
is a copy-in kernel (``chunk_cat`` of the gradients), the collective, the averaging division,
and from the second micro-batch on an add into the sharded gradient.

Every function takes ``step``, the :class:`~clustersim.workload.transformer.TransformerStep` being
built (its degrees, units and per-rank costs); this module does not import it, so the workload
modules import each other in one direction only.
"""

from __future__ import annotations


from clustersim.workload.ops import Coll, Graph
from clustersim.workload.segments import ComputeSegment, op_segments



def build_fsdp(graph: Graph, step) -> None:
    """Add the ops of one ZeRO-3 / FSDP2 step (one replica simulated; see the module docstring)."""
    layout, cm, dp = step.layout, step.compute, step.dp
    rank = layout.rank()
    groups = [layout.group("dp", tp=i) for i in range(step.tp)]
    tp_group = layout.group("tp")
    sharded = dp > 1
    host_kernel, host_call = step.host_kernel_s, step.host_call_s
    reduce_scatters: list[int] = []
    compute_ops: list[int] = []
    for kind, mb, chunk in step.orders[0]:
        for unit in step.chunk_units(chunk, kind):
            gather = None
            segments, host_s = op_segments([unit.segments], [tp_group], host_call, host_kernel)
            if sharded and unit.param_count > 0:
                # prefetch: may start once the unit two places earlier finished (2 units resident)
                prefetch_after = compute_ops[-2] if len(compute_ops) >= 2 else None
                param_bytes = unit.param_count * step.param_dtype_bytes
                gather = graph.add(rank, "dp_ag", f"AG {unit.name}", "comm_dp",
                                   coll=Coll("all_gather", groups, param_bytes, "dp"), deps=[prefetch_after])
                # copy-in (shards -> flat buffer) and copy-out (flat buffer -> parameters)
                copies = cm.memory(2 * param_bytes / dp, 1) + cm.memory(2 * param_bytes, 1)
                segments = [ComputeSegment(copies, 2)] + segments
                # the all-gather call; per parameter: alloc_storage before, free_storage at reshard
                host_s += host_call + (2 + 2 * unit.tensors) * host_kernel
            scatter = sharded and kind == "B" and unit.grad_bytes > 0
            if scatter:
                grad_bytes = unit.grad_bytes
                # chunk_cat copy-in, the divide by the group size, (accumulate into the shard)
                post = cm.memory(2 * grad_bytes, 1) + cm.memory((2 + (3 if mb > 0 else 0)) * grad_bytes / dp, 1)
                segments = segments + [ComputeSegment(post, 2)]
                # the reduce-scatter call; per parameter: as_strided view of the output shard,
                # then a new sharded DTensor gradient (first micro-batch) or ``+=`` into it
                host_s += host_call + (2 + 2 * unit.tensors) * host_kernel
            oid = graph.add(rank, "compute", f"{kind}{mb}.{unit.name}", "compute", segments=segments,
                            deps=[gather], micro_batch=mb, kind=kind, host_s=host_s)
            compute_ops.append(oid)
            if scatter:
                reduce_scatters.append(graph.add(rank, "dp_rs", f"RS {unit.name}", "comm_dp",
                                                 coll=Coll("reduce_scatter", groups, unit.grad_bytes, "dp"),
                                                 deps=[oid]))
    shard = step.stage_params(0) / dp
    # FSDP2 parameters are DTensors: every foreach op of the optimizer is dispatched per tensor
    foreach_ops = 9 if step.training.optimizer == "adamw" else 1
    opt_host = foreach_ops * step.stage_tensors(0) * host_kernel if sharded else step.optimizer_host_seconds(0)
    graph.add(rank, "compute", "optimizer", "optimizer", duration=step.optimizer_seconds(shard),
              deps=reduce_scatters, host_s=opt_host)
