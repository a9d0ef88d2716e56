"""Block recompute (training.recompute_layers: the first N layers of each model chunk recompute in full):
time and activations between none and full, in proportion, at both fidelities."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
PP2 = ROOT / "scenarios" / "ref-pp2-1f1b.yaml"  # 24 layers on 2 pipeline stages: 12 per stage


def _run(*o, fidelity="analytical"):
    return run_scenario(PP2, fidelity=fidelity, overrides=list(o))


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_half_the_layers_is_half_way(fidelity):
    none = _run("training.recompute=none", fidelity=fidelity)
    full = _run("training.recompute=full", fidelity=fidelity)
    half = _run("training.recompute=full", "training.recompute_layers=6", fidelity=fidelity)
    assert half.step_time_s == pytest.approx((none.step_time_s + full.step_time_s) / 2, rel=0.01)
    assert half.memory["activations"] == pytest.approx((none.memory["activations"] + full.memory["activations"]) / 2,
                                                       rel=0.01)
    every = _run("training.recompute=full", "training.recompute_layers=12", fidelity=fidelity)
    assert every.step_time_s == full.step_time_s and every.memory["activations"] == full.memory["activations"]


def test_recomputed_layers_are_the_first_of_each_chunk():
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import transformer_step

    step = transformer_step(resolve_scenario(PP2, ["training.recompute=full", "training.recompute_layers=2"]))
    f = step.chunk_units(0, "F")
    b = step.chunk_units(0, "B")
    layers_b = [u for u in b if u.name == "layer"]
    assert len(layers_b) == 12
    # backward runs the layers in reverse: the last two are the chunk's first layers, with their forward repeated
    longer = [len(u.segments) > len(layers_b[0].segments) for u in layers_b]
    assert longer == [False] * 10 + [True] * 2 and len(f) > 0


def test_needs_full_recompute():
    data = load_model(Scenario, PP2).model_dump()
    data["training"].update(recompute="selective", recompute_layers=2)
    with pytest.raises(Exception, match="needs recompute: full"):
        Scenario.model_validate(data)
