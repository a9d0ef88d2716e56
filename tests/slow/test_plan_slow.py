"""The planner's exhaustive searches (moved from tests/unit/test_plan_speed.py and test_plan.py): with and
without DAG reuse they give the same plans; branch and bound keeps the exhaustive search's best five."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import PlanOptions, SpaceOptions, plan

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8, flash attention


def _rows(rep):
    d = rep.to_dict()
    d.pop("wall_s")
    d.pop("timings_s")
    return d


def test_reuse_gives_the_reference_plans():
    """The planner with identical DAGs executed once equals the planner executing every mix:
    same feasible set, same plans (step times, breakdowns, memory, bounds), same flow re-rank."""
    # micro-batch 8 on dp 1: one micro-batch per step, where GPipe and 1F1B are one DAG (the enumeration
    # already folds ZeRO-1 into ZeRO-2 and selective into none under flash attention)
    space = SpaceOptions(zero=[0, 1, 2], micro_batch=[1, 2, 8], recompute=["none", "selective"])
    fast = plan(TP2, options=PlanOptions(workers=1, flow_top=3, top=5, space=space, exhaustive=True))
    ref = plan(TP2, options=PlanOptions(workers=1, flow_top=3, top=5, space=space, exhaustive=True, reuse=False))
    assert _rows(fast) == _rows(ref)
    assert fast.evaluator.memo.hits > 0  # the pairs it is meant for were there (one-micro-batch schedules)
    assert [p.fidelity for p in fast.plans[:3]] == ["flow"] * 3


def test_bound_pruning_loses_nothing():
    full = plan(TP2, options=PlanOptions(workers=1, flow_top=0, top=5, exhaustive=True,
                                         space=SpaceOptions(zero=[1], recompute=["none"])))
    pruned = plan(TP2, options=PlanOptions(workers=1, flow_top=0, top=5,
                                           space=SpaceOptions(zero=[1], recompute=["none"])))
    assert full.simulated == full.feasible > pruned.simulated
    assert [p.mix for p in full.plans[:5]] == [p.mix for p in pruned.plans[:5]]
