"""Options of one bench run: :class:`BenchConfig`, its presets, parsing and validation.

Owns the operation and mode names, the default GEMM grids, the element types the bench
accepts (with their sizes in bytes) and every check of an option value (a
:class:`~clustersim.errors.ClusterSimError` naming the option). Imports no torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clustersim.errors import ClusterSimError
from clustersim.units import GiB, MiB, parse_size_range

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
MODES = ("nccl", "eager", "framework")

#: Transformer-like GEMM shapes (m, n, k): the grid of the H200 sample
#: (m in {2048, 8192, 16384} tokens x projection shapes of a ~7-70B model) plus squares.
DEFAULT_GEMM_SHAPES: tuple[tuple[int, int, int], ...] = tuple(
    [(m, n, k) for m in (2048, 8192, 16384)
     for (n, k) in ((2048, 2048), (6144, 2048), (8192, 2048), (2048, 8192), (12288, 12288), (50304, 2048))]
    + [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
)
QUICK_GEMM_SHAPES = ((256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096))
CPU_GEMM_SHAPES = ((64, 64, 64), (128, 128, 128), (256, 256, 256))

#: bytes per element of the element-type names the options accept
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "bf16": 2, "fp16": 2, "fp32": 4, "float64": 8}
#: short names -> torch attribute names
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


#: the classes of ``--kernels``, in the order they run (``--kernel-classes`` picks some)
KERNEL_CLASSES = ("attention", "gemm", "elementwise", "eager_attention", "cross_entropy", "bmm", "wave",
                  "sustained", "adamw", "fp8", "experts")


@dataclass
class BenchConfig:
    """Options of one bench run (the CLI fills it; every field has a default)."""

    output: str
    """JSON-lines file rank 0 appends to (resumed when it exists)."""
    device: str = "auto"
    """``cuda`` (NCCL), ``cpu`` (gloo) or ``auto`` (cuda when available)."""
    ops: tuple[str, ...] = OPS
    sizes: tuple[int, ...] = ()
    """Message sizes in bytes (nccl-tests conventions); empty = 1 KiB..4 GiB x2 (quick: 1 KiB..64 KiB x4)."""
    modes: tuple[str, ...] = MODES
    framework_max_bytes: int = 1 * MiB
    """Largest size also measured in framework mode (the isolated-call latency matters for small calls)."""
    iters: int = 20
    warmup: int = 5
    reps: int = 5
    framework_reps: int = 20
    dtype: str = "float32"
    nccl_algo: str | None = None
    nccl_proto: str | None = None
    nvls: str = "off"
    """``off`` (sets NCCL_NVLS_ENABLE=0, the default), ``on`` (=1) or ``auto`` (leave NCCL's default)."""
    scopes: tuple[str, ...] = ("world",)
    """``world``: all ranks; ``intra``: one group per host (only differs from world on several hosts)."""
    gemm: bool = True
    gemm_shapes: tuple[tuple[int, int, int], ...] = ()
    gemm_dtype: str = "bf16"
    hbm: bool = True
    hbm_bytes: int = 2 * GiB
    launch: bool = True
    kernels: bool = False
    """Kernel-class sweep (attention, GEMM layouts, memory-bound ops, cross-entropy, AdamW, FP8, MoE): rank 0."""
    kernel_classes: tuple[str, ...] = ()
    """Classes of the kernel sweep to run (``plans.KERNEL_CLASSES``); empty: all of them."""
    memory_fraction: float = 0.8
    """Use at most this fraction of free memory for buffers; larger sizes are skipped and logged."""
    timeout_s: float = 600.0
    run_id: str | None = None
    quick: bool = False
    progress: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for the meta row)."""
        return asdict(self)


def quick_config(output: str, **kw: Any) -> BenchConfig:
    """The ``--quick`` preset: few sizes, few iterations, small compute sweeps (tests, smoke runs)."""
    base = dict(output=output, sizes=tuple(parse_size_range("1KiB:64KiB:x4")), iters=5, warmup=2, reps=3,
                framework_reps=5, gemm_shapes=QUICK_GEMM_SHAPES, hbm_bytes=256 * MiB, quick=True)
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def parse_gemm_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """``"2048,2048,2048;8192x6144x2048"`` -> shapes; separators ``;`` or spaces, inside ``,`` or ``x``.

    >>> parse_gemm_shapes("64,64,64; 128x256x512")
    ((64, 64, 64), (128, 256, 512))
    """
    out = []
    for part in text.replace(";", " ").split():
        dims = part.replace("x", ",").split(",")
        try:
            m, n, k = (int(d) for d in dims)
        except ValueError:
            raise ClusterSimError(f"GEMM shape {part!r} must be M,N,K (three integers)", field="--gemm-shapes") from None
        if min(m, n, k) <= 0:
            raise ClusterSimError(f"GEMM shape {part!r} must be positive", field="--gemm-shapes")
        out.append((m, n, k))
    if not out:
        raise ClusterSimError("no GEMM shapes given", field="--gemm-shapes")
    return tuple(out)


def validate_config(cfg: BenchConfig) -> BenchConfig:
    """Check option values (ClusterSimError naming the option) and fill defaults."""
    if tuple(cfg.ops) in (("none",), ()):
        cfg.ops = ()  # compute only (e.g. one GPU)
    for op in cfg.ops:
        if op not in OPS:
            raise ClusterSimError(f"unknown operation {op!r} (use {', '.join(OPS)})", field="--ops")
    for m in cfg.modes:
        if m not in MODES:
            raise ClusterSimError(f"unknown mode {m!r} (use nccl, eager, framework)", field="--modes")
    for s in cfg.scopes:
        if s not in ("world", "intra"):
            raise ClusterSimError(f"unknown scope {s!r} (use world, intra)", field="--scopes")
    if cfg.device not in ("auto", "cuda", "cpu"):
        raise ClusterSimError(f"device must be auto, cuda or cpu, got {cfg.device!r}", field="--device")
    if cfg.nvls not in ("on", "off", "auto"):
        raise ClusterSimError(f"--nvls must be on, off or auto, got {cfg.nvls!r}", field="--nvls")
    if cfg.dtype not in DTYPE_BYTES:
        raise ClusterSimError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {cfg.dtype!r}", field="--dtype")
    if cfg.gemm_dtype not in DTYPE_BYTES:
        raise ClusterSimError(f"GEMM dtype must be one of {', '.join(DTYPE_BYTES)}", field="--gemm-dtype")
    for name in ("iters", "reps", "framework_reps"):
        if getattr(cfg, name) < 1:
            raise ClusterSimError(f"must be >= 1, got {getattr(cfg, name)}", field=f"--{name.replace('_', '-')}")
    if cfg.warmup < 0:
        raise ClusterSimError("must be >= 0", field="--warmup")
    bad = [c for c in cfg.kernel_classes if c not in KERNEL_CLASSES]
    if bad:
        raise ClusterSimError(f"unknown kernel class {bad[0]!r} (use {', '.join(KERNEL_CLASSES)})",
                              field="--kernel-classes")
    if not 0 < cfg.memory_fraction <= 1:
        raise ClusterSimError("must be in (0, 1]", field="--memory-fraction")
    if not cfg.sizes:
        cfg.sizes = tuple(parse_size_range("1KiB:64KiB:x4" if cfg.quick else "1KiB:4GiB:x2"))
    if any(s <= 0 for s in cfg.sizes):
        raise ClusterSimError("sizes must be > 0", field="--sizes")
    if not cfg.gemm_shapes:
        cfg.gemm_shapes = QUICK_GEMM_SHAPES if cfg.quick else DEFAULT_GEMM_SHAPES
    for key, val in (("--nccl-algo", cfg.nccl_algo), ("--nccl-proto", cfg.nccl_proto)):
        if val is not None and (not val.strip() or any(c.isspace() for c in val)):
            raise ClusterSimError(f"{val!r} is not an NCCL value", field=key)
    return cfg


def torch_dtype(torch: Any, name: str) -> Any:
    """The torch dtype of an option's element-type name (``bf16`` -> ``torch.bfloat16``)."""
    return getattr(torch, DTYPE_ALIASES.get(name, name))


def nvls_state(cfg: BenchConfig, cuda: bool) -> bool | None:
    """NVLink multicast as measured: forced off/on, None when left to NCCL (``--nvls auto``), False on CPU."""
    if not cuda:
        return False
    return {"on": True, "off": False}.get(cfg.nvls)
