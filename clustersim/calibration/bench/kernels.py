"""The kernel-class sweep of ``--kernels`` (rank 0): one function per class of a transformer training step.

:func:`run_kernels` walks :func:`~clustersim.calibration.bench.plans.kernel_plan`:
SDPA causal attention (forward, forward + backward), the linears of a layer in the three
training layouts (NT, NN, TN), the memory-bound ops (:mod:`.elementwise`), materialised
("eager") attention, cross-entropy over bf16 logits, an eager attention core's batched GEMMs by shape, GEMMs
across the SMs' wave boundaries and one foreach AdamW step, then on
GPUs the sustained-clock sweeps (:mod:`.sustained`). Each point builds its tensors the
way reference/train_gpt.py does and is timed GPU-bound by
:func:`~clustersim.calibration.bench.gpu_bound.kernel_point`.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Callable

from clustersim.calibration.bench.elementwise import elementwise_sweep
from clustersim.calibration.bench.experts import run_experts
from clustersim.calibration.bench.fp8 import run_fp8
from clustersim.calibration.bench.gpu_bound import KernelKit, kernel_kit, kernel_point
from clustersim.calibration.bench.config import KERNEL_CLASSES
from clustersim.calibration.bench.plans import kernel_plan
from clustersim.calibration.bench.sustained import duty_sweep, sustained_gemm

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank

#: AdamW parameters are split into tensors of this many elements (a layer's matrices are 4-64M).
KERNEL_ADAMW_TENSOR = 1 << 23


def run_kernels(bench: BenchRank) -> None:
    """Kernel classes of a transformer training step (see :func:`kernel_plan`); ``--kernel-classes``
    (``BenchConfig.kernel_classes``) picks some of :data:`KERNEL_CLASSES`."""
    kit = kernel_kit(bench)
    plan = kernel_plan(bench.cfg)
    want = set(bench.cfg.kernel_classes or KERNEL_CLASSES)
    sweeps = {"attention": lambda: attention_sweep(kit, plan["attention"]),
              "gemm": lambda: gemm_layout_sweep(kit, plan["gemm"]),
              "elementwise": lambda: elementwise_sweep(kit, plan["elementwise"]),
              "eager_attention": lambda: eager_attention_sweep(kit, plan.get("eager_attention", ())),
              "cross_entropy": lambda: cross_entropy_sweep(kit, plan["cross_entropy"]),
              "bmm": lambda: bmm_sweep(kit, plan.get("bmm", ())),
              "wave": lambda: wave_sweep(kit, plan.get("wave", ())),
              "sustained": lambda: _sustained(bench, kit),
              "adamw": lambda: adamw_sweep(kit, plan["adamw"]),
              "fp8": lambda: run_fp8(kit),
              "experts": lambda: run_experts(kit, gemm_layout_sweep)}
    for name in KERNEL_CLASSES:
        if name in want:
            sweeps[name]()


def _sustained(bench: BenchRank, kit: KernelKit) -> None:
    """The sustained-clock sweeps (GPU, full runs only)."""
    if bench.cuda and not bench.cfg.quick:
        sustained_gemm(bench, kit.base)
        duty_sweep(bench, kit.base)


# ------------------------------------------------------------------------------------- SDPA attention
def _attention_setup(kit: KernelKit, name: str, b: int, s: int, nh: int, hd: int) -> Callable[[], None]:
    """SDPA causal attention on q, k, v views of one fused QKV tensor: forward, or forward + backward."""
    torch, F, dev, dt = kit.torch, kit.F, kit.dev, kit.dt
    grad = name != "attention_fwd"
    # q, k, v as in train_gpt: views of one fused projection output, (b, s, nh, hd) -> (b, nh, s, hd)
    qkv = torch.randn(b, s, 3, nh, hd, device=dev, dtype=dt).requires_grad_(grad)
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    # the output gradient as train_gpt's y.transpose(1, 2).reshape(b, s, h) hands it back:
    # a (b, s, nh, hd) tensor seen as (b, nh, s, hd)
    dy = torch.randn(b, s, nh, hd, device=dev, dtype=dt).transpose(1, 2)
    if not grad:
        # forward as in training (autograd on, so the backend saves what backward needs),
        # the graph dropped at once
        qkv.requires_grad_(True)

        def fwd() -> None:
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return fwd

    def fwd_bwd() -> None:
        # gradients of the q, k, v views themselves: what the attention backward returns,
        # without the scatter into the leaf (in training one concatenation, modelled apart)
        torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), dy)
    return fwd_bwd


def attention_sweep(kit: KernelKit, points: list[tuple[int, ...]]) -> None:
    """``attention_fwd`` and ``attention_fwd_bwd`` rows per (batch, seq, heads, head_dim)."""
    for b, s, nh, hd in points:
        h = nh * hd
        # as executed with the causal mask: q_i attends to keys 0..i -> s(s+1)/2 score entries per head
        causal = 4.0 * b * nh * hd * s * (s + 1) / 2
        full = 4.0 * b * nh * hd * s * s
        shape = {"batch": b, "seq": s, "heads": nh, "head_dim": hd, "hidden": h, "tokens": b * s, "causal": True}
        need = 12 * b * s * h * kit.elt + 4 * b * nh * s * 4
        for name, mult in (("attention_fwd", 1.0), ("attention_fwd_bwd", 3.5)):
            op = f"{name}:b{b}:s{s}:nh{nh}:hd{hd}"
            kernel_point(kit.bench, {**kit.base, "op": op}, {"name": name, **shape},
                         partial(_attention_setup, kit, name, b, s, nh, hd), need, flops=mult * causal,
                         extra={"flops_full": mult * full, "flops_per_fwd_causal": causal,
                                "backward_flops_factor": 2.5})


# ------------------------------------------------------------------------------------- GEMM layouts
def _gemm_setup(kit: KernelKit, layout: str, t: int, out_f: int, in_f: int) -> Callable[[], None]:
    """One linear layer's GEMM in a training layout: forward NT, dgrad NN or wgrad TN."""
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    w = torch.randn(out_f, in_f, device=dev, dtype=dt)
    if layout == "NT":
        x = torch.randn(t, in_f, device=dev, dtype=dt)
        o = torch.empty(t, out_f, device=dev, dtype=dt)
        return lambda: torch.matmul(x, w.t(), out=o)
    dy = torch.randn(t, out_f, device=dev, dtype=dt)
    if layout == "NN":
        o = torch.empty(t, in_f, device=dev, dtype=dt)
        return lambda: torch.matmul(dy, w, out=o)
    x = torch.randn(t, in_f, device=dev, dtype=dt)
    o = torch.empty(out_f, in_f, device=dev, dtype=dt)
    return lambda: torch.matmul(dy.t(), x, out=o)


