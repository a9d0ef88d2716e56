"""``clustersim goodput`` over whole scenarios with its Monte-Carlo check (moved from tests/unit/test_goodput_cli.py)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_goodput_json_llama3(cli):
    r = cli("goodput", "scenarios/llama3-405b.yaml", "--mtbf-gpu-hours", "50677", "--ckpt-write-GBps", "2000",
            "--restart-min", "10", "--run-days", "54", "--trials", "300", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["n_gpus"] == 16384
    # 405B params x 14 bytes (bf16 weights, fp32 master + 2 moments) from the memory model
    assert d["checkpoint_bytes"] == pytest.approx(d["checkpoint_write_s"] * 2000e9)
    assert 5.5e12 < d["checkpoint_bytes"] < 5.8e12
    assert d["system_mtbf_s"] == pytest.approx(54 * 86400 / 419, rel=1e-3)
    assert d["monte_carlo"]["agrees"] is True
    assert d["goodput"]["best"] >= max(d["goodput"]["young"], d["goodput"]["daly"]) - 1e-12


def test_goodput_scales_gpus_and_help(cli):
    r = cli("goodput", "scenarios/gpt-1b-ddp.yaml", "--mtbf-gpu-hours", "50000", "--ckpt-write-GBps", "10",
            "--restart-min", "10", "--run-days", "10", "--gpus", "100000", "--trials", "200", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["n_gpus"] == 100000 and d["system_mtbf_s"] == pytest.approx(1800.0)
    r = cli("goodput", "--help")
    assert r.returncode == 0 and "--mtbf-gpu-hours" in r.stdout and "Examples" in r.stdout
