"""``plan: true`` studies: each point is the planner's best mix, and ``clustersim run`` of that mix agrees.

In tests/slow (from tests/unit): every test plans a point, seconds each."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError
from clustersim.plan import plan_point
from clustersim.simulate.resolve import read_inputs
from clustersim.simulate.run import run_scenario
from clustersim.sweep.runner import run_study

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# GPT-125M cut to 2 layers on 1 and 2 H200 GPUs, analytical: a handful of mixes per point.
SCENARIO = """\
name: tiny-gpt
cluster: {topology: hgx-h200, gpus: 1}
model: {preset: gpt-125m, layers: 2, seq_len: 512}
training: {global_batch: 4, micro_batch: 1}
simulation: {fidelity: analytical}
"""
STUDY = """\
name: tiny-plan
scenario: tiny.yaml
plan: true
axes:
  - grid: {cluster.gpus: [1, 2]}
"""
MIX_PATHS = {"dp": "parallelism.dp", "tp": "parallelism.tp", "pp": "parallelism.pp",
             "virtual_stages": "parallelism.virtual_stages", "schedule": "parallelism.schedule",
             "zero": "parallelism.zero", "sequence_parallel": "parallelism.sequence_parallel",
             "micro_batch": "training.micro_batch"}


def _files(tmp_path: Path) -> Path:
    (tmp_path / "tiny.yaml").write_text(SCENARIO)
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    return study


def _set_value(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def test_planned_rows_match_clustersim_run_of_the_planned_mix(tmp_path):
    res = run_study(_files(tmp_path), tmp_path / "out", executor="serial")
    assert [r["status"] for r in res.rows] == ["ok", "ok"], [r["error"] for r in res.rows]
    assert [r["n_gpus"] for r in res.rows] == [1, 2]
    for row in res.rows:
        assert row["planned"] is True and row["fits"] is True
        assert row["dp"] * row["tp"] * row["pp"] == row["n_gpus"]
        # the row's mix, given to `clustersim run` as --set items, gives the row's step time exactly
        sets = [f"cluster.gpus={row['n_gpus']}"] + [f"{p}={_set_value(row[c])}" for c, p in MIX_PATHS.items()]
        again = run_scenario(tmp_path / "tiny.yaml", overrides=sets)
        assert again.step_time_s == row["step_time_s"]
        assert again.fidelity == row["fidelity"] == "analytical"


def test_plan_point_is_deterministic_and_no_slower_than_the_files_mix(tmp_path):
    _files(tmp_path)
    inputs = read_inputs(tmp_path / "tiny.yaml", ["cluster.gpus=2", "parallelism.dp=2"])
    planned, res = plan_point(inputs)
    planned2, res2 = plan_point(inputs)
    assert planned.scenario == planned2.scenario and res.step_time_s == res2.step_time_s
    assert planned.scenario.name == "tiny-gpt" and planned.topology is inputs.topology
    # the file's own DDP mix is one the planner considers: the best is at least as fast
    ddp = run_scenario(tmp_path / "tiny.yaml", overrides=["cluster.gpus=2", "parallelism.dp=2"])
    assert res.step_time_s <= ddp.step_time_s


def test_a_flow_point_is_planned_and_simulated_at_flow(tmp_path):
    _files(tmp_path)
    inputs = read_inputs(tmp_path / "tiny.yaml", ["cluster.gpus=2", "simulation.fidelity=flow"])
    planned, res = plan_point(inputs)
    assert res.fidelity == planned.scenario.simulation.fidelity == "flow"
    again = run_scenario(tmp_path / "tiny.yaml", overrides=[
        "cluster.gpus=2", "simulation.fidelity=flow", f"parallelism.dp={planned.scenario.parallelism.dp}",
        f"parallelism.tp={planned.scenario.parallelism.tp}", f"parallelism.pp={planned.scenario.parallelism.pp}",
        f"parallelism.zero={planned.scenario.parallelism.zero}",
        f"parallelism.schedule={planned.scenario.parallelism.schedule}",
        f"parallelism.virtual_stages={planned.scenario.parallelism.virtual_stages}",
        f"parallelism.sequence_parallel={str(planned.scenario.parallelism.sequence_parallel).lower()}",
        f"training.recompute={planned.scenario.training.recompute}",
        f"training.micro_batch={planned.scenario.training.micro_batch}"])
    assert again.step_time_s == res.step_time_s


def test_no_mix_fits_is_a_clear_error(tmp_path):
    _files(tmp_path)
    # 8 layers of hidden 16384 (~5.3e10 parameters) in fp32: the model states alone need ~409 GiB
    # on one GPU and ~204 GiB on each of two even sharded by ZeRO-3, over an H200's 131 GiB
    big = ["model.layers=8", "model.hidden=16384", "model.heads=128", "model.ffn_hidden=65536"]
    inputs = read_inputs(tmp_path / "tiny.yaml", big + ["training.precision.params=fp32"])
    with pytest.raises(ClusterSimError, match=r"no parallel mix of tiny-gpt fits on 1 GPUs .*memory removed"):
        plan_point(inputs)
    # in a study the same message is that point's error row (the sweep does not stop)
    study = tmp_path / "study.yaml"
    items = ", ".join(s.replace("=", ": ") for s in big)
    study.write_text(STUDY + "set: {" + items + ", training.precision.params: fp32}\n")
    rows = run_study(study, tmp_path / "out", executor="serial").rows
    assert [r["status"] for r in rows] == ["error", "error"]
    assert "no parallel mix of tiny-gpt fits on 1 GPUs" in rows[0]["error"]
    assert "no parallel mix of tiny-gpt fits on 2 GPUs" in rows[1]["error"]


def test_a_job_without_a_model_cannot_be_planned(tmp_path):
    inputs = read_inputs(ROOT / "scenarios" / "montecarlo-pi.yaml")
    with pytest.raises(ClusterSimError, match="needs a scenario with a model"):
        plan_point(inputs)
