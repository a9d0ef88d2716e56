"""`calibrate bench --ops none --kernels` on CPU (one gloo process): every kernel class's code path, rows, resume."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.calibration.bench import BenchConfig
from clustersim.calibration.bench.plans import selected_kernel_rows
from clustersim.calibration.jsonl import read_rows, row_key

pytestmark = [pytest.mark.slow, pytest.mark.torch]

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]


def _run(args: list[str], module: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.run(TORCHRUN + module + args, capture_output=True, text=True, env=env, timeout=300)


def _check(rows: list[dict]) -> None:
    assert rows[0]["kind"] == "meta" and rows[0]["config"]["kernels"] is True
    kern = [r for r in rows if r["kind"] == "kernel"]
    names = {r["name"] for r in kern}
    assert {"attention_fwd", "attention_fwd_bwd", "gemm_nt", "gemm_nn", "gemm_tn", "layernorm_fwd", "layernorm_bwd",
            "gelu_fwd", "gelu_bwd", "residual_add", "cross_entropy_fwd_bwd", "adamw_step",
            "rmsnorm_fwd", "rmsnorm_bwd", "rope_fwd_bwd", "swiglu_fwd_bwd", "repeat_kv_fwd_bwd",
            "eager_attention_fwd", "eager_attention_fwd_bwd", "bmm_score", "bmm_context", "bmm_context_t",
            "wave_gemm"} <= names
    assert len(kern) == selected_kernel_rows(BenchConfig(output="x", device="cpu"))
    for r in kern:
        assert r["time_us"] > 0 and r["time_us_min"] <= r["time_us"] <= r["time_us_p90"]
        assert r["dtype"] == "fp32" and r["device"] == "cpu"
        if "flops" in r:
            assert r["tflops"] == pytest.approx(r["flops"] / (r["time_us"] * 1e-6) / 1e12)
        if "bytes" in r:
            assert r["bandwidth_GBps"] == pytest.approx(r["bytes"] / (r["time_us"] * 1e-6) / 1e9)
    for r in (r for r in kern if r["name"].startswith("attention")):
        # causal: s(s+1)/2 of the s^2 score entries are computed
        assert r["flops"] == pytest.approx(r["flops_full"] * (r["seq"] + 1) / (2 * r["seq"]))
    for r in (r for r in kern if r["name"].startswith("gemm")):
        t, o, i = r["tokens"], r["out_features"], r["in_features"]
        assert (r["m"], r["n"], r["k"]) == {"NT": (t, o, i), "NN": (t, i, o), "TN": (o, i, t)}[r["layout"]]
        assert r["flops"] == 2.0 * t * o * i
    for r in (r for r in kern if r["name"].startswith("eager_attention")):
        n_sc = r["batch"] * r["heads"] * r["seq"] ** 2  # score-matrix bytes: 2x forward, 5x forward + backward
        assert r["bytes"] == (2 if r["name"] == "eager_attention_fwd" else 5) * n_sc * 4
    for r in (r for r in kern if r["name"].startswith("bmm_")):  # clustersim.roofline.bmm_shape
        s_, d = r["seq"], r["head_dim"]
        assert r["flops"] == 2.0 * r["batch_heads"] * s_ * s_ * d
    for r in (r for r in kern if r["name"] == "wave_gemm"):
        assert r["flops"] == 2.0 * r["m"] * r["n"] * r["k"] and r["sms"] >= 1 and r["layout"] in ("NT", "TN")
    for r in (r for r in kern if r["name"] == "swiglu_fwd_bwd"):
        assert r["bytes"] == 8 * r["elements"] * 4
    (adam,) = [r for r in kern if r["name"] == "adamw_step"]
    assert adam["bytes"] == 7 * adam["params"] * 4
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys))


def test_kernels_cli_cpu_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "k.jsonl"
    args = ["-o", str(out), "--device", "cpu", "--ops", "none", "--no-gemm", "--kernels", "--no-progress"]
    res = _run(args, ["-m", "clustersim", "calibrate", "bench"])
    assert res.returncode == 0, res.stderr[-3000:]
    rows = read_rows(out, strict=True)
    _check(rows)
    before = out.read_bytes()
    res = _run(args, ["-m", "clustersim", "calibrate", "bench"])  # resume: nothing measured twice
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_bytes() == before


def test_kernels_module_entry_point(tmp_path: Path) -> None:
    out = tmp_path / "k.jsonl"
    res = _run(["-o", str(out), "--device", "cpu", "--ops", "none", "--no-gemm", "--kernels", "--no-progress"],
               ["-m", "clustersim.calibration.bench"])
    assert res.returncode == 0, res.stderr[-3000:]
    _check(read_rows(out, strict=True))
