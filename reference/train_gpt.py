#!/usr/bin/env python3
"""Reference GPT training script: executes exactly what a clustersim scenario file describes.

    python reference/train_gpt.py SCENARIO.yaml [--set k=v]... [--steps N] [--warmup N] \
        [--device cuda|cpu] -o RESULT.jsonl
    torchrun --standalone --nproc-per-node 2 reference/train_gpt.py scenarios/ref-ddp2.yaml -o out.jsonl

The scenario is loaded with clustersim's own loader (``load_model(Scenario, path, overrides)``), so
the file the simulator predicts and the file this script runs are the same object. Only
``clustersim.config.*`` is imported (no simpy, no engine).

What is built (choices, stated once):
- A decoder-only GPT from ``model``: token embedding (+ learned position table if
  ``position_embedding: learned``; rotary on q/k if ``rope``; nothing if ``none``), ``layers`` pre-norm
  blocks (norm -> fused QKV projection (GQA: ``kv_heads``) -> attention -> output projection ->
  residual; norm -> MLP -> residual), final norm, LM head (shares the embedding matrix if
  ``tied_embeddings``). MLP ``gelu``: 2 matrices (h->ffn, ffn->h, tanh GELU); ``swiglu``: 3 (gate, up,
  down). ``layernorm`` / ``rmsnorm``. ``bias`` on every linear layer and on LayerNorm.
  Attention ``flash`` = ``F.scaled_dot_product_attention(is_causal=True)``; ``eager`` = materialised
  ``q k^T`` scores, causal mask, softmax, ``@ v``.
- Loss: token-level cross entropy (computed in fp32) on synthetic uniformly random tokens
  (seeded by ``simulation.seed``; the global batch is the same for every layout, each data-parallel rank
  takes its slice, so all layouts train on identical data and their losses agree).
- Optimizer from ``training.optimizer``: AdamW (lr 3e-4, betas 0.9/0.95, weight decay 0.1) or SGD
  (no momentum). Gradient accumulation over ``global_batch / (micro_batch * dp)`` micro-batches.
- Precision: pure bf16 (params, grads, optimizer states bf16, no master weights) or pure fp32.
  ``params: fp8`` (with bf16 grads and states): bf16 weights, the blocks' linear GEMMs on FP8 tensor
  cores by ``precision.fp8_recipe`` (``train_gpt_fp8_moe.py``; data parallelism only).
- MoE (``model.moe``): SwiGLU routed experts in every layer, softmax top-k router, as a Hugging Face
  style loop or one grouped GEMM per weight (``moe.implementation``; ``train_gpt_fp8_moe.py``; data
  parallelism only).
  Every other combination is refused (mixed precision with fp32 master weights is not implemented).
- Parallelism:
  * dp>1, zero 0: ``torch.nn.parallel.DistributedDataParallel(bucket_cap_mb=ddp_bucket_mb)``; gradient
    all-reduce only on the last micro-batch (``no_sync`` on the others).
  * zero 3: FSDP2 ``fully_shard`` on every block and on the root (reshard after forward, no CPU
    offload; FSDP1 if FSDP2 is not available); gradients reduce-scattered on every micro-batch
    (FSDP's default). zero 1/2 are refused.
  * tp>1: our own Megatron-style column/row-parallel linear layers (``ColumnParallelLinear``,
    ``RowParallelLinear``) with explicit all-reduces (identity fwd / all-reduce bwd before a column
    split; all-reduce fwd / identity bwd after a row split). ``vocab_parallel: true``: embedding split
    by vocabulary rows (masked lookup + all-reduce) and LM head column-parallel over the vocabulary with
    a vocab-parallel cross entropy (all-reduces of max, sum-exp and target logit); ``false``: both
    replicated. sequence_parallel is refused.
  * pp>1: ``torch.distributed.pipelining`` (ScheduleGPipe / Schedule1F1B / ScheduleInterleaved1F1B),
    layers split evenly into ``pp * virtual_stages`` chunks (embedding with the first, final norm + LM
    head with the last), chunk c on pipeline rank ``c % pp`` (Megatron's interleaved placement).
  * Combinations: dp x tp (DDP over the dp group); pp x tp x dp (TP layers inside the pipeline
    stages; with dp > 1 the gradients are all-reduced over the dp group after the pipeline step, in
    buckets of ``ddp_bucket_mb``, not overlapped with the backward); zero 3 alone. Others are refused.
- Kernels: with ``training.kernel_fusion: fused`` on one rank or DDP, each block compiled by
  ``torch.compile`` (its elementwise kernels generated and fused, as torchtitan's per-block compile);
  otherwise plain PyTorch eager, nothing fused (RoPE as neg/cat/mul/add, silu then mul, GQA by
  ``repeat_interleave``, eager attention as scale/masked_fill/softmax): the scenario field
  ``training.kernel_fusion: none`` describes it (the ``ref-*`` scenarios set it).
- Timing: ``--warmup`` steps, then ``--steps`` steps, each bracketed by ``torch.cuda.synchronize()``;
  a step's time is the slowest rank's (all-reduce MAX after the loop). Peak memory is
  ``torch.cuda.max_memory_allocated`` (max over ranks) over the whole run.

Rank 0 appends one JSON line per run to ``-o`` (flushed and fsynced); existing rows are never touched.

Files: this script (scenario checks, ranks and groups, set-up, the step loop, the row) and
``train_gpt_model.py`` next to it (the torch modules of the model and tensor parallelism).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Allow running from a checkout without installing the package.
_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))
# ... and finding the model module next to this script, however this file was loaded
_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from clustersim.config.base import load_model  # noqa: E402
from clustersim.config.scenario import Scenario  # noqa: E402
from clustersim.errors import ClusterSimError  # noqa: E402
from pmu import ThreadCounters  # noqa: E402  (reference/pmu.py, beside this script)

try:  # torch is only needed to actually run; keep the error readable
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = None  # type: ignore[assignment]

if torch is not None:
    # the model lives in train_gpt_model.py; its names stay reachable as train_gpt.<name>
    # (profile_step.py and the tests build blocks and models through this module)
    from train_gpt_model import (  # noqa: E402, F401
        MLP,
        Attention,
        Block,
        ColumnParallelLinear,
        Embed,
        GPTChunk,
        Head,
        Norm,
        RowParallelLinear,
        VocabParallelEmbedding,
        _CopyToTP,
        _ReduceFromTP,
        _VocabParallelCE,
        apply_rope,
        build_full,
        copy_to_tp,
        init_weights,
        reduce_from_tp,
        rope_tables,
        set_block_linear,
        shard_tensor,
    )


class Unsupported(Exception):
    """The scenario asks for something this script does not implement (refused, never approximated)."""


SCHEMA_VERSION = 1
DTYPES = {"bf16": "bfloat16", "fp32": "float32"}


# --------------------------------------------------------------------------------------------------
# What the script implements (checked before any GPU work)
# --------------------------------------------------------------------------------------------------

def check_supported(sc: Scenario) -> str:
    """Return the torch dtype name for the model state, or raise Unsupported with the reason."""
    if sc.model is None:
        raise Unsupported("the scenario has a generic 'job', not a 'model'; this script trains a transformer")
    pr, tr, par = sc.training.precision, sc.training, sc.parallelism
    if pr.params in ("bf16", "fp8") and pr.grads == pr.optimizer_states == "bf16" and not pr.master_weights:
        dtype = "bfloat16"  # fp8: bf16 weights, the blocks' GEMMs in FP8 (train_gpt_fp8_moe.py)
    elif pr.params == pr.grads == pr.optimizer_states == "fp32":
        dtype = "float32"  # fp32 everything; a master copy would be identical to the weights
    else:
        raise Unsupported(
            f"training.precision params={pr.params} grads={pr.grads} optimizer_states={pr.optimizer_states} "
            f"master_weights={pr.master_weights}: only pure bf16 (bf16/bf16/bf16, master_weights false; params fp8 "
            f"for FP8 GEMMs) and pure fp32 are implemented")
    moe = sc.model.moe
    if moe is not None and (moe.shared_experts or moe.first_dense_layers or moe.moe_every != 1 or sc.model.mlp != "swiglu"
                            or moe.capacity_factor is not None or moe.router_skew or par.ep > 1 or par.tp > 1
                            or par.pp > 1 or par.zero):
        raise Unsupported("model.moe is implemented for SwiGLU routed experts in every layer (no shared experts, no "
                          "capacity factor, uniform routing) with data parallelism only (ep = tp = pp = 1, zero 0)")
    if pr.params == "fp8" and (par.tp > 1 or par.pp > 1 or par.zero):
        raise Unsupported("params: fp8 is implemented with data parallelism only (tp = pp = 1, zero 0)")
    if tr.recompute == "selective":
        raise Unsupported("training.recompute: selective is not implemented (use none or full)")
    if par.sequence_parallel and par.tp > 1:
        raise Unsupported("parallelism.sequence_parallel is not implemented")
    if par.zero in (1, 2):
        raise Unsupported(f"parallelism.zero: {par.zero} is not implemented (0 = DDP or 3 = FSDP)")
    if par.zero == 3 and (par.tp > 1 or par.pp > 1):
        raise Unsupported("parallelism.zero: 3 is implemented with dp only (tp = pp = 1)")
    if par.pp > 1 and sc.model.tied_embeddings:
        raise Unsupported("tied_embeddings with pp > 1 (embedding and LM head on different stages) is not implemented")
    if par.tp > 1 and par.vocab_parallel and sc.model.vocab % par.tp:
        raise Unsupported(f"vocab_parallel needs model.vocab ({sc.model.vocab}) divisible by tp ({par.tp})")
    if par.pp > 1 and par.schedule == "interleaved" and par.virtual_stages < 2:
        raise Unsupported("schedule: interleaved needs virtual_stages >= 2")
    return dtype


# --------------------------------------------------------------------------------------------------
# Rank discovery and process groups
# --------------------------------------------------------------------------------------------------

def discover_ranks() -> dict:
    """rank, world_size, local_rank (and the launcher) from clustersim's discovery if present, else torchrun env."""
    info = None
    try:
        from clustersim.calibration.env import discover  # written by the calibration work; optional

        d = discover()
        get = (lambda k: d.get(k)) if isinstance(d, dict) else (lambda k: getattr(d, k, None))
        if get("rank") is not None and get("world_size") is not None:
            info = {"rank": int(get("rank")), "world_size": int(get("world_size")),
                    "local_rank": int(get("local_rank") or 0), "launcher": str(get("launcher") or "discover")}
            for key, env in (("master_addr", "MASTER_ADDR"), ("master_port", "MASTER_PORT")):
                if get(key) is not None and env not in os.environ:
                    os.environ[env] = str(get(key))
    except Exception:  # noqa: BLE001 - absent or unusable: fall back to the torchrun environment
        info = None
    if info is None:
        info = {"rank": int(os.environ.get("RANK", 0)), "world_size": int(os.environ.get("WORLD_SIZE", 1)),
                "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
                "launcher": "torchrun" if "RANK" in os.environ else "single"}
    return info


