"""Collective sweeps: ``collective`` rows (modes nccl, eager, framework) and ``framework_call`` rows.

For every operation and size of the configuration, one scope at a time (all ranks, or
the ranks of one host): :func:`make_call` allocates the buffers by nccl-tests'
conventions and returns the call, :func:`time_graph` (CUDA-graph replay, nccl mode on
GPUs), :func:`time_nccl` (back-to-back calls) and :func:`time_framework` (one isolated
call) time it on every rank, and the row holds the median over repetitions of the mean
over ranks. Every rank runs these functions; rank 0 writes the rows.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import TYPE_CHECKING, Any, Callable

from clustersim.calibration.bench.config import DTYPE_ALIASES, DTYPE_BYTES, nvls_state, torch_dtype
from clustersim.calibration.bench.plans import nccl_count, op_layout
from clustersim.calibration.bench.rows import log, summarize
from clustersim.calibration.jsonl import row_key
from clustersim.errors import ClusterSimError
from clustersim.units import format_bytes

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank


def make_call(bench: BenchRank, op: str, size: int, group: Any, n: int, grank: int,
              granks: list[int]) -> tuple[Callable[[], None], int, int] | None:
    """(call, reported bytes, buffer bytes) or None when the size does not fit n ranks.

    Buffer bytes are -1 (and the call does nothing) when the buffers do not fit in
    ``memory_fraction`` of the free memory of some rank of ``group``.
    """
    torch, dist, cfg = bench.torch, bench.dist, bench.cfg
    dtype = torch_dtype(torch, cfg.dtype)
    elt = DTYPE_BYTES[cfg.dtype]
    layout = op_layout(op, size, n, elt)
    if layout is None:
        return None
    n_in, n_out, reported = layout
    need = (n_in + (n_out if op not in ("all_reduce", "broadcast") else 0)) * elt
    fits = need <= cfg.memory_fraction * bench.free_bytes()
    if not bench.all_agree(fits, group):
        if bench.rank == 0:
            log(f"skipped {op} {format_bytes(reported)}: needs {format_bytes(need)} per rank, more than "
                f"{cfg.memory_fraction:.0%} of free memory on some rank")
        return (lambda: None), reported, -1
    inp = torch.ones(n_in, dtype=dtype, device=bench.device)
    if op == "all_reduce":
        return (lambda: dist.all_reduce(inp, group=group)), reported, need
    if op == "broadcast":
        src = granks[0]
        return (lambda: dist.broadcast(inp, src=src, group=group)), reported, need
    out = torch.empty(n_out, dtype=dtype, device=bench.device)
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


def time_nccl(bench: BenchRank, call: Callable[[], None], group: Any) -> list[float]:
    """Per-call seconds of ``reps`` repetitions of ``iters`` back-to-back calls."""
    torch, dist, cfg = bench.torch, bench.dist, bench.cfg
    for _ in range(cfg.warmup):
        call()
    bench.sync()
    out = []
    for _ in range(cfg.reps):
        dist.barrier(group=group)
        if bench.cuda:
            bench.sync()
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


def time_graph(bench: BenchRank, call: Callable[[], None], group: Any) -> list[float]:
    """Per-call seconds from replaying a CUDA graph of ``iters`` captured calls.

    Returns [] (on every rank) when capture fails on any rank, so the caller
    writes no row rather than a wrong one.
    """
    torch, dist, cfg = bench.torch, bench.dist, bench.cfg
    graph = None
    ok = True
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as CUDA graphs require
            for _ in range(max(cfg.warmup, 2)):
                call()
        torch.cuda.current_stream().wait_stream(side)
        bench.sync()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(cfg.iters):
                call()
        graph.replay()
        bench.sync()
    except Exception as exc:  # noqa: BLE001 - report and skip the point
        ok = False
        log(f"rank {bench.rank}: CUDA-graph capture failed ({type(exc).__name__}: {exc}); no nccl row for this point")
    if not bench.all_agree(ok, group):
        return []
    out = []
    for _ in range(cfg.reps):
        dist.barrier(group=group)
        bench.sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3 / cfg.iters)
    del graph
    return out


def time_framework(bench: BenchRank, call: Callable[[], None], group: Any) -> list[float]:
    """Seconds of isolated single calls on an idle device (host clock, completion included)."""
    dist, cfg = bench.dist, bench.cfg
    call()
    bench.sync()
    out = []
    for _ in range(cfg.framework_reps):
        bench.sync()
        dist.barrier(group=group)
        bench.sync()
        t0 = time.perf_counter()
        call()
        bench.sync()
        out.append(time.perf_counter() - t0)
    return out


def reduce_times(bench: BenchRank, times: list[float], group: Any, op: Any) -> list[float]:
    """Element-wise reduction (``op``: SUM or MAX) of every rank's list of times over ``group``."""
    t = bench.torch.tensor(times, dtype=bench.torch.float64, device=bench.device)
    bench.dist.all_reduce(t, op=op, group=group)
    return [float(v) for v in t.tolist()]


