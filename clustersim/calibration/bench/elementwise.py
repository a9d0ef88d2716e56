"""Memory-bound kernels of the ``--kernels`` sweep: norms, GELU, residual add and train_gpt's unfused sequences.

Per (tokens, hidden) point of the plan, ten rows: LayerNorm and RMSNorm forward and
backward, tanh GELU forward and backward (on tokens x 4h), the residual add, and forward +
backward of the unfused PyTorch sequences reference/train_gpt.py runs (rotary embedding,
SwiGLU, the GQA ``repeat_interleave``). ``bytes`` is each op's minimum HBM traffic (each
tensor read or written once).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from clustersim.calibration.bench.gpu_bound import KernelKit, kernel_point


def _ln_fwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    ln = torch.nn.LayerNorm(h, device=dev, dtype=dt)
    x = torch.randn(t, h, device=dev, dtype=dt)

    def f() -> None:
        with torch.no_grad():
            ln(x)
    return f


def _ln_bwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    ln = torch.nn.LayerNorm(h, device=dev, dtype=dt)
    x = torch.randn(t, h, device=dev, dtype=dt).requires_grad_(True)
    y = ln(x)
    dy = torch.randn_like(y)
    # backward only: the graph is kept and replayed (dx, dgamma, dbeta)
    return lambda: torch.autograd.grad(y, (x, ln.weight, ln.bias), dy, retain_graph=True)


def _gelu_fwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    x = kit.torch.randn(4 * t * h, device=kit.dev, dtype=kit.dt)
    return lambda: kit.F.gelu(x, approximate="tanh")


def _gelu_bwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch = kit.torch
    x = torch.randn(4 * t * h, device=kit.dev, dtype=kit.dt).requires_grad_(True)
    y = kit.F.gelu(x, approximate="tanh")
    dy = torch.randn_like(y)
    return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)


def _rms_fwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    w = torch.ones(h, device=dev, dtype=dt)
    x = torch.randn(t, h, device=dev, dtype=dt)

    def f() -> None:
        with torch.no_grad():
            kit.F.rms_norm(x, (h,), w, 1e-5)
    return f


def _rms_bwd(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    w = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
    x = torch.randn(t, h, device=dev, dtype=dt).requires_grad_(True)
    y = kit.F.rms_norm(x, (h,), w, 1e-5)
    dy = torch.randn_like(y)
    return lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)


def _rope_head_dim(h: int) -> int:
    """Head dimension of the rotary and GQA points: 128, or h / 2 for the tiny CPU sizes."""
    return min(128, h // 2)


def _rope(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    # train_gpt.apply_rope on q, a (1, s, nh, hd) slice of the fused QKV output seen as (1, nh, s, hd)
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    hd_r = _rope_head_dim(h)
    nh = h // hd_r
    qkv = torch.randn(1, t, 3, nh, hd_r, device=dev, dtype=dt).requires_grad_(True)
    ang = torch.randn(t, hd_r, device=dev, dtype=dt)
    cos, sin = ang.cos(), ang.sin()
    dy = torch.randn(1, nh, t, hd_r, device=dev, dtype=dt)

    q = qkv[:, :, 0].transpose(1, 2)

    def f() -> None:
        x1, x2 = q.chunk(2, dim=-1)
        y = q * cos + torch.cat([-x2, x1], dim=-1) * sin
        torch.autograd.grad(y, q, dy)  # the gradient of the view (no scatter into the QKV leaf)
    return f


def _swiglu(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    n4 = 4 * t * h
    g = torch.randn(t, n4 // t, device=dev, dtype=dt).requires_grad_(True)
    u = torch.randn(t, n4 // t, device=dev, dtype=dt).requires_grad_(True)
    dy = torch.randn(t, n4 // t, device=dev, dtype=dt)

    def f() -> None:
        torch.autograd.grad(kit.F.silu(g) * u, (g, u), dy)
    return f


def _repeat_kv(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    # GQA as train_gpt: k (1, nkv, s, hd), a slice of the QKV output, repeated to the query heads
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    hd_r = _rope_head_dim(h)
    nkv = max(1, h // hd_r // 4)
    kv = torch.randn(1, t, nkv, hd_r, device=dev, dtype=dt).requires_grad_(True)
    dy = torch.randn(1, 4 * nkv, t, hd_r, device=dev, dtype=dt)

    def f() -> None:
        torch.autograd.grad(kv.transpose(1, 2).repeat_interleave(4, dim=1), kv, dy)
    return f


def _residual(kit: KernelKit, t: int, h: int) -> Callable[[], None]:
    a = kit.torch.randn(t, h, device=kit.dev, dtype=kit.dt)
    r = kit.torch.randn(t, h, device=kit.dev, dtype=kit.dt)
    return lambda: a + r


def _ops(t: int, h: int, elt: int) -> list[tuple[str, Any, int, dict[str, Any]]]:
    """(name, set-up, minimum bytes, extra row fields) of every memory-bound op at one point, in row order."""
    n_el = t * h
    hd_r = _rope_head_dim(h)
    # bytes: the minimum HBM traffic of the op (each tensor read or written once)
    return [
        ("layernorm_fwd", _ln_fwd, 2 * n_el * elt, {}),
        ("layernorm_bwd", _ln_bwd, 3 * n_el * elt, {}),
        ("gelu_fwd", _gelu_fwd, 2 * 4 * n_el * elt, {"elements": 4 * n_el}),
        ("gelu_bwd", _gelu_bwd, 3 * 4 * n_el * elt, {"elements": 4 * n_el}),
        ("residual_add", _residual, 3 * n_el * elt, {"elements": n_el}),
        ("rmsnorm_fwd", _rms_fwd, 2 * n_el * elt, {}),
        ("rmsnorm_bwd", _rms_bwd, 3 * n_el * elt, {}),
        # unfused sequences, forward + backward; bytes: input and output of each direction once
        ("rope_fwd_bwd", _rope, 4 * n_el * elt, {"head_dim": hd_r}),
        ("swiglu_fwd_bwd", _swiglu, 8 * 4 * n_el * elt, {"elements": 4 * n_el}),
        ("repeat_kv_fwd_bwd", _repeat_kv, 2 * (n_el // 4 + n_el) * elt, {"head_dim": hd_r, "repeat": 4}),
    ]


def elementwise_sweep(kit: KernelKit, points: list[tuple[int, ...]]) -> None:
    """The ten memory-bound rows per (tokens, hidden)."""
    for t, h in points:
        shape = {"tokens": t, "hidden": h}
        n_el = t * h
        ln_need = 6 * n_el * kit.elt
        for name, setup, nbytes, extra_shape in _ops(t, h, kit.elt):
            kernel_point(kit.bench, {**kit.base, "op": f"{name}:t{t}:h{h}"},
                         {"name": name, **shape, **extra_shape, "elements": extra_shape.get("elements", n_el)},
                         partial(setup, kit, t, h), 5 * nbytes + ln_need, nbytes=nbytes,
                         extra={"bytes_model": "each tensor read or written once"})