def gemm_layout_sweep(kit: KernelKit, points: list[tuple[int, ...]]) -> None:
    """``gemm_nt``, ``gemm_nn`` and ``gemm_tn`` rows per (tokens, out_features, in_features, label)."""
    elt = kit.elt
    for t, out_f, in_f, label in points:
        for layout in ("NT", "NN", "TN"):
            # forward y = x W^T (NT): (t, in) x (out, in)^T; dgrad dx = dy W (NN): (t, out) x (out, in);
            # wgrad dW = dy^T x (TN): (t, out)^T x (t, in)
            m, n, k = {"NT": (t, out_f, in_f), "NN": (t, in_f, out_f), "TN": (out_f, in_f, t)}[layout]
            role = {"NT": "forward", "NN": "dgrad", "TN": "wgrad"}[layout]
            need = (t * in_f + t * out_f + 2 * out_f * in_f) * elt
            op = f"gemm_{layout}:{label}:t{t}:o{out_f}:i{in_f}"
            kernel_point(kit.bench, {**kit.base, "op": op, "m": m, "n": n, "k": k},
                         {"name": f"gemm_{layout.lower()}", "layout": layout, "role": role, "linear": label,
                          "tokens": t, "out_features": out_f, "in_features": in_f},
                         partial(_gemm_setup, kit, layout, t, out_f, in_f), need, flops=2.0 * m * n * k,
                         nbytes=(m * k + k * n + m * n) * elt)


