"""Mixture-of-experts steps at the shipped DeepSeek-V3 size (moved from tests/unit/test_ep_node_limited.py):
1,024 GPUs, four runs of a few seconds each."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.simulate.run import run_scenario

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DSV3 = ROOT / "scenarios" / "deepseek-v3-h100.yaml"


def test_deepseek_v3_with_four_nodes_per_token_runs_at_both_fidelities():
    # the shipped shape (TP2 PP8 EP64 over 8 nodes, 1,024 GPUs) with one layer per stage (1 dense,
    # 7 MoE), no virtual stages and 8 micro-batches per replica: a few seconds at flow fidelity
    small = ["model.layers=8", "model.moe.first_dense_layers=1", "training.global_batch=512",
             "parallelism.virtual_stages=1"]
    results = {}
    for fidelity in ("analytical", "flow"):
        free = run_scenario(DSV3, fidelity=fidelity, overrides=small)
        lim = run_scenario(DSV3, fidelity=fidelity, overrides=small + ["parallelism.ep_max_nodes=4"])
        assert lim.extra["moe"]["ep_nodes"] == 8 and lim.extra["moe"]["node_limited"]
        assert lim.breakdown["comm_ep"] < free.breakdown["comm_ep"] and lim.step_time_s < free.step_time_s
        results[fidelity] = lim.step_time_s
    assert results["flow"] == pytest.approx(results["analytical"], rel=0.15)
