"""FP8 linears and MoE experts from the kernel classes measured on one H200 (validation/probes/fp8-and-moe-kernels):
the tables are read, and each mechanism moves the step the way its measurement says."""

from __future__ import annotations

import pytest

from clustersim.calibration.bench import BenchConfig
from clustersim.calibration.bench.config import validate_config
from clustersim.calibration.bench.plans import selected_kernel_rows
from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.fp8 import cast_plan

STUDY = "validation/fp8-moe-1gpu_h200_2026-12-02/configs"


def _cm(shared_profile, shared_cluster, dtype="bf16", recipe=None):
    prof, spec = shared_profile("hgx-h200"), shared_cluster("hgx-h200", gpus=1).gpu_spec
    return ComputeModel.from_profile(prof.compute, spec, dtype, fp8_recipe=recipe)


def _step(name: str, *sets: str) -> float:
    return run_scenario(load_model(Scenario, f"{STUDY}/{name}", list(sets)), fidelity="analytical").step_time_s


def test_fp8_gemm_reads_its_table_at_the_fp8_peak(shared_profile, shared_cluster):
    bf16, fp8 = _cm(shared_profile, shared_cluster), _cm(shared_profile, shared_cluster, "fp8", "tensorwise")
    assert fp8.fp8_peak_flops == pytest.approx(2 * bf16.peak_flops, rel=0.01)
    assert fp8.peak_flops == bf16.peak_flops  # attention and the rest stay at the 16-bit peak
    t16, t8 = bf16.block_linear(16384, 16384, 4096), fp8.block_linear(16384, 16384, 4096)
    # measured: 0.71-0.73 of the FP8 peak at this shape, bf16 ~0.75 of its own: 1.9-2x, not the 2x of the old rule
    assert 1.7 < t16 / t8 < 2.05
    assert fp8.linear(16384, 16384, 4096) == t16  # the LM head's plain linear stays 16-bit


def test_fp8_casts_follow_the_recipe():
    fwd, bwd = cast_plan("rowwise", 16, 8, 4)
    assert [c for c, _ in fwd] == ["fp8_quantize_rowwise"] * 2
    assert [c for c, _ in bwd].count("bf16_transpose") == 3 and [c for c, _ in bwd].count("fp8_transpose") == 0


def test_unfused_fp8_casts_make_a_step_slower_and_fused_ones_faster():
    bf16 = _step("dense-base.yaml")
    eager = _step("dense-base.yaml", "training.precision.params=fp8")
    fused = _step("dense-base.yaml", "training.precision.params=fp8", "training.kernel_fusion=fused")
    rowwise = _step("dense-base.yaml", "training.precision.params=fp8", "training.precision.fp8_recipe=rowwise")
    assert rowwise > eager > bf16  # measured 415.8 > 294.6 > 184.0 ms
    assert fused < _step("dense-base.yaml", "training.kernel_fusion=fused")


def test_grouped_experts_read_the_grouped_table_and_small_experts_cost_more(shared_profile, shared_cluster):
    cm = _cm(shared_profile, shared_cluster)
    assert cm.grouped_table and cm.expert_layout_table and cm.moe_loop_expert_s > 1e-4
    # 32 experts of 64 tokens: measured 170 TFLOP/s (0.17 of peak) against ~0.7 at 1,024 tokens
    small = cm.grouped_linear((64,) * 32, 1536, 2048)
    large = cm.grouped_linear((1024,) * 32, 1536, 2048)
    assert 2 * 32 * 64 * 1536 * 2048 / small < 0.3 * 2 * 32 * 1024 * 1536 * 2048 / large


def test_an_expert_loop_is_slower_than_a_grouped_layer_and_refuses_expert_parallelism():
    assert _step("moe-base.yaml", "model.moe.implementation=loop") > 2 * _step("moe-base.yaml")
    with pytest.raises(ClusterSimError, match="loop"):
        load_model(Scenario, f"{STUDY}/moe-base.yaml",
                   ["model.moe.implementation=loop", "parallelism.ep=2", "parallelism.dp=2", "cluster.gpus=2"])


def test_bench_kernel_classes_are_checked_and_counted():
    with pytest.raises(ClusterSimError, match="kernel class"):
        validate_config(BenchConfig(output="x", device="cpu", kernel_classes=("fp9",)))
    cpu = BenchConfig(output="x", device="cpu", kernel_classes=("experts",))
    assert selected_kernel_rows(cpu) == 3 * 3 + 1 + 2  # the CPU plan: one point of each class, the loops
    assert selected_kernel_rows(BenchConfig(output="x", device="cpu", kernel_classes=("fp8",))) == 0
