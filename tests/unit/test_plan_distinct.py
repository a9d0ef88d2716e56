"""The planner lists each simulated run once, and reads --why before it searches.

Mixes that are one run (1F1B and GPipe over one micro-batch, ZeRO-1 and ZeRO-2, selective recompute
under flash attention, any ZeRO stage over one rank) must not fill the top-10 twice; a typo in --why
must be refused before the search is paid for."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError
from clustersim.plan import PlanOptions, SpaceOptions
from clustersim.plan.explain import plan_run
from clustersim.plan.search import distinct_runs, plan

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8


def _runs(plans):
    return [(p.analytical_step_time_s, tuple(sorted(p.breakdown.items()))) for p in plans]


@pytest.mark.parametrize("reuse", [True, False])
def test_top_lists_each_run_once(reuse):
    # pp 2, one micro-batch of 8 per pipeline: 1F1B and GPipe run the same DAG (F then B on each stage)
    space = SpaceOptions(micro_batch=[8], tp=[1], pp=[2], schedule=["gpipe", "1f1b", "zb_h1"])
    rep = plan(TP2, options=PlanOptions(workers=1, flow_top=1, space=space, reuse=reuse))
    runs = _runs(rep.plans[:10])
    assert len(runs) == len(set(runs)), f"two plans with one simulated run: {[p.mix.label() for p in rep.plans]}"
    one_f = next(p for p in rep.plans if p.mix.schedule in ("1f1b", "gpipe") and p.mix.recompute == "none")
    assert len(one_f.same_run) == 1 and {one_f.mix.schedule, one_f.same_run[0].split()[6]} == {"1f1b", "gpipe"}
    assert rep.simulated == len(rep.plans) + sum(len(p.same_run) for p in rep.plans)


def test_default_space_has_no_twins():
    rep = plan(TP2, options=PlanOptions(workers=1, flow_top=0))
    runs = _runs(rep.plans[:10])
    assert len(rep.plans) >= 10 and len(runs) == len(set(runs))
    labels = [p.mix.label() for p in rep.plans]
    assert not any("z1" in lb for lb in labels)  # ZeRO-1: ZeRO-2's run with more memory
    assert not any("rc=selective" in lb for lb in labels)  # flash attention: selective is none


def test_distinct_runs_groups_by_digest_then_result():
    a = ("a", 1.0, {"digest": "d1", "step_time_s": 1.0, "breakdown": {"compute": 1.0}})
    b = ("b", 1.0, {"digest": "d1", "step_time_s": 1.0, "breakdown": {"compute": 1.0}})
    c = ("c", 1.0, {"digest": None, "step_time_s": 1.0, "breakdown": {"compute": 1.0}})
    d = ("d", 1.0, {"digest": None, "step_time_s": 1.0, "breakdown": {"compute": 1.0}})
    e = ("e", 1.0, {"digest": None, "step_time_s": 1.0, "breakdown": {"compute": 0.5}})
    assert [[x[0] for x in g] for g in distinct_runs([a, b, c, d, e])] == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize("why, words", [
    ("tp=2,schedul=1f1b", "not key=value"),
    ("schedule=1f1x", "not one of"),
    ("recompute=sel", "not one of"),
    ("zero=5", "out of range"),
    ("tp=two", "needs an integer"),
    ("sequence_parallel=maybe", "true or false"),
])
def test_why_is_read_before_the_search(monkeypatch, why, words):
    import clustersim.plan.explain as explain

    def no_search(*a, **k):
        raise AssertionError("the search ran before --why was read")

    monkeypatch.setattr(explain, "plan", no_search)
    with pytest.raises(ClusterSimError) as exc:
        plan_run(TP2, why=why)
    assert words in str(exc.value) and exc.value.field == "--why"


def test_why_typo_exit_code(cli):
    r = cli("plan", str(TP2), "--why", "tp=2,pp=1,zer=3")
    assert r.returncode == 2 and "--why" in r.stderr and "zer=3" in r.stderr
