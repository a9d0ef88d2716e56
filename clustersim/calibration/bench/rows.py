"""Rows of a bench run that are not measurements of one point: summaries, the meta and comm_init rows, the log.

:func:`summarize` turns per-call times into a row's ``time_us`` statistics (every
measured row uses it); :func:`meta_row` describes the machine, the software and the
options (the first row of a run), :func:`write_header_rows` writes it and the
``comm_init`` row on rank 0.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustersim.calibration.bench.config import nvls_state

if TYPE_CHECKING:
    from clustersim.calibration.bench.process import BenchRank


def log(msg: str) -> None:
    """One line on stderr, tagged ``[bench]`` (skipped points, the final count)."""
    sys.stderr.write(f"[bench] {msg}\n")
    sys.stderr.flush()


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


def _run(cmd: list[str], timeout: float = 20) -> str | None:
    """Stdout of a command (``nvidia-smi ...``), or None when it is absent or fails."""
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        res = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def meta_row(bench: BenchRank, init: dict[str, Any]) -> dict[str, Any]:
    """The ``meta`` row: GPU, driver, CUDA, NCCL, torch, hosts, ``nvidia-smi topo -m``, NCCL topology, options."""
    torch, cfg = bench.torch, bench.cfg
    row: dict[str, Any] = {"kind": "meta", "world_size": bench.world, "nodes": bench.nodes,
                           "hosts": list(dict.fromkeys(bench.hosts)),
                           "rank_hosts": bench.hosts, "device": cfg.device,
                           "backend": "nccl" if bench.cuda else "gloo", "torch_version": torch.__version__,
                           "python": platform.python_version(), "launcher": bench.renv.launcher,
                           "pmix": bench.renv.pmix, "job_id": bench.renv.job_id,
                           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                           "nvls": nvls_state(cfg, bench.cuda), "nvls_setting": os.environ.get("NCCL_NVLS_ENABLE"),
                           "nccl_algo": os.environ.get("NCCL_ALGO"), "nccl_proto": os.environ.get("NCCL_PROTO"),
                           "config": {k: v for k, v in cfg.to_dict().items() if k not in ("output",)}}
    if bench.cuda:
        props = torch.cuda.get_device_properties(bench.device)
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
        if bench.topo_dump and Path(bench.topo_dump).exists():
            xml = Path(bench.topo_dump).read_text(errors="replace")
        row["nccl_topo_xml"] = xml
    else:
        row.update({"gpu": None, "cpu": platform.processor() or platform.machine(), "driver": None,
                    "nccl_version": None, "topo_m": None, "nccl_topo_xml": None})
    row["comm_init_s"] = init["time_s"]
    return row


def meta_key(bench: BenchRank) -> dict[str, Any]:
    """The identity of a run's configuration (:func:`~clustersim.calibration.jsonl.row_key` of its ``meta`` row).

    Known before the meta row is made, so rank 0 can tell whether the file already holds a run of
    this configuration (a re-run continues its run id).
    """
    cfg = bench.cfg
    return {"kind": "meta", "world_size": bench.world, "nodes": bench.nodes, "device": cfg.device,
            "backend": "nccl" if bench.cuda else "gloo", "nvls": nvls_state(cfg, bench.cuda),
            "algorithm": os.environ.get("NCCL_ALGO"), "protocol": os.environ.get("NCCL_PROTO")}


def write_header_rows(bench: BenchRank, init: dict[str, Any], common: dict[str, Any], *,
                      has_meta: bool = False) -> None:
    """Rank 0: the ``meta`` and ``comm_init`` rows; ``common`` gets the GPU.

    ``has_meta``: the run id continues a run of this configuration already in the file (its
    ``meta`` row is there, and its ``comm_init`` row unless that run was killed before it). A
    run id without them gets both, so no row is left under a run id without its meta row.
    """
    cfg = bench.cfg
    meta = meta_row(bench, init)
    common["gpu"] = meta.get("gpu")
    assert bench.writer is not None
    bench.writer.common["gpu"] = meta.get("gpu")
    mkey = meta_key(bench)
    if not has_meta:
        bench.emit({**meta, **{k: v for k, v in mkey.items() if k not in meta}})
    ci = {"kind": "comm_init", "ranks": bench.world, "nodes": bench.nodes, "device": cfg.device,
          "backend": "nccl" if bench.cuda else "gloo"}
    if not bench.skip(ci) or not has_meta:
        bench.emit({**ci, "time_s": init["time_s"], "since_process_start_s": init["since_process_start_s"],
                    "launcher": bench.renv.launcher})
