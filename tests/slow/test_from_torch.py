"""``clustersim scenario from-torch``: an MLP and a small CNN traced on the meta device, simulated as DDP jobs on
2 GPUs at both fidelities (slow tier: importing torch takes seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from clustersim.config.scenario import Scenario  # noqa: E402
from clustersim.errors import ClusterSimError  # noqa: E402
from clustersim.importers.torch_trace import scenario_from_torch  # noqa: E402
from clustersim.simulate.run import run_scenario  # noqa: E402

pytestmark = pytest.mark.slow
MODELS = Path(__file__).resolve().parents[1] / "data" / "torch_models.py"


def _run_both(tmp_path, imported):
    path = tmp_path / "job.yaml"
    path.write_text(imported.yaml())
    return [run_scenario(str(path), fidelity=f) for f in ("analytical", "flow")]


def test_mlp_flops_are_the_linear_layers_and_ddp_runs_on_two_gpus(tmp_path):
    imported = scenario_from_torch(f"{MODELS}:mlp", input_shape="64x784", gpus=2)
    r = imported.report
    assert r["total_params"] == 784 * 256 + 256 + 256 * 10 + 10
    forward = 2 * 64 * (784 * 256 + 256 * 10)  # two GEMMs of 2 m n k
    assert r["forward_flops"] == forward
    assert r["backward_flops"] == 2 * forward - 2 * 64 * 784 * 256  # dgrad + wgrad, no gradient of the input
    Scenario.model_validate(imported.scenario)
    phases = imported.scenario["job"]["phases"]
    assert sum(p["collective"]["size"] for p in phases if "collective" in p) == r["total_params"] * 4  # fp32 grads
    analytical, flow = _run_both(tmp_path, imported)
    assert analytical.step_time_s > 0 and flow.step_time_s == pytest.approx(analytical.step_time_s, rel=0.05)


def test_small_cnn_runs_with_ddp_on_two_gpus_and_one_gpu_has_no_all_reduce(tmp_path):
    two = scenario_from_torch(f"{MODELS}:cnn", input_shape="32x3x32x32", gpus=2)
    one = scenario_from_torch(f"{MODELS}:cnn", input_shape="32x3x32x32", gpus=1)
    assert two.report["total_params"] == 25674  # 448 + 32 + 4640 + 64 + 20490
    assert two.report["forward_flops"] > 2 * 32 * 32 * 32 * 16 * 27  # at least the first convolution
    assert not any("collective" in p for p in one.scenario["job"]["phases"])
    a2, f2 = _run_both(tmp_path, two)
    a1, _ = _run_both(tmp_path, one)
    assert a2.step_time_s > a1.step_time_s  # the all-reduce of the gradients
    assert f2.step_time_s == pytest.approx(a2.step_time_s, rel=0.05)


def test_bad_factories_and_shapes_are_refused(tmp_path):
    with pytest.raises(ClusterSimError, match="expected MODULE:FACTORY"):
        scenario_from_torch("nocolon", input_shape="2x2")
    with pytest.raises(ClusterSimError, match="has no 'nothing'"):
        scenario_from_torch(f"{MODELS}:nothing", input_shape="2x2")
    with pytest.raises(ClusterSimError, match="expected sizes"):
        scenario_from_torch(f"{MODELS}:mlp", input_shape="big")
    with pytest.raises(ClusterSimError, match="tracing the model on the meta device failed"):
        scenario_from_torch(f"{MODELS}:mlp", input_shape="64x10")  # 10 features into a 784-wide layer
