"""`calibrate bench` on one CUDA GPU (NCCL, one torchrun process): the rows only a GPU produces.

Marked ``gpu``: skipped without a CUDA device or without torch (``tests/conftest.py``). The CPU
paths of the same command are covered by ``test_bench_gloo.py`` and ``test_bench_kernels.py``.
Measured figures are checked against physical bounds, not against expected timings: no GPU in
the catalogue copies HBM faster than its datasheet bandwidth or runs a bf16 GEMM faster than its
dense peak, so a row above the fastest catalogue GPU is a timing or accounting bug.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.calibration.jsonl import read_rows, row_key
from clustersim.config.topology import GPU_CATALOG

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]
BENCH = ["-m", "clustersim", "calibrate", "bench", "--no-progress"]
MAX_HBM_GBPS = max(g.hbm_bandwidth_GBps for g in GPU_CATALOG.values())
MAX_BF16_TFLOPS = max(g.peak_tflops["bf16"] for g in GPU_CATALOG.values())


def test_quick_bench_on_one_gpu(tmp_path: Path) -> None:
    """``--device auto`` picks CUDA/NCCL when a GPU is visible; HBM, launch and GEMM rows within physics."""
    out = tmp_path / "gpu.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(TORCHRUN + BENCH + ["-o", str(out), "--device", "auto", "--quick", "--ops", "all_reduce",
                                             "--modes", "nccl"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = read_rows(out, strict=True)
    meta = rows[0]
    assert meta["kind"] == "meta" and meta["backend"] == "nccl" and meta["world_size"] == 1
    assert meta["gpu"] and meta["gpu_memory_bytes"] > 0 and meta["nccl_version"]

    coll = sorted((r for r in rows if r["kind"] == "collective"), key=lambda r: r["size_bytes"])
    assert [r["size_bytes"] for r in coll] == [1024, 4096, 16384, 65536]
    assert all(r["op"] == "all_reduce" and r["ranks"] == 1 and r["mode"] == "nccl" for r in coll)
    assert all(0 < r["time_us_min"] <= r["time_us"] <= r["time_us_p90"] for r in coll)

    (hbm,) = [r for r in rows if r["kind"] == "hbm"]
    assert hbm["bytes"] == 256 * 2**20  # the --quick copy size
    assert 0 < hbm["bandwidth_GBps"] <= MAX_HBM_GBPS, hbm

    (launch,) = [r for r in rows if r["kind"] == "launch"]
    # one tiny kernel after another on the GPU: microseconds, never zero, never milliseconds
    assert 0 < launch["overhead_us_min"] <= launch["overhead_us"] < 1000, launch

    gemm = [r for r in rows if r["kind"] == "gemm"]
    # the --quick GPU sweep: square bf16 GEMMs from 256 up (4096 on an H100 at 2026-11-25)
    assert {(256, 256, 256), (512, 512, 512)} <= {(r["m"], r["n"], r["k"]) for r in gemm}
    for r in gemm:
        assert r["tflops"] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / (r["time_us"] * 1e-6) / 1e12)
        assert 0 < r["tflops"] <= MAX_BF16_TFLOPS, r
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys))
