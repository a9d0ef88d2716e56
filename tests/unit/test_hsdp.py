"""HSDP (parallelism.fsdp_shard_size): shard inside groups of consecutive DP ranks, replicate across them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.simulate.run import run_scenario
from clustersim.workload.step_fsdp import count_hooks

ROOT = Path(__file__).resolve().parents[2]
FSDP = ROOT / "scenarios" / "ref-fsdp2.yaml"  # 24-layer 0.35B GPT, FSDP2, global batch 8
FOUR = ["cluster.gpus=4", "parallelism.dp=4"]


def _run(*extra, fidelity="analytical"):
    return run_scenario(FSDP, fidelity=fidelity, overrides=[*FOUR, *extra], keep_timeline=True)


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_hsdp_shards_in_groups_and_all_reduces_across(fidelity):
    fsdp, hsdp = _run(fidelity=fidelity), _run("parallelism.fsdp_shard_size=2", fidelity=fidelity)
    g = hsdp.step.graph
    ag = [o for o in g.ops if o.name.startswith("AG ")]
    rs = [o for o in g.ops if o.name.startswith("RS ")]
    ar = [o for o in g.ops if o.name.startswith("AR ")]
    assert ag[0].coll.groups == [[0, 1], [2, 3]] and rs[0].coll.groups == [[0, 1], [2, 3]]
    assert len(ar) == len(rs) and ar[0].coll.groups == [[0, 2], [1, 3]]  # the same shard across the replicas
    assert ar[0].coll.size_bytes == pytest.approx(rs[0].coll.size_bytes / 2)  # the gradient shard
    assert count_hooks(g) == count_hooks(fsdp.step.graph)  # the all-reduce runs in the reduce-scatter's hook
    # states sharded over 2 ranks, not 4
    assert hsdp.memory["params"] == pytest.approx(2 * fsdp.memory["params"])
    # (the step itself can be shorter: this host-bound model's FSDP2 hooks are measured per shard-group size)


def test_fidelities_agree():
    a, f = _run("parallelism.fsdp_shard_size=2"), _run("parallelism.fsdp_shard_size=2", fidelity="flow")
    assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.02)


def test_shard_size_equal_to_dp_is_fsdp():
    a, b = _run(), _run("parallelism.fsdp_shard_size=4")
    assert a.step_time_s == b.step_time_s and a.memory["peak_bytes_per_gpu"] == b.memory["peak_bytes_per_gpu"]


@pytest.mark.parametrize("changes, words", [
    ({"fsdp_shard_size": 2, "zero": 1}, "needs zero: 3"),
    ({"fsdp_shard_size": 3}, "divide dp"),
    ({"fsdp_shard_size": 1}, ">= 2"),
])
def test_bad_shard_sizes_are_refused(changes, words):
    data = load_model(Scenario, FSDP, FOUR).model_dump()
    data["parallelism"].update(changes)
    with pytest.raises(Exception) as exc:
        Scenario.model_validate(data)
    assert words in str(exc.value)
