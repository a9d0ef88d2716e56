"""What makes the planner fast changes none of its results: a memo hit is the run it replaces, and the
split-schedule bound (DualPipe's F&B pairs at their op's time) stays below the simulated step with TP > 1.
Identical DAGs executed once give the same plans as executing every mix: tests/slow/test_plan_slow.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import Mix
from clustersim.plan.evaluate import Evaluator
from clustersim.simulate.memo import StepMemo
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8, flash attention
GPT3 = ROOT / "scenarios" / "gpt3-175b.yaml"  # 96 layers on 1,024 H100


def test_a_memo_hit_is_the_run_it_replaces():
    """Selective recompute under flash attention builds the DAG of no recompute: the second run
    takes the first's timeline, and its whole --json document equals a run without the memo."""
    ev = Evaluator(TP2)
    none = ev.scenario_for(Mix(1, 2, 1, 1, 1, 1, False, 0, "1f1b", 1, "none"))
    sel = ev.scenario_for(Mix(1, 2, 1, 1, 1, 1, False, 0, "1f1b", 1, "selective"))
    memo = StepMemo()
    for fidelity in ("analytical", "flow"):
        a = run_scenario(ev.resolved(none), fidelity=fidelity, memo=memo)
        hits = memo.hits
        b = run_scenario(ev.resolved(sel), fidelity=fidelity, memo=memo)
        assert memo.hits == hits + 1 and a.digest == b.digest
        plain = run_scenario(ev.resolved(sel), fidelity=fidelity)
        got, want = b.to_dict(), plain.to_dict()
        got.pop("wall_s"), want.pop("wall_s")
        assert got == want
    # a different DAG (full recompute adds the forward again) is not a hit
    full = ev.scenario_for(Mix(1, 2, 1, 1, 1, 1, False, 0, "1f1b", 1, "full"))
    hits = memo.hits
    c = run_scenario(ev.resolved(full), fidelity="analytical", memo=memo)
    assert memo.hits == hits and c.digest != a.digest


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


def test_flow_collectives_memo_changes_nothing():
    """FlowCollectives memoises each collective's estimate, phases and result dict: a repeated
    collective runs as the first, and each record equals its own result's to_dict (key order too)."""
    from clustersim.collectives.flow import flow_simulation
    from clustersim.topology import load_cluster

    sim = flow_simulation(load_cluster("hgx-h200", gpus=2), None)
    procs = []
    for _ in range(3):  # one after the other: uncontended, each takes the closed form
        p = sim.collective("all_reduce", [0, 1], 2**20, tag={"group": "dp"})
        sim.env.run(p)
        procs.append(p)
    assert len(sim.collectives._memo) == 1
    for p, rec in zip(procs, sim.records):
        assert p.value.time_s == pytest.approx(procs[0].value.time_s, rel=1e-9)  # later start: float noise only
        want = {"op": "all_reduce", "start_s": rec["start_s"], "end_s": rec["end_s"], "tag": {"group": "dp"},
                **p.value.to_dict()}
        assert rec == want and list(rec) == list(want)
