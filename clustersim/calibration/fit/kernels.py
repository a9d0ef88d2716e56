"""Kernel-class tables of a profile's ``compute`` section from ``calibrate bench --kernels`` rows.

Owns the step from the bench's ``kind: "kernel"`` rows (one GPU, GPU-bound: docs/calibration.md "Kernel
classes") to the tables the compute model reads: flash attention by pass and shape (``attention_table``), the
training GEMMs of a linear layer by layout and shape (``gemm_layout_table``), memory-bound kernel classes by bytes
(``memory_table``) and the sustained-clock slowdown by compute duty (``clock_table``). Used by ``clustersim
calibrate fit`` (:func:`clustersim.calibration.fit.compute.compute_section`) and by ``calibrate/make_profiles.py``.

>>> rows = [{"kind": "kernel", "name": "gemm_nt", "layout": "NT", "tokens": 8192, "out_features": 8192,
...          "in_features": 8192, "time_us": 1500.0}]
>>> fit_kernels(rows, 989.4, 3000.0, 0.0)["gemm_layout_table"][0]["efficiency"]
0.7409
"""

from __future__ import annotations


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
}
#: eager attention backward: (forward + backward) - forward, 7 kernels, bytes 3 x scores x element
EAGER_BWD_KERNELS = 7


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
    return ()


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
        f = 4.0 * b * nh * hd * s * s * 0.5
        if "attention_fwd" not in t:
            continue
        base = {"seq": s, "head_dim": hd, "heads": nh, "batch": b}
        attention.append({"direction": "fwd", **base,
                          "efficiency": _r4(min(1.0, f / (peak * (t["attention_fwd"] - L))))})
        if "attention_fwd_bwd" in t and t["attention_fwd_bwd"] > t["attention_fwd"] + 3 * L:
            tb = t["attention_fwd_bwd"] - t["attention_fwd"] - 3 * L
            attention.append({"direction": "bwd", **base, "efficiency": _r4(min(1.0, 2.5 * f / (peak * tb)))})
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
        memory.append({"op": op, "bytes": int(r["bytes"]), "efficiency": _r4(r["bytes"] / t / (hbm_GBps * 1e9))})
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
    memory.sort(key=lambda r: (r["op"], r["bytes"]))
    # sustained clocks: GEMM time under a GEMM/copy alternation over its burst time, by measured duty
    clock = sorted(({"duty": _r4(min(1.0, r["duty_measured"])), "slowdown": _r4(r["ratio"])}
                    for r in kern if r["name"] == "gemm_duty"), key=lambda p: p["duty"])
    dedup = {}
    for p in clock:  # duties the copy could not lower further repeat: keep the first
        dedup.setdefault(round(p["duty"], 2), p)
    return {"attention_table": attention, "gemm_layout_table": layout, "memory_table": memory,
            "clock_table": list(dedup.values())}
