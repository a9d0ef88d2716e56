"""What a bench run measures: the kernel-class sweep, collective buffer layouts, GEMM shapes, row counts.

Pure functions of a :class:`~clustersim.calibration.bench.config.BenchConfig` (no torch):
:func:`kernel_plan` lists the points of ``--kernels``, :func:`op_layout` turns a requested
collective size into per-rank element counts by nccl-tests' conventions, and
:func:`plan_size` counts the rows a run writes (the progress bar's total).
"""

from __future__ import annotations

from clustersim.calibration.bench.config import CPU_GEMM_SHAPES, KERNEL_CLASSES, BenchConfig
from clustersim.errors import ClusterSimError


def kernel_plan(cfg: BenchConfig) -> dict[str, list[tuple[int, ...]]]:
    """Points of the kernel-class sweep.

    - ``attention``: (batch, seq, heads, head_dim), SDPA causal; h = heads x head_dim in
      {1024, 2048, 4096, 8192}, head_dim 64 and 128, seq 2048 and 4096 at 8192 tokens, plus
      2048 and 16384 tokens at h 2048.
    - ``gemm``: (tokens, out_features, in_features, label): the linears of one layer (qkv 3h x h,
      proj h x h, fc1 4h x h, fc2 h x 4h) for h in {1024, 2048, 4096, 8192} and tokens in
      {2048, 8192, 16384}, and the LM head (vocab 50304, 128256) at h 2048 and 4096; each in the
      three training layouts (forward NT, dgrad NN, wgrad TN).
    - ``elementwise``: (tokens, hidden) for LayerNorm and RMSNorm fwd/bwd, tanh GELU fwd/bwd (on
      tokens x 4h), residual add, and the unfused PyTorch sequences of the reference program
      (reference/train_gpt.py), each forward + backward: rotary embedding (on the q view of a fused
      QKV output, head_dim 128), SwiGLU ``silu(g) * u`` (on tokens x 4h), the GQA ``repeat_interleave``
      of k (4 query heads per KV head).
    - ``eager_attention``: (batch, seq, heads, head_dim): materialised attention as train_gpt runs
      it (``q k^T``, scale, causal ``masked_fill``, softmax, ``@ v``), forward and forward + backward.
    - ``cross_entropy``: (tokens, vocab), fwd + bwd over bf16 logits upcast to fp32 (as train_gpt).
    - ``adamw``: parameter counts for one foreach AdamW step on bf16 params.
    - ``bmm``: (batch x heads, seq, head_dim): an eager attention core's batched GEMMs (scores ``q k^T``,
      context ``p v``, transposed ``p^T dO``), batch x heads 8-128, seq 1024-4096, head 64 and 128.
    - ``wave``: (layout, m, n, k): GEMMs whose output width walks across the SMs' wave boundaries in
      128-column steps (forward NT at 2048 tokens and K 4096, weight gradient TN at 4096 x K 2048).

    On CPU (``--device cpu``, for CI) a tiny version of every class.
    """
    if cfg.device != "cuda" or cfg.quick:
        small = cfg.device != "cuda"
        hs = (64,) if small else (1024,)
        toks = (128,) if small else (2048,)
        return {
            "attention": [(1, 128, 2, 32)] if small else [(1, 2048, 8, 128)],
            "gemm": [(t, o, i, lab) for t in toks for h in hs
                     for o, i, lab in ((3 * h, h, "qkv"), (4 * h, h, "fc1"))],
            "elementwise": [(t, h) for t in toks for h in hs],
            "eager_attention": [(1, 128, 2, 32)] if small else [(1, 2048, 8, 128)],
            "cross_entropy": [(128, 1000)] if small else [(2048, 50304)],
            "adamw": [100_000] if small else [10_000_000],
            "bmm": [(2, 128, 32)] if small else [(16, 2048, 128)],
            "wave": ([("NT", 128, 64 * j, 128) for j in (1, 2)] if small
                     else [("NT", 2048, 128 * j, 4096) for j in (8, 9)]),
        }
    hs = (1024, 2048, 4096, 8192)
    attention = []
    for h in hs:
        for hd in (128, 64):
            for s in (2048, 4096):
                attention.append((8192 // s, s, h // hd, hd))
    for t in (2048, 16384):
        for hd in (128, 64):
            attention.append((t // 2048, 2048, 2048 // hd, hd))
    gemm = []
    for t in (2048, 8192, 16384):
        for h in hs:
            gemm += [(t, 3 * h, h, "qkv"), (t, h, h, "proj"), (t, 4 * h, h, "fc1"), (t, h, 4 * h, "fc2")]
        for h in (2048, 4096):
            for v in (50304, 128256):
                gemm.append((t, v, h, f"lm_head{v}"))
    elementwise = [(t, h) for t in (2048, 8192, 16384) for h in hs]
    ce = [(t, v) for t in (2048, 8192, 16384) for v in (50304, 128256)]
    eager = [(8192 // s, s, h // 128, 128) for h in (1024, 2048, 4096) for s in (1024, 2048, 4096)]
    bmm = [(bh, s, hd) for s in (1024, 2048, 4096) for hd in (64, 128) for bh in (8, 16, 32, 64, 128)
           if bh * s * s <= 1 << 31]
    wave = [("NT", 2048, 128 * j, 4096) for j in range(1, 49)] + [("TN", 4096, 128 * j, 2048) for j in range(1, 49)]
    return {"attention": attention, "gemm": gemm, "elementwise": elementwise, "eager_attention": eager,
            "cross_entropy": ce, "adamw": [100_000_000, 400_000_000], "bmm": bmm, "wave": wave}


def kernel_plan_size(plan: dict[str, list[tuple[int, ...]]]) -> int:
    """Rows the sweep writes (progress total)."""
    return (2 * len(plan["attention"]) + 3 * len(plan["gemm"]) + 10 * len(plan["elementwise"])
            + 2 * len(plan.get("eager_attention", ()))
            + len(plan["cross_entropy"]) + len(plan["adamw"]) + 3 * len(plan.get("bmm", ()))
            + len(plan.get("wave", ())))


def selected_kernel_rows(cfg: BenchConfig) -> int:
    """Rows the kernel sweep writes for the classes ``cfg`` picks (progress total; the FP8 and MoE classes
    from their own plans: 6 rows per FP8 GEMM shape, 8 per cast shape, 3 per expert GEMM, grouped or routing point,
    1 per loop point)."""
    from clustersim.calibration.bench.experts import expert_plan
    from clustersim.calibration.bench.fp8 import fp8_plan

    want = set(cfg.kernel_classes or KERNEL_CLASSES)
    plan = kernel_plan(cfg)
    sizes = {"attention": 2 * len(plan["attention"]), "gemm": 3 * len(plan["gemm"]),
             "elementwise": 10 * len(plan["elementwise"]), "eager_attention": 2 * len(plan.get("eager_attention", ())),
             "cross_entropy": len(plan["cross_entropy"]), "adamw": len(plan["adamw"]),
             "bmm": 3 * len(plan.get("bmm", ())), "wave": len(plan.get("wave", ()))}
    small = cfg.quick or cfg.device != "cuda"
    if cfg.device == "cuda":
        f = fp8_plan(cfg.quick)
        top = max(t for t, _ in f["cast"])  # compiled casts at the largest token count only
        sizes["fp8"] = 6 * len(f["gemm"]) + 4 * len(f["cast"]) + 4 * sum(t == top for t, _ in f["cast"])
    e = expert_plan(small)
    sizes["experts"] = 3 * (len(e["gemm"]) + len(e["grouped"]) + len(e["route"])) + len(e["loop"]) + 2 * len(e["train"])
    return sum(v for k, v in sizes.items() if k in want)


def op_layout(op: str, size: int, n: int, elt: int) -> tuple[int, int, int] | None:
    """(input elements per rank, output elements per rank, bytes reported) for ``op`` at ``size``.

    nccl-tests conventions; per-rank counts of AG/RS/A2A are rounded down to 16-byte
    multiples, so the reported size can be slightly below the requested one.
    ``None`` when the size is too small for ``n`` ranks.

    >>> op_layout("all_gather", 1024, 2, 4)
    (128, 256, 1024)
    >>> op_layout("all_to_all", 1000, 2, 4)
    (248, 248, 992)
    """
    align = max(1, 16 // elt)
    if op in ("all_reduce", "broadcast", "send_recv"):
        count = size // elt
        return (count, count, count * elt) if count > 0 else None
    per = (size // elt // n) // align * align
    if per <= 0:
        return None
    if op == "all_gather":
        return per, per * n, per * n * elt
    if op == "reduce_scatter":
        return per * n, per, per * n * elt
    if op == "all_to_all":
        return per * n, per * n, per * n * elt
    raise ClusterSimError(f"unknown operation {op!r}")


def nccl_count(op: str, layout: tuple[int, int, int], n: int) -> int:
    """The element count nccl-tests prints: per rank for AG (input) and RS (output), per peer for A2A."""
    if op == "reduce_scatter":
        return layout[1]
    if op == "all_to_all":
        return layout[0] // n
    return layout[0]


def gemm_shapes_to_run(cfg: BenchConfig) -> tuple[tuple[int, int, int], ...]:
    """GEMM shapes to run: all on GPU; on CPU only the small ones (<= 512), which a CPU does in milliseconds."""
    if cfg.device == "cuda":
        return cfg.gemm_shapes
    return tuple(s for s in cfg.gemm_shapes if max(s) <= 512) or CPU_GEMM_SHAPES


def plan_size(cfg: BenchConfig, world: int, scopes: list[str]) -> int:
    """Rows (points) the run visits: collectives of every scope, then the compute sweeps (progress total)."""
    coll = len(cfg.ops) * len(cfg.sizes) * len(cfg.modes) * len(scopes)
    compute = (len(gemm_shapes_to_run(cfg)) if cfg.gemm else 0) + (1 if cfg.hbm else 0) + (1 if cfg.launch else 0)
    if cfg.kernels:
        compute += selected_kernel_rows(cfg)
    return coll + compute
