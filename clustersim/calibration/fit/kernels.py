"""Kernel-class tables of a profile's ``compute`` section from ``calibrate bench --kernels`` rows.

Owns the step from the bench's ``kind: "kernel"`` rows (one GPU, GPU-bound: docs/calibration.md "Kernel
classes") to the tables the compute model reads: flash attention by pass and shape (``attention_table``), the
training GEMMs of a linear layer by layout and shape (``gemm_layout_table``), memory-bound kernel classes by bytes
(``memory_table``) and the sustained-clock slowdown by compute duty (``clock_table``). Used by ``clustersim
calibrate fit`` (:func:`clustersim.calibration.fit.compute.compute_section`) and by ``profiles/make_profiles.py``;
also an eager attention core's batched GEMMs (``bmm_table``) and the GEMM library's partial-wave loss
(``wave_loss``) where the rows hold them.

>>> rows = [{"kind": "kernel", "name": "gemm_nt", "layout": "NT", "tokens": 8192, "out_features": 8192,
...          "in_features": 8192, "time_us": 1500.0}]
>>> fit_kernels(rows, 989.4, 3000.0, 0.0)["gemm_layout_table"][0]["efficiency"]
0.7409
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from clustersim.roofline import ATTENTION_BWD_FLOPS, bmm_shape, gemm_shape


def _r4(x: float) -> float:
    return float(f"{x:.4g}")


# bench kernel name -> (memory_table class, kernels the simulator charges a launch gap for)
MEMORY_CLASSES = {
    "layernorm_fwd": ("layernorm_fwd", 1), "layernorm_bwd": ("layernorm_bwd", 2),
    "gelu_fwd": ("gelu_fwd", 1), "gelu_bwd": ("gelu_bwd", 1), "residual_add": ("add", 1),
    "cross_entropy_fwd_bwd": ("cross_entropy", 10), "adamw_step": ("adamw", 2),
    "rmsnorm_fwd": ("rmsnorm_fwd", 1), "rmsnorm_bwd": ("rmsnorm_bwd", 2),
    # unfused PyTorch sequences of the reference program (forward + backward together)
    "rope_fwd_bwd": ("rope", 10), "swiglu_fwd_bwd": ("swiglu", 5), "repeat_kv_fwd_bwd": ("repeat_kv", 2),
    "eager_attention_fwd": ("eager_attention_fwd", 8),
    # FP8 operand casts (clustersim/calibration/bench/fp8.py): the eager quantisation is 10 kernels (abs, amax, the
    # scale's 3 scalar ops, upcast, multiply, clamp, cast, the inverse scale), compiled 2 (reduction, cast)
    "fp8_quantize": ("fp8_quantize", 10), "fp8_quantize_rowwise": ("fp8_quantize_rowwise", 10),
    "fp8_transpose": ("fp8_transpose", 1), "bf16_transpose": ("bf16_transpose", 1),
    "fp8_quantize_fused": ("fp8_quantize_fused", 2), "fp8_quantize_rowwise_fused": ("fp8_quantize_rowwise_fused", 2),
    "fp8_transpose_fused": ("fp8_transpose_fused", 1), "bf16_transpose_fused": ("bf16_transpose_fused", 1),
    # MoE routing (clustersim/calibration/bench/experts.py): softmax + top-k; index_select; weighting + index_add_
    "moe_router": ("moe_router", 2), "moe_permute": ("moe_permute", 1), "moe_unpermute": ("moe_unpermute", 2),
}
#: eager attention backward: (forward + backward) - forward, 7 kernels, bytes 3 x scores x element
EAGER_BWD_KERNELS = 7
#: kernels of a flash-attention backward pass the simulator charges a launch gap for (its FLOPs:
#: :data:`clustersim.roofline.ATTENTION_BWD_FLOPS` x the forward's)
ATTENTION_BWD_KERNELS = 3
#: row-wise classes whose efficiency at equal bytes depends on the row length (a block per row: short rows
#: leave HBM idle between rows): their points keep the row's ``hidden``
ROW_CLASSES = ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd")


def attention_fwd_flops(batch: int, seq: int, heads: int, head_dim: int) -> float:
    """A causal flash-attention forward's FLOPs as the simulator counts them: ``4 b heads s^2 head_dim / 2``.

    >>> attention_fwd_flops(4, 2048, 16, 128)
    68719476736.0
    """
    return 4.0 * batch * heads * head_dim * seq * seq * 0.5


def required_fields(row: dict) -> tuple[str, ...]:
    """The fields :func:`fit_kernels` reads from a kernel row of this ``name`` (beside ``time_us``).

    >>> required_fields({"name": "gemm_nt", "layout": "NT"})
    ('tokens', 'out_features', 'in_features')
    >>> required_fields({"name": "layernorm_fwd"}), required_fields({"name": "something_else"})
    (('bytes',), ())
    """
    name = row.get("name", "")
    if name in ("attention_fwd", "attention_fwd_bwd"):
        return ("batch", "seq", "heads", "head_dim")
    if name in ("eager_attention_fwd", "eager_attention_fwd_bwd"):
        return ("batch", "seq", "heads", "head_dim", "bytes")
    if name.startswith("gemm_") and "layout" in row:
        return ("tokens", "out_features", "in_features")
    if name in MEMORY_CLASSES:
        return ("bytes",)
    if name == "gemm_duty":
        return ("duty_measured", "ratio")
    if name in ("bmm_score", "bmm_context", "bmm_context_t"):
        return ("batch_heads", "seq", "head_dim")
    if name == "wave_gemm":
        return ("m", "n", "k", "sms")
    return ()


def bmm_table(rows: list[dict], peak_tflops: float, launch_us: float) -> list[dict]:
    """``compute.bmm_table`` from ``bmm_score`` / ``bmm_context`` / ``bmm_context_t`` kernel rows: the efficiency
    that reproduces each measured time with the profile's peak and kernel gap (``2 batch_heads m n k`` FLOPs,
    :func:`clustersim.roofline.bmm_shape`; the gap taken off first, as for the layout GEMMs).

    >>> bmm_table([{"name": "bmm_score", "batch_heads": 16, "seq": 2048, "head_dim": 128, "time_us": 50.0}],
    ...           989.4, 2.0)
    [{'kind': 'score', 'batch_heads': 16, 'seq': 2048, 'head_dim': 128, 'efficiency': 0.3617}]
    """
    out = []
    for r in sorted((r for r in rows if r.get("name", "").startswith("bmm_")),
                    key=lambda r: (r["name"], r["head_dim"], r["seq"], r["batch_heads"])):
        kind = r["name"][4:]
        flops = bmm_shape(kind, r["batch_heads"], r["seq"], r["head_dim"])[0]
        t = r["time_us"] * 1e-6 - launch_us * 1e-6
        if t > 0:
            out.append({"kind": kind, "batch_heads": r["batch_heads"], "seq": r["seq"], "head_dim": r["head_dim"],
                        "efficiency": _r4(min(1.0, flops / (peak_tflops * 1e12 * t)))})
    return out


def wave_loss(rows: list[dict], peak_tflops: float, hbm_GBps: float) -> dict[str, float]:
    """``compute.wave_loss`` from ``wave_gemm`` kernel rows: per GEMM layout, the share of a partial last wave's idle
    SMs the library still shows (:func:`clustersim.roofline.library_fill`).

    Each series (one layout, ``m`` and ``k``; the output width ``n`` in 128-column steps) is fitted, by least
    squares on its points whose HBM bound (at ``hbm_GBps``) is at least 1.5x away, as ``t = t0 + c (x + r (ceil(x)
    - x))`` for ``x`` = 128 x 128 tiles over SMs: a fixed time per kernel, a time per wave, and ``r`` of the
    one-tile model's partial-wave loss. A series whose fit leaves more than 5% rms is not read (on one H200,
    2026-11-27: 8,192-token forward rows, 68-578 us kernels whose full-wave points alone spread 0.83-1.10 of their
    median under the sustained clock, 8.2%); a layout's value is the mean of its series' ``r``, within [0, 1].
    """
    rows = [r for r in rows if r.get("name") == "wave_gemm"]
    per: dict[str, list[float]] = {}
    for key in sorted({(r["layout"], r["m"], r["k"]) for r in rows}):
        a, t = [], []
        for r in (r for r in rows if (r["layout"], r["m"], r["k"]) == key):
            flops, nbytes, tiles = gemm_shape(r["m"], r["n"], r["k"])
            if flops * hbm_GBps * 1e9 / (nbytes * peak_tflops * 1e12) < 1.5:
                continue
            x = tiles / r["sms"]
            a.append([1.0, x, math.ceil(x) - x])
            t.append(r["time_us"])
        if len(t) < 5:
            continue
        coef = np.linalg.lstsq(np.array(a), np.array(t), rcond=None)[0]
        rms = float(np.sqrt(np.mean((np.array(a) @ coef / np.array(t) - 1) ** 2)))
        if rms <= 0.05 and coef[1] > 0:
            per.setdefault(key[0], []).append(float(coef[2] / coef[1]))
    return {lay: _r4(min(1.0, max(0.0, statistics.mean(v)))) for lay, v in sorted(per.items())}


def fit_kernels(rows: list[dict], peak_tflops: float, hbm_GBps: float, launch_us: float) -> dict:
    """``attention_table``, ``gemm_layout_table`` and ``memory_table`` from ``kernel`` rows.

    Each efficiency is the one the simulator (``clustersim/workload/compute.py``) must use to
    reproduce the measured GPU-bound time, given the profile's peak, HBM copy bandwidth and
    per-kernel gap (``launch_us`` x the kernels the simulator charges for the op is taken off the
    measured time first):

    * attention: forward FLOPs ``4 b heads s^2 head_dim / 2`` (the simulator's causal count),
      forward efficiency from the ``attention_fwd`` time (1 kernel), backward (2.5 x the FLOPs)
      from ``attention_fwd_bwd - attention_fwd`` (3 kernels);
    * GEMMs of a linear layer: ``2 tokens out in`` FLOPs per layout (1 kernel);
    * memory-bound classes: the row's minimum ``bytes`` / time / ``hbm_GBps``.
    """
    peak = peak_tflops * 1e12
    L = launch_us * 1e-6
    kern = [r for r in rows if r.get("kind") == "kernel"]
    att: dict[tuple, dict[str, float]] = {}
    for r in kern:
        if r["name"] in ("attention_fwd", "attention_fwd_bwd"):
            att.setdefault((r["batch"], r["seq"], r["heads"], r["head_dim"]), {})[r["name"]] = r["time_us"] * 1e-6
    attention = []
    for (b, s, nh, hd), t in sorted(att.items()):
        f = attention_fwd_flops(b, s, nh, hd)
        if "attention_fwd" not in t:
            continue
        base = {"seq": s, "head_dim": hd, "heads": nh, "batch": b}
        attention.append({"direction": "fwd", **base,
                          "efficiency": _r4(min(1.0, f / (peak * (t["attention_fwd"] - L))))})
        if "attention_fwd_bwd" in t and t["attention_fwd_bwd"] > t["attention_fwd"] + ATTENTION_BWD_KERNELS * L:
            tb = t["attention_fwd_bwd"] - t["attention_fwd"] - ATTENTION_BWD_KERNELS * L
            attention.append({"direction": "bwd", **base,
                              "efficiency": _r4(min(1.0, ATTENTION_BWD_FLOPS * f / (peak * tb)))})
    layout = []
    for r in sorted((r for r in kern if r["name"].startswith("gemm_") and "layout" in r),
                    key=lambda r: (r["layout"], r["out_features"], r["in_features"], r["tokens"])):
        flops = 2.0 * r["tokens"] * r["out_features"] * r["in_features"]
        layout.append({"layout": r["layout"], "tokens": r["tokens"], "out_features": r["out_features"],
                       "in_features": r["in_features"],
                       "efficiency": _r4(min(1.0, flops / (peak * (r["time_us"] * 1e-6 - L))))})
    memory = []
    for r in sorted((r for r in kern if r["name"] in MEMORY_CLASSES),
                    key=lambda r: (MEMORY_CLASSES[r["name"]][0], r["bytes"], r["time_us"])):
        op, k = MEMORY_CLASSES[r["name"]]
        t = r["time_us"] * 1e-6 - k * L
        memory.append({"op": op, "bytes": int(r["bytes"]), "efficiency": _r4(r["bytes"] / t / (hbm_GBps * 1e9)),
                       **({"hidden": int(r["hidden"])} if op in ROW_CLASSES and r.get("hidden") else {})})
    eager: dict[tuple, dict[str, dict]] = {}
    for r in kern:
        if r["name"] in ("eager_attention_fwd", "eager_attention_fwd_bwd"):
            eager.setdefault((r["batch"], r["seq"], r["heads"], r["head_dim"]), {})[r["name"]] = r
    for _, e in sorted(eager.items()):
        if len(e) == 2:
            fw, fb = e["eager_attention_fwd"], e["eager_attention_fwd_bwd"]
            t = (fb["time_us"] - fw["time_us"]) * 1e-6 - EAGER_BWD_KERNELS * L
            nbytes = fb["bytes"] - fw["bytes"]
            if t > 0:
                memory.append({"op": "eager_attention_bwd", "bytes": int(nbytes),
                               "efficiency": _r4(nbytes / t / (hbm_GBps * 1e9))})
    memory.sort(key=lambda r: (r["op"], r.get("hidden", 0), r["bytes"]))
    # sustained clocks: GEMM time under a GEMM/copy alternation over its burst time, by measured duty
    clock = sorted(({"duty": _r4(min(1.0, r["duty_measured"])), "slowdown": _r4(r["ratio"])}
                    for r in kern if r["name"] == "gemm_duty"), key=lambda p: p["duty"])
    dedup = {}
    for p in clock:  # duties the copy could not lower further repeat: keep the first
        dedup.setdefault(round(p["duty"], 2), p)
    out = {"attention_table": attention, "gemm_layout_table": layout, "memory_table": memory,
           "clock_table": list(dedup.values())}
    if any(r["name"].startswith("bmm_") for r in kern):
        out["bmm_table"] = bmm_table(kern, peak_tflops, launch_us)
    if any(r["name"] == "wave_gemm" for r in kern):
        out["wave_loss"] = wave_loss(kern, peak_tflops, hbm_GBps)
    return out


def fit_fp8_and_experts(rows: list[dict], peak_tflops: float, fp8_peak_tflops: float, launch_us: float) -> dict:
    """``fp8_layout_table``, ``grouped_gemm_table`` and ``moe_loop_expert_us`` from the FP8 and MoE kernel rows
    (``calibrate bench --kernels --kernel-classes fp8,experts``); their memory-bound classes go through
    :func:`fit_kernels`.

    FP8 GEMMs: ``2 tokens out in`` FLOPs against ``fp8_peak_tflops`` (1 kernel gap off); grouped GEMMs
    ``2 experts tokens out in`` against the bf16 ``peak_tflops`` (1 kernel); the loop's host cost: the
    median wall time per expert at one token per expert (its kernels' work at one token is a few
    microseconds of the ~280 measured, left in).

    >>> rows = [{"kind": "kernel", "name": "fp8_gemm_nt", "layout": "NT", "recipe": "tensorwise", "tokens": 4096,
    ...          "out_features": 4096, "in_features": 4096, "time_us": 100.0},
    ...         {"kind": "kernel", "name": "moe_loop_host", "time_us": 280.0}]
    >>> out = fit_fp8_and_experts(rows, 989.4, 1979.0, 0.0)
    >>> out["fp8_layout_table"][0]["efficiency"], out["moe_loop_expert_us"]
    (0.6945, 280.0)
    """
    kern = [r for r in rows if r.get("kind") == "kernel"]
    L = launch_us * 1e-6

    def eff(flops: float, t_us: float, peak: float) -> float:
        return _r4(min(1.0, flops / (peak * 1e12 * (t_us * 1e-6 - L))))
    fp8 = [{"layout": r["layout"], "recipe": r["recipe"], "tokens": r["tokens"], "out_features": r["out_features"],
            "in_features": r["in_features"],
            "efficiency": eff(2.0 * r["tokens"] * r["out_features"] * r["in_features"], r["time_us"], fp8_peak_tflops)}
           for r in kern if r["name"].startswith("fp8_gemm_")]
    grouped = [{"layout": r["layout"], "experts": r["experts"], "tokens": r["tokens"], "out_features": r["out_features"],
                "in_features": r["in_features"],
                "efficiency": eff(2.0 * r["experts"] * r["tokens"] * r["out_features"] * r["in_features"], r["time_us"],
                                  peak_tflops)}
               for r in kern if r["name"].startswith("grouped_gemm_")]
    loop = [r["time_us"] for r in kern if r["name"] == "moe_loop_host"]
    train: dict[tuple, dict[str, float]] = {}
    for r in kern:
        if r["name"] in ("moe_loop_fwd", "moe_loop_fwd_bwd"):
            train.setdefault((r["hidden"], r["ffn"], r["tokens_per_expert"]), {})[r["name"]] = r["time_us"]
    out: dict = {}
    table = [{"hidden": h, "ffn": f, "tokens": m, "forward_us": _r4(t["moe_loop_fwd"]),
              "backward_us": _r4(t["moe_loop_fwd_bwd"] - t["moe_loop_fwd"])}
             for (h, f, m), t in sorted(train.items()) if len(t) == 2 and t["moe_loop_fwd_bwd"] > t["moe_loop_fwd"]]
    if table:
        out["moe_loop_table"] = table
    if fp8:
        out["fp8_layout_table"] = sorted(fp8, key=lambda p: (p["recipe"], p["layout"], p["out_features"],
                                                             p["in_features"], p["tokens"]))
    if grouped:
        out["grouped_gemm_table"] = sorted(grouped, key=lambda p: (p["layout"], p["out_features"], p["in_features"],
                                                                   p["experts"], p["tokens"]))
    if loop:
        out["moe_loop_expert_us"] = _r4(statistics.median(loop))
    return out
