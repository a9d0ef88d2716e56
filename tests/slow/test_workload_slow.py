"""Whole steps with and without fused kernels and TP communication overlap (moved from tests/unit/test_workload.py):
several steps each."""

from __future__ import annotations

import pytest

from clustersim.workload.segments import ComputeSegment, TPCommSegment

pytestmark = pytest.mark.slow


def _step_time(overrides):
    from clustersim.simulate.run import run_scenario

    return run_scenario(ROOT_SCEN / "ref-single.yaml", fidelity="analytical", overrides=overrides).step_time_s


ROOT_SCEN = __import__("pathlib").Path(__file__).resolve().parents[2] / "scenarios"

_LLAMA = ["model.layers=2", "model.hidden=1024", "model.heads=8", "model.kv_heads=2", "model.ffn_hidden=2816",
          "model.mlp=swiglu", "model.norm=rmsnorm", "model.position_embedding=rope", "training.global_batch=2"]


def test_unfused_kernels_cost_more_only_where_fusion_matters():
    # RoPE, SwiGLU and the GQA repeat as separate PyTorch kernels cost more than fused ones
    assert _step_time(_LLAMA + ["training.kernel_fusion=none"]) > 1.02 * _step_time(_LLAMA + ["training.kernel_fusion=fused"])
    eager = ["model.layers=2", "model.attention=eager", "training.global_batch=2"]
    assert _step_time(eager + ["training.kernel_fusion=none"]) > 1.02 * _step_time(eager + ["training.kernel_fusion=fused"])
    # GELU, LayerNorm, learned positions and flash attention are single kernels either way
    plain = ["model.layers=2", "training.global_batch=2"]
    assert _step_time(plain + ["training.kernel_fusion=none"]) == _step_time(plain + ["training.kernel_fusion=fused"])


def test_tp_comm_overlap_hides_tp_collectives_behind_gemms():
    from clustersim.simulate.run import run_scenario
    from clustersim.workload.tensor_parallel import overlap_tp

    # the pairing rule: an all-gather feeds the next GEMM, a reduce-scatter drains the previous one
    c, tp = ComputeSegment, TPCommSegment
    segs = [c(1.0), tp("all_gather", 8.0), c(2.0), c(3.0), tp("reduce_scatter", 8.0)]
    assert overlap_tp(segs) == [c(1.0), tp("all_gather", 8.0, 2.0), c(0.0), c(0.0), tp("reduce_scatter", 8.0, 3.0)]
    base = ["parallelism.sequence_parallel=true", "model.layers=4", "training.global_batch=8"]
    res = {}
    for ov in ("false", "true"):
        for fid in ("analytical", "flow"):
            res[ov, fid] = run_scenario(ROOT_SCEN / "hybrid-tp2-pp2-dp2.yaml", fidelity=fid,
                                        overrides=base + [f"parallelism.tp_comm_overlap={ov}"])
    off, on = res["false", "analytical"], res["true", "analytical"]
    assert on.step_time_s < off.step_time_s
    # part of the TP communication stays exposed: the chunks' first transfer / last reduce-scatter, their latencies
    # and the slowdowns beside the GEMMs (tensor_parallel.overlap_tp; tests/unit/test_tp_overlap_mechanism.py)
    assert on.breakdown["comm_tp"] < off.breakdown["comm_tp"]
    # the GEMMs themselves: the same, a little more in smaller chunks (each chunk's shape at its own efficiency)
    assert off.breakdown["compute"] <= on.breakdown["compute"] < 1.05 * off.breakdown["compute"]
    assert res["true", "flow"].step_time_s == pytest.approx(on.step_time_s, rel=0.02)
