"""Stragglers over whole shipped steps (moved from tests/unit/test_faults.py): the seeded random
distribution on the 8-GPU hybrid step, a slow host on a host-bound FSDP2 and a GPU-bound DDP step at
both fidelities; each runs the step five to seven times."""

from __future__ import annotations

import json

import pytest
import yaml

from clustersim.config.scenario import Scenario
from clustersim.simulate.run import run_scenario

pytestmark = pytest.mark.slow


def run(doc, faults=None, fidelity="flow"):
    d = dict(doc) if faults is None else dict(doc, faults=faults)
    return run_scenario(Scenario.model_validate(d), fidelity=fidelity)


#: the FSDP2 host probe (validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2): a 32-layer h 256 model whose step is its hosts'
HOST_BOUND = ["model.layers=32", "model.hidden=256", "model.heads=4", "model.ffn_hidden=1024", "model.seq_len=256",
              "training.micro_batch=1", "training.global_batch=4"]


def host_run(path, sets, stragglers=None, fidelity="analytical"):
    extra = [] if stragglers is None else ["faults.stragglers=" + json.dumps(stragglers)]
    return run_scenario(path, fidelity=fidelity, overrides=sets + extra)


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_host_slowdown_moves_a_host_bound_step_and_not_a_gpu_bound_one(fidelity):
    """A rank whose CPU runs at half speed doubles a host-bound FSDP2 step (the other rank waits for it at every
    collective) and leaves a GPU-bound DDP step alone; a faster host counts only where every rank has it."""
    healthy = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, fidelity=fidelity)
    slow = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, [{"rank": 1, "host_slowdown": 2.0}], fidelity)
    assert slow.step_time_s / healthy.step_time_s == pytest.approx(2.0, rel=0.05)
    assert slow.to_dict()["faults"]["causes"] == [{"kind": "straggler", "rank": 1, "host_slowdown": 2.0}]
    one_fast = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, [{"rank": 1, "host_slowdown": 0.5}], fidelity)
    assert one_fast.step_time_s == pytest.approx(healthy.step_time_s, rel=1e-9)
    all_fast = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, [{"rank": 0, "host_slowdown": 0.8},
                                                                 {"rank": 1, "host_slowdown": 0.8}], fidelity)
    assert all_fast.step_time_s / healthy.step_time_s == pytest.approx(0.8, rel=0.05)
    ddp = host_run("scenarios/gpt-1b-ddp.yaml", [], fidelity=fidelity)
    ddp_slow = host_run("scenarios/gpt-1b-ddp.yaml", [], [{"rank": 1, "host_slowdown": 2.0}], fidelity)
    assert ddp_slow.step_time_s == pytest.approx(ddp.step_time_s, rel=0.01)


def test_straggler_distribution_is_seeded_and_never_speeds_up():
    doc = yaml.safe_load(open("scenarios/hybrid-tp2-pp2-dp2.yaml"))
    a = run(doc, {"stragglers": {"sigma": 0.1, "seed": 1}}).to_dict()["faults"]
    b = run(doc, {"stragglers": {"sigma": 0.1, "seed": 1}}).to_dict()["faults"]
    c = run(doc, {"stragglers": {"sigma": 0.1, "seed": 2}}).to_dict()["faults"]
    assert a == b and a != c
    assert a["slowdown"] > 1.0 and all(x["slowdown"] > 1.0 for x in a["causes"])
    worst = max(x["slowdown"] for x in a["causes"])
    assert a["slowdown"] <= worst + 1e-9
