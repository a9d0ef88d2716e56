"""Issue 36 §6: wrong answers nothing warned about. DDP buckets smaller than a layer take effect; a line plot over
two varied dimensions names its series; the shipped GPT-3 scaling study fits its event budget; a sweep's error
column holds a relative path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError

ROOT = Path(__file__).resolve().parents[2]
#: gpt-1b-ddp with 1,024-wide layers: 12.6 M parameters, 50 MB of fp32 gradients and 4 weight matrices a layer
SMALL = ["model.hidden=1024", "model.heads=8", "model.kv_heads=8", "model.ffn_hidden=4096", "model.layers=4"]


def _ops(bucket_mb: float) -> int:
    from clustersim.simulate.run import run_scenario

    res = run_scenario(ROOT / "scenarios" / "gpt-1b-ddp.yaml", fidelity="analytical",
                       overrides=[*SMALL, f"parallelism.ddp_bucket_mb={bucket_mb}"])
    return res.ops


def test_ddp_buckets_smaller_than_a_layer_take_effect():
    """1 MB: a bucket per weight matrix (4 a layer); 25 MB: 2 a layer; 100 MB: two layers a bucket (was: one
    bucket a layer for every size below a layer's 50 MB)."""
    ops = {mb: _ops(mb) for mb in (1, 25, 100)}
    assert ops[1] > ops[25] > ops[100], ops


def test_a_line_plot_over_two_dimensions_needs_a_series():
    from clustersim.sweep.study import Study

    base = {"name": "s", "scenario": "gpt-1b-ddp",
            "axes": [{"zip": {"cluster.gpus": [2, 4], "parallelism.dp": [2, 4]}},
                     {"grid": {"parallelism.zero": [0, 1]}}]}
    with pytest.raises(ValueError, match="series"):
        Study.model_validate({**base, "plots": [{"kind": "scaling"}]})
    Study.model_validate({**base, "plots": [{"kind": "scaling", "series": "parallelism.zero"}, {"kind": "breakdown"}]})
    Study.model_validate({**base, "axes": base["axes"][:1], "plots": [{"kind": "scaling"}]})


def test_the_gpt3_scaling_study_fits_its_event_budget():
    """Its 64-GPU point (1,536 micro-batches a pipeline) is read within the study's own budget, not refused."""
    from clustersim.budget import limits
    from clustersim.sweep.point import prepare_points
    from clustersim.sweep.study import load_study

    study, path = load_study("study-gpt3-175b-scaling")
    with limits(max_events=2_000_000):
        points = prepare_points(study, path)
    assert len(points) == 7 and all(p.error is None for p in points), [p.error for p in points if p.error]
    assert points[0].task.max_events == study.max_events > 2_000_000


def test_the_error_column_holds_a_relative_path():
    from clustersim.sweep.point import portable_message

    exc = ClusterSimError("gpus: must be > 0", file=str(ROOT / "scenarios" / "x.yaml"), field="cluster.gpus")
    msg = portable_message(exc)
    assert not os.path.isabs(msg.split(":")[0]) and msg.endswith("x.yaml: cluster.gpus: gpus: must be > 0")