def rank_layout(par, world: int) -> dict:
    """Coordinates of every rank for the degrees and ``order`` (innermost first)."""
    sizes = {"tp": par.tp, "cp": par.cp, "ep": par.ep, "dp": par.dp, "pp": par.pp}
    dims = par.order.split("-")
    coords = []
    for r in range(world):
        c, rem = {}, r
        for d in dims:
            c[d] = rem % sizes[d]
            rem //= sizes[d]
        coords.append(c)
    return {"coords": coords, "dims": dims}


class Groups:
    """Process groups of each axis for this rank (None where the axis has size 1 or no distributed run)."""

    def __init__(self, par, rank: int, world: int, distributed: bool):
        self.rank, self.world = rank, world
        lay = rank_layout(par, world)
        me = lay["coords"][rank]
        self.coord = me
        self.groups = {}
        for axis in ("tp", "dp", "pp"):
            size = getattr(par, axis)
            self.groups[axis] = None
            # every rank must call new_group for every group, in the same order
            seen = []
            for r in range(world):
                key = tuple(v for k, v in lay["coords"][r].items() if k != axis)
                if key in seen:
                    continue
                seen.append(key)
                members = [q for q in range(world)
                           if tuple(v for k, v in lay["coords"][q].items() if k != axis) == key]
                if distributed and size > 1:
                    g = dist.new_group(members)
                    if rank in members:
                        self.groups[axis] = g
                        setattr(self, f"{axis}_ranks", members)
                elif rank in members:
                    setattr(self, f"{axis}_ranks", members)
        self.tp_rank, self.dp_rank, self.pp_rank = me["tp"], me["dp"], me["pp"]



# --------------------------------------------------------------------------------------------------
# Running: small helpers
# --------------------------------------------------------------------------------------------------

def _log(rank, *a):
    if rank == 0:
        print("[train_gpt]", *a, file=sys.stderr, flush=True)


def append_row(path: str, row: dict) -> None:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _nccl_version():
    try:
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
    except Exception:  # noqa: BLE001 - metadata only
        return None


def count_params(model) -> int:
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


# --------------------------------------------------------------------------------------------------
# Running: where this process runs (device, process group, parallel groups)
# --------------------------------------------------------------------------------------------------

@dataclass
class Launch:
    """This process's place in the run: rank, device and process groups."""

    info: dict
    """:func:`discover_ranks`: rank, world_size, local_rank, launcher"""
    device_kind: str
    """``cuda`` or ``cpu``"""
    device: Any
    distributed: bool
    """a process group exists (more than one process, or ``--force-ddp``)"""
    groups: Groups

    @property
    def rank(self) -> int:
        return self.info["rank"]

    @property
    def world(self) -> int:
        return self.info["world_size"]

    def sync(self) -> None:
        """Wait for the GPU (nothing to wait for on CPU). ``--sync blocking``: the host thread sleeps on a blocking
        event of the current stream first (the CUDA default spins a CPU at 100% while it waits), then synchronises
        the device (by then nothing is left to spin on)."""
        if self.device_kind == "cuda":
            if SYNC_MODE["mode"] == "blocking":
                ev = torch.cuda.Event(blocking=True)
                ev.record()
                ev.synchronize()
            torch.cuda.synchronize()