# ------------------------------------------------------------------------------------- batched attention GEMMs
def _bmm_setup(kit: KernelKit, kind: str, bh: int, s: int, hd: int) -> Callable[[], None]:
    """One batched GEMM of an eager attention core (``clustersim.roofline.bmm_shape``)."""
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    if kind == "score":  # q k^T: (bh, s, d) x (bh, d, s)
        q, k = torch.randn(bh, s, hd, device=dev, dtype=dt), torch.randn(bh, s, hd, device=dev, dtype=dt)
        return lambda: torch.bmm(q, k.transpose(1, 2))
    p, v = torch.randn(bh, s, s, device=dev, dtype=dt), torch.randn(bh, s, hd, device=dev, dtype=dt)
    if kind == "context":  # p v: (bh, s, s) x (bh, s, d)
        return lambda: torch.bmm(p, v)
    return lambda: torch.bmm(p.transpose(1, 2), v)  # p^T dO


def bmm_sweep(kit: KernelKit, points) -> None:
    """``bmm_score``, ``bmm_context`` and ``bmm_context_t`` rows per (batch x heads, seq, head_dim)."""
    elt = kit.elt
    for bh, s, hd in points:
        for kind in ("score", "context", "context_t"):
            m, n, k = (s, s, hd) if kind == "score" else (s, hd, s)
            op = f"bmm_{kind}:bh{bh}:s{s}:d{hd}"
            kernel_point(kit.bench, {**kit.base, "op": op}, {"name": f"bmm_{kind}", "batch_heads": bh, "seq": s,
                                                             "head_dim": hd},
                         partial(_bmm_setup, kit, kind, bh, s, hd), 2 * bh * (s * s + 2 * s * hd) * elt,
                         flops=2.0 * bh * m * n * k, nbytes=bh * (m * k + k * n + m * n) * elt)


# ------------------------------------------------------------------------------------- wave boundaries
def wave_sweep(kit: KernelKit, points) -> None:
    """``wave_gemm`` rows per (layout, m, n, k): the forward (NT) or weight-gradient (TN) GEMM of an ``m x n``
    output, with the GPU's SM count (the fit reads tiles over SMs)."""
    elt = kit.elt
    sms = kit.torch.cuda.get_device_properties(kit.dev).multi_processor_count if kit.bench.cuda else 1
    for layout, m, n, k in points:
        # NT: x (m x k) @ W^T, W: n x k; TN: dy^T (m x k) @ x (k x n), the dgrad/wgrad shapes of _gemm_setup
        setup = (partial(_gemm_setup, kit, "NT", m, n, k) if layout == "NT"
                 else partial(_gemm_setup, kit, "TN", k, m, n))
        kernel_point(kit.bench, {**kit.base, "op": f"wave_gemm_{layout}:m{m}:n{n}:k{k}", "m": m, "n": n, "k": k},
                     {"name": "wave_gemm", "layout": layout, "sms": sms}, setup,
                     (m * k + k * n + 2 * m * n) * elt, flops=2.0 * m * n * k, nbytes=(m * k + k * n + m * n) * elt)


# ------------------------------------------------------------------------------------- eager attention
def _eager_attention_setup(kit: KernelKit, name: str, b: int, s: int, nh: int, hd: int) -> Callable[[], None]:
    """train_gpt's attention with ``attention: eager``, on q, k, v views of a fused QKV output."""
    torch, F, dev, dt = kit.torch, kit.F, kit.dev, kit.dt
    qkv = torch.randn(b, s, 3, nh, hd, device=dev, dtype=dt).requires_grad_(True)
    dy = torch.randn(b, s, nh, hd, device=dev, dtype=dt).transpose(1, 2)
    scale = 1.0 / math.sqrt(hd)

    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))

    def fwd():
        sc_ = (q @ k.transpose(-2, -1)) * scale
        causal = torch.ones(s, s, dtype=torch.bool, device=dev).triu(1)
        return F.softmax(sc_.masked_fill(causal, float("-inf")), dim=-1) @ v

    if name == "eager_attention_fwd":
        return fwd
    return lambda: torch.autograd.grad(fwd(), (q, k, v), dy)


