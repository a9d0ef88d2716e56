"""What makes the planner fast changes none of its results: a memo hit is the run it replaces, and the
split-schedule bound (DualPipe's F&B pairs at their op's time) stays below the simulated step with TP > 1
(for every schedule on 1,024 GPUs: tests/slow/test_plan_bound_slow.py). Identical DAGs executed once give the
same plans as executing every mix: tests/slow/test_plan_slow.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import Mix
from clustersim.plan.evaluate import Evaluator
from clustersim.simulate.memo import StepMemo
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8, flash attention


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


def test_flow_collectives_memo_changes_nothing(shared_cluster):
    """FlowCollectives memoises each collective's estimate, phases and result dict: a repeated
    collective runs as the first, and each record equals its own result's to_dict (key order too)."""
    from clustersim.collectives.flow import flow_simulation

    sim = flow_simulation(shared_cluster("hgx-h200", gpus=2), None)
    procs = []
    for _ in range(3):  # one after the other: uncontended, each takes the closed form
        p = sim.collective("all_reduce", [0, 1], 2**20, tag={"group": "dp"})
        sim.env.run(p)
        procs.append(p)
    assert len(sim.collectives._memo) == 1
    for p, rec in zip(procs, sim.records):
        assert p.value.time_s == pytest.approx(procs[0].value.time_s, rel=1e-9), \
            f"{p=}, {rec=}"  # later start: float noise only
        want = {"op": "all_reduce", "start_s": rec["start_s"], "end_s": rec["end_s"], "tag": {"group": "dp"},
                **p.value.to_dict()}
        assert rec == want and list(rec) == list(want)
