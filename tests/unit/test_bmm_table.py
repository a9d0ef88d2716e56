"""An eager attention core's batched GEMMs by shape (``compute.bmm_table``; docs/validation.md 3e)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustersim.calibration.transfer import bmm_between
from clustersim.config.topology import gpu_spec
from clustersim.roofline import bmm_shape, roofline_efficiency
from clustersim.simulate.run import resolve_scenario, transformer_step
from clustersim.workload.compute import ComputeModel

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "profiles" / "measurements" / "h200" / "attention-bmm.jsonl"


def _compute(topology: str) -> ComputeModel:
    return transformer_step(resolve_scenario(str(ROOT / "scenarios" / "gpt-1b-ddp.yaml"),
                                             [f"cluster.topology={topology}"])).compute


def _time(cm: ComputeModel, p: tuple) -> float:
    kind, bh, s, d, eff = p
    return bmm_shape(kind, bh, s, d)[0] / (cm.peak_flops * eff) + cm.kernel_launch_s


def test_h200_profile_reproduces_its_measured_points():
    """At a measured shape the model's batched GEMM is the measurement (its efficiency over its own roofline, times
    that roofline, plus the GPU-side kernel gap the fit took off); and every profile point comes from the raw file."""
    cm = _compute("hgx-h200")
    raw = [json.loads(line) for line in RAW.read_text().splitlines() if line.strip()]
    by_shape = {(r["kind"], r["bh"], r["s"], r["d"]): r["us"] for r in raw}
    assert len(cm.bmm_table) >= 60
    for p in cm.bmm_table:
        assert cm.bmm(*p[:4]) == pytest.approx(_time(cm, p), rel=1e-6), f"{p=}"
        # the efficiency reproduces the measured call time (rounded to 4 digits)
        assert _time(cm, p) == pytest.approx(by_shape[p[:4]] * 1e-6, rel=1e-3), f"{p=}"


def test_held_out_batch_sizes_are_predicted():
    """Every other batch x heads of each (kind, seq, head_dim) left out of the table and predicted from the rest
    (the roofline at the run's shape times the neighbours' residual): mean error <= 5%, worst <= 15%."""
    cm = _compute("hgx-h200")
    full = list(cm.bmm_table)
    errs = []
    for key in {(p[0], p[2], p[3]) for p in full}:
        pts = sorted((p for p in full if (p[0], p[2], p[3]) == key), key=lambda p: p[1])
        if len(pts) < 3:
            continue
        cm.bmm_table = [p for p in full if (p[0], p[2], p[3]) != key] + pts[::2]
        errs += [abs(cm.bmm(*p[:4]) / _time(cm, p) - 1) for p in pts[1::2]]
    assert len(errs) >= 20
    assert sum(errs) / len(errs) <= 0.05
    assert max(errs) <= 0.15


def test_no_table_leaves_the_folded_gemm():
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, sm_count=132)
    assert cm.bmm("score", 8, 2048, 128) is None


def test_carried_points_keep_their_roofline_residual():
    """H200 -> H100 (the dgx-h100 table): each point keeps its share of its own roofline; the HBM-bound score
    GEMMs lose the bandwidth ratio (3.35 / 4.8 TB/s)."""
    h200, h100 = gpu_spec("H200-SXM"), gpu_spec("H100-SXM")
    p = {"kind": "score", "batch_heads": 64, "seq": 2048, "head_dim": 128, "efficiency": 0.41}
    (q,) = bmm_between([p], source=h200, target=h100, hbm_fraction=0.9)

    def roof(spec):
        return roofline_efficiency(*bmm_shape("score", 64, 2048, 128), peak=spec.peak_flops("bf16"),
                                   bw=0.9 * spec.hbm_bandwidth, sms=spec.sm_count)
    assert q["efficiency"] / roof(h100) == pytest.approx(p["efficiency"] / roof(h200), rel=1e-3)
    assert q["efficiency"] < p["efficiency"]


def test_eager_attention_prices_the_measured_shapes():
    """On the A100 (transferred tables) the score GEMM of 24 slices of 2048 x 2048 x 128 (N18B's rank at micro-batch
    4, Korthikanti's 22B layer) writes 24 x 8 MiB of scores: priced at its shape it takes over 1.4x the one GEMM
    with the batch folded into K that the model charged before (which writes one 2048 x 2048 output)."""
    cm = _compute("dgx-a100")
    assert cm.bmm("score", 24, 2048, 128) > 1.4 * cm.gemm(2048, 2048, 24 * 128)
    flops = bmm_shape("score", 24, 2048, 128)[0]
    eff = flops / (cm.peak_flops * (cm.bmm("score", 24, 2048, 128) - cm.kernel_launch_s))
    assert 0.4 < eff < 0.6
