"""Data-parallel and end-of-step part of a training step's DAG (DDP and ZeRO-1/2; ZeRO-3 is
:mod:`clustersim.workload.step_fsdp`).

* DP: gradients reduced in buckets of ``ddp_bucket_mb`` in reverse layer order during the
  backward of the last micro-batch (gradient accumulation communicates once); DDP all-reduces
  them, ZeRO-1/2 reduce-scatter them and all-gather the updated weights bucket by bucket while the
  next step's first micro-batch runs forward (Megatron-Core ``--overlap-param-gather``; in the
  steady state that is this step's first forward, so each unit's first forward waits for its
  bucket). ``parallelism.dp_overlap: false``: every bucket starts after the last backward.
* The tied embedding's gradient is all-reduced between the first and the last pipeline stage.
* The global gradient norm (clipping) is one fp32 all-reduce over the model-parallel group.
* The optimizer updates each rank's parameters (its ZeRO shard).

One DP collective op stands for the replicas' identical groups (all TP ranks' DP groups at once,
their traffic sharing the links); it occupies the ``dp`` stream of every simulated replica.

Every function takes ``step``, the :class:`~clustersim.workload.transformer.TransformerStep` being
built (its degrees, units and per-rank costs); this module does not import it, so the workload
modules import each other in one direction only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.workload.context_parallel import data_parallel_groups
from clustersim.workload.ops import Coll, Graph

if TYPE_CHECKING:
    from clustersim.workload.step_pipeline import ChunkOps


def _dp_groups(step, stage: int) -> list[list[int]]:
    """The DP group of every TP rank of pipeline rank ``stage`` (with context parallelism its DP
    and CP ranks together: they hold the same weights)."""
    if step.cp > 1:
        return data_parallel_groups(step.layout, step.tp, stage)
    return [step.layout.group("dp", tp=i, pp=stage) for i in range(step.tp)]


def add_param_gathers(graph: Graph, step, chunks: ChunkOps) -> None:
    """ZeRO-1/2 weight all-gathers, one per bucket of units, each before the first forward of its units."""
    layout, replicas = step.layout, step.replicas
    bucket_bytes = step.parallelism.ddp_bucket_mb * 1e6
    for stage in range(step.pp):
        groups = _dp_groups(step, stage)
        rank0 = layout.rank(dp=replicas[0], pp=stage)
        extra = [(layout.rank(dp=d, pp=stage), "dp_ag") for d in replicas[1:]]
        units0 = chunks.forward_units[(replicas[0], stage)]
        pending, members = 0.0, []
        for k, (_, nbytes) in enumerate(units0):
            pending += nbytes
            members.append(k)
            if pending >= bucket_bytes or k == len(units0) - 1:
                gather = graph.add(rank0, "dp_ag", "param all_gather", "comm_dp",
                                   coll=Coll("all_gather", groups, pending, "dp"), extra_streams=extra)
                for replica in replicas:
                    for member in members:
                        graph.ops[chunks.forward_units[(replica, stage)][member][0]].deps.append(gather)
                pending, members = 0.0, []


def add_grad_reductions(graph: Graph, step, chunks: ChunkOps) -> dict[int, list[int]]:
    """Bucketed gradient all-reduces (DDP) or reduce-scatters (ZeRO-1/2); ``{stage: [op ids]}``."""
    layout, replicas = step.layout, step.replicas
    reduction_ops: dict[int, list[int]] = {j: [] for j in range(step.pp)}
    if step.grad_dp <= 1:
        return reduction_ops
    op = "all_reduce" if step.parallelism.zero == 0 else "reduce_scatter"
    for stage in range(step.pp):
        groups = _dp_groups(step, stage)
        rank0 = layout.rank(dp=replicas[0], pp=stage)
        for k, (_, nbytes) in enumerate(chunks.grad_buckets[(replicas[0], stage)]):
            # dp_overlap off (Megatron before --overlap-grad-reduce): every bucket is issued after the
            # rank's last backward kernel, which is the last bucket's op
            at = k if step.parallelism.dp_overlap else -1
            ready = [chunks.grad_buckets[(d, stage)][at][0] for d in replicas]
            for oid in ready:  # the reducer's hook issues the bucket's collective from the host
                graph.ops[oid].args.add_host(step.host_call_s)
            extra = [(layout.rank(dp=d, pp=stage), "dp") for d in replicas[1:]]
            reduction_ops[stage].append(graph.add(rank0, "dp", f"grad {op} b{k}", "comm_dp",
                                                  coll=Coll(op, groups, nbytes, "dp"), deps=ready,
                                                  extra_streams=extra))
    return reduction_ops


def add_tied_embedding_reduce(graph: Graph, step) -> dict[tuple[int, int], int]:
    """All-reduce of the tied embedding's gradient between the first and the last pipeline stage;
    ``{(replica, stage): op id}`` for both stages."""
    model, layout, pp = step.model, step.layout, step.pp
    tied_ops: dict[tuple[int, int], int] = {}
    if not (model.tied_embeddings and pp > 1):
        return tied_ops
    nbytes = (model.vocab / (step.tp if step.vocab_parallel else 1)) * model.hidden * step.grad_dtype_bytes
    for replica in step.replicas:
        first, last = layout.rank(dp=replica, pp=0), layout.rank(dp=replica, pp=pp - 1)
        pairs = zip(layout.group("tp", dp=replica, pp=0), layout.group("tp", dp=replica, pp=pp - 1))
        groups = [[a, b] for a, b in pairs]
        oid = graph.add(first, "dp", "tied-embedding all_reduce", "comm_dp",
                        coll=Coll("all_reduce", groups, nbytes, "dp"),
                        deps=[graph.last(first, "compute"), graph.last(last, "compute")], extra_streams=[(last, "dp")])
        tied_ops[(replica, 0)] = tied_ops[(replica, pp - 1)] = oid
    return tied_ops


def add_dualpipe_mirror_reduce(graph: Graph, step, reduction_ops: dict[int, list[int]],
                               tied_ops: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    """DualPipe's gradient exchange between the two copies of every stage.

    With ``schedule: dualpipe`` pipeline ranks ``r`` and ``p-1-r`` hold the same two model chunks
    (stages ``r`` and ``p-1-r``: DeepSeek-V3 §3.2.1, "2x" parameters in its Table 2), fed from
    opposite ends, so each copy's gradients are half of the stage's: the pair all-reduces them
    (per TP rank, the rank's whole gradient, its ZeRO shard after a reduce-scatter) once both
    ranks' backward and data-parallel reductions are done. Returns ``tied_ops`` with the exchange
    in place of each rank's entry (the exchange waits for the tied-embedding reduce it replaces).

    >>> from clustersim.workload.ops import Graph
    >>> class S: schedule = "1f1b"
    >>> add_dualpipe_mirror_reduce(Graph(), S(), {}, {"kept": 1})
    {'kept': 1}
    """
    if step.schedule != "dualpipe":
        return tied_ops
    layout, pp = step.layout, step.pp
    out = dict(tied_ops)
    for replica in step.replicas:
        for r in range(pp // 2):
            a, b = layout.rank(dp=replica, pp=r), layout.rank(dp=replica, pp=pp - 1 - r)
            shard = step.grad_dp if (step.parallelism.zero >= 1 and step.grad_dp > 1) else 1
            nbytes = step.stage_params(r) / shard * step.grad_dtype_bytes
            groups = [[x, y] for x, y in zip(layout.group("tp", dp=replica, pp=r),
                                              layout.group("tp", dp=replica, pp=pp - 1 - r))]
            deps = [graph.last(a, "compute"), graph.last(b, "compute"), *reduction_ops[r],
                    *reduction_ops[pp - 1 - r]]
            deps += [tied_ops[k] for k in ((replica, r), (replica, pp - 1 - r)) if k in tied_ops]
            oid = graph.add(a, "dp", "dualpipe mirror all_reduce", "comm_dp",
                            coll=Coll("all_reduce", groups, nbytes, "dp"), deps=deps, extra_streams=[(b, "dp")])
            out[(replica, r)] = out[(replica, pp - 1 - r)] = oid
    return out


def add_grad_norm(graph: Graph, step, reduction_ops: dict[int, list[int]],
                  tied_ops: dict[tuple[int, int], int]) -> dict[int, int]:
    """Global gradient norm for clipping: one fp32 all-reduce over the model-parallel group
    (Megatron ``clip_grad_norm``); it also makes every stage wait for the slowest one.
    ``{replica: op id}``; none without model parallelism."""
    layout, pp = step.layout, step.pp
    norm_ops: dict[int, int] = {}
    if pp * step.tp <= 1:
        return norm_ops
    for replica in step.replicas:
        model_parallel = sorted(r for j in range(pp) for r in layout.group("tp", dp=replica, pp=j))
        rank0 = layout.rank(dp=replica, pp=0)
        deps = [graph.last(layout.rank(dp=replica, pp=j), "compute") for j in range(pp)]
        deps += [x for j in range(pp) for x in reduction_ops[j]]
        deps += [tied_ops[(replica, 0)]] if (replica, 0) in tied_ops else []
        extra = [(layout.rank(dp=replica, pp=j), "dp") for j in range(1, pp)]
        norm_ops[replica] = graph.add(rank0, "dp", "grad-norm all_reduce", "comm_pp",
                                      coll=Coll("all_reduce", [model_parallel], 4, "pp"), deps=deps,
                                      extra_streams=extra, after_compute=True)
    return norm_ops


def add_optimizer_steps(graph: Graph, step, reduction_ops: dict[int, list[int]],
                        tied_ops: dict[tuple[int, int], int], norm_ops: dict[int, int]) -> None:
    """The optimizer step of every simulated rank (ZeRO-1/2: its shard), after its gradients are final."""
    training = step.training
    for replica in step.replicas:
        for stage in range(step.pp):
            rank = step.layout.rank(dp=replica, pp=stage)
            params = step.stage_params(stage)
            shard = params / step.grad_dp if step.parallelism.zero >= 1 else params
            deps = list(reduction_ops[stage])
            if (replica, stage) in tied_ops:
                deps.append(tied_ops[(replica, stage)])
            if replica in norm_ops:
                deps.append(norm_ops[replica])
            seconds, host_s = step.optimizer_seconds(shard), step.optimizer_host_seconds(stage)
            if step.pp > 1 and training.precision.grads == training.precision.params:
                # torch.distributed.pipelining (plain autograd gradients) scales the accumulated
                # gradients by 1/micro-batches after the last backward: one div_ per tensor
                tensors = step.stage_tensors(stage)
                seconds += step.compute.memory(2 * params * step.grad_dtype_bytes, tensors)
                host_s += tensors * step.host_kernel_s
            graph.add(rank, "compute", "optimizer", "optimizer", duration=seconds, deps=deps, host_s=host_s)
