"""Transferred kernel tables are read through the target's roofline at the run's own shape.

``roofline_lookup`` (profile ``compute``; set by clustersim/calibration/transfer.py): the compute model
divides each layout / flash-attention point by the roofline there (wave quantisation of the output
tiles over the GPU's SMs, HBM bound: clustersim/roofline.py) and multiplies the interpolated residual
by the roofline of the GEMM or attention pass actually run.
"""

from __future__ import annotations

import pytest

from clustersim.collectives import resolve_profile
from clustersim.config.base import validate
from clustersim.config.profile import Profile
from clustersim.config.topology import gpu_spec
from clustersim.errors import ClusterSimError
from clustersim.roofline import (attention_shape, gemm_shape, layout_gemm, library_fill, roofline_efficiency,
                                wave_efficiency)
from clustersim.workload.compute import ComputeModel

A100 = gpu_spec("A100-SXM-80GB")


def _a100(lookup: bool = True) -> ComputeModel:
    cm = ComputeModel.from_profile(resolve_profile("dgx-a100").compute, A100, "bf16")
    assert cm.roofline_sms == 108
    if not lookup:
        cm.roofline_sms = None
    return cm


def test_layout_gemm_maps_the_three_training_layouts():
    assert layout_gemm("NT", 2048, 2304, 6144) == (2048, 2304, 6144)   # y = x W^T: tokens x out
    assert layout_gemm("NN", 2048, 2304, 6144) == (2048, 6144, 2304)   # dx = dy W: tokens x in
    assert layout_gemm("TN", 2048, 2304, 6144) == (2304, 6144, 2048)   # dW = dy^T x: out x in


def test_at_a_measured_point_the_stored_efficiency_is_returned():
    """Residual over the roofline at the point, times the same roofline: the table value itself."""
    cm = _a100()
    for layout, tokens, out_f, in_f, eff in cm.gemm_layout_table[::7]:
        role = {"NT": "fwd", "NN": "dgrad", "TN": "wgrad"}[layout]
        assert cm.linear_efficiency(tokens, out_f, in_f, role) == pytest.approx(min(1.0, eff), rel=1e-9), \
            f"{layout=}, {tokens=}, {out_f=}, {in_f=}, {eff=}"


def test_n18b_qkv_is_quantised_at_its_own_shape():
    """Narayanan's 18.4B QKV GEMM (2048 tokens, 2304 x 6144 weight at TP 8) is read from the nearest
    measured weight shape, 2048 x 8192: 16 x 16 = 256 tiles, 3 waves on 108 SMs (0.79 busy by the one-tile
    model). Its own 16 x 18 = 288 tiles also take 3 waves (0.89 busy). The library keeps only the profile's
    measured share of that partial-wave loss (forward layout NT: under 0.2), and the residual is rescaled by the
    ratio of the two shares."""
    cm, measured = _a100(), _a100(lookup=False)
    pts = {(p[1], p[2], p[3]): p[4] for p in cm.gemm_layout_table if p[0] == "NT"}
    assert (2048, 2048, 8192) in pts and (2048, 2304, 6144) not in pts
    assert measured.linear_efficiency(2048, 2304, 6144, "fwd") == pts[(2048, 2048, 8192)]
    assert (round(wave_efficiency(256, 108), 3), round(wave_efficiency(288, 108), 3)) == (0.79, 0.889)
    loss = cm.wave_loss_for("NT")
    assert loss is not None and 0 <= loss < 0.2
    w_point, w_run = library_fill(256, 108, loss), library_fill(288, 108, loss)
    assert w_point < w_run < 1.0 and library_fill(256, 108, 1.0) == pytest.approx(wave_efficiency(256, 108))
    rho = lambda m, n, k: roofline_efficiency(*gemm_shape(m, n, k), peak=cm.peak_flops, bw=cm.hbm_bandwidth, sms=108,
                                              wave_loss=loss)
    assert rho(2048, 2048, 8192) == pytest.approx(w_point) and rho(2048, 2304, 6144) == pytest.approx(w_run)
    assert cm.linear_efficiency(2048, 2304, 6144, "fwd") == pytest.approx(pts[(2048, 2048, 8192)] * w_run / w_point)


def test_without_lookup_the_tables_are_read_as_measured(shared_profile):
    h100 = shared_profile("dgx-h100").compute
    assert h100.roofline_lookup is False
    cm = ComputeModel.from_profile(h100, gpu_spec("H100-SXM"), "bf16")
    assert cm.roofline_sms is None and cm.roofline(1e12, 1e8, 7) == 1.0


def test_flash_attention_uses_the_runs_batch_and_heads():
    """A pass read from a measured point of other batch x heads gets its own wave share."""
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, kernel_launch_s=0.0, roofline_sms=132,
                      attention_table=[("fwd", 2048, 128, 16, 1, 0.5)])
    flops_point = attention_shape("fwd", 16, 2048, 128)[0]     # 16 x 16 = 256 tiles: 2 waves, 0.97 busy
    assert cm.attention_eff(flops_point, "fwd", seq=2048, head_dim=128) == pytest.approx(0.5)
    flops_run = attention_shape("fwd", 33, 2048, 128)[0]       # 33 x 16 = 528 tiles: 4 full waves
    assert cm.attention_eff(flops_run, "fwd", seq=2048, head_dim=128) == pytest.approx(
        0.5 * wave_efficiency(528, 132) / wave_efficiency(256, 132))
    cm.roofline_sms = None
    assert cm.attention_eff(flops_run, "fwd", seq=2048, head_dim=128) == 0.5


def test_lookup_needs_the_sm_count():
    comp = validate(Profile, {"name": "x", "compute": {"roofline_lookup": True}}, file=None).compute
    spec = gpu_spec("H100-SXM").model_copy(update={"sm_count": None})
    with pytest.raises(ClusterSimError, match="sm_count"):
        ComputeModel.from_profile(comp, spec, "bf16")


@pytest.mark.parametrize("profile, gpu", [("dgx-a100", "A100-SXM-80GB"), ("cannon-4xa100", "A100-SXM-40GB"),
                                          ("dgx-b200", "B200"), ("gb200-nvl72", "GB200")])
def test_unmeasured_gpus_carry_transferred_tables_with_provenance(profile, gpu, shared_profile):
    comp = shared_profile(profile).compute
    assert comp.roofline_lookup is True
    assert comp.gemm_layout_table and comp.attention_table and comp.memory_table
    assert comp.provenance.startswith("Not measured on this GPU. Kernel tables transferred from")
    assert gpu in comp.provenance and "roofline_lookup" in comp.provenance


def test_dgx_b200_preset_runs_on_the_b200_spec(shared_cluster):
    c = shared_cluster("dgx-b200")
    assert c.gpu_spec.name == "B200" and c.n_gpus == 8
    assert c.gpu_spec.sm_count == 148 and c.gpu_spec.peak_tflops["bf16"] == 2250