class _Scope:
    """The ranks one sweep runs on, and what every row of that sweep says about them."""

    def __init__(self, bench: BenchRank, granks: list[int], name: str):
        self.granks, self.name = granks, name
        self.n = len(granks)
        self.grank = granks.index(bench.rank)
        self.nodes = len({bench.hosts[r] for r in granks})
        self.scope = "intra" if self.nodes == 1 else "inter"
        self.group_field = name if name != "world" else None


def run_collectives(bench: BenchRank, group: Any, granks: list[int], scope_name: str) -> None:
    """Every operation, size and mode on the ranks ``granks`` (process group ``group``; None = world)."""
    cfg = bench.cfg
    sc = _Scope(bench, granks, scope_name)
    smallest_fw: dict[str, dict[str, Any]] = {}
    for op in cfg.ops:
        if op in ("send_recv", "all_to_all") and sc.n == 1:
            if bench.rank == 0:
                log(f"skipped {op}: needs at least 2 ranks")
            bench.advance(len(cfg.sizes) * len(cfg.modes))
            continue
        for size in cfg.sizes:
            _measure_size(bench, group, sc, op, size, smallest_fw)
    _write_framework_calls(bench, sc, smallest_fw)


def _point_base(bench: BenchRank, sc: _Scope, op: str, layout: tuple[int, int, int]) -> dict[str, Any]:
    """The fields that identify a collective point (all but ``mode``)."""
    cfg = bench.cfg
    algo = (os.environ.get("NCCL_ALGO") or None) if bench.cuda else None
    proto = (os.environ.get("NCCL_PROTO") or None) if bench.cuda else None
    return {"kind": "collective", "op": op, "ranks": sc.n, "nodes": sc.nodes, "scope": sc.scope,
            "size_bytes": layout[2], "dtype": DTYPE_ALIASES.get(cfg.dtype, cfg.dtype),
            "algorithm": algo.lower() if algo else None, "protocol": proto.lower() if proto else None,
            "nvls": nvls_state(cfg, bench.cuda), "inplace": op in ("all_reduce", "broadcast"),
            "group": sc.group_field,
            "backend": "nccl" if bench.cuda else "gloo", "device": cfg.device}


