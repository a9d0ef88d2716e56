"""Every shipped study (scenarios/study-*.yaml) validates, every point reads, and one point of each runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.sweep.analysis import scaling
from clustersim.sweep.point import evaluate_point, prepare_points
from clustersim.sweep.runner import run_study
from clustersim.sweep.study import load_study

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "scenarios").glob("study-*.yaml"))


def test_the_five_studies_of_issue_15_are_shipped():
    assert {p.stem for p in STUDIES} >= {"study-pi-scaling", "study-gpt3-175b-scaling", "study-llama3-405b",
                                         "study-dgx-h100-to-gb200", "study-nic-bandwidth"}


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_study_points_read_and_one_runs(path):
    study, _ = load_study(path)
    points = prepare_points(study, path)
    assert points and all(p.task is not None for p in points), [p.error for p in points if p.task is None]
    assert len({p.id for p in points}) == len(points)
    # the cheapest analytical point: the one with the most GPUs (fewest micro-batches per pipeline)
    cand = [p for p in points if p.task.inputs.scenario.simulation.fidelity == "analytical"] or points[:1]
    rec = evaluate_point(cand[-1].task)
    assert rec["row"]["status"] == "ok", rec["row"]["error"]
    assert rec["row"]["step_time_s"] > 0


def test_pi_study_runs_and_scales_nearly_ideally(tmp_path):
    res = run_study(ROOT / "scenarios" / "study-pi-scaling.yaml", tmp_path, executor="serial")
    pts = scaling(res.rows)
    assert [p["n"] for p in pts] == [1, 2, 4, 8]
    # work divides over the ranks and the 8-byte all-reduce costs microseconds: E(8) is 1.000 to 4 digits
    # (measured: 0.982; the A100 profile holds no measured device spread or first-collective cost,
    # docs/studies.md; study-pi-scaling-h100 is the measured H100 case)
    assert pts[-1]["efficiency"] == pytest.approx(1.0, abs=1e-4)
    assert res.rows[0]["step_time_s"] == pytest.approx(45.15, rel=1e-3)  # the per-sample cost is the 1-GPU run's
    assert set(res.files) >= {"scaling", "breakdown"}
