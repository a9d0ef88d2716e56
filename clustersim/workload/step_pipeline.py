"""Pipeline part of a training step's DAG: the compute op of every chunk in schedule order, and the
point-to-point transfers between pipeline stages.

Chunks run in the order of :func:`clustersim.workload.schedule.pipeline_order`. Activations
(forward) and their gradients (backward) go point to point between TP rank ``i`` of adjacent
stages, ``2 b s h / tp`` bytes each (Megatron's scatter/gather optimisation, or the SP shard).
A chunk is one compute op, except where data parallelism needs finer grain: the last
micro-batch's backward when gradients are reduced (DDP buckets close at unit boundaries) and the
first micro-batch's forward when ZeRO-1/2 weights are gathered (each unit waits for its bucket);
those chunks get one op per unit.

Zero-bubble schedules (:data:`~clustersim.workload.schedule.SPLIT_SCHEDULES`) add weight-gradient
chunks (kind ``"W"``, after their own ``"B"`` on the same rank, nothing sent); their gradients, not
the backward's, fill the DDP buckets. A slot of several chunks (:attr:`TransformerStep.slots`) is
one compute op: a full backward ``(B, W)``, or DualPipe's overlapped pair ``(F, B, W)`` whose
collectives (TP, EP dispatch/combine) each run beside a compute segment of the other chunk
(:func:`overlap_pair`).

Every function takes ``step``, the :class:`~clustersim.workload.transformer.TransformerStep` being
built (its degrees, units and per-rank costs); this module does not import it, so the workload
modules import each other in one direction only.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace

from clustersim.workload.ops import Coll, Graph
from clustersim.workload.pipeline_p2p import P2P_SCHEDULES, interleaved_programs, p2p_program
from clustersim.workload.schedule import SPLIT_SCHEDULES, is_overlapped, placement
from clustersim.workload.segments import ComputeSegment, TPCommSegment, op_segments


#: (replica, pipeline rank, kind "F"/"B"/"W", micro-batch, model chunk)
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


def fill_buckets(pending: float, grad_bytes: float, tensors: int, bucket_bytes: float) -> tuple[float, list[float]]:
    """``(pending, closed)``: DDP's gradient buckets after one unit's backward adds ``grad_bytes``.

    A bucket closes once it holds ``bucket_bytes`` (``ddp_bucket_mb``); a unit larger than a bucket fills
    several, as PyTorch's reducer does with a layer's parameter tensors, in at most ``tensors`` equal pieces
    (its weight matrices: a tensor is never split, the tensor sizes are not modelled; 0: one piece). Every
    piece is ready when the unit's backward ends.

    >>> fill_buckets(0.0, 100e6, 4, 50e6)    # a 100 MB layer of 4 matrices in 50 MB buckets
    (0.0, [50000000.0, 50000000.0])
    >>> fill_buckets(0.0, 100e6, 4, 1e6)[1]  # 1 MB buckets: one per matrix
    [25000000.0, 25000000.0, 25000000.0, 25000000.0]
    >>> fill_buckets(0.0, 10e6, 4, 25e6)     # smaller than a bucket: carried to the next unit
    (10000000.0, [])
    """
    pieces = max(1, min(max(tensors, 1), math.ceil(grad_bytes / bucket_bytes)))
    closed = []
    for _ in range(pieces):
        pending += grad_bytes / pieces
        if pending >= bucket_bytes * (1 - 1e-12):
            closed.append(pending)
            pending = 0.0
    return pending, closed


def _stage_chunks(graph: Graph, step, chunks: ChunkOps, segment_cache: dict, replica: int,
                  stage: int, *, grad_sync: bool, param_gather: bool) -> None:
    """Compute ops of one pipeline rank of one replica (see :func:`add_chunk_compute`)."""
    rank = step.layout.rank(dp=replica, pp=stage)
    tp_group = step.layout.group("tp", dp=replica, pp=stage)
    last_mb = step.micro_batches - 1
    bucket_bytes = step.parallelism.ddp_bucket_mb * 1e6
    pending, buckets = 0.0, []  # gradient bytes not yet in a bucket; closed buckets
    order = step.orders[stage]
    grad_kind = "W" if step.split_backward else "B"  # the pass that produces the gradients
    if step.schedule in SPLIT_SCHEDULES:
        # a chunk's gradients are complete after its last weight pass; its weights are needed by its first forward
        closing = {[x for x in order if x[0] == "W" and x[2] == c][-1] for c in range(step.virtual_stages)}
        opening = {[x for x in order if x[0] == "F" and x[2] == c][0] for c in range(step.virtual_stages)}
    else:
        closing = {x for x in order if x[0] == "B" and x[1] == last_mb}
        opening = {x for x in order if x[0] == "F" and x[1] == 0}

    def units_split(x) -> bool:  # the chunk gets one op per unit (DP needs unit boundaries)
        return (x in closing and grad_sync) or (x in opening and param_gather)

    for slot in step.slots[stage]:
        if len(slot) > 1 and not any(units_split(x) for x in slot):
            _fused_slot(graph, step, chunks, segment_cache, replica, stage, rank, tp_group, slot)
            continue
        for kind, mb, chunk in slot:
            vstage = step.vstage(stage, chunk)
            units = step.chunk_units(vstage, kind, mb)
            split = units_split((kind, mb, chunk))
            groups = [[u] for u in units] if split else [units]
            for gi, group_units in enumerate(groups):
                key = (replica, stage, vstage, kind, split, gi, kind == grad_kind and mb > 0,
                       kind == grad_kind and mb == last_mb)
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
                    grad = sum(u.grad_bytes for u in group_units)
                    pieces = sum(u.matrices or u.tensors for u in group_units)
                    pending, closed = fill_buckets(pending, grad, pieces, bucket_bytes)
                    buckets.extend((oid, nbytes) for nbytes in closed)
    if grad_sync:  # flush the remainder after the rank's last gradient-producing pass
        _, last_b_mb, last_b_chunk = [x for x in order if x[0] == grad_kind][-1]
        if pending > 0:
            buckets.append((chunks.last[(replica, stage, grad_kind, last_b_mb, last_b_chunk)], pending))
        chunks.grad_buckets[(replica, stage)] = buckets


def _fused_slot(graph: Graph, step, chunks: ChunkOps, segment_cache: dict, replica: int, stage: int, rank: int,
                tp_group: list[int], slot) -> None:
    """One compute op for the chunks of ``slot``: a full backward (B then W) or, overlapped, an
    F&B pair (:func:`overlap_pair`)."""
    # the chunks' units depend on (kind, virtual stage, micro-batch > 0, last micro-batch) only
    key = (replica, stage, tuple((k, step.vstage(stage, c), mb > 0, mb == step.micro_batches - 1) for k, mb, c in slot))
    hit = segment_cache.get(key)
    if hit is None:
        lists = [[seg for u in step.chunk_units(step.vstage(stage, c), k, mb) for seg in u.segments]
                 for k, mb, c in slot]
        if is_overlapped(slot):  # the forward against the whole backward (B and W)
            segment_lists = [overlap_pair(lists[0], [seg for lst in lists[1:] for seg in lst])]
        else:
            segment_lists = lists
        hit = segment_cache[key] = op_segments(segment_lists, [tp_group], step.host_call_s, step.host_kernel_s,
                                               axis_groups=step.expert_axis_groups(replica, stage))
    segments, host_s = hit
    name = "+".join(f"{k}{mb}" + (f".c{c}" if step.virtual_stages > 1 else "") for k, mb, c in slot)
    kind, mb, chunk = slot[0]
    oid = graph.add(rank, "compute", name, "compute", segments=segments, micro_batch=mb, chunk=chunk,
                    kind="".join(k for k, _, _ in slot), host_s=host_s)
    for k, mb, c in slot:
        chunks.first[(replica, stage, k, mb, c)] = chunks.last[(replica, stage, k, mb, c)] = oid


def overlap_pair(first: list, second: list) -> list:
    """Segments of two chunks run mutually overlapped (DualPipe's F&B pair, DeepSeek-V3 §3.2.1):
    each collective of one chunk runs beside the next unused compute segment of the other (that
    segment's seconds add to the collective's
    ``overlapped_gemm_s``: the pair takes ``max(comm, compute)``, as ``--tp-comm-overlap``).
    With nothing to hide the pair takes the sum of both chunks.

    >>> f = [ComputeSegment(1.0), TPCommSegment("all_to_all", 8.0, axis="ep"), ComputeSegment(2.0)]
    >>> b = [ComputeSegment(3.0), TPCommSegment("all_to_all", 8.0, axis="ep")]
    >>> out = overlap_pair(f, b)
    >>> [round(s.overlapped_gemm_s, 1) for s in out if isinstance(s, TPCommSegment)]
    [3.0, 1.0]
    >>> sum(s.seconds for s in out if isinstance(s, ComputeSegment))
    2.0
    """
    a, b = list(first), list(second)
    _hide(a, b)
    _hide(b, a)
    return a + b


def _hide(comms: list, computes: list) -> None:
    """Pair each collective of ``comms`` with the next unused compute segment of ``computes`` (added
    to whatever compute of its own chunk already hides it, ``ep_comm_overlap`` or TP overlap)."""
    j = 0
    for i, seg in enumerate(comms):
        if not isinstance(seg, TPCommSegment):
            continue
        while j < len(computes) and not (isinstance(computes[j], ComputeSegment) and computes[j].seconds > 0):
            j += 1
        if j == len(computes):
            return
        comms[i] = replace(seg, overlapped_gemm_s=seg.overlapped_gemm_s + computes[j].seconds)
        computes[j] = ComputeSegment(0.0, computes[j].kernels)
        j += 1


def add_pipeline_transfers(graph: Graph, step, chunks: ChunkOps) -> None:
    """Sends of activations (forward) and their gradients (backward) between adjacent virtual
    stages, and each backward's wait for its own forward.

    With ``parallelism.pp_p2p: torch`` the schedules of ``torch.distributed.pipelining``
    (:data:`~clustersim.workload.pipeline_p2p.P2P_SCHEDULES`) run their p2p program
    (:func:`add_p2p_program`); otherwise each chunk's output is sent when it is ready, to a receiver
    that waits for it."""
    if step.parallelism.pp_p2p == "torch" and step.schedule in P2P_SCHEDULES and step.pp > 1:
        add_p2p_program(graph, step, chunks)
        return
    model, layout, pp = step.model, step.layout, step.pp
    act_bytes = 2 * step.micro_batch * model.seq_len * model.hidden / (step.tp * step.cp)  # CP: the local tokens
    ops, first, last, host_call = graph.ops, chunks.first, chunks.last, step.host_call_s
    # where a chunk's output goes: (kind, chunk) -> (next pipeline rank, its chunk) or None, per rank
    hops: dict[tuple, tuple | None] = {}
    for replica in step.replicas:
        pairs: dict[int, list] = {}  # next pipeline rank -> the TP ranks' (sender, receiver) pairs
        for stage in range(pp):
            rank = layout.rank(dp=replica, pp=stage)
            src = layout.group("tp", dp=replica, pp=stage)
            pairs.clear()
            for kind, mb, chunk in step.orders[stage]:
                if kind == "W":  # the weight gradient stays on the rank
                    continue
                hop_key = (stage, kind, chunk)
                if hop_key not in hops:
                    vstage = step.vstage(stage, chunk)
                    next_vstage = vstage + 1 if kind == "F" else vstage - 1
                    hops[hop_key] = (placement(step.schedule, pp, next_vstage, chunk)
                                     if 0 <= next_vstage < step.n_virtual_stages else None)
                hop = hops[hop_key]
                if hop is None:
                    continue
                next_stage, next_chunk = hop
                src_key = (replica, stage, kind, mb, chunk)
                dst_key = (replica, next_stage, kind, mb, next_chunk)
                if next_stage == stage:  # same GPU: no transfer, direct dependency
                    _depend(graph, first[dst_key], last[src_key])
                    continue
                if next_stage not in pairs:
                    pairs[next_stage] = list(zip(src, layout.group("tp", dp=replica, pp=next_stage)))
                coll = Coll("send_recv", [[a, b] for a, b in pairs[next_stage]], act_bytes, "pp")
                sid = graph.add(rank, "pp_" + ("f" if kind == "F" else "b"), f"send {kind}{mb}", "comm_pp",
                                coll=coll, deps=[last[src_key]])
                # the sender's host issues the send and the receiver's host the matching recv
                # (torch.distributed.pipelining: one batch_isend_irecv call each)
                for oid in (last[src_key], first[dst_key]):
                    ops[oid].args.add_host(host_call)
                ops[first[dst_key]].deps.append(sid)
            # backward of the last virtual stage waits for its own forward, a weight pass for its backward
            for kind, mb, chunk in step.orders[stage]:
                if kind != "F":
                    _depend(graph, chunks.first[(replica, stage, kind, mb, chunk)],
                            chunks.last[(replica, stage, "F" if kind == "B" else "B", mb, chunk)])


def add_p2p_program(graph: Graph, step, chunks: ChunkOps) -> None:
    """Every pipeline rank's p2p program (:mod:`clustersim.workload.pipeline_p2p`) as ops.

    A batch is two zero-length ops on the rank's ``p2p`` stream (one NCCL stream: a batch starts after
    the previous one ended): its post, after the compute issued before it, and its end, after its
    transfers. A transfer starts once both its batches are posted (NCCL matches a send with its
    receive) and lasts its wire time; a chunk that waits for a batch waits for its end. The posted
    intervals go to :attr:`Graph.p2p_kernels` (a waiting kernel slows the compute beside it,
    :mod:`clustersim.simulate.overlap`).
    """
    model, layout, pp, m, v = step.model, step.layout, step.pp, step.micro_batches, step.virtual_stages
    act_bytes = 2 * step.micro_batch * model.seq_len * model.hidden / (step.tp * step.cp)  # CP: the local tokens
    ops, host_call = graph.ops, step.host_call_s
    if step.schedule == "interleaved":
        programs = interleaved_programs([step.orders[r] for r in range(pp)], pp, m, v)
    else:
        programs = [p2p_program(step.schedule, pp, m, r, step.orders[r], v) for r in range(pp)]
    for replica in step.replicas:
        ends: dict[tuple, dict[str, tuple[int, int]]] = {}  # transfer -> {"send"|"recv": (post op, end op)}
        sends: list[list] = []  # per stage, its transfers in program order
        for stage in range(pp):
            rank = layout.rank(dp=replica, pp=stage)
            pending: list[int] = []
            last = None
            batches: list[tuple[int, int]] = []
            own: list = []
            for event in programs[stage]:
                if event[0] == "compute":
                    kind, mb, chunk = event[1]
                    first = chunks.first[(replica, stage, kind, mb, chunk)]
                    ops[first].deps.extend(pending)
                    pending = []
                    last = chunks.last[(replica, stage, kind, mb, chunk)]
                elif event[0] == "wait":
                    pending.append(batches[event[1]][1])
                else:
                    post = graph.add(rank, "p2p", "p2p post", "comm_pp", deps=[last])
                    end = graph.add(rank, "p2p", "p2p wait", "comm_pp")
                    batches.append((post, end))
                    has_recv = False
                    for x in event[1]:
                        side = "send" if placement(step.schedule, pp, x[2], 0)[0] == stage else "recv"
                        ends.setdefault(x, {})[side] = (post, end)
                        has_recv |= side == "recv"
                        if side == "send":
                            own.append(x)
                    graph.p2p_kernels.append((rank, post, end, has_recv))
            sends.append(own)
        for stage in range(pp):
            rank = layout.rank(dp=replica, pp=stage)
            src_group = layout.group("tp", dp=replica, pp=stage)
            for x in sends[stage]:
                kind, mb, src_vs = x
                dst_vs = src_vs + 1 if kind == "F" else src_vs - 1
                dst_stage, dst_chunk = placement(step.schedule, pp, dst_vs, 0)
                src_chunk = placement(step.schedule, pp, src_vs, 0)[1]
                pairs = list(zip(src_group, layout.group("tp", dp=replica, pp=dst_stage)))
                coll = Coll("send_recv", [[a, b] for a, b in pairs], act_bytes, "pp")
                (s_post, s_end), (r_post, r_end) = ends[x]["send"], ends[x]["recv"]
                tid = graph.add(rank, "pp_" + ("f" if kind == "F" else "b"), f"send {kind}{mb}", "comm_pp",
                                coll=coll, deps=[s_post, r_post])
                ops[s_end].deps.append(tid)
                ops[r_end].deps.append(tid)
                # the sender's host issues the send and the receiver's host the matching recv
                for oid in (chunks.last[(replica, stage, kind, mb, src_chunk)],
                            chunks.first[(replica, dst_stage, kind, mb, dst_chunk)]):
                    ops[oid].args.add_host(host_call)
        for stage in range(pp):  # the backward of a chunk waits for its own forward
            for kind, mb, chunk in step.orders[stage]:
                if kind == "B":
                    _depend(graph, chunks.first[(replica, stage, "B", mb, chunk)], chunks.last[(replica, stage, "F", mb, chunk)])


def _depend(graph: Graph, op: int, on: int) -> None:
    """``op`` waits for ``on`` (nothing when a fused slot holds both)."""
    if op != on:
        graph.ops[op].deps.append(on)
