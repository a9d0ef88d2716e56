"""Mixture-of-experts kernels of the ``--kernels`` sweep: small expert GEMMs, grouped GEMMs, routing, a loop's host cost.

Current MoE models run many small experts (Qwen3-30B-A3B: 128 experts of FFN 768 on hidden 2048,
top-8; DeepSeek-V3: 256 of 2048 on 7168; GPT-OSS: 32-128 of 2880 on 2880), so each expert sees a
few hundred tokens of a micro-batch, where a GEMM runs far below the efficiency of the big shapes
of a dense layer. Rows:

* ``gemm_nt`` / ``gemm_nn`` / ``gemm_tn`` (label ``expert``): one expert's up (``2f x h`` for
  SwiGLU) and down (``h x f``) projection at 16-4096 tokens, the rows of the dense layout sweep
  (they join the profile's ``gemm_layout_table``: an expert GEMM is a linear layer of few tokens);
* ``grouped_gemm_nt`` / ``grouped_gemm_nn`` / ``grouped_gemm_tn``: the same projections of all
  ``experts`` in one ``torch._grouped_mm`` call (``tokens`` each; forward ``x W_e^T``, dgrad
  ``dy W_e``, wgrad ``dy_e^T x_e``), the profile's ``grouped_gemm_table``;
* memory-bound classes: ``moe_router`` (fp32 softmax and top-k over ``tokens x experts`` logits),
  ``moe_permute`` (each token copied once per chosen expert: ``index_select`` of ``tokens x top_k``
  rows of ``hidden``), ``moe_unpermute`` (the probability-weighted ``index_add_`` back);
* ``moe_loop_host``: the Hugging Face style expert loop (``torch.where`` on the expert's mask, which
  waits for the GPU, then gather, the expert MLP, the weighting and ``index_add_``) at one token per
  expert, timed by the wall clock: the host seconds each expert of such a loop costs beyond its
  kernels (the profile's ``host.moe_loop_expert_us``).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable

from clustersim.calibration.bench.gpu_bound import KernelKit, kernel_point
from clustersim.calibration.bench.rows import summarize

#: (experts, hidden, expert FFN) of current models: Qwen3-30B-A3B, OLMoE/Qwen1.5-MoE-like, GPT-OSS-20B, DeepSeek-V3
EXPERT_SHAPES = ((128, 2048, 768), (64, 2048, 1408), (32, 2880, 2880), (256, 7168, 2048))
EXPERT_TOKENS = (16, 64, 256, 1024, 4096)


def expert_plan(quick: bool) -> dict[str, list[tuple]]:
    """Points: ``gemm`` as the dense layout sweep's (tokens, out, in, label), ``grouped``
    (experts, tokens per expert, out, in, label), ``route`` (tokens, experts, top_k, hidden),
    ``loop`` (experts, hidden, ffn).

    >>> p = expert_plan(False)
    >>> len(p["gemm"]), len(p["grouped"]), len(p["route"]), len(p["loop"]), len(p["train"])
    (40, 24, 6, 2, 25)
    """
    if quick:
        return {"gemm": [(64, 128, 64, "expert_up")], "grouped": [(4, 64, 128, 64, "expert_up")],
                "route": [(256, 8, 2, 64)], "loop": [(4, 64, 32)], "train": [(4, 64, 32, 16)]}
    gemm, grouped = [], []
    for _, h, f in EXPERT_SHAPES:
        for t in EXPERT_TOKENS:
            gemm += [(t, 2 * f, h, "expert_up"), (t, h, f, "expert_down")]
    for e, h, f in EXPERT_SHAPES:
        for t in (64, 256, 1024):
            n = min(e, 32)  # experts of one rank's grouped call (EP splits the rest)
            grouped += [(n, t, 2 * f, h, "expert_up"), (n, t, h, f, "expert_down")]
    route = [(t, e, k, h) for t, e, k, h in ((8192, 128, 8, 2048), (16384, 128, 8, 2048), (8192, 64, 8, 2048),
                                               (8192, 32, 4, 2880), (8192, 256, 8, 7168), (4096, 8, 2, 4096))]
    loop = [(32, 2048, 768), (128, 2048, 768)]
    train = [(16, h, f, m) for h, f in ((2048, 768), (2048, 1408), (2880, 2880), (2048, 4096), (4096, 1536))
             for m in (1, 64, 256, 1024, 2048)]
    return {"gemm": gemm, "grouped": grouped, "route": route, "loop": loop, "train": train}


def _grouped_setup(kit: KernelKit, layout: str, e: int, t: int, out_f: int, in_f: int) -> Callable[[], None]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    offs = torch.arange(1, e + 1, device=dev, dtype=torch.int32) * t
    if layout == "NT":  # x (e t, in) @ W_e^T: weights (e, in, out) as W_e^T views
        x = torch.randn(e * t, in_f, device=dev, dtype=dt)
        w = torch.randn(e, out_f, in_f, device=dev, dtype=dt).transpose(1, 2)
        return lambda: torch._grouped_mm(x, w, offs=offs)
    dy = torch.randn(e * t, out_f, device=dev, dtype=dt)
    if layout == "NN":  # dy (e t, out) @ W_e
        w = torch.randn(e, out_f, in_f, device=dev, dtype=dt)
        return lambda: torch._grouped_mm(dy, w, offs=offs)
    x = torch.randn(e * t, in_f, device=dev, dtype=dt)  # wgrad: dy_e^T x_e, the groups along K
    return lambda: torch._grouped_mm(dy.t(), x, offs=offs)


def grouped_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """``grouped_gemm_{nt,nn,tn}`` rows per (experts, tokens, out_features, in_features, label)."""
    if not hasattr(kit.torch, "_grouped_mm"):
        return
    for e, t, out_f, in_f, label in points:
        for layout in ("NT", "NN", "TN"):
            flops = 2.0 * e * t * out_f * in_f
            need = (e * t * (in_f + out_f) + 2 * e * out_f * in_f) * kit.elt
            kernel_point(kit.bench, {**kit.base, "op": f"grouped_gemm_{layout}:{label}:e{e}:t{t}:o{out_f}:i{in_f}"},
                         {"name": f"grouped_gemm_{layout.lower()}", "layout": layout, "linear": label, "experts": e,
                          "tokens": t, "out_features": out_f, "in_features": in_f},
                         partial(_grouped_setup, kit, layout, e, t, out_f, in_f), need, flops=flops,
                         nbytes=(e * t * (in_f + out_f) + e * out_f * in_f) * kit.elt)


def _route_setup(kit: KernelKit, name: str, t: int, e: int, k: int, h: int) -> Callable[[], Any]:
    torch, dev, dt = kit.torch, kit.dev, kit.dt
    if name == "moe_router":
        logits = torch.randn(t, e, device=dev, dtype=dt)
        return lambda: torch.topk(torch.softmax(logits, dim=-1, dtype=torch.float32), k, dim=-1)
    x = torch.randn(t, h, device=dev, dtype=dt)
    idx = torch.randint(0, t, (t * k,), device=dev)
    if name == "moe_permute":
        return lambda: x.index_select(0, idx)
    y = torch.randn(t * k, h, device=dev, dtype=dt)
    p = torch.rand(t * k, 1, device=dev, dtype=dt)
    out = torch.zeros(t, h, device=dev, dtype=dt)
    return lambda: out.index_add_(0, idx, y * p)


def route_bytes(name: str, t: int, e: int, k: int, h: int, elt: int) -> int:
    """Minimum HBM bytes of a routing class: logits read and probabilities written (fp32) for the router;
    ``t k`` rows of ``h`` read and written for the permutation; for the un-permutation the rows read, weighted
    and added into the ``t x h`` output (read and written)."""
    if name == "moe_router":
        return t * e * (elt + 4) + t * k * 8
    if name == "moe_permute":
        return 2 * t * k * h * elt
    return t * k * h * elt + 2 * t * h * elt


def route_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """``moe_router``, ``moe_permute`` and ``moe_unpermute`` rows per (tokens, experts, top_k, hidden)."""
    for t, e, k, h in points:
        for name in ("moe_router", "moe_permute", "moe_unpermute"):
            nbytes = route_bytes(name, t, e, k, h, kit.elt)
            kernel_point(kit.bench, {**kit.base, "op": f"{name}:t{t}:e{e}:k{k}:h{h}"},
                         {"name": name, "tokens": t, "experts": e, "top_k": k, "hidden": h},
                         partial(_route_setup, kit, name, t, e, k, h), 4 * nbytes + t * h * kit.elt * 4,
                         nbytes=nbytes)


def hf_expert_loop(torch: Any, F: Any, x: Any, probs: Any, chosen: Any, w_up: list, w_down: list) -> Any:
    """The Hugging Face Mixtral-style expert loop (SwiGLU experts), forward: for each expert, the tokens that
    chose it (``torch.where``, which waits for the GPU), their MLP, weighted, added back in place."""
    out = torch.zeros_like(x)
    f = w_down[0].shape[1]
    for e in range(len(w_up)):
        tok, slot = torch.where(chosen == e)
        gu = x[tok] @ w_up[e].t()
        y = (F.silu(gu[:, :f]) * gu[:, f:]) @ w_down[e].t()
        out.index_add_(0, tok, y * probs[tok, slot, None])
    return out


def loop_host_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """``moe_loop_host`` rows: wall seconds per expert of :func:`hf_expert_loop` at one token per expert."""
    bench, torch, dev, dt = kit.bench, kit.torch, kit.dev, kit.dt
    for e, h, f in points:
        key = {**kit.base, "op": f"moe_loop_host:e{e}:h{h}:f{f}"}
        bench.describe(f"kernel {key['op']}"[:34])
        if bench.skip(key):
            bench.advance()
            continue
        x = torch.randn(e, h, device=dev, dtype=dt)
        chosen = torch.arange(e, device=dev).view(e, 1)
        probs = torch.rand(e, 1, device=dev, dtype=dt)
        w_up = [torch.randn(2 * f, h, device=dev, dtype=dt) for _ in range(e)]
        w_down = [torch.randn(h, f, device=dev, dtype=dt) for _ in range(e)]
        run = partial(hf_expert_loop, torch, kit.F, x, probs, chosen, w_up, w_down)
        run()
        walls = []
        for _ in range(3 if bench.cfg.quick else 7):
            bench.sync()
            t0 = time.perf_counter()
            run()
            bench.sync()
            walls.append((time.perf_counter() - t0) / e)
        bench.emit({**key, "name": "moe_loop_host", "experts": e, "hidden": h, "ffn": f, "tokens_per_expert": 1,
                    **summarize(walls), "reps": len(walls), "timing": "wall clock per expert, synchronised"})
        bench.advance()


#: top-k of the training-loop points: each token to 2 experts (the slots of a layer, t x k = experts x m)
LOOP_TOP_K = 2


def loop_train_sweep(kit: KernelKit, points: list[tuple]) -> None:
    """``moe_loop_fwd`` / ``moe_loop_fwd_bwd`` rows: wall seconds per expert of :func:`hf_expert_loop` as training runs
    it (per-expert weights and the input requiring gradients, autograd recording), forward alone and forward +
    backward, at ``m`` tokens per expert over ``experts x m / 2`` tokens routed to 2 experts each, synchronised."""
    bench, torch, dev, dt = kit.bench, kit.torch, kit.dev, kit.dt
    for e, h, f, m in points:
        t = e * m // LOOP_TOP_K
        if t < 1:
            continue
        keys = [{**kit.base, "op": f"{n}:e{e}:h{h}:f{f}:m{m}"} for n in ("moe_loop_fwd", "moe_loop_fwd_bwd")]
        bench.describe(f"kernel {keys[0]['op']}"[:34])
        if all(bench.skip(k) for k in keys):
            bench.advance(2)
            continue
        x = torch.randn(t, h, device=dev, dtype=dt, requires_grad=True)
        chosen = (torch.arange(t * LOOP_TOP_K, device=dev) % e).view(t, LOOP_TOP_K)
        probs = torch.rand(t, LOOP_TOP_K, device=dev, dtype=dt)
        w_up = [torch.randn(2 * f, h, device=dev, dtype=dt, requires_grad=True) for _ in range(e)]
        w_down = [torch.randn(h, f, device=dev, dtype=dt, requires_grad=True) for _ in range(e)]
        dy = torch.randn(t, h, device=dev, dtype=dt)
        run = partial(hf_expert_loop, torch, kit.F, x, probs, chosen, w_up, w_down)
        for key, backward in zip(keys, (False, True)):
            walls = []
            for i in range(2 + (3 if bench.cfg.quick else 7)):
                bench.sync()
                t0 = time.perf_counter()
                out = run()
                if backward:
                    out.backward(dy)
                bench.sync()
                if i >= 2:  # two warm-up passes
                    walls.append((time.perf_counter() - t0) / e)
                del out
                x.grad = None
                for w in w_up + w_down:
                    w.grad = None
            bench.emit({**key, "name": key["op"].split(":")[0], "experts": e, "hidden": h, "ffn": f,
                        "tokens_per_expert": m, "tokens": t, "top_k": LOOP_TOP_K, **summarize(walls),
                        "reps": len(walls), "timing": "wall clock per expert, synchronised, autograd on"})
            bench.advance()


def run_experts(kit: KernelKit, gemm_layout_sweep: Callable[[KernelKit, list], None]) -> None:
    """The MoE sweep: expert GEMMs through the dense layout sweep (``gemm_layout_sweep``), grouped GEMMs,
    routing classes and the loop's host cost."""
    plan = expert_plan(kit.bench.cfg.quick or not kit.bench.cuda)
    gemm_layout_sweep(kit, plan["gemm"])
    grouped_sweep(kit, plan["grouped"])
    route_sweep(kit, plan["route"])
    loop_host_sweep(kit, plan["loop"])
    loop_train_sweep(kit, plan["train"])
