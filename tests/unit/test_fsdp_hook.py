"""The FSDP2 hook host time (profile ``host.fsdp_hook_us``): derived from the host probe rows, set in
the profiles of the machines probed (dgx-h100: one 2x H100 VM; hgx-h200: 2 and 4 ranks of one 4x H200 VM),
and charged per hook by step_fsdp.py in place of the per-call/per-tensor estimate."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from clustersim.collectives import resolve_profile
from clustersim.simulate.resolve import resolve_scenario
from clustersim.simulate.run import run_scenario, transformer_step
from clustersim.workload.step_fsdp import count_hooks

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "validation" / "host7-fsdp2-hook_h100x2_2026-11-26" / "train_steps.jsonl"
sys.path.insert(0, str(ROOT / "profiles"))
import fsdp_hook  # noqa: E402  (profiles/fsdp_hook.py, the derivation make_profiles.py uses)


def probe() -> dict[str, dict]:
    rows = (json.loads(line) for line in PROBE.read_text().splitlines() if line.strip())
    return {r["run_id"]: r for r in rows}


def step_host(row: dict, hook_us: float | None) -> tuple[float, int]:
    """(host seconds charged over the step's graph, hooks) for a probe row with the hook set to ``hook_us``."""
    rs = resolve_scenario(ROOT / row["scenario_file"], row["overrides"])
    host = rs.profile.host.model_copy(update={"fsdp_hook_us": hook_us})
    rs = dataclasses.replace(rs, profile=rs.profile.model_copy(update={"host": host}))
    graph = transformer_step(rs).build()
    return sum(op.args.host_s or 0.0 for op in graph.ops), count_hooks(graph)


def test_hooks_of_the_probe_graph_are_units_times_passes():
    # 32 blocks: gathered before forward and backward, reduce-scattered after backward (3 hooks);
    # the root (embedding, head): gathered once, reduce-scattered once (2 hooks); 2 micro-batches
    row = probe()["h7-fsdp2-h100"]
    assert step_host(row, 0.0)[1] == (32 * 3 + 2 * 2) * row["micro_batches"]


def test_the_measured_hook_replaces_the_estimate():
    row = probe()["h7-fsdp2-h100"]
    bare, hooks = step_host(row, 0.0)
    assert step_host(row, 1000.0)[0] - bare == pytest.approx(hooks * 1e-3, rel=1e-9)
    estimate = step_host(row, None)[0] - bare
    # the per-call/per-tensor estimate: 8 us + (2 + 2 x tensors) kernel issues of >= 8 us per hook
    assert hooks * 8e-6 * 3 < estimate < hooks * 1e-3


def test_dgx_h100_hook_is_the_probe_difference_less_the_model_charge():
    rows = probe()
    lo, hi = rows["h7-fsdp2-h100"], rows["h7-fsdp2-4mb-h100"]
    assert (lo["micro_batches"], hi["micro_batches"]) == (2, 4) and "H100" in lo["gpu"] and "H100" in hi["gpu"]
    (h_lo, n_lo), (h_hi, n_hi) = step_host(lo, 0.0), step_host(hi, 0.0)
    per_mb = (hi["step_time_s"] - lo["step_time_s"]) / 2
    expected_us = (per_mb - (h_hi - h_lo) / 2) / ((n_hi - n_lo) / 2) * 1e6
    prof = resolve_profile("dgx-h100")
    assert prof.host.fsdp_hook_us == pytest.approx(expected_us, abs=0.1)
    assert fsdp_hook.derive(prof)["fsdp_hook_us"] == prof.host.fsdp_hook_us
    assert 1000 < prof.host.fsdp_hook_us < 2000  # docs/validation.md 6d: about 1.3-1.4 ms per hook


@pytest.mark.parametrize("name", ["dgx-a100", "cannon-4xa100", "dgx-b200", "gb200-nvl72",
                                  "cannon-4xh100", "h100-pcie"])
def test_hook_is_not_carried_to_other_machines(name):
    assert resolve_profile(name).host.fsdp_hook_us is None


H200_PROBE = ROOT / "validation" / "host8-fsdp2-hook-h200_h200x4_2026-11-26" / "train_steps.jsonl"


def test_hgx_h200_hook_per_shard_group_size_is_its_probe_pair():
    rows = {r["run_id"]: r for r in (json.loads(x) for x in H200_PROBE.read_text().splitlines() if x.strip())}
    prof = resolve_profile("hgx-h200")
    table = prof.host.fsdp_hook_us
    assert sorted(table) == [2, 4]
    for ranks, (lo, hi) in ((2, ("h7-fsdp2", "h7-fsdp2-4mb")), (4, ("h8-fsdp4", "h8-fsdp4-4mb"))):
        lo, hi = rows[lo], rows[hi]
        assert lo["world_size"] == hi["world_size"] == ranks and "H200" in lo["gpu"]
        (h_lo, n_lo), (h_hi, n_hi) = step_host(lo, 0.0), step_host(hi, 0.0)
        per_mb = (hi["step_time_s"] - lo["step_time_s"]) / (hi["micro_batches"] - lo["micro_batches"])
        expected = (per_mb - (h_hi - h_lo) / 2) / ((n_hi - n_lo) / 2) * 1e6
        assert table[ranks] == pytest.approx(expected, abs=0.1), f"{ranks=}, {lo=}, {hi=}"
    # the 4-rank probe costs more host time per hook than the 2-rank one on the same VM (165.1 vs 136.9 ms
    # per micro-batch of 32 layers, docs/validation.md 6e)
    assert table[4] > 1.2 * table[2]


def test_hook_table_is_read_at_the_shard_group_size():
    prof = resolve_profile("hgx-h200")
    at = prof.host.fsdp_hook_us_at
    assert at(2) == prof.host.fsdp_hook_us[2] and at(4) == prof.host.fsdp_hook_us[4]
    assert at(2) < at(3) < at(4)            # log2 interpolation between the measured sizes
    assert at(1) == at(2) and at(64) == at(4)  # the nearest measured size outside them, no extrapolation
    # run.transformer_step reads it at dp (x cp): the 4-rank FSDP step charges the 4-rank value
    row = {"scenario_file": "scenarios/ref-fsdp2.yaml", "overrides": [
        "model.layers=2", "parallelism.dp=4", "cluster.gpus=4", "training.global_batch=8", "training.micro_batch=1"]}
    rs = resolve_scenario(ROOT / row["scenario_file"], row["overrides"])
    assert transformer_step(rs).fsdp_hook_s == pytest.approx(at(4) * 1e-6)


def test_probe_rows_give_back_their_micro_batch_difference():
    # consistency, not validation: the quantity was taken from these two rows
    rows = probe()
    lo, hi = rows["h7-fsdp2-h100"], rows["h7-fsdp2-4mb-h100"]
    t = {r["run_id"]: run_scenario(str(ROOT / r["scenario_file"]), fidelity="analytical",
                                   overrides=r["overrides"]).step_time_s for r in (lo, hi)}
    assert t[hi["run_id"]] - t[lo["run_id"]] == pytest.approx(hi["step_time_s"] - lo["step_time_s"], rel=0.01)


@pytest.mark.parametrize("bad, says", [({"two": 100.0}, "group sizes"), ({0: 100.0}, "integers >= 1"),
                                       ({2: -1.0}, "microseconds >= 0"), ({}, "empty mapping")])
def test_a_bad_hook_table_names_its_key(bad, says):
    from clustersim.config.base import validate
    from clustersim.config.profile import Profile
    from clustersim.errors import ClusterSimError

    with pytest.raises(ClusterSimError, match=f"host.fsdp_hook_us: .*{says}"):
        validate(Profile, {"name": "x", "host": {"fsdp_hook_us": bad}}, file="p.yaml")


# The optimizer step's host time over FSDP2's shards (profile host.fsdp_optimizer_us, docs/validation.md 6l): fitted
# from the optimizer windows train_gpt.py records on every rank, on the machines those runs used, and charged by
# step_fsdp.py in place of the 9-dispatches-per-tensor estimate. The fit itself: tests/slow/test_fsdp_hook_slow.py.


@pytest.mark.parametrize("name", ["dgx-a100", "cannon-4xa100", "dgx-b200", "gb200-nvl72", "cannon-4xh100", "h100-pcie"])
def test_optimizer_host_is_not_carried_to_other_machines(name):
    assert resolve_profile(name).host.fsdp_optimizer_us is None


def _graph(row: dict, host_update: dict | None = None):
    rs = resolve_scenario(ROOT / row["scenario_file"], row["overrides"])
    if host_update:
        host = rs.profile.host.model_copy(update=host_update)
        rs = dataclasses.replace(rs, profile=rs.profile.model_copy(update={"host": host}))
    step = transformer_step(rs)
    return step, step.build()


def test_the_measured_optimizer_host_replaces_the_estimate():
    row = probe()["h7-fsdp2-h100"]
    step, graph = _graph(row)
    opt = next(op for op in graph.ops if op.name == "optimizer")
    m = resolve_profile("dgx-h100").host.fsdp_optimizer_us
    assert opt.args.host_s == pytest.approx((m.base_us + m.per_tensor_us * step.stage_tensors(0)) * 1e-6, rel=1e-12)
    _, est = _graph(row, {"fsdp_optimizer_us": None})
    opt_est = next(op for op in est.ops if op.name == "optimizer")
    assert opt_est.args.host_s == pytest.approx(9 * step.stage_tensors(0) * step.host_kernel_s, rel=1e-12)
    assert opt_est.args.host_s > 2 * opt.args.host_s  # the estimate is the 3-5x upper bound


def test_every_collective_waits_for_the_hook_that_issues_it():
    """An all-gather or reduce-scatter cannot start on the GPU before its hook ran on the host: each depends on a
    host-stream op, and in the executed step starts no earlier than that op's end."""
    from clustersim.simulate.execute import CommCache, execute_analytical
    from clustersim.collectives import CollectiveModel

    row = probe()["h7-fsdp2-h100"]
    rs = resolve_scenario(ROOT / row["scenario_file"], row["overrides"])
    step = transformer_step(rs)
    graph = step.build()
    colls = [op for op in graph.ops if op.stream in ("dp_ag", "dp_rs")]
    assert colls and all(any(graph.ops[d].stream == "host" for d in op.deps) for op in colls)
    tl = execute_analytical(graph, CommCache(CollectiveModel(rs.cluster, rs.profile)))
    for op in colls:
        hook = max((d for d in op.deps if graph.ops[d].stream == "host"), key=lambda d: tl.end[d])
        assert tl.start[op.id] >= tl.end[hook] - 1e-12, f"{op=}"
    # host-bound probe: the GPU waits for its host, and the breakdown says so
    res = run_scenario(ROOT / row["scenario_file"], fidelity="analytical", overrides=row["overrides"])
    assert res.breakdown["host"] > 0.9 * res.step_time_s and res.breakdown["bubble"] < 0.01 * res.step_time_s