def eager_attention_sweep(kit: KernelKit, points: list[tuple[int, ...]] | tuple[()]) -> None:
    """``eager_attention_fwd`` and ``eager_attention_fwd_bwd`` rows per (batch, seq, heads, head_dim)."""
    elt = kit.elt
    for b, s, nh, hd in points:
        n_sc = b * nh * s * s  # score elements
        shape = {"batch": b, "seq": s, "heads": nh, "head_dim": hd, "tokens": b * s, "scores": n_sc}
        for name in ("eager_attention_fwd", "eager_attention_fwd_bwd"):
            # minimum traffic of the score matrix: forward writes it once and reads it once (softmax),
            # backward reads the probabilities and their gradient and writes the score gradient
            nbytes = (2 if name == "eager_attention_fwd" else 5) * n_sc * elt
            kernel_point(kit.bench, {**kit.base, "op": f"{name}:b{b}:s{s}:nh{nh}:hd{hd}"}, {"name": name, **shape},
                         partial(_eager_attention_setup, kit, name, b, s, nh, hd),
                         6 * n_sc * elt + 8 * b * s * nh * hd * elt, nbytes=nbytes,
                         flops=(1.0 if name == "eager_attention_fwd" else 3.0) * 4.0 * n_sc * hd,
                         extra={"bytes_model": "score matrix: fwd write + read; bwd read 2, write 1"})


# ------------------------------------------------------------------------------------- cross entropy
def _cross_entropy_setup(kit: KernelKit, t: int, vocab: int) -> Callable[[], None]:
    """Cross entropy forward + backward over bf16 logits upcast to fp32, as train_gpt computes the loss."""
    torch, F, dev, dt = kit.torch, kit.F, kit.dev, kit.dt
    logits = torch.randn(t, vocab, device=dev, dtype=dt).requires_grad_(True)
    tgt = torch.randint(0, vocab, (t,), device=dev)

    def f() -> None:
        logits.grad = None
        # as train_gpt: upcast the bf16 logits, loss, backward to the bf16 logits
        F.cross_entropy(logits.float(), tgt).backward()
    return f


def cross_entropy_sweep(kit: KernelKit, points: list[tuple[int, ...]]) -> None:
    """``cross_entropy_fwd_bwd`` rows per (tokens, vocab)."""
    elt = kit.elt
    for t, vocab in points:
        n_el = t * vocab
        nbytes = 3 * n_el * elt  # read logits (fwd), read logits (bwd), write dlogits
        kernel_point(kit.bench, {**kit.base, "op": f"cross_entropy_fwd_bwd:t{t}:v{vocab}"},
                     {"name": "cross_entropy_fwd_bwd", "tokens": t, "vocab": vocab, "elements": n_el},
                     partial(_cross_entropy_setup, kit, t, vocab), n_el * (3 * elt + 3 * 4), nbytes=nbytes,
                     extra={"bytes_model": "bf16 logits read in fwd and bwd, bf16 grad written (fp32 upcast not counted)"})


# ------------------------------------------------------------------------------------- AdamW
def _adamw_setup(kit: KernelKit, n_params: int) -> Callable[[], None]:
    """One foreach AdamW step over ``n_params`` parameters in tensors of ``KERNEL_ADAMW_TENSOR`` elements."""
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    chunk = KERNEL_ADAMW_TENSOR
    sizes = [chunk] * (n_params // chunk) + ([n_params % chunk] if n_params % chunk else [])
    params = [torch.zeros(sz, device=dev, dtype=dt, requires_grad=True) for sz in sizes]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8,
                            foreach=True)
    opt.step()  # creates the state (exp_avg, exp_avg_sq: the params' dtype)
    return opt.step


def adamw_sweep(kit: KernelKit, points: list[int]) -> None:
    """``adamw_step`` rows per parameter count."""
    elt = kit.elt
    for n_params in points:
        nbytes = 7 * n_params * elt  # read p, g, m, v; write p, m, v
        kernel_point(kit.bench, {**kit.base, "op": f"adamw_step:n{n_params}"},
                     {"name": "adamw_step", "params": n_params, "tensor_elements": KERNEL_ADAMW_TENSOR,
                      "foreach": True},
                     partial(_adamw_setup, kit, n_params), 5 * n_params * elt, nbytes=nbytes,
                     extra={"bytes_model": "read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq"})