def check_world(sc: Scenario, world: int) -> None:
    """The process count must be the scenario's dp*tp*pp (and its cluster.gpus when given)."""
    if sc.world_size != world:
        raise Unsupported(f"the scenario needs dp*tp*pp = {sc.world_size} processes, launched with {world} "
                          f"(use torchrun --nproc-per-node {sc.world_size})")
    if sc.cluster.gpus is not None and sc.cluster.gpus != world:
        raise Unsupported(f"cluster.gpus ({sc.cluster.gpus}) differs from the process count ({world})")


def pick_device(args, local_rank: int, rank: int, dtype_name: str):
    """(``cuda`` or ``cpu``, torch device): ``--device``, else CUDA when available (device = local rank)."""
    device_kind = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device_kind == "cuda":
        if not torch.cuda.is_available():
            raise Unsupported("--device cuda but CUDA is not available")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
        if dtype_name == "bfloat16":
            _log(rank, "note: bf16 on CPU is slow; CI runs use pure fp32")
    return device_kind, device


def note_unfused_kernels(sc: Scenario, rank: int) -> None:
    """Say so when the scenario models fused kernels for features this script runs unfused."""
    m, tr = sc.model, sc.training
    unfused_features = [f for f, on in (("rope", m.position_embedding == "rope"), ("swiglu", m.mlp == "swiglu"),
                                        ("GQA", m.kv_heads != m.heads), ("eager attention", m.attention == "eager"))
                        if on]
    if tr.kernel_fusion == "fused" and unfused_features and not compiles_blocks(sc):
        _log(rank, f"note: this script runs {', '.join(unfused_features)} as separate PyTorch kernels; the scenario "
                   "says training.kernel_fusion: fused, so `clustersim run` models fused kernels (set it to none)")


def compiles_blocks(sc: Scenario) -> bool:
    """``training.kernel_fusion: fused`` on one rank or DDP (tp = pp = 1, zero 0): every block is compiled by
    ``torch.compile`` (torchtitan's per-block compile), so its elementwise kernels are the generated fused ones."""
    par = sc.parallelism
    return sc.training.kernel_fusion == "fused" and par.tp == 1 and par.pp == 1 and par.zero == 0


def start(args, sc: Scenario, dtype_name: str) -> Launch:
    """Discover the ranks, check their count, bind the device, create the process group and the axis groups."""
    info = discover_ranks()
    rank, world, local_rank = info["rank"], info["world_size"], info["local_rank"]
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE") or world)
    SYNC_MODE["mode"] = getattr(args, "sync", "spin")
    affinity = getattr(args, "cpu_affinity", "inherit")  # callers with their own options (step_trace.py): inherit
    CPU_BINDING.update(mode=affinity, cpus=bind_cpus(affinity, local_rank, local_world))
    check_world(sc, world)
    device_kind, device = pick_device(args, local_rank, rank, dtype_name)
    note_unfused_kernels(sc, rank)
    par = sc.parallelism
    if args.force_ddp and (world != 1 or par.pp > 1 or par.tp > 1 or par.zero):
        raise Unsupported("--force-ddp is for one process without tp, pp or zero (a host-cost probe)")
    distributed = world > 1 or args.force_ddp
    if distributed:
        backend = "nccl" if device_kind == "cuda" else "gloo"
        kw = {"device_id": device} if device_kind == "cuda" else {}
        dist.init_process_group(backend=backend, rank=rank, world_size=world,
                                timeout=_dt.timedelta(seconds=args.dist_timeout), **kw)
    groups = Groups(par, rank, world, distributed)
    return Launch(info=info, device_kind=device_kind, device=device, distributed=distributed, groups=groups)


# --------------------------------------------------------------------------------------------------
# Running: the model, its parallel form, the optimizer, the data
# --------------------------------------------------------------------------------------------------

def build_model(sc: Scenario, launch: Launch, dtype):
    """(model, parameter count of the full model): the full model with one seed everywhere, then this rank's TP shard."""
    m, tr, par = sc.model, sc.training, sc.parallelism
    groups, device = launch.groups, launch.device
    torch.manual_seed(sc.simulation.seed)
    with torch.device(device):
        full = build_full(m, 1, 0, None, False, tr.recompute == "full")
    init_weights(full, m)
    n_params = count_params(full)
    if par.tp > 1:
        with torch.device(device):
            model = build_full(m, par.tp, groups.tp_rank, groups.groups["tp"], par.vocab_parallel,
                               tr.recompute == "full")
        full_sd = full.state_dict()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(shard_tensor(name, full_sd[name], m, par.tp, groups.tp_rank, par.vocab_parallel))
        del full, full_sd
    else:
        model = full
        del full  # only `model` may hold the weights (PP drops the chunks of other ranks later)
    model = model.to(dtype)
    model.train()
    if sc.training.precision.params == "fp8":
        from train_gpt_fp8_moe import fp8_linear  # noqa: PLC0415 - beside this script

        set_block_linear(fp8_linear(sc.training.precision.fp8_recipe))
    if compiles_blocks(sc) and launch.device_kind == "cuda":
        for block in model.blocks:
            block.compile()  # in place: the module keeps its parameters and names
    return model, n_params


def make_loss(sc: Scenario, launch: Launch):
    """Loss of one micro-batch: cross entropy in fp32, vocab-parallel with TP over a split vocabulary."""
    m, par, groups = sc.model, sc.parallelism, launch.groups
    tp_group = groups.groups["tp"]
    vp_tp = par.tp > 1 and par.vocab_parallel

    def mb_loss(logits, tgt):
        if vp_tp:
            start = groups.tp_rank * (m.vocab // par.tp)
            return _VocabParallelCE.apply(logits.flatten(0, 1), tgt.flatten(), start, tp_group).mean()
        return F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten())
    return mb_loss


@dataclass
class Parallel:
    """The model as this rank trains it."""

    train_module: Any
    """what a micro-batch goes through (None with pipeline parallelism: the schedule runs the stages)"""
    params_modules: list
    """modules whose parameters the optimizer steps"""
    impl: dict
    """how each parallelism is implemented (the row's ``implementation``)"""
    stages: list = field(default_factory=list)
    """pipeline: (chunk index, chunk) of this rank"""
    schedule: Any = None
    n_chunks: int = 1
    ddp: Any = None


def wrap_parallel(sc: Scenario, args, launch: Launch, model, loss_fn) -> Parallel:
    """Pipeline stages and schedule, FSDP, DDP or the bare model, as the scenario's parallelism says."""
    par = sc.parallelism
    if par.pp > 1:
        wrapped = _pipeline(sc, launch, model, loss_fn)
    elif par.zero == 3 and par.dp > 1:
        wrapped = _fsdp(launch, model)
    elif par.dp > 1 or args.force_ddp:
        wrapped = _ddp(sc, args, launch, model)
    else:
        wrapped = Parallel(train_module=model, params_modules=[model], impl={})
    if par.tp > 1:
        wrapped.impl["tp"] = ("own Megatron-style column/row-parallel linears, explicit all-reduces; "
                              + ("vocab-parallel embedding + LM head + cross entropy" if par.vocab_parallel
                                 else "embedding and LM head replicated"))
    return wrapped


