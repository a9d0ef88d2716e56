"""The planner's report over the whole 672-mix space of the 2-GPU reference, and its winners re-run (moved from
tests/unit/test_plan.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import PlanOptions, plan
from clustersim.simulate.run import run_scenario

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8


@pytest.fixture(scope="module")
def small_report():
    return plan(TP2, options=PlanOptions(workers=1, flow_top=2, top=5))


def test_report_counts_and_ranking(small_report):
    rep = small_report
    rows = {r["constraint"]: r for r in rep.constraints}
    # 480 before the zero-bubble and DualPipe schedules joined the space, 672 before mixes that are one run
    # were enumerated once (ZeRO on one rank, ZeRO-1 beside ZeRO-2, selective beside none under flash)
    assert rep.evaluated == 128
    dropped = sum(r["removed"] for r in rows.values())
    assert rep.feasible + dropped == rep.evaluated
    # on 2 GPUs a pipeline leaves dp = 1, where ZeRO is pinned to 0: no ZeRO-3 mix with pp > 1 to drop
    assert rows["zero3-with-pipeline"]["removed"] == 0 and rows["memory"]["removed"] + rows["batch-divisible"]["removed"] > 0
    assert rep.simulated + rep.pruned_by_bound == rep.feasible
    analytical = [p.analytical_step_time_s for p in rep.plans[2:]]
    assert analytical == sorted(analytical)
    assert [p.fidelity for p in rep.plans[:2]] == ["flow", "flow"]
    assert rep.plans[0].step_time_s <= rep.plans[1].step_time_s
    # branch and bound: every skipped mix has a bound at least the 5th best simulated time
    assert rep.simulated >= 5


def test_winner_rerun_matches(small_report):
    ev = small_report.evaluator
    for p in small_report.plans[:3]:
        res = run_scenario(ev.resolved(ev.scenario_for(p.mix, p.fidelity)), fidelity=p.fidelity)
        assert res.step_time_s == p.step_time_s
        assert res.memory["peak_bytes_per_gpu"] == p.peak_bytes_per_gpu
