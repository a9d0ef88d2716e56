"""Compute and NCCL collectives slowing each other where they overlap (clustersim/simulate/overlap.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.simulate.execute import execute_analytical
from clustersim.simulate.overlap import overlap_stretch
from clustersim.simulate.run import run_scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.ops import Coll, Graph

SCEN = Path(__file__).resolve().parents[2] / "scenarios"
SMALL = ["model.layers=4", "model.hidden=1024", "model.ffn_hidden=4096", "training.micro_batch=2",
         "training.global_batch=8", "cluster.topology=dgx-h100"]


def _graph(overlap):
    g = Graph()
    g.add(0, "compute", "B", "compute", duration=4.0)
    g.add(0, "dp", "AR", "comm_dp", coll=Coll("all_reduce", [[0, 1]], 1e6, "dp"))
    g.add(0, "pp", "send", "comm_pp", coll=Coll("send_recv", [[0, 1]], 1e6, "pp"))
    g.overlap = overlap
    return g


def test_stretch_is_overlap_times_slowdown_minus_one_for_measured_collectives_only():
    g = _graph((1.2, 1.5, ("all_reduce",)))
    tl = execute_analytical(g, lambda c: 2.0)
    st = overlap_stretch(g, tl.start, tl.end)
    assert st == {0: pytest.approx(2.0 * 0.2), 1: pytest.approx(2.0 * 0.5)}  # send_recv: not measured
    again = execute_analytical(g, lambda c: 2.0, st)
    assert again.end[0] == pytest.approx(4.4) and again.end[1] == pytest.approx(3.0)
    assert again.parts[0]["compute"] == pytest.approx(4.4)
    assert overlap_stretch(_graph(None), tl.start, tl.end) == {}


def test_gemm_slowdown_follows_the_measured_shape():
    cm = ComputeModel(1e15, 3e12, overlap_table=[("gemm", 2.7e11, "all_gather", 1.25, 1.46),
                                                 ("gemm", 1.1e12, "all_gather", 1.07, 1.67),
                                                 ("memory", 3.2e9, "all_gather", 1.12, 1.83)])
    few_waves, many = cm.overlap_slowdowns(2.7e11, 1.0)[0], cm.overlap_slowdowns(1.1e12, 1.0)[0]
    assert few_waves == pytest.approx(1.25) and many == pytest.approx(1.07)
    assert cm.overlap_slowdowns(2.7e11, 0.0) == pytest.approx((1.12, 1.83))
    assert ComputeModel(1e15, 3e12).overlap_slowdowns(1e12, 0.5) == (1.0, 1.0)


def test_ddp_on_h100_and_h200_is_slowed_in_both_fidelities_and_a100_is_not():
    # dgx-h100 and hgx-h200 carry overlap tables measured on 2 GPUs of each (docs/validation.md 6c, 6e)
    for topo in (SMALL[-1:], ["cluster.topology=hgx-h200"]):
        res = {f: run_scenario(SCEN / "ref-ddp2.yaml", fidelity=f, overrides=SMALL[:-1] + topo)
               for f in ("analytical", "flow")}
        for r in res.values():
            ov = r.extra["overlap_slowdown"]
            assert ov["compute"] > 1.0 and ov["collective"] > 1.0 and ov["stretch_s"] > 0, f"{topo=}, {r=}"
        assert res["flow"].step_time_s == pytest.approx(res["analytical"].step_time_s, rel=0.01), f"{topo=}"
    a100 = run_scenario(SCEN / "ref-ddp2.yaml", fidelity="analytical", overrides=SMALL[:-1] + ["cluster.topology=dgx-a100"])
    assert "overlap_slowdown" not in a100.extra  # no overlap table measured on A100 (no transfer of it)