def _pipeline(sc: Scenario, launch: Launch, model, loss_fn) -> Parallel:
    """Layers split evenly into pp * virtual_stages chunks, chunk c on pipeline rank c % pp; the schedule."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

    m, par, groups = sc.model, sc.parallelism, launch.groups
    v = par.virtual_stages if par.schedule == "interleaved" else 1
    nchunks = par.pp * v
    per = m.layers // nchunks
    blocks = list(model.blocks)
    stages = []
    for c in range(nchunks):
        if c % par.pp != groups.pp_rank:
            continue
        chunk = GPTChunk(m, blocks[c * per:(c + 1) * per],
                         embed=model.embed if c == 0 else None,
                         head=model.head if c == nchunks - 1 else None)
        stages.append((c, chunk))
    del model, blocks
    pstages = [PipelineStage(chunk, c, nchunks, launch.device, group=groups.groups["pp"]) for c, chunk in stages]

    def pp_loss(logits, target):  # the schedule scales by the micro-batch count itself
        return loss_fn(logits, target)

    n_mb = sc.micro_batches
    if par.schedule == "gpipe":
        schedule = ScheduleGPipe(pstages[0], n_mb, loss_fn=pp_loss)
    elif par.schedule == "1f1b":
        schedule = Schedule1F1B(pstages[0], n_mb, loss_fn=pp_loss)
    else:
        schedule = ScheduleInterleaved1F1B(pstages, n_mb, loss_fn=pp_loss)
    impl = {"pp": f"torch.distributed.pipelining {type(schedule).__name__}, {nchunks} chunks of {per} layers"}
    if par.dp > 1:
        impl["dp"] = (f"gradients all-reduced over the dp group after the pipeline step, buckets of "
                      f"{par.ddp_bucket_mb} MB")
    return Parallel(train_module=None, params_modules=[chunk for _, chunk in stages], impl=impl,
                    stages=stages, schedule=schedule, n_chunks=nchunks)


def _fsdp(launch: Launch, model) -> Parallel:
    """ZeRO-3: FSDP2 ``fully_shard`` on every block and the root (FSDP1 where FSDP2 is absent)."""
    try:
        from torch.distributed.fsdp import fully_shard  # FSDP2
        for b in model.blocks:
            fully_shard(b, mesh=None)
        fully_shard(model)
        impl = {"dp": "FSDP2 fully_shard per block + root, reshard_after_forward=True"}
        train_module = model
    except ImportError:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        train_module = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}),
                            device_id=launch.device if launch.device_kind == "cuda" else None, use_orig_params=True)
        impl = {"dp": "FSDP1 FULL_SHARD, Block wrap policy"}
    return Parallel(train_module=train_module, params_modules=[train_module], impl=impl)


def _ddp(sc: Scenario, args, launch: Launch, model) -> Parallel:
    """DistributedDataParallel over the dp group (also the one-rank ``--force-ddp`` probe)."""
    par = sc.parallelism
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[launch.info["local_rank"]] if launch.device_kind == "cuda" else None,
        process_group=launch.groups.groups["dp"], bucket_cap_mb=par.ddp_bucket_mb)
    impl = {"dp": f"DistributedDataParallel bucket_cap_mb={par.ddp_bucket_mb}, no_sync on accumulation micro-batches"}
    if args.force_ddp:
        impl["dp"] += " (--force-ddp: one-rank process group, a host-cost probe)"
    return Parallel(train_module=ddp, params_modules=[ddp], impl=impl, ddp=ddp)


def optimizer_params(params_modules) -> list:
    """Every parameter of the modules once (tied weights counted once), in module order."""
    params = []
    seen = set()
    for mod in params_modules:
        for p in mod.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    return params


def make_optimizer(tr, params):
    """AdamW (lr 3e-4, betas 0.9/0.95, weight decay 0.1) or SGD (lr 1e-3, no momentum)."""
    if tr.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8)
    return torch.optim.SGD(params, lr=1e-3, momentum=0.0)


def synthetic_batches(sc: Scenario, args, launch: Launch):
    """Tokens of every step (warm-up included) for this DP rank: [step, micro-batch, sequence, seq_len + 1].

    The global batch of every step is drawn with one seed; DP rank d takes sequences
    [d*B/dp, (d+1)*B/dp), so every parallel layout sees the same data as the single-GPU run
    (the TP and PP ranks of one DP rank get the same data).
    """
    m, tr, par = sc.model, sc.training, sc.parallelism
    total_steps = args.warmup + args.steps
    gen = torch.Generator(device="cpu").manual_seed(sc.simulation.seed)
    data = torch.randint(0, m.vocab, (total_steps, tr.global_batch, m.seq_len + 1), generator=gen)
    per_dp = tr.global_batch // par.dp
    dp_rank = launch.groups.dp_rank
    data = data[:, dp_rank * per_dp:(dp_rank + 1) * per_dp]
    return data.reshape(total_steps, sc.micro_batches, tr.micro_batch, m.seq_len + 1).contiguous().to(launch.device)


# --------------------------------------------------------------------------------------------------
# Running: one training step, the timed loop
# --------------------------------------------------------------------------------------------------

class Trainer:
    """One training step of this rank: the pipeline schedule or gradient accumulation, then the optimizer step."""

    def __init__(self, sc: Scenario, launch: Launch, parallel: Parallel, opt, params: list, data, loss_fn):
        self.sc, self.launch, self.parallel, self.opt, self.params, self.data = sc, launch, parallel, opt, params, data
        self.loss_fn = loss_fn
        self.n_mb = sc.micro_batches
        #: host clock (perf_counter) when the last step's optimizer call began and returned
        self.opt_window = (0.0, 0.0)

    def step(self, i):
        """Step ``i`` (warm-up included); returns the loss (None on pipeline ranks without the last stage)."""
        self.opt.zero_grad(set_to_none=True)
        batch = self.data[i]
        if self.parallel.schedule is not None:
            loss = self._pipeline_step(batch)
        else:
            loss = self._accumulation_step(batch)
        t0 = time.perf_counter()
        self.opt.step()
        self.opt_window = (t0, time.perf_counter())
        return loss

    def _pipeline_step(self, batch):
        m, tr, par, pp = self.sc.model, self.sc.training, self.sc.parallelism, self.parallel
        n_mb = self.n_mb
        x = batch[:, :, :-1].reshape(n_mb * tr.micro_batch, m.seq_len).contiguous()
        y = batch[:, :, 1:].reshape(n_mb * tr.micro_batch, m.seq_len).contiguous()
        losses = []
        is_first = any(c == 0 for c, _ in pp.stages)
        is_last = any(c == pp.n_chunks - 1 for c, _ in pp.stages)
        if is_first and is_last:
            pp.schedule.step(x, target=y, losses=losses)
        elif is_first:
            pp.schedule.step(x)
        elif is_last:
            pp.schedule.step(target=y, losses=losses)
        else:
            pp.schedule.step()
        loss = torch.stack([l.detach().float() for l in losses]).mean() if losses else None
        if par.dp > 1:
            self._reduce_dp_grads()
        return loss

    def _accumulation_step(self, batch):
        ddp, n_mb = self.parallel.ddp, self.n_mb
        acc = torch.zeros((), device=self.launch.device, dtype=torch.float32)
        for j in range(n_mb):
            x, y = batch[j, :, :-1], batch[j, :, 1:]
            ctx = ddp.no_sync() if (ddp is not None and j < n_mb - 1) else nullcontext()
            with ctx:
                loss = self.loss_fn(self.parallel.train_module(x), y) / n_mb
                loss.backward()
            acc += loss.detach().float()
        return acc

    def _reduce_dp_grads(self):
        """pp x dp: average the gradients over the dp group, in reverse parameter order, in flat buckets
        of ``ddp_bucket_mb`` (as DDP's buckets), after the pipeline step."""
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

        par, dp_group = self.sc.parallelism, self.launch.groups.groups["dp"]
        grads = [p.grad for p in reversed(self.params) if p.grad is not None]
        cap = par.ddp_bucket_mb * 1e6
        bucket, size = [], 0

        def flush():
            if bucket:
                flat = _flatten_dense_tensors(bucket)
                dist.all_reduce(flat, group=dp_group)
                flat /= par.dp
                for g, r in zip(bucket, _unflatten_dense_tensors(flat, bucket)):
                    g.copy_(r)

        for g in grads:
            bucket.append(g)
            size += g.numel() * g.element_size()
            if size >= cap:
                flush()
                bucket, size = [], 0
        flush()


#: (peak allocated, peak reserved) bytes of every step of this process, warm-up included (timed_steps)
STEP_PEAKS: list = []
#: logical CPUs the main thread was seen on at the end of each step (timed_steps): whether the ranks' hosts
#: shared physical cores (SMT siblings) when the OS placed them
CPUS_SEEN: set = set()
#: how the host waits for the GPU at step boundaries (--sync): spin (CUDA's default) or blocking
SYNC_MODE: dict = {"mode": "spin"}
#: the --cpu-affinity mode and the CPUs this rank may run on (start)
CPU_BINDING: dict = {}
#: seconds this process spent in Python's cyclic garbage collector, by timed step (timed_steps)
GC_PAUSES: list = []
#: host seconds from each timed step's start to its optimizer call and to that call's return (timed_steps)
OPT_WINDOWS: list = []
#: what the host's CPUs did while each timed step was issued (timed_steps, :func:`cpu_counters`)
HOST_CPU: list = []
#: fields of a HOST_CPU entry
HOST_CPU_FIELDS = ("main_thread_cpu_s", "process_cpu_s", "main_voluntary_switches", "main_involuntary_switches",
                   "process_involuntary_switches")
#: instructions retired and CPU cycles of the process's threads over each timed step's issue (reference/pmu.py;
#: zeros where the VM exposes no performance counters)
HOST_PMU: list = []
#: the host's own speed just before each timed step (:func:`host_speed_probe`), microseconds per call
HOST_PROBE: list = []
#: fields of a HOST_PROBE entry
HOST_PROBE_FIELDS = ("cpu_dispatch_us", "python_call_us", "cuda_launch_us")


def host_speed_probe(device, calls: int = 256) -> tuple:
    """Microseconds per call of three fixed host workloads, timed between two steps (GPU idle): an in-place
    add on a 4-element CPU tensor (torch's dispatcher, no device), a small Python function (the interpreter)
    and an in-place add on a 4-element tensor of ``device`` (the dispatcher and the driver's launch; host
    time of the issue only, then a sync; 0 on CPU). The same work takes the same CPU cycles on one host, so
    its time says how fast this rank's CPU runs at that moment (a VM's clock in /proc/cpuinfo is fixed):
    the speed an FSDP2 rank's Python hooks and dispatches run at. About 2 ms in all on a 2 GHz Xeon.

    >>> probe = host_speed_probe(torch.device("cpu"), calls=8)
    >>> len(probe) == len(HOST_PROBE_FIELDS) and probe[0] > 0 and probe[2] == 0.0
    True
    """
    a = torch.zeros(4)
    t0 = time.perf_counter()
    for _ in range(calls):
        a.add_(1.0)
    t1 = time.perf_counter()
    table = {k: k for k in range(8)}

    def f(d, i):
        return d.get(i & 7, 0) + i

    acc = 0
    for i in range(32 * calls):
        acc += f(table, i)
    t2 = time.perf_counter()
    launch = 0.0
    if device.type == "cuda":
        b = torch.zeros(4, device=device)
        t3 = time.perf_counter()
        for _ in range(calls):
            b.add_(1.0)
        launch = (time.perf_counter() - t3) / calls * 1e6
        torch.cuda.synchronize(device)
    return ((t1 - t0) / calls * 1e6, (t2 - t1) / (32 * calls) * 1e6, launch)


def cpu_counters() -> tuple:
    """CPU seconds of this thread and of the whole process (every thread: autograd's, NCCL's, the watchdog's), and
    context switches of this thread (voluntary: it blocked; involuntary: the scheduler took its CPU away) and the
    process's involuntary ones. Differences over a step tell a host that computes slowly (CPU seconds equal to the
    step's) from one that waits or is preempted. Zeros where ``RUSAGE_THREAD`` is missing (not Linux).

    >>> len(cpu_counters()) == len(HOST_CPU_FIELDS)
    True
    """
    try:
        import resource
        th = resource.getrusage(resource.RUSAGE_THREAD)
        pr = resource.getrusage(resource.RUSAGE_SELF)
    except (ImportError, AttributeError, OSError):
        return (0.0,) * len(HOST_CPU_FIELDS)
    return (time.thread_time(), time.process_time(), float(th.ru_nvcsw), float(th.ru_nivcsw), float(pr.ru_nivcsw))


class GcClock:
    """Seconds spent in Python's cyclic garbage collector since :meth:`take` (a ``gc.callbacks`` hook).

    >>> clock = GcClock(); _ = gc.collect(); clock.take() > 0
    True
    >>> clock.close()
    """

    def __init__(self) -> None:
        self._t0 = 0.0
        self._total = 0.0
        gc.callbacks.append(self._hook)

    def _hook(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self._total += time.perf_counter() - self._t0

    def take(self) -> float:
        total, self._total = self._total, 0.0
        return total

    def close(self) -> None:
        gc.callbacks.remove(self._hook)


#: per-rank allocator counters recorded in the row (torch.cuda.memory_stats): retries after a failed
#: cudaMalloc (each frees cached blocks and synchronises the device) and device-wide synchronisations
ALLOC_COUNTERS = ("num_alloc_retries", "num_sync_all_streams", "num_device_alloc", "num_device_free")


def _current_cpu() -> int:
    """The logical CPU this thread runs on now (field 39 of /proc/thread-self/stat; -1 where unknown)."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def physical_cores(cpus) -> list:
    """The logical CPUs of ``cpus`` grouped by physical core (SMT siblings together), in core order.

    >>> physical_cores([0, 1])[0][0] in (0, 1)
    True
    """
    groups: dict = {}
    for c in sorted(cpus):
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                key = f.read().strip()
        except OSError:
            key = str(c)
        groups.setdefault(key, []).append(c)
    return sorted(groups.values(), key=lambda g: g[0])


def bind_cpus(mode: str, local_rank: int, local_world: int) -> list:
    """``cores``: give this local rank its own physical cores (an equal share of the CPUs it may use, SMT
    siblings kept together) so that no two ranks' hosts share a core; ``inherit``: leave the OS's placement.
    Returns the CPUs this process may run on afterwards."""
    if mode == "cores" and hasattr(os, "sched_setaffinity"):
        cores = physical_cores(os.sched_getaffinity(0))
        share = max(1, len(cores) // max(local_world, 1))
        mine = cores[local_rank * share:(local_rank + 1) * share] or cores[-share:]
        os.sched_setaffinity(0, [c for g in mine for c in g])
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def timed_steps(args, launch: Launch, trainer: Trainer):
    """Warm-up, then timed steps, each bracketed by a device sync: (losses, step seconds, host-issue seconds)."""
    if launch.device_kind == "cuda":
        torch.cuda.reset_peak_memory_stats(launch.device)
    losses, times, issue = [], [], []
    cuda = launch.device_kind == "cuda"
    clock = GcClock()
    # --gc step: no collection inside a step, one between steps (outside the timed region), as torchtitan's and
    # Megatron's training loops manage Python's collector; auto: Python collects whenever its thresholds say
    manual_gc = getattr(args, "gc", "auto") == "step"
    if manual_gc:
        gc.collect()
        gc.disable()
    counters = None
    history = getattr(args, "memory_history", None) if cuda else None
    if history:  # the allocator's event trace over the first three steps (docs/validation.md 6q)
        torch.cuda.memory._record_memory_history(max_entries=400000)
    try:
        for i in range(args.warmup + args.steps):
            if history and i < 4:  # a marker allocation per step start: (i + 1) x 512 bytes, found in the trace
                torch.empty((i + 1) * 512, dtype=torch.uint8, device=launch.device)
            if i == args.warmup:  # every thread of the process exists by now (autograd's start at the first backward)
                counters = ThreadCounters()
            if i == args.warmup and launch.distributed:
                launch.sync()
                dist.barrier()
            launch.sync()
            # the host's speed right before the step (outside its timed window; the GPU is idle here)
            probe = host_speed_probe(launch.device) if getattr(args, "host_probe", True) else (0.0, 0.0, 0.0)
            if manual_gc:
                gc.collect(1)
            clock.take()
            if cuda:  # the allocator's peak per step (warm-up included): which step sets the run's peak
                torch.cuda.reset_peak_memory_stats(launch.device)
            c0 = cpu_counters()
            p0 = counters.read() if counters is not None else (0.0, 0.0)
            t = time.perf_counter()
            loss = trainer.step(i)
            t_issued = time.perf_counter()  # the host has issued the whole step (no sync inside it)
            c1 = cpu_counters()
            p1 = counters.read() if counters is not None else (0.0, 0.0)
            launch.sync()
            dt = time.perf_counter() - t
            CPUS_SEEN.add(_current_cpu())
            if cuda:
                STEP_PEAKS.append((float(torch.cuda.max_memory_allocated(launch.device)),
                                   float(torch.cuda.max_memory_reserved(launch.device))))
            if i >= args.warmup:
                times.append(dt)
                issue.append(t_issued - t)
                GC_PAUSES.append(clock.take())
                OPT_WINDOWS.append((trainer.opt_window[0] - t, trainer.opt_window[1] - t))
                HOST_CPU.append(tuple(b - a for a, b in zip(c0, c1)))
                HOST_PROBE.append(tuple(probe))
                HOST_PMU.append((p1[0] - p0[0], p1[1] - p0[1]))
            losses.append(loss)
            if history and i == 2:
                torch.cuda.memory._dump_snapshot(f"{history}.rank{launch.rank}.pickle")
                torch.cuda.memory._record_memory_history(enabled=None)
                history = None
            if i < args.warmup:
                _log(launch.rank, f"warm-up step {i + 1}/{args.warmup}: {dt * 1e3:.1f} ms")
    finally:  # the collector comes back even if a step fails
        clock.close()
        if counters is not None:
            counters.close()
        if manual_gc:
            gc.enable()
    return losses, times, issue


# --------------------------------------------------------------------------------------------------
# Running: what is measured, the row
# --------------------------------------------------------------------------------------------------

@dataclass
class Measured:
    """What the timed loop measured, over all ranks."""

    losses: list
    """loss of every step (warm-up included), from its owners"""
    step_times: list
    """seconds of every timed step, slowest rank"""
    peak_bytes: float
    """max over ranks of torch.cuda.max_memory_allocated (0 on CPU)"""
    times_rank0: list
    """this rank's step seconds (the row is written by rank 0)"""
    issue_rank0: list
    """this rank's host seconds until the step was issued"""
    issue_ranks: list = None
    """every rank's host seconds until the step was issued, [rank][step] (the skew between the ranks' hosts)"""
    reserved_bytes: float = 0.0
    """max over ranks of torch.cuda.max_memory_reserved: what the caching allocator took from the driver"""
    gc_ranks: list = None
    """every rank's seconds in Python's garbage collector during each timed step, [rank][step]"""
    opt_ranks: list = None
    """every rank's host seconds from each timed step's start to its optimizer call and to that call's return,
    [rank][step] = [start, end] (how long the optimizer holds the host, and what the GPU still runs after it)"""
    cpu_ranks: list = None
    """every rank's host CPU counters over each timed step's issue, [rank][step] = HOST_CPU_FIELDS"""
    probe_ranks: list = None
    """every rank's host speed probe before each timed step, [rank][step] = HOST_PROBE_FIELDS"""
    pmu_ranks: list = None
    """every rank's (instructions, cycles) of its process's threads over each timed step's issue, [rank][step]"""
    host_ranks: list = None
    """every rank's CPU placement (allowed CPUs, CPUs the main thread was seen on) and allocator counters"""
    device_used_bytes: float = 0.0
    """max over ranks of (total - free) device memory at the end (cudaMemGetInfo): the reserved
    memory plus the CUDA context, cuBLAS/NCCL workspaces and anything allocated outside torch"""


def gather(launch: Launch, losses: list, times: list, issue: list) -> Measured:
    """Slowest rank per step; loss from its owners (tp rank 0 of the last stage; mean over dp); peak memory."""
    device, device_kind = launch.device, launch.device_kind
    owner = launch.groups.tp_rank == 0 and losses[0] is not None
    loss_vec = torch.tensor([float(l) if l is not None else 0.0 for l in losses], dtype=torch.float64)
    cnt = torch.tensor([1.0 if owner else 0.0], dtype=torch.float64)
    tvec = torch.tensor(times, dtype=torch.float64)
    if device_kind == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        # the run's peaks are the largest of the per-step peaks (the statistics are reset at every step)
        mem = [max([a for a, _ in STEP_PEAKS] + [float(torch.cuda.max_memory_allocated(device))]),
               max([r for _, r in STEP_PEAKS] + [float(torch.cuda.max_memory_reserved(device))]),
               float(total - free)]
    else:
        mem = [0.0, 0.0, 0.0]
    peak = torch.tensor(mem, dtype=torch.float64)
    if not owner:
        loss_vec.zero_()
    if launch.distributed:
        comm_dev = device if device_kind == "cuda" else torch.device("cpu")
        ts = [loss_vec.to(comm_dev), cnt.to(comm_dev)]
        for t_ in ts:
            dist.all_reduce(t_, op=dist.ReduceOp.SUM)
        mx = [tvec.to(comm_dev), peak.to(comm_dev)]
        for t_ in mx:
            dist.all_reduce(t_, op=dist.ReduceOp.MAX)
        loss_vec, cnt, tvec, peak = ts[0].cpu(), ts[1].cpu(), mx[0].cpu(), mx[1].cpu()
        # every rank's host issue times (one small gather after the timed steps; on the device as NCCL needs)
        n = len(issue)
        opt_flat = [v for w in OPT_WINDOWS[-n:] for v in w]
        k = len(HOST_CPU_FIELDS)
        cpu_flat = [v for w in HOST_CPU[-n:] for v in w]
        q = len(HOST_PROBE_FIELDS)
        probe_flat = [v for w in HOST_PROBE[-n:] for v in w]
        pmu_flat = [v for w in HOST_PMU[-n:] for v in w]
        iv = torch.tensor(list(issue) + GC_PAUSES[-n:] + opt_flat + cpu_flat + probe_flat + pmu_flat,
                          dtype=torch.float64, device=comm_dev)
        parts = [torch.empty_like(iv) for _ in range(launch.world)]
        dist.all_gather(parts, iv)
        issue_ranks = [p_.cpu().tolist()[:n] for p_ in parts]
        gc_ranks = [p_.cpu().tolist()[n:2 * n] for p_ in parts]
        opt_ranks = [[list(w) for w in zip(p_.cpu().tolist()[2 * n:4 * n:2], p_.cpu().tolist()[2 * n + 1:4 * n:2])]
                     for p_ in parts]
        cpu_ranks = [[p_.cpu().tolist()[4 * n + j * k:4 * n + (j + 1) * k] for j in range(n)] for p_ in parts]
        o = 4 * n + n * k
        probe_ranks = [[p_.cpu().tolist()[o + j * q:o + (j + 1) * q] for j in range(n)] for p_ in parts]
        o += n * q
        pmu_ranks = [[p_.cpu().tolist()[o + 2 * j:o + 2 * j + 2] for j in range(n)] for p_ in parts]
    else:
        issue_ranks = [list(issue)]
        gc_ranks = [GC_PAUSES[-len(issue):]]
        opt_ranks = [[list(w) for w in OPT_WINDOWS[-len(issue):]]]
        cpu_ranks = [[list(w) for w in HOST_CPU[-len(issue):]]]
        probe_ranks = [[list(w) for w in HOST_PROBE[-len(issue):]]]
        pmu_ranks = [[list(w) for w in HOST_PMU[-len(issue):]]]
    host_ranks = _gather_host_facts(launch, comm_dev if launch.distributed else None)
    return Measured(losses=(loss_vec / max(cnt.item(), 1.0)).tolist(), step_times=tvec.tolist(),
                    peak_bytes=peak[0].item(), reserved_bytes=peak[1].item(), device_used_bytes=peak[2].item(),
                    times_rank0=times, issue_rank0=issue, issue_ranks=issue_ranks, host_ranks=host_ranks,
                    gc_ranks=gc_ranks, opt_ranks=opt_ranks, cpu_ranks=cpu_ranks, probe_ranks=probe_ranks,
                    pmu_ranks=pmu_ranks)


def _gather_host_facts(launch: Launch, comm_dev) -> list:
    """Every rank's CPU placement and allocator counters: [{cpus_allowed, cpus_seen, counters}] by rank."""
    ncpu = os.cpu_count() or 1
    stats = torch.cuda.memory_stats(launch.device) if launch.device_kind == "cuda" else {}
    vec = [float(stats.get(k, -1)) for k in ALLOC_COUNTERS]
    allowed = [0.0] * ncpu
    seen = [0.0] * ncpu
    for c in CPU_BINDING.get("cpus", []):
        if 0 <= c < ncpu:
            allowed[c] = 1.0
    for c in CPUS_SEEN:
        if 0 <= c < ncpu:
            seen[c] = 1.0
    mine = torch.tensor(vec + allowed + seen, dtype=torch.float64)
    if comm_dev is not None:
        mine = mine.to(comm_dev)
        parts = [torch.empty_like(mine) for _ in range(launch.world)]
        dist.all_gather(parts, mine)
        rows = [p_.cpu().tolist() for p_ in parts]
    else:
        rows = [mine.tolist()]
    k = len(ALLOC_COUNTERS)
    return [{"cpus_allowed": [i for i, x in enumerate(r[k:k + ncpu]) if x > 0],
             "cpus_seen": [i for i, x in enumerate(r[k + ncpu:]) if x > 0],
             **{c: int(v) for c, v in zip(ALLOC_COUNTERS, r[:k])}} for r in rows]


def result_row(args, sc: Scenario, launch: Launch, *, impl: dict, dtype_name: str, n_params: int,
               setup_s: float, meas: Measured) -> dict:
    """The ``train_step`` row: the run's configuration, software, and the measured step times and losses."""
    tr, m = sc.training, sc.model
    device, device_kind = launch.device, launch.device_kind
    times_max = meas.step_times
    med = statistics.median(times_max)
    tokens = tr.global_batch * m.seq_len
    row = {
        "kind": "train_step",
        "schema": SCHEMA_VERSION,
        "status": "ok",
        "scenario": sc.name,
        "scenario_file": str(args.scenario),
        "overrides": list(args.set or []),
        "run_id": args.run_id or os.environ.get("CLUSTERSIM_RUN_ID"),
        "device": device_kind,
        "gpu": torch.cuda.get_device_name(device) if device_kind == "cuda" else platform.processor() or "cpu",
        "gpu_count_visible": torch.cuda.device_count() if device_kind == "cuda" else 0,
        "host": socket.gethostname(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "nccl_version": _nccl_version() if device_kind == "cuda" else None,
        "backend": (dist.get_backend() if launch.distributed else None),
        "python": platform.python_version(),
        "world_size": launch.world,
        "launcher": launch.info["launcher"],
        "env": {k: os.environ[k] for k in ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO",
                                             "TORCH_NCCL_AVOID_RECORD_STREAMS", "CUDA_DEVICE_MAX_CONNECTIONS")
                if k in os.environ},
        "implementation": impl,
        "dtype": dtype_name,
        "params_total": n_params,
        "micro_batches": sc.micro_batches,
        "tokens_per_step": tokens,
        "warmup": args.warmup,
        "steps": args.steps,
        "step_time_s": med,
        "step_time_s_min": min(times_max),
        "step_time_s_max": max(times_max),
        "step_time_s_mean": statistics.fmean(times_max),
        "step_times_s": times_max,
        "step_times_rank0_s": meas.times_rank0,
        # host seconds from the step's start until the last kernel of the step was issued (rank 0):
        # equal to the step time when the step is bound by the CPU that issues the kernels
        "host_issue_s_rank0": meas.issue_rank0,
        "host_issue_s_ranks": meas.issue_ranks,
        "cpu_affinity": CPU_BINDING.get("mode", "inherit"),
        "gc_mode": getattr(args, "gc", "auto"),
        "sync_mode": SYNC_MODE["mode"],
        "gc_s_ranks": meas.gc_ranks,
        # host seconds from the step's start to the optimizer call and to its return, [rank][step] = [start, end]
        "optimizer_host_s_ranks": meas.opt_ranks,
        # per rank and step, over the step's issue: main thread and process CPU seconds, the main thread's
        # voluntary / involuntary context switches, the process's involuntary ones (HOST_CPU_FIELDS)
        "host_cpu_fields": list(HOST_CPU_FIELDS),
        "host_cpu_ranks": meas.cpu_ranks,
        # per rank and step, just before the step: the host's speed on three fixed workloads (us per call,
        # HOST_PROBE_FIELDS): how fast this rank's CPU ran then
        "host_probe_fields": list(HOST_PROBE_FIELDS),
        "host_probe_ranks": meas.probe_ranks,
        # per rank and step, over the step's issue: instructions retired and CPU cycles of the process's threads
        # (hardware counters; zeros where the VM has none): more work, or the same work slower
        "host_pmu_ranks": meas.pmu_ranks,
        # per rank: logical CPUs allowed and seen, allocator retries / device-wide syncs (rank skew diagnosis)
        "host_ranks": meas.host_ranks,
        "forced_ddp": bool(args.force_ddp),
        "wall_s_rank0": sum(meas.times_rank0),
        "tokens_per_s": tokens / med,
        "samples_per_s": tr.global_batch / med,
        "peak_memory_bytes": int(meas.peak_bytes) if device_kind == "cuda" else None,
        # rank 0's allocator peak of every step, warm-up steps first (bytes)
        "peak_memory_bytes_per_step_rank0": [int(a) for a, _ in STEP_PEAKS] if device_kind == "cuda" else None,
        "peak_reserved_bytes": int(meas.reserved_bytes) if device_kind == "cuda" else None,
        "device_used_bytes": int(meas.device_used_bytes) if device_kind == "cuda" else None,
        "losses": meas.losses,
        "setup_s": setup_s,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "scenario_resolved": sc.model_dump(mode="json"),
    }
    if not all(math.isfinite(x) for x in meas.losses):
        row["status"] = "nonfinite_loss"
    return row


def _log_result(rank: int, sc: Scenario, meas: Measured) -> None:
    times_max, step_losses = meas.step_times, meas.losses
    med = statistics.median(times_max)
    tokens = sc.training.global_batch * sc.model.seq_len
    _log(rank, f"{sc.name}: step {med * 1e3:.1f} ms (min {min(times_max) * 1e3:.1f}, max "
               f"{max(times_max) * 1e3:.1f}), {tokens / med:,.0f} tokens/s, peak "
               f"{(meas.peak_bytes / 2**30):.2f} GiB, loss {step_losses[0]:.4f} -> {step_losses[-1]:.4f}")


# --------------------------------------------------------------------------------------------------
# Running: the whole run
# --------------------------------------------------------------------------------------------------

def run(args) -> int:
    sc = load_model(Scenario, args.scenario, args.set)
    dtype_name = check_supported(sc)
    if torch is None:
        raise Unsupported("torch is not installed")
    launch = start(args, sc, dtype_name)

    t0 = time.perf_counter()
    loss_fn = make_loss(sc, launch)
    model, n_params = build_model(sc, launch, getattr(torch, dtype_name))
    parallel = wrap_parallel(sc, args, launch, model, loss_fn)
    del model  # with pp > 1 only this rank's chunks (held by `parallel`) may keep their weights
    params = optimizer_params(parallel.params_modules)
    opt = make_optimizer(sc.training, params)
    setup_s = time.perf_counter() - t0

    data = synthetic_batches(sc, args, launch)
    trainer = Trainer(sc, launch, parallel, opt, params, data, loss_fn)
    losses, times, issue = timed_steps(args, launch, trainer)
    meas = gather(launch, losses, times, issue)

    if launch.rank == 0:
        append_row(args.output, result_row(args, sc, launch, impl=parallel.impl, dtype_name=dtype_name,
                                           n_params=n_params, setup_s=setup_s, meas=meas))
        _log_result(launch.rank, sc, meas)
    if launch.distributed:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", help="scenario YAML file (clustersim schema)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a scenario field, e.g. --set model.layers=2 (repeatable)")
    ap.add_argument("--steps", type=int, default=8, help="timed steps (default 8)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed warm-up steps (default 3)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None, help="default: cuda if available")
    ap.add_argument("-o", "--output", required=True, help="JSON lines file; rows are appended")
    ap.add_argument("--run-id", default=None, help="tag stored in the row")
    ap.add_argument("--force-ddp", action="store_true",
                    help="one process only: initialise a one-rank process group and wrap the model in DDP anyway "
                         "(measures the host cost the distributed machinery adds; recorded in the row)")
    ap.add_argument("--dist-timeout", type=int, default=300, help="process-group timeout in seconds")
    ap.add_argument("--memory-history", metavar="PATH",
                    help="record the CUDA allocator's event trace over the first three steps and write it to "
                         "PATH.rankN.pickle (torch.cuda.memory snapshot; a (i + 1) x 512-byte marker allocation at "
                         "the start of step i)")
    ap.add_argument("--no-host-probe", dest="host_probe", action="store_false",
                    help="skip the host speed probe between steps (host_probe_ranks: zeros)")
    ap.add_argument("--sync", choices=["spin", "blocking"], default="spin",
                    help="how the host waits for the GPU between steps: spin (CUDA's default, a CPU busy while it "
                         "waits) or blocking (the thread sleeps on a blocking event)")
    ap.add_argument("--gc", choices=["auto", "step"], default="auto",
                    help="auto: Python's garbage collector runs when its thresholds say, inside steps too (default); "
                         "step: collector off inside steps, one collection between steps, outside the timed region "
                         "(as torchtitan and Megatron manage it); each step's collector time is recorded either way")
    ap.add_argument("--cpu-affinity", choices=["inherit", "cores"], default="inherit",
                    help="inherit: the OS places each rank's threads (default); cores: each local rank gets its "
                         "own physical cores, SMT siblings kept together (recorded in the row either way)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps must be >= 1 and --warmup >= 0")
    try:
        return run(args)
    except (ClusterSimError, Unsupported) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
