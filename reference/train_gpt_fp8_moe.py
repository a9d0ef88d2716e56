"""FP8 linear layers and mixture-of-experts MLPs of the reference program (reference/train_gpt.py).

FP8 (``training.precision.params: fp8``): every linear layer of a block (QKV, output projection,
MLP) runs its three GEMMs through ``torch._scaled_mm`` on e4m3 operands; the weights stay bf16 and
are cast on every call; the LM head, attention, norms and the optimizer stay bf16. The operand casts
are the sequence the calibration bench times (``clustersim/calibration/bench/fp8.py``:
``fp8_quantize``): absolute maximum, scale ``448 / amax``, scaled cast. ``_scaled_mm`` takes its
first operand row-major and its second column-major, so:

* ``tensorwise`` (one scale per tensor): forward casts x and W; backward casts dy, and the
  transposed copies the backward needs are FP8 transposes of the casts (``W^T``, ``dy^T``, ``x^T``);
* ``rowwise`` (one scale per row of each operand): forward casts x and W by rows; backward casts dy
  by rows for dgrad, and bf16 transposes of W, dy and x cast by rows for their GEMMs.

MoE (``model.moe``, SwiGLU experts, top-k softmax router, renormalised over the chosen experts):
``implementation: loop`` is the Hugging Face loop (``torch.where`` per expert, which waits for the
GPU) over stacked expert weights indexed per expert (transformers' GPT-OSS / Qwen3-MoE),
``loop_modules`` the same loop over one parameter per expert (Mixtral's ModuleList); ``grouped``
sorts the token copies by expert and runs one ``torch._grouped_mm`` per weight over all experts.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

E4M3_MAX = 448.0


def quantize(x, rowwise):
    """``x`` (2-D bf16) as e4m3 and the fp32 inverse scale (scalar, or ``(rows, 1)``): the bench's ``fp8_quantize``."""
    amax = (x.abs().amax(dim=1, keepdim=True) if rowwise else x.abs().max()).float().clamp(min=1e-12)
    scale = E4M3_MAX / amax
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), scale.reciprocal()


def _mm(a, sa, b_rows, sb, rowwise, dtype):
    """``a @ b_rows^T`` on FP8 tensor cores (``b_rows`` row-major, so its transpose is column-major)."""
    return torch._scaled_mm(a, b_rows.t(), scale_a=sa, scale_b=sb.t() if rowwise else sb, out_dtype=dtype)


class _Fp8Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, rowwise):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        xq, sx = quantize(x2, rowwise)
        wq, sw = quantize(w, rowwise)
        y = _mm(xq, sx, wq, sw, rowwise, x.dtype)
        ctx.rowwise, ctx.shape = rowwise, shape
        if rowwise:
            ctx.save_for_backward(x2, w)
        else:
            ctx.save_for_backward(xq, sx, wq, sw)
        return y.view(*shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, dy):
        rowwise, shape = ctx.rowwise, ctx.shape
        dy2 = dy.reshape(-1, dy.shape[-1]).contiguous()
        if rowwise:
            x2, w = ctx.saved_tensors
            dyq, sdy = quantize(dy2, True)
            wtq, swt = quantize(w.t().contiguous(), True)
            dx = _mm(dyq, sdy, wtq, swt, True, dy.dtype)
            dytq, sdyt = quantize(dy2.t().contiguous(), True)
            xtq, sxt = quantize(x2.t().contiguous(), True)
            dw = _mm(dytq, sdyt, xtq, sxt, True, dy.dtype)
        else:
            xq, sx, wq, sw = ctx.saved_tensors
            dyq, sdy = quantize(dy2, False)
            dx = _mm(dyq, sdy, wq.t().contiguous(), sw, False, dy.dtype)
            dw = _mm(dyq.t().contiguous(), sdy, xq.t().contiguous(), sx, False, dy.dtype)
        return dx.view(shape), dw, None


def fp8_linear(recipe):
    """A ``F.linear`` replacement (no bias) running the GEMMs in FP8 with ``recipe`` scaling."""
    rowwise = recipe == "rowwise"

    def linear(x, w, b=None):
        y = _Fp8Linear.apply(x, w, rowwise)
        return y + b if b is not None else y
    return linear


class MoEMLP(nn.Module):
    """Routed SwiGLU experts: router, top-k, the experts (loop or grouped), probability-weighted sum."""

    def __init__(self, m):
        super().__init__()
        moe = m.moe
        self.experts, self.top_k, self.f = moe.experts, moe.top_k, moe.expert_ffn_hidden
        self.loop = moe.implementation != "grouped"
        self.router = nn.Parameter(torch.empty(moe.experts, m.hidden))
        # gate and up of every expert in one (2f, h) matrix; down (h, f): stacked (grouped, loop) or one
        # parameter per expert (loop_modules, as Mixtral's ModuleList)
        if moe.implementation == "loop_modules":
            self.w_up_e = nn.ParameterList([nn.Parameter(torch.empty(2 * self.f, m.hidden)) for _ in range(moe.experts)])
            self.w_down_e = nn.ParameterList([nn.Parameter(torch.empty(m.hidden, self.f)) for _ in range(moe.experts)])
            self.w_up, self.w_down = self.w_up_e, self.w_down_e
        else:
            self.w_up = nn.Parameter(torch.empty(moe.experts, 2 * self.f, m.hidden))
            self.w_down = nn.Parameter(torch.empty(moe.experts, m.hidden, self.f))

    def forward(self, x):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        probs = torch.softmax(F.linear(x2, self.router).float(), dim=-1)
        top_p, top_i = probs.topk(self.top_k, dim=-1)
        top_p = (top_p / top_p.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = self._loop(x2, top_p, top_i) if self.loop else self._grouped(x2, top_p, top_i)
        return out.view(shape)

    def _loop(self, x2, top_p, top_i):
        out = torch.zeros_like(x2)
        f = self.f
        for e in range(self.experts):
            tok, slot = torch.where(top_i == e)
            gu = x2[tok] @ self.w_up[e].t()
            y = (F.silu(gu[:, :f]) * gu[:, f:]) @ self.w_down[e].t()
            out.index_add_(0, tok, y * top_p[tok, slot, None])  # in place, as Hugging Face's loop
        return out

    def _grouped(self, x2, top_p, top_i):
        flat = top_i.reshape(-1)
        order = flat.argsort(stable=True)
        tok = order // self.top_k
        offs = torch.bincount(flat, minlength=self.experts).cumsum(0).to(torch.int32)
        xs = x2.index_select(0, tok)
        gu = torch._grouped_mm(xs, self.w_up.transpose(1, 2), offs=offs)
        y = torch._grouped_mm(F.silu(gu[:, :self.f]) * gu[:, self.f:], self.w_down.transpose(1, 2), offs=offs)
        y = y * top_p.reshape(-1)[order, None]
        return torch.zeros_like(x2).index_add(0, tok, y)
