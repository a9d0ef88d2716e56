"""``clustersim calibrate bench``: measure collectives, GEMMs, HBM and launch overhead with torch.

This is the only module of clustersim that imports torch (inside its functions,
so that ``import clustersim.calibration.bench`` works without it). Every rank of a
job runs :func:`run_bench`; rank 0 writes the rows (Contract 3) to one JSON-lines
file, flushing each row, and skips points already in the file (resume).

What is measured
----------------
``collective`` rows, three modes kept apart (``timing`` says how each was taken):

- ``mode: "nccl"``: the library-level time of one collective, what nccl-tests
  reports. On GPUs ``iters`` calls are captured in a CUDA graph and the graph is
  replayed (``timing: cuda-graph``, as nccl-tests ``-G``), so the host-side cost of
  a ``torch.distributed`` call (~20-40 us) is not in the number; on CPU (gloo) the
  calls run back to back (``timing: back-to-back``).
- ``mode: "eager"`` (GPUs only): ``iters`` eager ``torch.distributed`` calls back to
  back (``timing: back-to-back``); at small sizes this is bound by the host's
  launch rate, which is what an eager training loop sees.
- For both: repeated ``reps`` times (CUDA events on GPU, ``perf_counter`` after a
  barrier on CPU), divided by ``iters``; the row has the median over repetitions
  (``time_us``) and ``time_us_min``/``_p10``/``_p90``. Each repetition's time is the
  mean over ranks (nccl-tests' ``-a 1``); ``time_us_rank_max`` is the median of
  the slowest rank.
- ``mode: "framework"``: one isolated ``torch.distributed`` call on an idle device
  (synchronize, barrier, synchronize, then host clock around the call and its
  completion): what a training framework pays per call, launch included.

Sizes follow nccl-tests: all_reduce and broadcast move ``size`` bytes per rank;
all_gather's size is the whole gathered buffer and reduce_scatter's the whole
input (per-rank part rounded down to 16 bytes); all_to_all's is each rank's whole
send buffer; send_recv's the bytes each rank sends (ring: to rank+1, from rank-1).

``comm_init``: time from just before ``init_process_group`` to the first completed
collective (slowest rank), and from process start.

``gemm``, ``hbm`` (device-to-device copy, read + write counted), ``launch``
(GPU-side gap between back-to-back tiny kernels, queued behind a sleep kernel so
the host is never the bottleneck) and ``framework_call`` (the smallest framework
time per op). ``kernel`` rows (``--kernels``, rank 0; see :func:`kernel_plan`): SDPA causal
flash attention fwd and fwd+bwd (``flops`` as executed with the causal mask, ``flops_full``
the full s^2 count), the linears of a layer in the three training layouts (forward NT
``x @ W^T``, dgrad NN ``dy @ W``, wgrad TN ``dy^T @ x``), LayerNorm/GELU fwd and bwd,
residual add, cross-entropy fwd+bwd over bf16 logits, one foreach AdamW step; GPU-bound
(warm-up, then ``reps`` repetitions of back-to-back calls queued behind a sleep kernel,
between two CUDA events; median). ``bytes`` of memory-bound rows is the minimum traffic
(each tensor read or written once). A ``meta`` row comes first (GPU, driver, CUDA, NCCL, torch, hosts,
``nvidia-smi topo -m``, NCCL topology dump, NVLS state).
"""

from __future__ import annotations

import math

import datetime as _dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from clustersim.calibration.env import RankEnv, device_for_local_rank, discover, local_rank_from_hosts
from clustersim.calibration.jsonl import RowWriter, resume_state, row_key
from clustersim.errors import ClusterSimError
from clustersim.units import GiB, MiB, format_bytes, parse_size_range

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

_T_PROCESS = time.time()


def _process_start_time() -> float | None:
    """Wall-clock start of this process (Linux ``/proc``), else the time this module was imported."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 overall: starttime in clock ticks after boot
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _T_PROCESS


_T_START = _process_start_time()


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
    """Kernel-class sweep (attention, GEMM layouts, memory-bound ops, cross-entropy, AdamW): rank 0."""
    memory_fraction: float = 0.8
    """Use at most this fraction of free memory for buffers; larger sizes are skipped and logged."""
    timeout_s: float = 600.0
    run_id: str | None = None
    quick: bool = False
    progress: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for the meta row)."""
        return asdict(self)


#: Kernel sweep (``--kernels``): one repetition lasts about this long (GPU-bound: the queue never drains).
KERNEL_REP_TARGET_S = 0.005
KERNEL_MAX_ITERS = 500
KERNEL_REPS = 5
#: seconds of back-to-back GEMM load before the sustained time is read (bench --kernels)
SUSTAINED_S = 4.0
#: compute duties of the GEMM/copy alternation and seconds of load for each (bench --kernels)
DUTIES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.35)
DUTY_S = 3.0
#: ~5 ms of GPU sleep in front of each timed repetition (covers the host's enqueueing of the calls).
KERNEL_SLEEP_CYCLES = 10_000_000
#: AdamW parameters are split into tensors of this many elements (a layer's matrices are 4-64M).
KERNEL_ADAMW_TENSOR = 1 << 23


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
      (calibrate/train_gpt.py), each forward + backward: rotary embedding (on the q view of a fused
      QKV output, head_dim 128), SwiGLU ``silu(g) * u`` (on tokens x 4h), the GQA ``repeat_interleave``
      of k (4 query heads per KV head).
    - ``eager_attention``: (batch, seq, heads, head_dim): materialised attention as train_gpt runs
      it (``q k^T``, scale, causal ``masked_fill``, softmax, ``@ v``), forward and forward + backward.
    - ``cross_entropy``: (tokens, vocab), fwd + bwd over bf16 logits upcast to fp32 (as train_gpt).
    - ``adamw``: parameter counts for one foreach AdamW step on bf16 params.

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
    return {"attention": attention, "gemm": gemm, "elementwise": elementwise, "eager_attention": eager,
            "cross_entropy": ce, "adamw": [100_000_000, 400_000_000]}


def kernel_plan_size(plan: dict[str, list[tuple[int, ...]]]) -> int:
    """Rows the sweep writes (progress total)."""
    return (2 * len(plan["attention"]) + 3 * len(plan["gemm"]) + 10 * len(plan["elementwise"])
            + 2 * len(plan.get("eager_attention", ()))
            + len(plan["cross_entropy"]) + len(plan["adamw"]))


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
    if cfg.dtype not in _DTYPES:
        raise ClusterSimError(f"dtype must be one of {', '.join(_DTYPES)}, got {cfg.dtype!r}", field="--dtype")
    if cfg.gemm_dtype not in _DTYPES:
        raise ClusterSimError(f"GEMM dtype must be one of {', '.join(_DTYPES)}", field="--gemm-dtype")
    for name in ("iters", "reps", "framework_reps"):
        if getattr(cfg, name) < 1:
            raise ClusterSimError(f"must be >= 1, got {getattr(cfg, name)}", field=f"--{name.replace('_', '-')}")
    if cfg.warmup < 0:
        raise ClusterSimError("must be >= 0", field="--warmup")
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


_DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "bf16": 2, "fp16": 2, "fp32": 4, "float64": 8}
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, _DTYPE_ALIASES.get(name, name))