def _measure_size(bench: BenchRank, group: Any, sc: _Scope, op: str, size: int,
                  smallest_fw: dict[str, dict[str, Any]]) -> None:
    """The rows of one operation at one size, one per mode not yet in the file."""
    cfg = bench.cfg
    bench.describe(f"{op} {format_bytes(size)} ({sc.name})")
    modes = [m for m in cfg.modes if (m == "nccl" or (m == "eager" and bench.cuda)
                                      or (m == "framework" and size <= cfg.framework_max_bytes))]
    layout = op_layout(op, size, sc.n, DTYPE_BYTES[cfg.dtype])
    if layout is None:
        if bench.rank == 0:
            log(f"skipped {op} {size} B: smaller than 16 bytes per rank on {sc.n} ranks")
        bench.advance(len(cfg.modes))
        return
    base = _point_base(bench, sc, op, layout)
    todo = [m for m in modes if not bench.skip({**base, "mode": m})]
    bench.advance(len(cfg.modes) - len(todo))
    if not todo:
        return
    made = make_call(bench, op, size, group, sc.n, sc.grank, sc.granks)
    if made is None or made[2] < 0:
        bench.advance(len(todo))
        return
    call, reported, _need = made
    for mode in todo:
        timed = _time_mode(bench, mode, call, group)
        if timed is None:  # CUDA-graph capture failed on some rank: no row, never a wrong one
            bench.advance()
            continue
        row = _collective_row(bench, group, sc, base, mode, timed, reported, layout)
        if bench.rank == 0:
            bench.emit(row)
        else:
            bench.done.add(row_key(row))
        if mode == "framework" and op not in smallest_fw:
            smallest_fw[op] = row
        bench.advance()
    del call


def _time_mode(bench: BenchRank, mode: str, call: Callable[[], None],
               group: Any) -> tuple[list[float], str] | None:
    """(this rank's per-call seconds per repetition, ``timing``) of one mode; None when no row can be made."""
    if mode == "framework":
        return time_framework(bench, call, group), "isolated"
    if mode == "nccl" and bench.cuda:
        per_rank = time_graph(bench, call, group)
        return (per_rank, "cuda-graph") if per_rank else None
    return time_nccl(bench, call, group), "back-to-back"


def _collective_row(bench: BenchRank, group: Any, sc: _Scope, base: dict[str, Any], mode: str,
                    timed: tuple[list[float], str], reported: int, layout: tuple[int, int, int]) -> dict[str, Any]:
    """The row of one mode: statistics of the mean over ranks, the slowest rank, bandwidths (all ranks call it)."""
    # imported here: the collectives package's __init__ needs numpy and pydantic, which the
    # dependency-light entry point (python -m clustersim.calibration.bench) does not import otherwise
    from clustersim.collectives.formulas import busbw_factor

    cfg, dist = bench.cfg, bench.dist
    per_rank, timing = timed
    n, op = sc.n, base["op"]
    mean = [v / n for v in reduce_times(bench, per_rank, group, dist.ReduceOp.SUM)]
    worst = reduce_times(bench, per_rank, group, dist.ReduceOp.MAX)
    s = summarize(mean)
    t_s = s["time_us"] * 1e-6
    algbw = reported / t_s / 1e9 if t_s > 0 else None
    return {**base, "mode": mode, "timing": timing, **s, "time_us_rank_max": statistics.median(worst) * 1e6,
            "iters": cfg.iters if mode != "framework" else 1,
            "reps": cfg.reps if mode != "framework" else cfg.framework_reps,
            "warmup": cfg.warmup if mode != "framework" else 1,
            "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor(op, n) if algbw is not None else None,
            "count": nccl_count(op, layout, n)}


def _write_framework_calls(bench: BenchRank, sc: _Scope, smallest_fw: dict[str, dict[str, Any]]) -> None:
    """Rank 0: one ``framework_call`` row per operation, from its smallest framework-mode point."""
    for op, row in smallest_fw.items():
        fc = {"kind": "framework_call", "op": op, "ranks": sc.n, "nodes": sc.nodes, "scope": sc.scope,
              "size_bytes": row["size_bytes"], "time_us": row["time_us"], "time_us_p10": row["time_us_p10"],
              "time_us_p90": row["time_us_p90"], "device": bench.cfg.device,
              "group": sc.group_field}
        if not bench.skip(fc) and bench.rank == 0:
            bench.emit(fc)
