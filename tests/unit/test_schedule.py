"""Pipeline schedules: chunk orders, in-flight counts, and the bubble in the simulated timeline."""

from __future__ import annotations

import pytest

from clustersim.config.scenario import Scenario
from clustersim.simulate.execute import breakdown, execute_analytical
from clustersim.workload.compute import ComputeModel
from clustersim.workload.schedule import bubble_fraction, max_in_flight, pipeline_order
from clustersim.workload.transformer import TransformerStep


@pytest.mark.parametrize("sched,v", [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("interleaved", 3)])
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 12)])
def test_every_chunk_once_forward_first(sched, v, p, m):
    for r in range(p):
        order = pipeline_order(sched, p, m, r, v)
        assert len(order) == 2 * m * v
        assert len(set(order)) == len(order)
        pos = {x: i for i, x in enumerate(order)}
        for mb in range(m):
            for c in range(v):
                assert pos[("F", mb, c)] < pos[("B", mb, c)], f"{r=}, {mb=}, {c=}"


def test_in_flight_counts():
    p, m = 4, 8
    assert [max_in_flight(pipeline_order("1f1b", p, m, r)) for r in range(p)] == [4, 3, 2, 1]
    assert all(max_in_flight(pipeline_order("gpipe", p, m, r)) == m for r in range(p))
    # interleaved rank 0: (p-1)*2 + (v-1)*p warm-up chunks + 1 = 6 + 4 + 1 = 11 chunks of L/(p v) layers
    assert max_in_flight(pipeline_order("interleaved", p, m, 0, 2)) == 11


def test_interleaved_requires_multiple():
    from clustersim.errors import ClusterSimError

    with pytest.raises(ClusterSimError):
        pipeline_order("interleaved", 4, 6, 0, 2)


def _uniform_step(p: int, m: int, sched: str, v: int = 1):
    """A model whose stages are uniform: tiny vocabulary, free memory-bound kernels, free comm."""
    sc = Scenario.model_validate({
        "name": "uniform", "cluster": {"topology": "x"},
        "model": {"layers": 8 * p * v, "hidden": 1024, "heads": 8, "vocab": 8, "seq_len": 1024,
                  "position_embedding": "none"},
        "training": {"global_batch": m, "micro_batch": 1},
        "parallelism": {"pp": p, "schedule": sched, "virtual_stages": v},
    })
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=1e30, gemm_efficiency=0.8, gemm_half_flops=0.0,
                      attention_efficiency=0.5, kernel_launch_s=0.0)
    step = TransformerStep(sc, cm)
    g = step.build()
    tl = execute_analytical(g, lambda coll: 0.0)
    bd = breakdown(g, tl, step.exec_ranks, tl.makespan)
    return bd["bubble"] / tl.makespan


@pytest.mark.parametrize("p,m", [(2, 8), (4, 8), (4, 16), (8, 16)])
def test_1f1b_bubble_matches_formula(p, m):
    frac = _uniform_step(p, m, "1f1b")
    assert frac == pytest.approx(bubble_fraction("1f1b", p, m), rel=0.01)
    assert frac == pytest.approx(_uniform_step(p, m, "gpipe"), rel=0.01)


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (4, 16, 2), (4, 8, 4), (2, 8, 3)])
def test_interleaving_divides_bubble_by_v(p, m, v):
    frac = _uniform_step(p, m, "interleaved", v)
    assert frac == pytest.approx(bubble_fraction("interleaved", p, m, v), rel=0.01)
    # idle time itself (bubble x step) shrinks by v against 1F1B
    base = _uniform_step(p, m, "1f1b")
    idle_ratio = (base / (1 - base)) / (frac / (1 - frac))
    assert idle_ratio == pytest.approx(v, rel=0.02)