def _percentile(sorted_vals: list[float], q: float) -> float:
    """Linear-interpolation percentile of sorted values (numpy's default method)."""
    if not sorted_vals:
        return float("nan")
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summarize(times_s: list[float]) -> dict[str, float]:
    """Median, min, p10, p90 (microseconds) of per-call times in seconds.

    >>> summarize([1e-6, 2e-6, 3e-6])["time_us"]
    2.0
    """
    v = sorted(t * 1e6 for t in times_s)
    return {"time_us": statistics.median(v), "time_us_min": v[0], "time_us_p10": _percentile(v, 0.10),
            "time_us_p90": _percentile(v, 0.90)}


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests bus-bandwidth factor (all_reduce 2(n-1)/n; AG, RS, A2A (n-1)/n; others 1)."""
    from clustersim.calibration.nccl_tests import busbw_factor as f

    return f(op, n)


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


def _run(cmd: list[str], timeout: float = 20) -> str | None:
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        res = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def _log(msg: str) -> None:
    sys.stderr.write(f"[bench] {msg}\n")
    sys.stderr.flush()


class _Bench:
    """State of one bench process (one rank)."""

    def __init__(self, cfg: BenchConfig, renv: RankEnv):
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.cfg, self.renv = torch, dist, cfg, renv
        self.rank, self.world = renv.rank, renv.world_size
        self.cuda = cfg.device == "cuda"
        self.writer: RowWriter | None = None
        self.done: set[tuple] = set()
        self.hosts: list[str] = [renv.hostname]
        self.nodes = 1
        self.progress: Any = None
        self.task: Any = None
        self.topo_dump: str | None = None
        self.device: Any = None

    # ---------------------------------------------------------------- set-up
    def set_nccl_env(self) -> None:
        """NCCL_ALGO/PROTO/NVLS_ENABLE and the topology dump path, before init."""
        cfg = self.cfg
        if cfg.nccl_algo:
            os.environ["NCCL_ALGO"] = cfg.nccl_algo
        if cfg.nccl_proto:
            os.environ["NCCL_PROTO"] = cfg.nccl_proto
        if cfg.nvls == "off":
            os.environ["NCCL_NVLS_ENABLE"] = "0"
        elif cfg.nvls == "on":
            os.environ["NCCL_NVLS_ENABLE"] = "1"
        # The automatic topology dump is made only in single-rank runs: with 2 ranks on an
        # H200 VM (NCCL 2.28.9) a dump requested on rank 0 alone hung rank 0's topology
        # detection at init (seen 2026-11-22). Set CLUSTERSIM_NCCL_TOPO_DUMP=1 to force it.
        want_dump = self.world == 1 or os.environ.get("CLUSTERSIM_NCCL_TOPO_DUMP") == "1"
        if self.cuda and want_dump and self.rank == 0 and "NCCL_TOPO_DUMP_FILE" not in os.environ:
            fd, path = tempfile.mkstemp(prefix="clustersim-nccl-topo-", suffix=".xml")
            os.close(fd)
            os.unlink(path)  # NCCL creates it
            os.environ["NCCL_TOPO_DUMP_FILE"] = path
            os.environ.setdefault("NCCL_TOPO_DUMP_FILE_RANK", "0")
            self.topo_dump = path
        elif self.cuda:
            self.topo_dump = os.environ.get("NCCL_TOPO_DUMP_FILE")

    def init(self) -> dict[str, Any]:
        """Rendezvous, pick the device, create the process group; returns comm_init timings."""
        torch, dist, renv = self.torch, self.dist, self.renv
        os.environ.update(renv.torch_env())
        timeout = _dt.timedelta(seconds=self.cfg.timeout_s)
        t0 = time.time()
        p0 = time.perf_counter()
        # the same rendezvous init_process_group does for env:// (it reuses torchrun's agent store when
        # TORCHELASTIC_USE_AGENT_STORE says so), opened here so that host names can be exchanged first
        store, _, _ = next(dist.rendezvous("env://", rank=self.rank, world_size=self.world, timeout=timeout))
        store.set_timeout(timeout)
        hstore = dist.PrefixStore("clustersim-hosts", store)
        # host names of every rank: node count, scope, and the local rank when the launcher (plain PMIx) gives none
        hstore.set(f"host/{self.rank}", renv.hostname)
        self.hosts = [hstore.get(f"host/{r}").decode() for r in range(self.world)]
        store = dist.PrefixStore("default_pg", store)
        self.nodes = len(set(self.hosts))
        local = renv.local_rank if renv.local_rank is not None else local_rank_from_hosts(self.rank, self.hosts)
        if self.cuda:
            if not torch.cuda.is_available():
                raise ClusterSimError("--device cuda but torch sees no CUDA device", field="--device")
            idx = device_for_local_rank(local, renv.cuda_visible_devices)
            if idx is None or idx >= torch.cuda.device_count():
                raise ClusterSimError(f"local rank {local}: no CUDA device to bind (visible: "
                                      f"{torch.cuda.device_count()}, CUDA_VISIBLE_DEVICES={renv.cuda_visible_devices})")
            torch.cuda.set_device(idx)
            self.device = torch.device("cuda", idx)
        else:
            self.device = torch.device("cpu")
        self.local_rank = local
        kw: dict[str, Any] = {}
        if self.cuda:
            kw["device_id"] = self.device
        dist.init_process_group("nccl" if self.cuda else "gloo", store=store, rank=self.rank, world_size=self.world,
                                timeout=timeout, **kw)
        x = torch.ones(1, device=self.device)
        dist.all_reduce(x)
        self._sync()
        init_s = time.perf_counter() - p0
        since_start = time.time() - _T_START if _T_START else None
        # slowest rank decides when the communicator is ready everywhere
        t = torch.tensor([init_s, since_start or 0.0], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return {"time_s": float(t[0]), "since_process_start_s": float(t[1]) if since_start else None,
                "started_at": t0}

    def _sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    # ---------------------------------------------------------------- rows
    def emit(self, row: dict[str, Any]) -> None:
        """Write a row (rank 0) and remember its key."""
        self.done.add(row_key(row))
        if self.writer is not None:
            self.writer.write(row)

    def skip(self, key_row: dict[str, Any]) -> bool:
        return row_key(key_row) in self.done

    def advance(self, n: int = 1) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, n)

    def describe(self, text: str) -> None:
        if self.progress is not None:
            self.progress.update(self.task, description=text)

    def meta(self, init: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        row: dict[str, Any] = {"kind": "meta", "world_size": self.world, "nodes": self.nodes, "hosts": list(dict.fromkeys(self.hosts)),
                               "rank_hosts": self.hosts, "device": self.cfg.device,
                               "backend": "nccl" if self.cuda else "gloo", "torch_version": torch.__version__,
                               "python": platform.python_version(), "launcher": self.renv.launcher,
                               "pmix": self.renv.pmix, "job_id": self.renv.job_id,
                               "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                               "nvls": _nvls_state(self.cfg, self.cuda), "nvls_setting": os.environ.get("NCCL_NVLS_ENABLE"),
                               "nccl_algo": os.environ.get("NCCL_ALGO"), "nccl_proto": os.environ.get("NCCL_PROTO"),
                               "config": {k: v for k, v in self.cfg.to_dict().items() if k not in ("output",)}}
        if self.cuda:
            props = torch.cuda.get_device_properties(self.device)
            nccl = torch.cuda.nccl.version()
            row.update({"gpu": props.name, "gpu_memory_bytes": int(props.total_memory),
                        "compute_capability": f"{props.major}.{props.minor}", "cuda_version": torch.version.cuda,
                        "nccl_version": ".".join(str(v) for v in nccl) if isinstance(nccl, tuple) else str(nccl),
                        "gpu_count_visible": torch.cuda.device_count()})
            smi = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
            row["driver"] = smi.splitlines()[0].strip() if smi else None
            row["topo_m"] = _run(["nvidia-smi", "topo", "-m"])
            row["nvlink_status"] = _run(["nvidia-smi", "nvlink", "-s"])
            xml = None
            if self.topo_dump and Path(self.topo_dump).exists():
                xml = Path(self.topo_dump).read_text(errors="replace")
            row["nccl_topo_xml"] = xml
        else:
            row.update({"gpu": None, "cpu": platform.processor() or platform.machine(), "driver": None,
                        "nccl_version": None, "topo_m": None, "nccl_topo_xml": None})
        row["comm_init_s"] = init["time_s"]
        return row

    # ---------------------------------------------------------------- memory
    def free_bytes(self) -> int:
        if self.cuda:
            # buffers of earlier sizes sit in torch's caching allocator and would count as used
            self.torch.cuda.empty_cache()
            free, _total = self.torch.cuda.mem_get_info(self.device)
            return int(free)
        try:
            with open("/proc/meminfo") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024 // max(1, self.renv.local_world_size or 1)
        except OSError:
            pass
        return 4 * GiB

    def all_agree(self, ok: bool, group: Any = None) -> bool:
        """True only when ``ok`` holds on every rank of ``group``."""
        t = self.torch.tensor([1 if ok else 0], dtype=self.torch.int32, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=group)
        return bool(int(t.item()))

    # ---------------------------------------------------------------- collectives
    def make_call(self, op: str, size: int, group: Any, n: int, grank: int, granks: list[int]) -> tuple[Callable[[], None], int, int] | None:
        """(call, reported bytes, buffer bytes) or None when the size does not fit n ranks."""
        torch, dist = self.torch, self.dist
        dtype = _torch_dtype(torch, self.cfg.dtype)
        elt = _DTYPES[self.cfg.dtype]
        layout = op_layout(op, size, n, elt)
        if layout is None:
            return None
        n_in, n_out, reported = layout
        need = (n_in + (n_out if op not in ("all_reduce", "broadcast") else 0)) * elt
        fits = need <= self.cfg.memory_fraction * self.free_bytes()
        if not self.all_agree(fits, group):
            if self.rank == 0:
                _log(f"skipped {op} {format_bytes(reported)}: needs {format_bytes(need)} per rank, more than "
                     f"{self.cfg.memory_fraction:.0%} of free memory on some rank")
            return (lambda: None), reported, -1
        inp = torch.ones(n_in, dtype=dtype, device=self.device)
        if op == "all_reduce":
            return (lambda: dist.all_reduce(inp, group=group)), reported, need
        if op == "broadcast":
            src = granks[0]
            return (lambda: dist.broadcast(inp, src=src, group=group)), reported, need
        out = torch.empty(n_out, dtype=dtype, device=self.device)
        # torch >= 2.12 renamed the tensor variants (*_single); the old names warn but work
        ag = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        rs = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        if op == "all_gather":
            return (lambda: ag(out, inp, group=group)), reported, need
        if op == "reduce_scatter":
            return (lambda: rs(out, inp, group=group)), reported, need
        if op == "all_to_all":
            return (lambda: dist.all_to_all_single(out, inp, group=group)), reported, need
        if op == "send_recv":
            nxt, prv = granks[(grank + 1) % n], granks[(grank - 1) % n]

            def sendrecv() -> None:
                reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, inp, nxt, group=group),
                                               dist.P2POp(dist.irecv, out, prv, group=group)])
                for r in reqs:
                    r.wait()
            return sendrecv, reported, need
        raise ClusterSimError(f"unknown operation {op!r}")

    def time_nccl(self, call: Callable[[], None], group: Any) -> list[float]:
        """Per-call seconds of ``reps`` repetitions of ``iters`` back-to-back calls."""
        torch, dist, cfg = self.torch, self.dist, self.cfg
        for _ in range(cfg.warmup):
            call()
        self._sync()
        out = []
        for _ in range(cfg.reps):
            dist.barrier(group=group)
            if self.cuda:
                self._sync()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(cfg.iters):
                    call()
                end.record()
                end.synchronize()
                out.append(start.elapsed_time(end) / 1e3 / cfg.iters)
            else:
                t0 = time.perf_counter()
                for _ in range(cfg.iters):
                    call()
                out.append((time.perf_counter() - t0) / cfg.iters)
        return out

    def time_graph(self, call: Callable[[], None], group: Any) -> list[float]:
        """Per-call seconds from replaying a CUDA graph of ``iters`` captured calls.

        Returns [] (on every rank) when capture fails on any rank, so the caller
        writes no row rather than a wrong one.
        """
        torch, dist, cfg = self.torch, self.dist, self.cfg
        graph = None
        ok = True
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up off the capture stream, as CUDA graphs require
                for _ in range(max(cfg.warmup, 2)):
                    call()
            torch.cuda.current_stream().wait_stream(side)
            self._sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(cfg.iters):
                    call()
            graph.replay()
            self._sync()
        except Exception as exc:  # noqa: BLE001 - report and skip the point
            ok = False
            _log(f"rank {self.rank}: CUDA-graph capture failed ({type(exc).__name__}: {exc}); no nccl row for this point")
        if not self.all_agree(ok, group):
            return []
        out = []
        for _ in range(cfg.reps):
            dist.barrier(group=group)
            self._sync()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) / 1e3 / cfg.iters)
        del graph
        return out

    def time_framework(self, call: Callable[[], None], group: Any) -> list[float]:
        """Seconds of isolated single calls on an idle device (host clock, completion included)."""
        dist, cfg = self.dist, self.cfg
        call()
        self._sync()
        out = []
        for _ in range(cfg.framework_reps):
            self._sync()
            dist.barrier(group=group)
            self._sync()
            t0 = time.perf_counter()
            call()
            self._sync()
            out.append(time.perf_counter() - t0)
        return out

    def reduce_times(self, times: list[float], group: Any, op: Any) -> list[float]:
        t = self.torch.tensor(times, dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t, op=op, group=group)
        return [float(v) for v in t.tolist()]

    def collectives(self, group: Any, granks: list[int], scope_name: str) -> None:
        cfg = self.cfg
        n = len(granks)
        grank = granks.index(self.rank)
        nodes = len({self.hosts[r] for r in granks})
        scope = "intra" if nodes == 1 else "inter"
        algo = (os.environ.get("NCCL_ALGO") or None) if self.cuda else None
        proto = (os.environ.get("NCCL_PROTO") or None) if self.cuda else None
        nvls = _nvls_state(cfg, self.cuda)
        smallest_fw: dict[str, dict[str, Any]] = {}
        for op in cfg.ops:
            if op in ("send_recv", "all_to_all") and n == 1:
                if self.rank == 0:
                    _log(f"skipped {op}: needs at least 2 ranks")
                self.advance(len(cfg.sizes) * len(cfg.modes))
                continue
            for size in cfg.sizes:
                self.describe(f"{op} {format_bytes(size)} ({scope_name})")
                modes = [m for m in cfg.modes if (m == "nccl" or (m == "eager" and self.cuda)
                                                  or (m == "framework" and size <= cfg.framework_max_bytes))]
                elt = _DTYPES[cfg.dtype]
                layout = op_layout(op, size, n, elt)
                if layout is None:
                    if self.rank == 0:
                        _log(f"skipped {op} {size} B: smaller than 16 bytes per rank on {n} ranks")
                    self.advance(len(cfg.modes))
                    continue
                base = {"kind": "collective", "op": op, "ranks": n, "nodes": nodes, "scope": scope,
                        "size_bytes": layout[2], "dtype": _DTYPE_ALIASES.get(cfg.dtype, cfg.dtype),
                        "algorithm": algo.lower() if algo else None, "protocol": proto.lower() if proto else None,
                        "nvls": nvls, "inplace": op in ("all_reduce", "broadcast"),
                        "group": scope_name if scope_name != "world" else None,
                        "backend": "nccl" if self.cuda else "gloo", "device": cfg.device}
                todo = [m for m in modes if not self.skip({**base, "mode": m})]
                self.advance(len(cfg.modes) - len(todo))
                if not todo:
                    continue
                made = self.make_call(op, size, group, n, grank, granks)
                if made is None or made[2] < 0:
                    self.advance(len(todo))
                    continue
                call, reported, _need = made
                for mode in todo:
                    timing = "isolated"
                    if mode == "framework":
                        per_rank = self.time_framework(call, group)
                    elif mode == "nccl" and self.cuda:
                        per_rank, timing = self.time_graph(call, group), "cuda-graph"
                        if not per_rank:  # capture failed on some rank: no row, never a wrong one
                            self.advance()
                            continue
                    else:
                        per_rank, timing = self.time_nccl(call, group), "back-to-back"
                    mean = [v / n for v in self.reduce_times(per_rank, group, self.dist.ReduceOp.SUM)]
                    worst = self.reduce_times(per_rank, group, self.dist.ReduceOp.MAX)
                    s = summarize(mean)
                    t_s = s["time_us"] * 1e-6
                    algbw = reported / t_s / 1e9 if t_s > 0 else None
                    row = {**base, "mode": mode, "timing": timing, **s, "time_us_rank_max": statistics.median(worst) * 1e6,
                           "iters": cfg.iters if mode != "framework" else 1,
                           "reps": cfg.reps if mode != "framework" else cfg.framework_reps,
                           "warmup": cfg.warmup if mode != "framework" else 1,
                           "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor(op, n) if algbw is not None else None,
                           "count": _nccl_count(op, layout, n)}
                    if self.rank == 0:
                        self.emit(row)
                    else:
                        self.done.add(row_key(row))
                    if mode == "framework" and op not in smallest_fw:
                        smallest_fw[op] = row
                    self.advance()
                del call
        for op, row in smallest_fw.items():
            fc = {"kind": "framework_call", "op": op, "ranks": n, "nodes": nodes, "scope": scope,
                  "size_bytes": row["size_bytes"], "time_us": row["time_us"], "time_us_p10": row["time_us_p10"],
                  "time_us_p90": row["time_us_p90"], "device": cfg.device,
                  "group": scope_name if scope_name != "world" else None}
            if not self.skip(fc) and self.rank == 0:
                self.emit(fc)

    # ---------------------------------------------------------------- compute (rank 0 measures, others wait)
    def compute(self) -> None:
        cfg = self.cfg
        if self.rank == 0:
            if cfg.gemm:
                self.gemms()
            if self.cuda and cfg.hbm:
                self.hbm()
            if self.cuda and cfg.launch:
                self.launch_overhead()
            if cfg.kernels:
                self.kernels()
            if not self.cuda and (cfg.hbm or cfg.launch):
                _log("skipped hbm and launch measurements: CUDA only")
        self.dist.barrier()

    def _event_times(self, fn: Callable[[], None], iters: int, warmup: int = 3) -> list[float]:
        torch = self.torch
        for _ in range(warmup):
            fn()
        self._sync()
        out = []
        for _ in range(iters):
            if self.cuda:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                out.append(s.elapsed_time(e) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        return out

    def gemms(self) -> None:
        torch, cfg = self.torch, self.cfg
        shapes = _gemm_shapes(cfg)
        dtype_name = _DTYPE_ALIASES.get(cfg.gemm_dtype, cfg.gemm_dtype) if self.cuda else "float32"
        dtype = _torch_dtype(torch, dtype_name)
        elt = _DTYPES[dtype_name]
        short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype_name, dtype_name)
        for m, n, k in shapes:
            key = {"kind": "gemm", "m": m, "n": n, "k": k, "dtype": short, "device": cfg.device}
            self.describe(f"gemm {m}x{n}x{k}")
            if self.skip(key):
                self.advance()
                continue
            need = (m * k + k * n + m * n) * elt
            if need > cfg.memory_fraction * self.free_bytes():
                _log(f"skipped gemm {m}x{n}x{k}: needs {format_bytes(need)}")
                self.advance()
                continue
            a = torch.randn(m, k, device=self.device).to(dtype)
            b = torch.randn(k, n, device=self.device).to(dtype)
            c = torch.empty(m, n, device=self.device, dtype=dtype)
            iters = 3 if cfg.quick else (10 if 2 * m * n * k > 1e12 else 30)
            ts = self._event_times(lambda: torch.matmul(a, b, out=c), iters)
            s = summarize(ts)
            flops = 2.0 * m * n * k
            self.emit({**key, **s, "iters": iters, "tflops": flops / (s["time_us"] * 1e-6) / 1e12})
            del a, b, c
            self.advance()

    def hbm(self) -> None:
        torch, cfg = self.torch, self.cfg
        nbytes = cfg.hbm_bytes
        while nbytes > 64 * MiB and 2 * nbytes > cfg.memory_fraction * self.free_bytes():
            nbytes //= 2
        key = {"kind": "hbm", "bytes": nbytes, "device": cfg.device}
        self.describe(f"hbm copy {format_bytes(nbytes)}")
        if not self.skip(key):
            src = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            dst = torch.empty_like(src)
            ts = self._event_times(lambda: dst.copy_(src), 5 if cfg.quick else 20)
            s = summarize(ts)
            self.emit({**key, **s, "method": "device-to-device copy (read + write counted)",
                       "bandwidth_GBps": 2 * nbytes / (s["time_us"] * 1e-6) / 1e9})
            del src, dst
        self.advance()

    def launch_overhead(self) -> None:
        torch, cfg = self.torch, self.cfg
        key = {"kind": "launch", "device": cfg.device}
        self.describe("kernel launch")
        if not self.skip(key):
            x = torch.zeros(1, device=self.device)
            n = 200 if cfg.quick else 1000
            samples = []
            for _ in range(3 if cfg.quick else 5):
                torch.cuda.synchronize()
                # queue a sleep kernel first so that the host has enqueued all tiny kernels before
                # the GPU reaches them: the events then time the GPU-side gap, not host launch speed
                torch.cuda._sleep(int(2e8 if not cfg.quick else 5e7))
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(n):
                    x.add_(1)
                e.record()
                e.synchronize()
                samples.append(s.elapsed_time(e) / 1e3 / n)
            # host side: enqueue rate of the same kernels without the sleep in front
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                x.add_(1)
            host_us = (time.perf_counter() - t0) / n * 1e6
            torch.cuda.synchronize()
            s = summarize(samples)
            self.emit({**key, "overhead_us": s["time_us"], "overhead_us_min": s["time_us_min"],
                       "kernels": n, "host_launch_us": host_us,
                       "method": "back-to-back 1-element add_ kernels queued behind torch.cuda._sleep, CUDA events"})
        self.advance()

    # ---------------------------------------------------------------- kernel classes (rank 0, --kernels)
    def _gpu_bound_times(self, fn: Callable[[], None]) -> tuple[list[float], int]:
        """Per-call times (s) of ``fn``: warm-up, then ``reps`` repetitions of ``iters`` back-to-back calls.

        ``iters`` is chosen from one timed call so that a repetition lasts about
        ``KERNEL_REP_TARGET_S`` (at least 1 call): the GPU queue stays full, so the
        host's launch cost is hidden (GPU-bound time, as in a training step).
        """
        torch, cfg = self.torch, self.cfg
        for _ in range(1 if cfg.quick else 2):
            fn()
        self._sync()
        t0 = time.perf_counter()
        fn()
        self._sync()
        est = max(time.perf_counter() - t0, 1e-6)
        target = 0.002 if cfg.quick or not self.cuda else KERNEL_REP_TARGET_S
        iters = max(1, min(KERNEL_MAX_ITERS, int(target / est)))
        reps = 3 if cfg.quick or not self.cuda else KERNEL_REPS
        out = []
        host: list[float] = []
        for _ in range(reps):
            if self.cuda:
                # a sleep kernel in front keeps the GPU busy while the host enqueues the calls, so that
                # even small multi-kernel ops are timed GPU-bound (host_enqueue_us says how close it was)
                torch.cuda._sleep(KERNEL_SLEEP_CYCLES)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                h0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                host.append((time.perf_counter() - h0) / iters)
                e.record()
                e.synchronize()
                out.append(s.elapsed_time(e) / 1e3 / iters)
            else:
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                out.append((time.perf_counter() - t0) / iters)
        self._last_host_us = statistics.median(host) * 1e6 if host else None
        return out, iters

    def _kernel_point(self, key: dict[str, Any], fields: dict[str, Any], setup: Callable[[], Callable[[], None]],
                      need_bytes: int, flops: float | None = None, nbytes: float | None = None,
                      extra: dict[str, Any] | None = None) -> None:
        """Measure one kernel point (skipped when already in the file or too big) and emit its row."""
        torch = self.torch
        if nbytes is not None:
            key = {**key, "bytes": int(nbytes)}  # "bytes" is part of a row's identity (resume)
        self.describe(f"kernel {key['op']}"[:34])
        if self.skip(key):
            self.advance()
            return
        if need_bytes > self.cfg.memory_fraction * self.free_bytes():
            _log(f"skipped kernel {key['op']}: needs {format_bytes(need_bytes)}")
            self.advance()
            return
        try:
            fn = setup()
            ts, iters = self._gpu_bound_times(fn)
        except (RuntimeError, NotImplementedError) as exc:  # e.g. no flash kernel for this shape / device
            _log(f"skipped kernel {key['op']}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            fn = None
            if self.cuda:
                torch.cuda.empty_cache()
            self.advance()
            return
        del fn
        s = summarize(ts)
        row = {**key, **fields, **s, "iters": iters, "reps": len(ts),
               "timing": "back-to-back behind a sleep kernel, CUDA events" if self.cuda else "back-to-back, perf_counter"}
        if getattr(self, "_last_host_us", None) is not None:
            row["host_enqueue_us"] = self._last_host_us
        if flops is not None:
            row["flops"] = flops
            row["tflops"] = flops / (s["time_us"] * 1e-6) / 1e12
        if nbytes is not None:
            row["bytes"] = int(nbytes)
            row["bandwidth_GBps"] = nbytes / (s["time_us"] * 1e-6) / 1e9
        row.update(extra or {})
        if row.get("flops_full"):
            row["tflops_full"] = row["flops_full"] / (s["time_us"] * 1e-6) / 1e12
        self.emit(row)
        if self.cuda:
            torch.cuda.empty_cache()
        self.advance()

    def _sustained_gemm(self, base: dict[str, Any], n: int = 8192, seconds: float = SUSTAINED_S) -> None:
        """Burst versus sustained time of one large bf16 GEMM (row ``gemm_sustained``).

        The kernel sweep times each point in bursts of a few milliseconds, at the clocks an idle GPU
        boosts to; a training step keeps the GPU busy for seconds, at the clocks its power limit
        allows. Here the same ``n x n x n`` GEMM is timed in a burst (as the sweep does) and after
        ``seconds`` of back-to-back load (median of the last quarter's 20-call windows); their ratio
        is the profile's ``sustained_factor`` for compute-bound kernels.
        """
        torch = self.torch
        key = {**base, "op": f"gemm_sustained:n{n}"}
        self.describe("kernel gemm_sustained")
        if self.skip(key):
            return
        a = torch.randn(n, n, device=self.device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=self.device, dtype=torch.bfloat16)
        o = torch.empty(n, n, device=self.device, dtype=torch.bfloat16)
        fn = lambda: torch.matmul(a, b, out=o)  # noqa: E731
        burst, _ = self._gpu_bound_times(fn)
        windows = []
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s_.record()
            for _ in range(20):
                fn()
            e_.record()
            e_.synchronize()
            windows.append(s_.elapsed_time(e_) / 1e3 / 20)
        tail = windows[-max(1, len(windows) // 4):]
        b_s, s_s = statistics.median(burst), statistics.median(tail)
        flops = 2.0 * n ** 3
        self.emit({**key, "name": "gemm_sustained", "m": n, "n": n, "k": n, "time_us": s_s * 1e6,
                   "burst_time_us": b_s * 1e6, "sustained_s": seconds, "windows": len(windows),
                   "tflops": flops / s_s / 1e12, "burst_tflops": flops / b_s / 1e12, "ratio": b_s / s_s,
                   "timing": "burst as the sweep; sustained: median of the last quarter of 20-call windows"})

    def _duty_sweep(self, base: dict[str, Any], duties: tuple[float, ...] = DUTIES,
                    seconds: float = DUTY_S) -> None:
        """Sustained GEMM time when GEMMs alternate with memory-bound work (rows ``gemm_duty``).

        A training step alternates compute-bound kernels (GEMMs, attention) with memory-bound ones;
        the power limit sets the clock from the mix. For each compute ``duty`` d, a
        4096 x 8192 x 8192 bf16 GEMM (about a transformer layer's GEMM) alternates with a
        device-to-device copy sized to take ``(1 - d) / d`` of the GEMM's burst time; after
        ``seconds`` of this the GEMM and the copy are timed with CUDA events (medians of the last
        half). ``ratio`` = sustained / burst GEMM time (>= 1), ``copy_ratio`` the same for the copy.
        """
        torch = self.torch
        m, n, k = 4096, 8192, 8192
        dev = self.device
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        o = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        gemm = lambda: torch.matmul(a, b, out=o)  # noqa: E731
        burst_g = statistics.median(self._gpu_bound_times(gemm)[0])
        cap = 1 << 30  # bytes per copy buffer
        src = torch.empty(cap, device=dev, dtype=torch.uint8)
        dst = torch.empty(cap, device=dev, dtype=torch.uint8)
        src.random_(0, 255)
        for d in duties:
            key = {**base, "op": f"gemm_duty:d{d:.2f}"}
            self.describe(f"kernel gemm_duty {d:.2f}")
            if self.skip(key):
                continue
            nbytes = 0
            if d < 1.0:
                probe = src[: 64 << 20]
                dst[: 64 << 20].copy_(probe)
                t_probe = statistics.median(self._gpu_bound_times(lambda: dst[: 64 << 20].copy_(probe))[0])
                per_byte = t_probe / (64 << 20)
                nbytes = min(cap, int(burst_g * (1.0 - d) / d / per_byte))
            s_src, s_dst = src[:nbytes], dst[:nbytes]
            burst_c = (statistics.median(self._gpu_bound_times(lambda: s_dst.copy_(s_src))[0]) if nbytes else 0.0)
            g_t, c_t = [], []
            t_end = time.perf_counter() + seconds
            while time.perf_counter() < t_end:
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(3 * 10)]
                for i in range(10):
                    ev[3 * i].record()
                    gemm()
                    ev[3 * i + 1].record()
                    if nbytes:
                        s_dst.copy_(s_src)
                    ev[3 * i + 2].record()
                ev[-1].synchronize()
                for i in range(10):
                    g_t.append(ev[3 * i].elapsed_time(ev[3 * i + 1]) / 1e3)
                    c_t.append(ev[3 * i + 1].elapsed_time(ev[3 * i + 2]) / 1e3)
            half = len(g_t) // 2
            sg, sc = statistics.median(g_t[half:]), statistics.median(c_t[half:])
            self.emit({**key, "name": "gemm_duty", "m": m, "n": n, "k": k, "duty": d, "copy_bytes": nbytes,
                       "time_us": sg * 1e6, "burst_time_us": burst_g * 1e6, "ratio": sg / burst_g,
                       "copy_time_us": sc * 1e6, "copy_burst_time_us": burst_c * 1e6,
                       "copy_ratio": (sc / burst_c) if burst_c else None,
                       "duty_measured": sg / (sg + sc), "seconds": seconds, "calls": len(g_t),
                       "timing": "GEMM and copy alternating; CUDA events around each; medians of the last half"})

    def kernels(self) -> None:
        """Kernel classes of a transformer training step (see :func:`kernel_plan`)."""
        torch, cfg = self.torch, self.cfg
        F = torch.nn.functional
        dev = self.device
        dt = torch.bfloat16 if self.cuda else torch.float32
        dname = "bf16" if self.cuda else "fp32"
        elt = 2 if self.cuda else 4
        plan = kernel_plan(cfg)
        base = {"kind": "kernel", "dtype": dname, "device": cfg.device}

        for b, s, nh, hd in plan["attention"]:
            h = nh * hd
            # as executed with the causal mask: q_i attends to keys 0..i -> s(s+1)/2 score entries per head
            causal = 4.0 * b * nh * hd * s * (s + 1) / 2
            full = 4.0 * b * nh * hd * s * s
            shape = {"batch": b, "seq": s, "heads": nh, "head_dim": hd, "hidden": h, "tokens": b * s, "causal": True}
            need = 12 * b * s * h * elt + 4 * b * nh * s * 4
            for name, mult in (("attention_fwd", 1.0), ("attention_fwd_bwd", 3.5)):
                def setup(name: str = name) -> Callable[[], None]:
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
                op = f"{name}:b{b}:s{s}:nh{nh}:hd{hd}"
                self._kernel_point({**base, "op": op}, {"name": name, **shape}, setup, need, flops=mult * causal,
                                   extra={"flops_full": mult * full, "flops_per_fwd_causal": causal,
                                          "backward_flops_factor": 2.5})

        for t, out_f, in_f, label in plan["gemm"]:
            for layout in ("NT", "NN", "TN"):
                # forward y = x W^T (NT): (t, in) x (out, in)^T; dgrad dx = dy W (NN): (t, out) x (out, in);
                # wgrad dW = dy^T x (TN): (t, out)^T x (t, in)
                m, n, k = {"NT": (t, out_f, in_f), "NN": (t, in_f, out_f), "TN": (out_f, in_f, t)}[layout]
                role = {"NT": "forward", "NN": "dgrad", "TN": "wgrad"}[layout]

                def setup(layout: str = layout) -> Callable[[], None]:
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
                need = (t * in_f + t * out_f + 2 * out_f * in_f) * elt
                op = f"gemm_{layout}:{label}:t{t}:o{out_f}:i{in_f}"
                self._kernel_point({**base, "op": op, "m": m, "n": n, "k": k},
                                   {"name": f"gemm_{layout.lower()}", "layout": layout, "role": role, "linear": label,
                                    "tokens": t, "out_features": out_f, "in_features": in_f},
                                   setup, need, flops=2.0 * m * n * k,
                                   nbytes=(m * k + k * n + m * n) * elt)

        for t, h in plan["elementwise"]:
            shape = {"tokens": t, "hidden": h}
            n_el = t * h
            ln_need = 6 * n_el * elt

            def ln_fwd() -> Callable[[], None]:
                ln = torch.nn.LayerNorm(h, device=dev, dtype=dt)
                x = torch.randn(t, h, device=dev, dtype=dt)

                def f() -> None:
                    with torch.no_grad():
                        ln(x)
                return f

            def ln_bwd() -> Callable[[], None]:
                ln = torch.nn.LayerNorm(h, device=dev, dtype=dt)
                x = torch.randn(t, h, device=dev, dtype=dt).requires_grad_(True)
                y = ln(x)
                dy = torch.randn_like(y)
                # backward only: the graph is kept and replayed (dx, dgamma, dbeta)
                return lambda: torch.autograd.grad(y, (x, ln.weight, ln.bias), dy, retain_graph=True)

            def gelu_fwd(n4: int = 4 * n_el) -> Callable[[], None]:
                x = torch.randn(n4, device=dev, dtype=dt)
                return lambda: F.gelu(x, approximate="tanh")

            def gelu_bwd(n4: int = 4 * n_el) -> Callable[[], None]:
                x = torch.randn(n4, device=dev, dtype=dt).requires_grad_(True)
                y = F.gelu(x, approximate="tanh")
                dy = torch.randn_like(y)
                return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)

            def rms_fwd() -> Callable[[], None]:
                w = torch.ones(h, device=dev, dtype=dt)
                x = torch.randn(t, h, device=dev, dtype=dt)

                def f() -> None:
                    with torch.no_grad():
                        F.rms_norm(x, (h,), w, 1e-5)
                return f

            def rms_bwd() -> Callable[[], None]:
                w = torch.ones(h, device=dev, dtype=dt, requires_grad=True)
                x = torch.randn(t, h, device=dev, dtype=dt).requires_grad_(True)
                y = F.rms_norm(x, (h,), w, 1e-5)
                dy = torch.randn_like(y)
                return lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)

            hd_r = min(128, h // 2)

            def rope() -> Callable[[], None]:
                # train_gpt.apply_rope on q, a (1, s, nh, hd) slice of the fused QKV output seen as (1, nh, s, hd)
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

            def swiglu(n4: int = 4 * n_el) -> Callable[[], None]:
                g = torch.randn(t, n4 // t, device=dev, dtype=dt).requires_grad_(True)
                u = torch.randn(t, n4 // t, device=dev, dtype=dt).requires_grad_(True)
                dy = torch.randn(t, n4 // t, device=dev, dtype=dt)

                def f() -> None:
                    torch.autograd.grad(F.silu(g) * u, (g, u), dy)
                return f

            def repeat_kv() -> Callable[[], None]:
                # GQA as train_gpt: k (1, nkv, s, hd), a slice of the QKV output, repeated to the query heads
                nkv = max(1, h // hd_r // 4)
                kv = torch.randn(1, t, nkv, hd_r, device=dev, dtype=dt).requires_grad_(True)
                dy = torch.randn(1, 4 * nkv, t, hd_r, device=dev, dtype=dt)

                def f() -> None:
                    torch.autograd.grad(kv.transpose(1, 2).repeat_interleave(4, dim=1), kv, dy)
                return f

            def residual() -> Callable[[], None]:
                a = torch.randn(t, h, device=dev, dtype=dt)
                r = torch.randn(t, h, device=dev, dtype=dt)
                return lambda: a + r

            # bytes: the minimum HBM traffic of the op (each tensor read or written once)
            for name, setup, nbytes, extra_shape in (
                ("layernorm_fwd", ln_fwd, 2 * n_el * elt, {}),
                ("layernorm_bwd", ln_bwd, 3 * n_el * elt, {}),
                ("gelu_fwd", gelu_fwd, 2 * 4 * n_el * elt, {"elements": 4 * n_el}),
                ("gelu_bwd", gelu_bwd, 3 * 4 * n_el * elt, {"elements": 4 * n_el}),
                ("residual_add", residual, 3 * n_el * elt, {"elements": n_el}),
                ("rmsnorm_fwd", rms_fwd, 2 * n_el * elt, {}),
                ("rmsnorm_bwd", rms_bwd, 3 * n_el * elt, {}),
                # unfused sequences, forward + backward; bytes: input and output of each direction once
                ("rope_fwd_bwd", rope, 4 * n_el * elt, {"head_dim": hd_r}),
                ("swiglu_fwd_bwd", swiglu, 8 * 4 * n_el * elt, {"elements": 4 * n_el}),
                ("repeat_kv_fwd_bwd", repeat_kv, 2 * (n_el // 4 + n_el) * elt, {"head_dim": hd_r, "repeat": 4}),
            ):
                self._kernel_point({**base, "op": f"{name}:t{t}:h{h}"},
                                   {"name": name, **shape, **extra_shape, "elements": extra_shape.get("elements", n_el)},
                                   setup, 5 * nbytes + ln_need, nbytes=nbytes,
                                   extra={"bytes_model": "each tensor read or written once"})

        for b, s, nh, hd in plan.get("eager_attention", ()):
            n_sc = b * nh * s * s  # score elements
            shape = {"batch": b, "seq": s, "heads": nh, "head_dim": hd, "tokens": b * s, "scores": n_sc}
            for name in ("eager_attention_fwd", "eager_attention_fwd_bwd"):
                def setup(name: str = name, b: int = b, s: int = s, nh: int = nh, hd: int = hd) -> Callable[[], None]:
                    # train_gpt's attention with attention: eager, on q, k, v views of a fused QKV output
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
                # minimum traffic of the score matrix: forward writes it once and reads it once (softmax),
                # backward reads the probabilities and their gradient and writes the score gradient
                nbytes = (2 if name == "eager_attention_fwd" else 5) * n_sc * elt
                self._kernel_point({**base, "op": f"{name}:b{b}:s{s}:nh{nh}:hd{hd}"}, {"name": name, **shape},
                                   setup, 6 * n_sc * elt + 8 * b * s * nh * hd * elt, nbytes=nbytes,
                                   flops=(1.0 if name == "eager_attention_fwd" else 3.0) * 4.0 * n_sc * hd,
                                   extra={"bytes_model": "score matrix: fwd write + read; bwd read 2, write 1"})

        for t, vocab in plan["cross_entropy"]:
            def ce(t: int = t, vocab: int = vocab) -> Callable[[], None]:
                logits = torch.randn(t, vocab, device=dev, dtype=dt).requires_grad_(True)
                tgt = torch.randint(0, vocab, (t,), device=dev)

                def f() -> None:
                    logits.grad = None
                    # as train_gpt: upcast the bf16 logits, loss, backward to the bf16 logits
                    F.cross_entropy(logits.float(), tgt).backward()
                return f
            n_el = t * vocab
            nbytes = 3 * n_el * elt  # read logits (fwd), read logits (bwd), write dlogits
            self._kernel_point({**base, "op": f"cross_entropy_fwd_bwd:t{t}:v{vocab}"},
                               {"name": "cross_entropy_fwd_bwd", "tokens": t, "vocab": vocab, "elements": n_el},
                               ce, n_el * (3 * elt + 3 * 4), nbytes=nbytes,
                               extra={"bytes_model": "bf16 logits read in fwd and bwd, bf16 grad written (fp32 upcast not counted)"})

        if self.cuda and not cfg.quick:
            self._sustained_gemm(base)
            self._duty_sweep(base)

        for n_params in plan["adamw"]:
            def adamw(n_params: int = n_params) -> Callable[[], None]:
                chunk = KERNEL_ADAMW_TENSOR
                sizes = [chunk] * (n_params // chunk) + ([n_params % chunk] if n_params % chunk else [])
                params = [torch.zeros(sz, device=dev, dtype=dt, requires_grad=True) for sz in sizes]
                for p in params:
                    p.grad = torch.randn_like(p) * 1e-3
                opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8,
                                        foreach=True)
                opt.step()  # creates the state (exp_avg, exp_avg_sq: the params' dtype)
                return opt.step
            nbytes = 7 * n_params * elt  # read p, g, m, v; write p, m, v
            self._kernel_point({**base, "op": f"adamw_step:n{n_params}"},
                               {"name": "adamw_step", "params": n_params, "tensor_elements": KERNEL_ADAMW_TENSOR,
                                "foreach": True},
                               adamw, 5 * n_params * elt, nbytes=nbytes,
                               extra={"bytes_model": "read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq"})

def _nccl_count(op: str, layout: tuple[int, int, int], n: int) -> int:
    """The element count nccl-tests prints: per rank for AG (input) and RS (output), per peer for A2A."""
    if op == "reduce_scatter":
        return layout[1]
    if op == "all_to_all":
        return layout[0] // n
    return layout[0]


def _nvls_state(cfg: BenchConfig, cuda: bool) -> bool | None:
    """NVLink multicast as measured: forced off/on, None when left to NCCL (``--nvls auto``), False on CPU."""
    if not cuda:
        return False
    return {"on": True, "off": False}.get(cfg.nvls)


def _gemm_shapes(cfg: BenchConfig) -> tuple[tuple[int, int, int], ...]:
    """GEMM shapes to run: all on GPU; on CPU only the small ones (<= 512), which a CPU does in milliseconds."""
    if cfg.device == "cuda":
        return cfg.gemm_shapes
    return tuple(s for s in cfg.gemm_shapes if max(s) <= 512) or CPU_GEMM_SHAPES


def _plan_size(cfg: BenchConfig, world: int, scopes: list[str]) -> int:
    coll = len(cfg.ops) * len(cfg.sizes) * len(cfg.modes) * len(scopes)
    compute = (len(_gemm_shapes(cfg)) if cfg.gemm else 0) + (1 if cfg.hbm else 0) + (1 if cfg.launch else 0)
    if cfg.kernels:
        compute += kernel_plan_size(kernel_plan(cfg))
    return coll + compute


def run_bench(cfg: BenchConfig, renv: RankEnv | None = None) -> dict[str, Any]:
    """Run the whole bench in this rank's process. Returns a summary (rows written on rank 0).

    Every rank of the job calls this with the same configuration.
    """
    import torch

    cfg = validate_config(cfg)
    renv = renv or discover()
    if cfg.device == "auto":
        cfg.device = "cuda" if torch.cuda.is_available() else "cpu"
    if cfg.device == "cpu":
        cfg.hbm = cfg.hbm and False
        cfg.launch = cfg.launch and False
    b = _Bench(cfg, renv)
    b.set_nccl_env()
    init = b.init()
    dist = b.dist
    run_id = cfg.run_id
    # the configuration's meta key: a re-run of the same configuration on the same file continues its run id
    # (its meta and comm_init rows are already there); any other run gets a new id and its own meta row
    mkey = {"kind": "meta", "world_size": b.world, "nodes": b.nodes, "device": cfg.device,
            "backend": "nccl" if b.cuda else "gloo", "nvls": _nvls_state(cfg, b.cuda),
            "algorithm": os.environ.get("NCCL_ALGO"), "protocol": os.environ.get("NCCL_PROTO")}
    # rank 0 owns the file; it tells the others which points are done and the run id
    payload: list[Any] = [None, None, False]
    if b.rank == 0:
        state = resume_state(cfg.output)
        continued = state.run_for(mkey)
        new_id = f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        rid = run_id or continued or new_id
        payload = [sorted(state.done, key=repr), rid, rid == continued]
    dist.broadcast_object_list(payload, src=0)
    b.done = set(payload[0])
    run_id, has_meta = payload[1], payload[2]
    resumed = len(b.done)
    common = {"source": "bench", "run_id": run_id, "host": b.hosts[0]}
    try:
        if b.rank == 0:
            b.writer = RowWriter(cfg.output, common)
            meta = b.meta(init)
            common["gpu"] = meta.get("gpu")
            b.writer.common["gpu"] = meta.get("gpu")
            if not has_meta:  # every run id gets its meta row
                b.emit({**meta, **{k: v for k, v in mkey.items() if k not in meta}})
            ci = {"kind": "comm_init", "ranks": b.world, "nodes": b.nodes, "device": cfg.device,
                  "backend": "nccl" if b.cuda else "gloo"}
            if not b.skip(ci) or not has_meta:
                b.emit({**ci, "time_s": init["time_s"], "since_process_start_s": init["since_process_start_s"],
                        "launcher": b.renv.launcher})
        scopes: list[tuple[str, Any, list[int]]] = []
        if "world" in cfg.scopes:
            scopes.append(("world", None, list(range(b.world))))
        if "intra" in cfg.scopes and b.nodes > 1:
            hosts = list(dict.fromkeys(b.hosts))
            mine = None
            for h in hosts:
                ranks = [r for r in range(b.world) if b.hosts[r] == h]
                g = dist.new_group(ranks)  # every rank creates every group (torch requires it)
                if b.hosts[b.rank] == h:
                    mine = (g, ranks)
            assert mine is not None
            scopes.append(("intra", mine[0], mine[1]))
        elif "intra" in cfg.scopes and "world" not in cfg.scopes:
            scopes.append(("world", None, list(range(b.world))))
        if b.rank == 0 and cfg.progress:
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:  # a bare GPU box (python -m clustersim.calibration.bench): no bar
                cfg.progress = False
        if b.rank == 0 and cfg.progress:
            b.progress = Progress(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(stderr=True), transient=False)
            b.progress.start()
            b.task = b.progress.add_task("start", total=_plan_size(cfg, b.world, [s[0] for s in scopes]))
        for name, group, granks in scopes:
            b.collectives(group, granks, name)
        b.compute()
        dist.barrier()
    finally:
        if b.progress is not None:
            b.progress.stop()
        if b.writer is not None:
            b.writer.close()
        if b.topo_dump and b.rank == 0:
            try:
                os.unlink(b.topo_dump)
            except OSError:
                pass
        if dist.is_initialized():
            dist.destroy_process_group()
    written = b.writer.written if b.writer is not None else 0
    if b.rank == 0:
        _log(f"wrote {written} rows to {cfg.output} (run {run_id}; {resumed} points were already there)")
    return {"rank": b.rank, "world_size": b.world, "rows_written": written, "resumed_points": resumed, "run_id": run_id,
            "output": cfg.output}


def main(argv: list[str] | None = None) -> int:
    """``python -m clustersim.calibration.bench``: the bench without the CLI's dependencies (typer, pydantic).

    For GPU machines that have torch but not clustersim's other dependencies
    (``PYTHONPATH=/path/to/checkout torchrun --nproc-per-node 2 -m clustersim.calibration.bench -o m.jsonl``).
    The options are those of ``clustersim calibrate bench``.
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m clustersim.calibration.bench", description=main.__doc__)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes")
    ap.add_argument("--modes", default="nccl,eager,framework")
    ap.add_argument("--framework-max-size", default="1MiB")
    ap.add_argument("--iters", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--reps", type=int)
    ap.add_argument("--framework-reps", type=int)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--nccl-algo")
    ap.add_argument("--nccl-proto")
    ap.add_argument("--nvls", default="off")
    ap.add_argument("--scopes", default="world")
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--gemm-shapes")
    ap.add_argument("--gemm-dtype", default="bf16")
    ap.add_argument("--no-hbm", action="store_true")
    ap.add_argument("--hbm-bytes")
    ap.add_argument("--no-launch", action="store_true")
    ap.add_argument("--kernels", action="store_true", help="Kernel-class sweep (attention, GEMM layouts, "
                    "memory-bound ops, cross-entropy, AdamW), rank 0.")
    ap.add_argument("--memory-fraction", type=float, default=0.8)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--run-id")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    csv = lambda t: tuple(x.strip() for x in (t or "").replace(" ", ",").split(",") if x.strip())  # noqa: E731
    try:
        from clustersim.units import parse_size

        kw: dict[str, Any] = dict(device=a.device, ops=csv(a.ops), modes=csv(a.modes),
                                  framework_max_bytes=parse_size(a.framework_max_size), dtype=a.dtype,
                                  nccl_algo=a.nccl_algo, nccl_proto=a.nccl_proto, nvls=a.nvls, scopes=csv(a.scopes),
                                  gemm=not a.no_gemm, gemm_dtype=a.gemm_dtype, hbm=not a.no_hbm, launch=not a.no_launch,
                                  kernels=a.kernels,
                                  memory_fraction=a.memory_fraction, timeout_s=a.timeout, run_id=a.run_id,
                                  progress=not a.no_progress)
        if a.sizes:
            kw["sizes"] = tuple(parse_size_range(a.sizes))
        if a.gemm_shapes:
            kw["gemm_shapes"] = parse_gemm_shapes(a.gemm_shapes)
        if a.hbm_bytes:
            kw["hbm_bytes"] = parse_size(a.hbm_bytes)
        for name in ("iters", "warmup", "reps", "framework_reps"):
            if getattr(a, name) is not None:
                kw[name] = getattr(a, name)
        cfg = quick_config(a.output, **kw) if a.quick else BenchConfig(output=a.output, **kw)
        run_bench(cfg)
    except ClusterSimError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
