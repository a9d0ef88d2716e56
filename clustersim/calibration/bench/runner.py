"""A whole bench run in one rank's process: :func:`run_bench`, and :func:`main` (``python -m clustersim.calibration.bench``).

:func:`run_bench` sets NCCL's environment, joins the process group, shares rank 0's
resume state and run id, writes the header rows, runs the collective sweeps of every
scope and the compute sweeps, and always closes the file and the process group.
:func:`main` is the same with an argparse front end, for GPU machines that have torch
but not the CLI's dependencies.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import uuid
from typing import Any

from clustersim.calibration.bench.collectives import run_collectives
from clustersim.calibration.bench.compute import run_compute
from clustersim.calibration.bench.config import OPS, BenchConfig, parse_gemm_shapes, quick_config, validate_config
from clustersim.calibration.bench.plans import plan_size
from clustersim.calibration.bench.process import BenchRank
from clustersim.calibration.bench.rows import log, meta_key, write_header_rows
from clustersim.calibration.env import RankEnv, discover
from clustersim.calibration.jsonl import RowWriter, resume_state
from clustersim.errors import ClusterSimError
from clustersim.units import parse_size_range


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
    b = BenchRank(cfg, renv)
    b.set_nccl_env()
    init = b.init()
    dist = b.dist
    run_id, has_meta = _share_resume_state(b, cfg.run_id)
    resumed = len(b.done)
    common = {"source": "bench", "run_id": run_id, "host": b.hosts[0]}
    try:
        if b.rank == 0:
            b.writer = RowWriter(cfg.output, common)
            write_header_rows(b, init, common, has_meta=has_meta)
        scopes = _scopes(b)
        _start_progress(b, scopes)
        for name, group, granks in scopes:
            run_collectives(b, group, granks, name)
        run_compute(b)
        dist.barrier()
    finally:
        _close(b)
    written = b.writer.written if b.writer is not None else 0
    if b.rank == 0:
        log(f"wrote {written} rows to {cfg.output} (run {run_id}; {resumed} points were already there)")
    return {"rank": b.rank, "world_size": b.world, "rows_written": written, "resumed_points": resumed, "run_id": run_id,
            "output": cfg.output}


def _share_resume_state(b: BenchRank, run_id: str | None) -> tuple[str, bool]:
    """Rank 0 owns the file: it tells the others which points are done (``b.done``) and the run id.

    Returns ``(run id, its meta row is already in the file)``. Without ``--run-id``, a re-run of a
    configuration the file already holds continues that run's id (a resume: its meta and comm_init
    rows are there, nothing is written twice); any other run gets a new id and its own meta row.
    """
    payload: list[Any] = [None, None, False]
    if b.rank == 0:
        state = resume_state(b.cfg.output)
        continued = state.run_for(meta_key(b))
        new_id = f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        rid = run_id or continued or new_id
        payload = [sorted(state.done, key=repr), rid, rid == continued]
    b.dist.broadcast_object_list(payload, src=0)
    b.done = set(payload[0])
    return payload[1], bool(payload[2])


def _scopes(b: BenchRank) -> list[tuple[str, Any, list[int]]]:
    """(name, process group or None for the world, ranks) of every scope the collectives run on."""
    cfg, dist = b.cfg, b.dist
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
    return scopes


def _start_progress(b: BenchRank, scopes: list[tuple[str, Any, list[int]]]) -> None:
    """Rank 0: a rich progress bar on stderr over every point of the run (none when rich is absent)."""
    cfg = b.cfg
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
        b.task = b.progress.add_task("start", total=plan_size(cfg, b.world, [s[0] for s in scopes]))


def _close(b: BenchRank) -> None:
    """Stop the bar, close the file, remove the NCCL topology dump, leave the process group (also after an error)."""
    if b.progress is not None:
        b.progress.stop()
    if b.writer is not None:
        b.writer.close()
    if b.topo_dump and b.rank == 0:
        try:
            os.unlink(b.topo_dump)
        except OSError:
            pass
    if b.dist.is_initialized():
        b.dist.destroy_process_group()


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
    ap.add_argument("--kernel-classes", default="", help="Only these classes of --kernels (comma-separated).")
    ap.add_argument("--memory-fraction", type=float, default=0.8)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--run-id")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    try:
        run_bench(_config_from_args(a))
    except ClusterSimError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    return 0


def _config_from_args(a: Any) -> BenchConfig:
    """The :class:`BenchConfig` of :func:`main`'s parsed options (ClusterSimError for a bad size or shape)."""
    from clustersim.units import parse_size

    csv = lambda t: tuple(x.strip() for x in (t or "").replace(" ", ",").split(",") if x.strip())  # noqa: E731
    kw: dict[str, Any] = dict(device=a.device, ops=csv(a.ops), modes=csv(a.modes),
                              framework_max_bytes=parse_size(a.framework_max_size), dtype=a.dtype,
                              nccl_algo=a.nccl_algo, nccl_proto=a.nccl_proto, nvls=a.nvls, scopes=csv(a.scopes),
                              gemm=not a.no_gemm, gemm_dtype=a.gemm_dtype, hbm=not a.no_hbm, launch=not a.no_launch,
                              kernels=a.kernels, kernel_classes=csv(a.kernel_classes),
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
    return quick_config(a.output, **kw) if a.quick else BenchConfig(output=a.output, **kw)
