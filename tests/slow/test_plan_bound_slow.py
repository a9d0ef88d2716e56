"""The screen bound stays below the simulated step for every schedule with TP 2 and 8 on 1,024 GPUs (moved from
tests/unit/test_plan_speed.py): two simulations of GPT-3 175B per schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import Mix
from clustersim.plan.evaluate import Evaluator

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GPT3 = ROOT / "scenarios" / "gpt3-175b.yaml"  # 96 layers on 1,024 H100


@pytest.fixture(scope="module")
def gpt3_small_batch():
    # 1,024 GPUs of the shipped scenario, a global batch small enough for quick simulations
    return Evaluator(GPT3, ["training.global_batch=1024"])


@pytest.mark.parametrize("schedule,v", [("1f1b", 1), ("gpipe", 1), ("interleaved", 2), ("zb_h1", 1), ("zb_v", 2),
                                        ("dualpipe", 1), ("dualpipe_v", 2)])
def test_bound_below_the_step_with_tensor_parallelism(gpt3_small_batch, schedule, v):
    """Every schedule with TP 2 and 8 (sequence parallel, full recompute; TP collectives inside
    the layers and, for DualPipe, hidden in the F&B pairs): screen bound <= simulated step, and
    the bound is not vacuous (within 25 % of the step)."""
    ev = gpt3_small_batch
    for tp, pp, recompute in ((2, 8, "full"), (8, 4, "full")):  # fits 80 GB with every schedule
        mix = Mix(1024 // (tp * pp), tp, pp, v, 1, 1, True, 2, schedule, 1, recompute)
        s = ev.screen(ev.scenario_for(mix))
        assert s.memory["fits"], mix.label()
        r = ev.simulate(mix)
        assert 0 < s.bound_s <= r.step_time_s, mix.label()
        assert s.bound_s >= 0.75 * r.step_time_s, mix.label()  # 16 micro-batches: the fill is large
