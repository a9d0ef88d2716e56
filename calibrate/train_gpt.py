#!/usr/bin/env python3
"""Reference GPT training script: executes exactly what a clustersim scenario file describes.

    python calibrate/train_gpt.py SCENARIO.yaml [--set k=v]... [--steps N] [--warmup N] \
        [--device cuda|cpu] -o RESULT.jsonl
    torchrun --standalone --nproc-per-node 2 calibrate/train_gpt.py scenarios/ref-ddp2.yaml -o out.jsonl

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
- Kernels: plain PyTorch eager, nothing fused (RoPE as neg/cat/mul/add, silu then mul, GQA by
  ``repeat_interleave``, eager attention as scale/masked_fill/softmax): the scenario field
  ``training.kernel_fusion: none`` describes it (the ``ref-*`` scenarios set it).
- Timing: ``--warmup`` steps, then ``--steps`` steps, each bracketed by ``torch.cuda.synchronize()``;
  a step's time is the slowest rank's (all-reduce MAX after the loop). Peak memory is
  ``torch.cuda.max_memory_allocated`` (max over ranks) over the whole run.

Rank 0 appends one JSON line per run to ``-o`` (flushed and fsynced); existing rows are never touched.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

# Allow running from a checkout without installing the package.
_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from clustersim.config.base import load_model  # noqa: E402
from clustersim.config.scenario import Scenario  # noqa: E402
from clustersim.errors import ClusterSimError  # noqa: E402

try:  # torch is only needed to actually run; keep the error readable
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = None  # type: ignore[assignment]


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
    if pr.params == pr.grads == pr.optimizer_states == "bf16" and not pr.master_weights:
        dtype = "bfloat16"
    elif pr.params == pr.grads == pr.optimizer_states == "fp32":
        dtype = "float32"  # fp32 everything; a master copy would be identical to the weights
    else:
        raise Unsupported(
            f"training.precision params={pr.params} grads={pr.grads} optimizer_states={pr.optimizer_states} "
            f"master_weights={pr.master_weights}: only pure bf16 (bf16/bf16/bf16, master_weights false) and "
            f"pure fp32 are implemented")
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
# Tensor-parallel building blocks (Megatron-style, explicit all-reduces)
# --------------------------------------------------------------------------------------------------

if torch is not None:

    class _CopyToTP(torch.autograd.Function):
        """Identity forward, all-reduce of the gradient backward (enters a column-parallel region)."""

        @staticmethod
        def forward(ctx, x, group):
            ctx.group = group
            return x

        @staticmethod
        def backward(ctx, g):
            g = g.contiguous()
            dist.all_reduce(g, group=ctx.group)
            return g, None

    class _ReduceFromTP(torch.autograd.Function):
        """All-reduce forward, identity backward (leaves a row-parallel region)."""

        @staticmethod
        def forward(ctx, x, group):
            x = x.contiguous()
            dist.all_reduce(x, group=group)
            return x

        @staticmethod
        def backward(ctx, g):
            return g, None

    def copy_to_tp(x, group):
        return x if group is None else _CopyToTP.apply(x, group)

    def reduce_from_tp(x, group):
        return x if group is None else _ReduceFromTP.apply(x, group)

    class ColumnParallelLinear(nn.Module):
        """y_local = x W_local^T (+ b_local); W split by output rows over the TP group."""

        def __init__(self, inp, out, tp, group, bias, input_is_parallel_copy=True):
            super().__init__()
            self.group = group
            self.weight = nn.Parameter(torch.empty(out // tp, inp))
            self.bias = nn.Parameter(torch.zeros(out // tp)) if bias else None
            self.copy = input_is_parallel_copy

        def forward(self, x):
            if self.copy:
                x = copy_to_tp(x, self.group)
            return F.linear(x, self.weight, self.bias)

    class RowParallelLinear(nn.Module):
        """y = all_reduce(x_local W_local^T) (+ b); W split by input columns over the TP group."""

        def __init__(self, inp, out, tp, group, bias):
            super().__init__()
            self.group = group
            self.weight = nn.Parameter(torch.empty(out, inp // tp))
            self.bias = nn.Parameter(torch.zeros(out)) if bias else None

        def forward(self, x):
            y = reduce_from_tp(F.linear(x, self.weight), self.group)
            return y + self.bias if self.bias is not None else y

    class VocabParallelEmbedding(nn.Module):
        """Embedding rows split by vocabulary over the TP group: masked lookup, then all-reduce."""

        def __init__(self, vocab, hidden, tp, tp_rank, group):
            super().__init__()
            self.group = group
            self.part = vocab // tp
            self.start = tp_rank * self.part
            self.weight = nn.Parameter(torch.empty(self.part, hidden))

        def forward(self, ids):
            if self.group is None:
                return F.embedding(ids, self.weight)
            local = ids - self.start
            mask = (local < 0) | (local >= self.part)
            local = local.masked_fill(mask, 0)
            out = F.embedding(local, self.weight).masked_fill(mask.unsqueeze(-1), 0.0)
            return reduce_from_tp(out, self.group)

    class _VocabParallelCE(torch.autograd.Function):
        """Cross entropy over logits split by vocabulary (Megatron's vocab-parallel cross entropy)."""

        @staticmethod
        def forward(ctx, logits, target, start, group):
            logits = logits.float()
            lmax = logits.max(dim=-1)[0]
            dist.all_reduce(lmax, op=dist.ReduceOp.MAX, group=group)
            logits = logits - lmax.unsqueeze(-1)
            part = logits.shape[-1]
            local = target - start
            mask = (local < 0) | (local >= part)
            local = local.masked_fill(mask, 0)
            tgt = logits.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(mask, 0.0)
            dist.all_reduce(tgt, group=group)
            exp = logits.exp()
            sumexp = exp.sum(dim=-1)
            dist.all_reduce(sumexp, group=group)
            loss = sumexp.log() - tgt
            softmax = exp / sumexp.unsqueeze(-1)
            ctx.save_for_backward(softmax, local, mask)
            return loss

        @staticmethod
        def backward(ctx, g):
            softmax, local, mask = ctx.saved_tensors
            grad = softmax
            onehot = torch.zeros_like(grad).scatter_(-1, local.unsqueeze(-1), 1.0)
            onehot = onehot.masked_fill(mask.unsqueeze(-1), 0.0)
            grad = (grad - onehot) * g.unsqueeze(-1)
            return grad, None, None, None

    # ----------------------------------------------------------------------------------------------
    # The model
    # ----------------------------------------------------------------------------------------------

    class Norm(nn.Module):
        def __init__(self, h, kind, bias):
            super().__init__()
            self.kind = kind
            self.weight = nn.Parameter(torch.ones(h))
            self.bias = nn.Parameter(torch.zeros(h)) if (bias and kind == "layernorm") else None

        def forward(self, x):
            if self.kind == "layernorm":
                return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)
            return F.rms_norm(x, (x.shape[-1],), self.weight, 1e-5)

    def rope_tables(seq, hd, device, dtype):
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
        ang = torch.cat([ang, ang], dim=-1)
        return ang.cos().to(dtype), ang.sin().to(dtype)

    def apply_rope(x, cos, sin):  # x: [b, heads, s, hd]
        x1, x2 = x.chunk(2, dim=-1)
        rot = torch.cat([-x2, x1], dim=-1)
        return x * cos + rot * sin

    class Attention(nn.Module):
        def __init__(self, m, tp, group):
            super().__init__()
            self.hd = m.hidden // m.heads
            self.nh, self.nkv = m.heads // tp, m.kv_heads // tp
            self.qkv = ColumnParallelLinear(m.hidden, (m.heads + 2 * m.kv_heads) * self.hd, tp, group, m.bias)
            self.proj = RowParallelLinear(m.heads * self.hd, m.hidden, tp, group, m.bias)
            self.flash = m.attention == "flash"
            self.rope = m.position_embedding == "rope"

        def forward(self, x, rope=None):
            b, s, _ = x.shape
            qkv = self.qkv(x)
            q, k, v = qkv.split([self.nh * self.hd, self.nkv * self.hd, self.nkv * self.hd], dim=-1)
            q = q.view(b, s, self.nh, self.hd).transpose(1, 2)
            k = k.view(b, s, self.nkv, self.hd).transpose(1, 2)
            v = v.view(b, s, self.nkv, self.hd).transpose(1, 2)
            if self.rope:
                q, k = apply_rope(q, *rope), apply_rope(k, *rope)
            if self.nkv != self.nh:
                rep = self.nh // self.nkv
                k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            if self.flash:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
                causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(causal, float("-inf"))
                y = F.softmax(scores, dim=-1) @ v
            y = y.transpose(1, 2).reshape(b, s, self.nh * self.hd)
            return self.proj(y)

    class MLP(nn.Module):
        def __init__(self, m, tp, group):
            super().__init__()
            self.swiglu = m.mlp == "swiglu"
            if self.swiglu:
                # gate and up are two separate column-parallel matrices (3 matrices in all)
                self.gate = ColumnParallelLinear(m.hidden, m.ffn_hidden, tp, group, m.bias, input_is_parallel_copy=False)
                self.up = ColumnParallelLinear(m.hidden, m.ffn_hidden, tp, group, m.bias, input_is_parallel_copy=False)
            else:
                self.up = ColumnParallelLinear(m.hidden, m.ffn_hidden, tp, group, m.bias)
            self.down = RowParallelLinear(m.ffn_hidden, m.hidden, tp, group, m.bias)
            self.group = group

        def forward(self, x):
            if self.swiglu:
                x = copy_to_tp(x, self.group)  # one entry into the TP region for both matrices
                return self.down(F.silu(self.gate(x)) * self.up(x))
            return self.down(F.gelu(self.up(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self, m, tp, group, recompute):
            super().__init__()
            self.ln1 = Norm(m.hidden, m.norm, m.bias)
            self.attn = Attention(m, tp, group)
            self.ln2 = Norm(m.hidden, m.norm, m.bias)
            self.mlp = MLP(m, tp, group)
            self.recompute = recompute

        def _f(self, x, rope):
            x = x + self.attn(self.ln1(x), rope)
            return x + self.mlp(self.ln2(x))

        def forward(self, x, rope=None):
            if self.recompute and self.training:
                from torch.utils.checkpoint import checkpoint
                return checkpoint(self._f, x, rope, use_reentrant=False)
            return self._f(x, rope)

    class Embed(nn.Module):
        def __init__(self, m, tp, tp_rank, group, vocab_parallel):
            super().__init__()
            vp = vocab_parallel and group is not None
            self.tok = VocabParallelEmbedding(m.vocab, m.hidden, tp if vp else 1, tp_rank if vp else 0,
                                              group if vp else None)
            self.pos = nn.Parameter(torch.empty(m.seq_len, m.hidden)) if m.position_embedding == "learned" else None

        def forward(self, ids):
            x = self.tok(ids)
            if self.pos is not None:
                x = x + self.pos[: ids.shape[1]]
            return x

    class Head(nn.Module):
        """Final norm + LM head. Returns logits (vocab-local shard with vocab-parallel TP)."""

        def __init__(self, m, tp, group, vocab_parallel, embed_module=None):
            super().__init__()
            self.norm = Norm(m.hidden, m.norm, m.bias)
            self.vp = vocab_parallel and group is not None
            self.group = group
            self.tied = embed_module is not None
            if self.tied:
                # the embedding module, not its Parameter: FSDP swaps parameters, the module stays
                self._tied = [embed_module]  # a list, so that it is not registered as a submodule
            else:
                self.weight = nn.Parameter(torch.empty(m.vocab // tp if self.vp else m.vocab, m.hidden))

        def lm_weight(self):
            return self._tied[0].weight if self.tied else self.weight

        def forward(self, x):
            x = self.norm(x)
            if self.vp:
                x = copy_to_tp(x, self.group)
            return F.linear(x, self.lm_weight())

    class GPTChunk(nn.Module):
        """A contiguous piece of the GPT: [embedding] + blocks + [final norm and LM head]. The whole model is one chunk."""

        def __init__(self, m, blocks, embed=None, head=None):
            super().__init__()
            self.embed = embed
            self.blocks = nn.ModuleList(blocks)
            self.head = head
            self.rope = m.position_embedding == "rope"
            self.seq, self.hd = m.seq_len, m.hidden // m.heads
            self._rope_cache = None

        def _rope(self, x):
            if not self.rope:
                return None
            s = x.shape[1]
            c = self._rope_cache
            if c is None or c[0].shape[0] != s or c[0].device != x.device or c[0].dtype != x.dtype:
                c = rope_tables(s, self.hd, x.device, x.dtype)
                self._rope_cache = c
            return c

        def forward(self, x):
            if self.embed is not None:
                x = self.embed(x)
            rope = self._rope(x)
            for b in self.blocks:
                x = b(x, rope)
            if self.head is not None:
                x = self.head(x)
            return x

    def build_full(m, tp, tp_rank, group, vocab_parallel, recompute):
        embed = Embed(m, tp, tp_rank, group, vocab_parallel)
        blocks = [Block(m, tp, group, recompute) for _ in range(m.layers)]
        head = Head(m, tp, group, vocab_parallel, embed.tok if m.tied_embeddings else None)
        return GPTChunk(m, blocks, embed, head)

    def init_weights(model, m):
        """GPT-2 style: N(0, 0.02), output projections N(0, 0.02/sqrt(2L)), biases 0, norms 1."""
        std_out = 0.02 / math.sqrt(2 * m.layers)
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or ".ln1." in name or ".ln2." in name:
                if name.endswith("weight"):
                    nn.init.ones_(p)
                else:
                    nn.init.zeros_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            elif name.endswith("proj.weight") or name.endswith("down.weight"):
                nn.init.normal_(p, 0.0, std_out)
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def shard_tensor(name, full, m, tp, tp_rank, vocab_parallel):
        """The TP-local slice of a full (tp=1) parameter."""
        if tp == 1:
            return full
        hd = m.hidden // m.heads

        def rows(t, n):
            return t.chunk(tp, dim=0)[tp_rank] if t.shape[0] == n else t

        if ".attn.qkv." in name:
            q, k, v = full.split([m.heads * hd, m.kv_heads * hd, m.kv_heads * hd], dim=0)
            return torch.cat([q.chunk(tp, 0)[tp_rank], k.chunk(tp, 0)[tp_rank], v.chunk(tp, 0)[tp_rank]], dim=0)
        if name.endswith("attn.proj.weight") or name.endswith("mlp.down.weight"):
            return full.chunk(tp, dim=1)[tp_rank]
        if name.endswith("attn.proj.bias") or name.endswith("mlp.down.bias"):
            return full
        if ".mlp.up." in name or ".mlp.gate." in name:
            return full.chunk(tp, dim=0)[tp_rank]
        if name in ("embed.tok.weight", "head.weight"):
            return full.chunk(tp, dim=0)[tp_rank] if vocab_parallel else full
        return full


# --------------------------------------------------------------------------------------------------
# Running
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


def run(args) -> int:
    sc = load_model(Scenario, args.scenario, args.set)
    dtype_name = check_supported(sc)
    if torch is None:
        raise Unsupported("torch is not installed")
    m, tr, par = sc.model, sc.training, sc.parallelism

    info = discover_ranks()
    rank, world, local_rank = info["rank"], info["world_size"], info["local_rank"]
    if sc.world_size != world:
        raise Unsupported(f"the scenario needs dp*tp*pp = {sc.world_size} processes, launched with {world} "
                          f"(use torchrun --nproc-per-node {sc.world_size})")
    if sc.cluster.gpus is not None and sc.cluster.gpus != world:
        raise Unsupported(f"cluster.gpus ({sc.cluster.gpus}) differs from the process count ({world})")

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
    dtype = getattr(torch, dtype_name)
    unfused_features = [f for f, on in (("rope", m.position_embedding == "rope"), ("swiglu", m.mlp == "swiglu"),
                                        ("GQA", m.kv_heads != m.heads), ("eager attention", m.attention == "eager"))
                        if on]
    if tr.kernel_fusion == "fused" and unfused_features:
        _log(rank, f"note: this script runs {', '.join(unfused_features)} as separate PyTorch kernels; the scenario "
                   "says training.kernel_fusion: fused, so `clustersim run` models fused kernels (set it to none)")

    if args.force_ddp and (world != 1 or par.pp > 1 or par.tp > 1 or par.zero):
        raise Unsupported("--force-ddp is for one process without tp, pp or zero (a host-cost probe)")
    distributed = world > 1 or args.force_ddp
    if distributed:
        backend = "nccl" if device_kind == "cuda" else "gloo"
        kw = {"device_id": device} if device_kind == "cuda" else {}
        dist.init_process_group(backend=backend, rank=rank, world_size=world,
                                timeout=_dt.timedelta(seconds=args.dist_timeout), **kw)
    groups = Groups(par, rank, world, distributed)
    tp_group = groups.groups["tp"]
    seed = sc.simulation.seed

    # ---- model: the full model with one seed everywhere, then this rank's shard/part ----
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    with torch.device(device):
        full = build_full(m, 1, 0, None, False, tr.recompute == "full")
    init_weights(full, m)
    n_params = count_params(full)
    if par.tp > 1:
        with torch.device(device):
            model = build_full(m, par.tp, groups.tp_rank, tp_group, par.vocab_parallel, tr.recompute == "full")
        full_sd = full.state_dict()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(shard_tensor(name, full_sd[name], m, par.tp, groups.tp_rank, par.vocab_parallel))
        del full, full_sd
    else:
        model = full
        del full  # only `model` may hold the weights (PP drops the chunks of other ranks below)
    model = model.to(dtype)
    model.train()

    # ---- parallel wrapping ----
    stages, schedule, ddp, n_chunks = [], None, None, 1
    impl = {}
    if par.pp > 1:
        from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                                  ScheduleInterleaved1F1B)
        v = par.virtual_stages if par.schedule == "interleaved" else 1
        nchunks = par.pp * v
        per = m.layers // nchunks
        blocks = list(model.blocks)
        for c in range(nchunks):
            if c % par.pp != groups.pp_rank:
                continue
            chunk = GPTChunk(m, blocks[c * per:(c + 1) * per],
                             embed=model.embed if c == 0 else None,
                             head=model.head if c == nchunks - 1 else None)
            stages.append((c, chunk))
        n_chunks = nchunks
        del model, blocks
        pp_group = groups.groups["pp"]
        pstages = [PipelineStage(chunk, c, nchunks, device, group=pp_group) for c, chunk in stages]

        def loss_fn(logits, target):  # the schedule scales by the micro-batch count itself
            return mb_loss(logits, target)

        n_mb = sc.micro_batches
        if par.schedule == "gpipe":
            schedule = ScheduleGPipe(pstages[0], n_mb, loss_fn=loss_fn)
        elif par.schedule == "1f1b":
            schedule = Schedule1F1B(pstages[0], n_mb, loss_fn=loss_fn)
        else:
            schedule = ScheduleInterleaved1F1B(pstages, n_mb, loss_fn=loss_fn)
        params_modules = [chunk for _, chunk in stages]
        impl["pp"] = f"torch.distributed.pipelining {type(schedule).__name__}, {nchunks} chunks of {per} layers"
        if par.dp > 1:
            impl["dp"] = (f"gradients all-reduced over the dp group after the pipeline step, buckets of "
                          f"{par.ddp_bucket_mb} MB")
        train_module = None
    elif par.zero == 3 and par.dp > 1:
        try:
            from torch.distributed.fsdp import fully_shard  # FSDP2
            for b in model.blocks:
                fully_shard(b, mesh=None)
            fully_shard(model)
            impl["dp"] = "FSDP2 fully_shard per block + root, reshard_after_forward=True"
            train_module = model
        except ImportError:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            from torch.distributed.fsdp.wrap import ModuleWrapPolicy
            train_module = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}),
                                device_id=device if device_kind == "cuda" else None, use_orig_params=True)
            impl["dp"] = "FSDP1 FULL_SHARD, Block wrap policy"
        params_modules = [train_module]
    elif par.dp > 1 or args.force_ddp:
        ddp = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if device_kind == "cuda" else None,
            process_group=groups.groups["dp"], bucket_cap_mb=par.ddp_bucket_mb)
        train_module = ddp
        params_modules = [ddp]
        impl["dp"] = f"DistributedDataParallel bucket_cap_mb={par.ddp_bucket_mb}, no_sync on accumulation micro-batches"
        if args.force_ddp:
            impl["dp"] += " (--force-ddp: one-rank process group, a host-cost probe)"
    else:
        train_module = model
        params_modules = [model]
    if par.tp > 1:
        impl["tp"] = ("own Megatron-style column/row-parallel linears, explicit all-reduces; "
                      + ("vocab-parallel embedding + LM head + cross entropy" if par.vocab_parallel
                         else "embedding and LM head replicated"))

    params = []
    seen = set()
    for mod in params_modules:
        for p in mod.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    if tr.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8)
    else:
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.0)
    setup_s = time.perf_counter() - t0

    # ---- synthetic data (pre-generated; same for TP/PP ranks of one DP rank) ----
    n_mb = sc.micro_batches
    total_steps = args.warmup + args.steps
    # The global batch of every step is drawn with one seed; DP rank d takes sequences
    # [d*B/dp, (d+1)*B/dp), so every parallel layout sees the same data as the single-GPU run.
    gen = torch.Generator(device="cpu").manual_seed(seed)
    data = torch.randint(0, m.vocab, (total_steps, tr.global_batch, m.seq_len + 1), generator=gen)
    per_dp = tr.global_batch // par.dp
    data = data[:, groups.dp_rank * per_dp:(groups.dp_rank + 1) * per_dp]
    data = data.reshape(total_steps, n_mb, tr.micro_batch, m.seq_len + 1).contiguous().to(device)

    vp_tp = par.tp > 1 and par.vocab_parallel

    def mb_loss(logits, tgt):
        if vp_tp:
            start = groups.tp_rank * (m.vocab // par.tp)
            return _VocabParallelCE.apply(logits.flatten(0, 1), tgt.flatten(), start, tp_group).mean()
        return F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten())

    def sync():
        if device_kind == "cuda":
            torch.cuda.synchronize()

    def reduce_dp_grads():
        """pp x dp: average the gradients over the dp group, in reverse parameter order, in flat buckets
        of ``ddp_bucket_mb`` (as DDP's buckets), after the pipeline step."""
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

        grads = [p.grad for p in reversed(params) if p.grad is not None]
        cap = par.ddp_bucket_mb * 1e6
        bucket, size = [], 0

        def flush():
            if bucket:
                flat = _flatten_dense_tensors(bucket)
                dist.all_reduce(flat, group=groups.groups["dp"])
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

    def step(i):
        opt.zero_grad(set_to_none=True)
        batch = data[i]
        if schedule is not None:
            x = batch[:, :, :-1].reshape(n_mb * tr.micro_batch, m.seq_len).contiguous()
            y = batch[:, :, 1:].reshape(n_mb * tr.micro_batch, m.seq_len).contiguous()
            losses = []
            is_first = any(c == 0 for c, _ in stages)
            is_last = any(c == n_chunks - 1 for c, _ in stages)
            if is_first and is_last:
                schedule.step(x, target=y, losses=losses)
            elif is_first:
                schedule.step(x)
            elif is_last:
                schedule.step(target=y, losses=losses)
            else:
                schedule.step()
            loss = torch.stack([l.detach().float() for l in losses]).mean() if losses else None
            if par.dp > 1:
                reduce_dp_grads()
        else:
            acc = torch.zeros((), device=device, dtype=torch.float32)
            for j in range(n_mb):
                x, y = batch[j, :, :-1], batch[j, :, 1:]
                ctx = ddp.no_sync() if (ddp is not None and j < n_mb - 1) else nullcontext()
                with ctx:
                    loss = mb_loss(train_module(x), y) / n_mb
                    loss.backward()
                acc += loss.detach().float()
            loss = acc
        opt.step()
        return loss

    if device_kind == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    losses, times, issue = [], [], []
    for i in range(total_steps):
        if i == args.warmup and distributed:
            sync()
            dist.barrier()
        sync()
        t = time.perf_counter()
        loss = step(i)
        t_issued = time.perf_counter()  # the host has issued the whole step (no sync inside it)
        sync()
        dt = time.perf_counter() - t
        if i >= args.warmup:
            times.append(dt)
            issue.append(t_issued - t)
        losses.append(loss)
        if i < args.warmup:
            _log(rank, f"warm-up step {i + 1}/{args.warmup}: {dt * 1e3:.1f} ms")
    wall = sum(times)

    # ---- gather: slowest rank per step; loss from its owners (tp rank 0 of last stage; mean over dp) ----
    owner = groups.tp_rank == 0 and losses[0] is not None
    loss_vec = torch.tensor([float(l) if l is not None else 0.0 for l in losses], dtype=torch.float64)
    cnt = torch.tensor([1.0 if owner else 0.0], dtype=torch.float64)
    tvec = torch.tensor(times, dtype=torch.float64)
    peak = torch.tensor([float(torch.cuda.max_memory_allocated(device)) if device_kind == "cuda" else 0.0],
                        dtype=torch.float64)
    if not owner:
        loss_vec.zero_()
    if distributed:
        comm_dev = device if device_kind == "cuda" else torch.device("cpu")
        ts = [loss_vec.to(comm_dev), cnt.to(comm_dev)]
        for t_ in ts:
            dist.all_reduce(t_, op=dist.ReduceOp.SUM)
        mx = [tvec.to(comm_dev), peak.to(comm_dev)]
        for t_ in mx:
            dist.all_reduce(t_, op=dist.ReduceOp.MAX)
        loss_vec, cnt, tvec, peak = ts[0].cpu(), ts[1].cpu(), mx[0].cpu(), mx[1].cpu()
    step_losses = (loss_vec / max(cnt.item(), 1.0)).tolist()
    times_max = tvec.tolist()

    if rank == 0:
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
            "backend": (dist.get_backend() if distributed else None),
            "python": platform.python_version(),
            "world_size": world,
            "launcher": info["launcher"],
            "env": {k: os.environ[k] for k in ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO",
                                                 "CUDA_DEVICE_MAX_CONNECTIONS") if k in os.environ},
            "implementation": impl,
            "dtype": dtype_name,
            "params_total": n_params,
            "micro_batches": n_mb,
            "tokens_per_step": tokens,
            "warmup": args.warmup,
            "steps": args.steps,
            "step_time_s": med,
            "step_time_s_min": min(times_max),
            "step_time_s_max": max(times_max),
            "step_time_s_mean": statistics.fmean(times_max),
            "step_times_s": times_max,
            "step_times_rank0_s": times,
            # host seconds from the step's start until the last kernel of the step was issued (rank 0):
            # equal to the step time when the step is bound by the CPU that issues the kernels
            "host_issue_s_rank0": issue,
            "forced_ddp": bool(args.force_ddp),
            "wall_s_rank0": wall,
            "tokens_per_s": tokens / med,
            "samples_per_s": tr.global_batch / med,
            "peak_memory_bytes": int(peak.item()) if device_kind == "cuda" else None,
            "losses": step_losses,
            "setup_s": setup_s,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "scenario_resolved": sc.model_dump(mode="json"),
        }
        if not all(math.isfinite(x) for x in step_losses):
            row["status"] = "nonfinite_loss"
        append_row(args.output, row)
        _log(rank, f"{sc.name}: step {med * 1e3:.1f} ms (min {min(times_max) * 1e3:.1f}, max "
                   f"{max(times_max) * 1e3:.1f}), {tokens / med:,.0f} tokens/s, peak "
                   f"{(peak.item() / 2**30):.2f} GiB, loss {step_losses[0]:.4f} -> {step_losses[-1]:.4f}")
    if distributed:
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
