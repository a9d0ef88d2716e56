"""The reference GPT of reference/train_gpt.py as torch modules: tensor-parallel layers, the model, its weights.

- Megatron-style tensor parallelism with explicit all-reduces: ``copy_to_tp`` (identity forward,
  all-reduce backward) before a column split, ``reduce_from_tp`` (all-reduce forward, identity
  backward) after a row split; ``ColumnParallelLinear``, ``RowParallelLinear``, the vocab-parallel
  embedding and cross entropy.
- The GPT: ``Norm``, rotary tables, ``Attention`` (fused QKV, GQA, flash or eager), ``MLP`` (GELU or
  SwiGLU), ``Block``, ``Embed``, ``Head``, and ``GPTChunk`` (a contiguous piece: the whole model, or one
  pipeline stage); ``build_full`` builds the whole model, ``init_weights`` gives it GPT-2 style weights,
  ``shard_tensor`` cuts a full parameter into this TP rank's slice.

Imported by train_gpt.py (which re-exports these names) only when torch is installed.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

#: the GEMM of every linear layer inside a block (set_block_linear: FP8 scaled GEMMs); the LM head stays F.linear
_BLOCK_LINEAR = [F.linear]


def set_block_linear(fn):
    """Run the linear layers of the blocks (QKV, projection, MLP) through ``fn(x, w, b)`` (FP8: train_gpt_fp8_moe)."""
    _BLOCK_LINEAR[0] = fn


# --------------------------------------------------------------------------------------------------
# Tensor-parallel building blocks (Megatron-style, explicit all-reduces)
# --------------------------------------------------------------------------------------------------


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
        return _BLOCK_LINEAR[0](x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """y = all_reduce(x_local W_local^T) (+ b); W split by input columns over the TP group."""

    def __init__(self, inp, out, tp, group, bias):
        super().__init__()
        self.group = group
        self.weight = nn.Parameter(torch.empty(out, inp // tp))
        self.bias = nn.Parameter(torch.zeros(out)) if bias else None

    def forward(self, x):
        y = reduce_from_tp(_BLOCK_LINEAR[0](x, self.weight), self.group)
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


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


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
        if m.moe is not None:
            from train_gpt_fp8_moe import MoEMLP  # noqa: PLC0415 - next to this file, torch-only

            self.mlp = MoEMLP(m)
        else:
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
        elif name.endswith("proj.weight") or name.endswith("down.weight") or "w_down" in name:
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
