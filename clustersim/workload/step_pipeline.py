"""Pipeline part of a training step's DAG: the compute op of every chunk in schedule order, and the
point-to-point transfers between pipeline stages.

Chunks run in the order of :func:`clustersim.workload.schedule.pipeline_order`. Activations
(forward) and their gradients (backward) go point to point between TP rank ``i`` of adjacent
stages, ``2 b s h / tp`` bytes each (Megatron's scatter/gather optimisation, or the SP shard).
A chunk is one compute op, except where data parallelism needs finer grain: the last
micro-batch's backward when gradients are reduced (DDP buckets close at unit boundaries) and the
first micro-batch's forward when ZeRO-1/2 weights are gathered (each unit waits for its bucket);
those chunks get one op per unit.

Every function takes ``step``, the :class:`~clustersim.workload.transformer.TransformerStep` being
built (its degrees, units and per-rank costs); this module does not import it, so the workload
modules import each other in one direction only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clustersim.workload.ops import Coll, Graph
from clustersim.workload.segments import op_segments


#: (replica, pipeline rank, kind "F"/"B", micro-batch, model chunk)
ChunkKey = tuple[int, int, str, int, int]


@dataclass
class ChunkOps:
    """Op ids of the pipeline chunks of the simulated replicas, and what DP builders need of them."""

    first: dict[ChunkKey, int] = field(default_factory=dict)  # the chunk's first op
    last: dict[ChunkKey, int] = field(default_factory=dict)  # the chunk's last op
    #: (replica, pipeline rank) -> [(backward op that closes a gradient bucket, bucket bytes)]
    grad_buckets: dict[tuple[int, int], list[tuple[int, float]]] = field(default_factory=dict)
    #: (replica, pipeline rank) -> [(first-forward op of a unit, its parameter bytes)] (ZeRO-1/2 gathers)
    forward_units: dict[tuple[int, int], list[tuple[int, float]]] = field(default_factory=dict)


def add_chunk_compute(graph: Graph, step, *, grad_sync: bool, param_gather: bool) -> ChunkOps:
    """Compute ops of every chunk of every simulated replica and pipeline rank, in schedule order.

    ``grad_sync``: DP gradients are reduced (record bucket boundaries); ``param_gather``: ZeRO-1/2
    weights are gathered before the first forward (record each unit's first forward).
    """
    chunks = ChunkOps()
    segment_cache: dict[tuple, tuple] = {}  # identical chunks share one segment list
    for replica in step.replicas:
        for stage in range(step.pp):
            _stage_chunks(graph, step, chunks, segment_cache, replica, stage, grad_sync=grad_sync,
                          param_gather=param_gather)
    return chunks


def _stage_chunks(graph: Graph, step, chunks: ChunkOps, segment_cache: dict, replica: int,
                  stage: int, *, grad_sync: bool, param_gather: bool) -> None:
    """Compute ops of one pipeline rank of one replica (see :func:`add_chunk_compute`)."""
    rank = step.layout.rank(dp=replica, pp=stage)
    tp_group = step.layout.group("tp", dp=replica, pp=stage)
    last_mb = step.micro_batches - 1
    bucket_bytes = step.parallelism.ddp_bucket_mb * 1e6
    pending, buckets = 0.0, []  # gradient bytes not yet in a bucket; closed buckets
    order = step.orders[stage]
    for kind, mb, chunk in order:
        vstage = chunk * step.pp + stage
        units = step.chunk_units(vstage, kind, mb)
        split = (kind == "B" and mb == last_mb and grad_sync) or (kind == "F" and mb == 0 and param_gather)
        groups = [[u] for u in units] if split else [units]
        for gi, group_units in enumerate(groups):
            key = (replica, stage, vstage, kind, split, gi, kind == "B" and mb > 0, kind == "B" and mb == last_mb)
            hit = segment_cache.get(key)
            if hit is None:
                hit = segment_cache[key] = op_segments([u.segments for u in group_units], [tp_group],
                                                       step.host_call_s, step.host_kernel_s,
                                                       axis_groups=step.expert_axis_groups(replica, stage))
            segments, host_s = hit
            name = (f"{kind}{mb}" + (f".c{chunk}" if step.virtual_stages > 1 else "")
                    + (f".{group_units[0].name}" if split else ""))
            oid = graph.add(rank, "compute", name, "compute", segments=segments, micro_batch=mb, chunk=chunk,
                            kind=kind, host_s=host_s)
            if gi == 0:
                chunks.first[(replica, stage, kind, mb, chunk)] = oid
            chunks.last[(replica, stage, kind, mb, chunk)] = oid
            if split and kind == "F":
                param_bytes = group_units[0].param_count * step.param_dtype_bytes
                chunks.forward_units.setdefault((replica, stage), []).append((oid, param_bytes))
            elif split:
                pending += sum(u.grad_bytes for u in group_units)
                if pending >= bucket_bytes:
                    buckets.append((oid, pending))
                    pending = 0.0
    if grad_sync:  # flush the remainder after the rank's last backward
        _, last_b_mb, last_b_chunk = [x for x in order if x[0] == "B"][-1]
        if pending > 0:
            buckets.append((chunks.last[(replica, stage, "B", last_b_mb, last_b_chunk)], pending))
        chunks.grad_buckets[(replica, stage)] = buckets


def add_pipeline_transfers(graph: Graph, step, chunks: ChunkOps) -> None:
    """Sends of activations (forward) and their gradients (backward) between adjacent virtual
    stages, and each backward's wait for its own forward."""
    model, layout, pp = step.model, step.layout, step.pp
    act_bytes = 2 * step.micro_batch * model.seq_len * model.hidden / (step.tp * step.cp)  # CP: the local tokens
    for replica in step.replicas:
        for stage in range(pp):
            rank = layout.rank(dp=replica, pp=stage)
            for kind, mb, chunk in step.orders[stage]:
                vstage = chunk * pp + stage
                next_vstage = vstage + 1 if kind == "F" else vstage - 1
                if next_vstage < 0 or next_vstage >= step.n_virtual_stages:
                    continue
                next_stage, next_chunk = next_vstage % pp, next_vstage // pp
                src_key = (replica, stage, kind, mb, chunk)
                dst_key = (replica, next_stage, kind, mb, next_chunk)
                if next_stage == stage:  # same GPU: no transfer, direct dependency
                    graph.ops[chunks.first[dst_key]].deps.append(chunks.last[src_key])
                    continue
                src = layout.group("tp", dp=replica, pp=stage)
                dst = layout.group("tp", dp=replica, pp=next_stage)
                coll = Coll("send_recv", [[a, b] for a, b in zip(src, dst)], act_bytes, "pp")
                sid = graph.add(rank, "pp_" + ("f" if kind == "F" else "b"), f"send {kind}{mb}", "comm_pp",
                                coll=coll, deps=[chunks.last[src_key]])
                # the sender's host issues the send and the receiver's host the matching recv
                # (torch.distributed.pipelining: one batch_isend_irecv call each)
                for oid in (chunks.last[src_key], chunks.first[dst_key]):
                    graph.ops[oid].args.add_host(step.host_call_s)
                graph.ops[chunks.first[dst_key]].deps.append(sid)
            # backward of the last virtual stage waits for its own forward
            for kind, mb, chunk in step.orders[stage]:
                if kind == "B":
                    graph.ops[chunks.first[(replica, stage, "B", mb, chunk)]].deps.append(
                        chunks.last[(replica, stage, "F", mb, chunk)])
