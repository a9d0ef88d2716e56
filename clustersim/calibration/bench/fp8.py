"""FP8 kernels of the ``--kernels`` sweep: scaled GEMMs by training layout and scaling recipe, and the casts around them.

An FP8 linear layer (Transformer Engine, torchao's ``Float8Linear``, the reference program's
``Fp8Linear``) runs each of its three GEMMs on FP8 tensor cores through ``torch._scaled_mm``, which
takes its first operand row-major and its second column-major. So besides the GEMMs a step runs:

* per GEMM operand a cast of the bf16 tensor to e4m3 with a scale: ``tensorwise`` one scale per
  tensor (its absolute maximum, a reduction pass over the tensor, then the scaled cast),
  ``rowwise`` one per row of the operand (the reduction and the cast both along rows);
* the transposed FP8 copies the backward needs (dgrad ``dy @ W`` wants ``W`` column-major, wgrad
  ``dy^T x`` wants ``dy^T`` row-major and ``x`` column-major): one read and one write of one byte
  per element each.

Rows (``name``): ``fp8_gemm_nt`` / ``fp8_gemm_nn`` / ``fp8_gemm_tn`` with the layer's ``tokens``,
``out_features``, ``in_features`` and ``recipe`` (FLOPs ``2 tokens out in``; efficiency against the
GPU's FP8 dense peak), and the memory-bound classes ``fp8_quantize`` / ``fp8_quantize_rowwise``
(absolute maximum, scale and scaled cast of a bf16 tensor, per tensor or per row: 3 bytes per
element at least), ``fp8_transpose`` (e4m3 read and written transposed: 2 bytes) and
``bf16_transpose`` (4 bytes), each timed as the unfused PyTorch sequence and, as ``<name>_fused``,
compiled by ``torch.compile`` into generated kernels (what a framework's fused cast does).

On a device without FP8 tensor cores (``torch._scaled_mm`` raises) the GEMM points are skipped
and logged; on CPU the sweep does nothing.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from clustersim.calibration.bench.gpu_bound import KernelKit, kernel_point
from clustersim.calibration.bench.rows import log

#: largest e4m3 value (OCP FP8): scales map each tensor's (or row's) absolute maximum onto it
E4M3_MAX = 448.0
RECIPES = ("tensorwise", "rowwise")


def fp8_plan(quick: bool) -> dict[str, list[tuple]]:
    """Points of the FP8 sweep: ``gemm`` (tokens, out_features, in_features, label) and ``cast`` (tokens, hidden).

    The linears of one layer (qkv 3h x h, proj h x h, fc1 4h x h, fc2 h x 4h; fc1 of a SwiGLU MLP
    of 3.5h, Llama-3 8B's 14336 on 4096) at h in {2048, 4096, 8192} and 4096 / 16384 tokens.

    >>> len(fp8_plan(False)["gemm"]), len(fp8_plan(True)["gemm"])
    (27, 1)
    """
    if quick:
        return {"gemm": [(2048, 4096, 1024, "fc1")], "cast": [(2048, 1024)]}
    gemm = []
    for t in (4096, 16384):
        for h in (2048, 4096, 8192):
            gemm += [(t, 3 * h, h, "qkv"), (t, h, h, "proj"), (t, 4 * h, h, "fc1"), (t, h, 4 * h, "fc2")]
    gemm += [(8192, 28672, 4096, "fc1_swiglu"), (8192, 4096, 14336, "fc2_swiglu"), (8192, 6144, 4096, "qkv_gqa")]
    cast = [(t, h) for t in (4096, 16384) for h in (2048, 4096, 8192, 16384)]
    return {"gemm": gemm, "cast": cast}


def _quantize(torch: Any, x: Any, rowwise: bool) -> tuple[Any, Any]:
    """``x`` (bf16, 2-D) as e4m3 and its fp32 inverse scale (per tensor, or per row: shape ``(rows, 1)``)."""
    amax = (x.abs().amax(dim=1, keepdim=True) if rowwise else x.abs().max()).float().clamp(min=1e-12)
    scale = E4M3_MAX / amax
    q = (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale.reciprocal()


def _gemm_setup(kit: KernelKit, layout: str, recipe: str, t: int, out_f: int, in_f: int) -> Callable[[], None]:
    """One FP8 GEMM of a linear layer in a training layout, operands already cast (as after the casts)."""
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    rowwise = recipe == "rowwise"
    # (m, k) row-major A and (k, n) column-major B of each layout, as the reference Fp8Linear hands them
    m, n, k = {"NT": (t, out_f, in_f), "NN": (t, in_f, out_f), "TN": (out_f, in_f, t)}[layout]
    a, sa = _quantize(torch, torch.randn(m, k, device=dev, dtype=dt), rowwise)
    b_rows, sb = _quantize(torch, torch.randn(n, k, device=dev, dtype=dt), rowwise)  # B^T row-major
    b = b_rows.t()  # (k, n) column-major
    sb = sb.t() if rowwise else sb  # (1, n)
    out = torch.empty(m, n, device=dev, dtype=dt)
    torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=dt)  # raises here on a GPU without FP8
    return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=dt, out=out)


def gemm_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """``fp8_gemm_{nt,nn,tn}`` rows per (tokens, out_features, in_features, label) and recipe."""
    for recipe in RECIPES:
        for t, out_f, in_f, label in points:
            for layout in ("NT", "NN", "TN"):
                m, n, k = {"NT": (t, out_f, in_f), "NN": (t, in_f, out_f), "TN": (out_f, in_f, t)}[layout]
                need = 2 * (m * k + k * n) * kit.elt + m * n * kit.elt
                op = f"fp8_gemm_{layout}:{recipe}:{label}:t{t}:o{out_f}:i{in_f}"
                kernel_point(kit.bench, {**kit.base, "op": op, "m": m, "n": n, "k": k, "dtype": "fp8"},
                             {"name": f"fp8_gemm_{layout.lower()}", "layout": layout, "recipe": recipe, "linear": label,
                              "tokens": t, "out_features": out_f, "in_features": in_f},
                             partial(_gemm_setup, kit, layout, recipe, t, out_f, in_f), need,
                             flops=2.0 * m * n * k, nbytes=m * k + k * n + m * n * kit.elt)


def _cast_fn(kit: KernelKit, name: str, t: int, h: int) -> Callable[[], Any]:
    """The op sequence of one cast class on a (t, h) bf16 tensor (the reference program's)."""
    torch = kit.torch
    x = torch.randn(t, h, device=kit.dev, dtype=kit.dt)
    if name in ("fp8_quantize", "fp8_quantize_rowwise"):
        rowwise = name == "fp8_quantize_rowwise"
        return lambda: _quantize(torch, x, rowwise)
    if name == "bf16_transpose":
        return lambda: x.t().contiguous()
    q = x.to(torch.float8_e4m3fn)
    return lambda: q.t().contiguous()


#: minimum HBM bytes per element of each cast class (module doc): a quantisation reads bf16 once and writes
#: e4m3 (its amax pass is the second read the measured efficiency shows); a transpose reads and writes once
CAST_BYTES = {"fp8_quantize": 3, "fp8_quantize_rowwise": 3, "fp8_transpose": 2, "bf16_transpose": 4}


def _cast_setup(kit: KernelKit, name: str, impl: str, t: int, h: int) -> Callable[[], None]:
    fn = _cast_fn(kit, name, t, h)
    if impl == "compiled":
        fn = kit.torch.compile(fn, fullgraph=True, dynamic=False)
        fn()  # compile outside the timed region
    return fn


def cast_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """Rows of every :data:`CAST_BYTES` class per (tokens, hidden), eager (``name``) and compiled (``name_fused``)."""
    for impl in ("eager", "compiled"):
        # compiled at the largest token count only: one compilation per shape, a few seconds each
        for t, h in (points if impl == "eager" else [p for p in points if p[0] == max(q[0] for q in points)]):
            for name, per in CAST_BYTES.items():
                need = 12 * t * h
                row_name = name if impl == "eager" else f"{name}_fused"
                kernel_point(kit.bench, {**kit.base, "op": f"{row_name}:t{t}:h{h}"},
                             {"name": row_name, "impl": impl, "tokens": t, "hidden": h},
                             partial(_cast_setup, kit, name, impl, t, h), need, nbytes=per * t * h)


def run_fp8(kit: KernelKit) -> None:
    """The FP8 sweep (GPU only: FP8 tensor cores and e4m3 casts)."""
    if not kit.bench.cuda:
        return
    if not hasattr(kit.torch, "_scaled_mm"):
        log("skipped fp8 kernels: this torch has no _scaled_mm")
        return
    plan = fp8_plan(kit.bench.cfg.quick)
    gemm_sweep(kit, plan["gemm"])
    cast_sweep(kit, plan["cast"])
