"""The GEMM library's partial-wave loss (``compute.wave_loss``; docs/validation.md 3e), from the H200 wave sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from clustersim.collectives.profiles import resolve_profile
from clustersim.roofline import library_fill, wave_efficiency

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "profiles" / "measurements" / "h200" / "wave-sweep.jsonl"
H200_PEAK, H200_HBM = 989.4e12, 4800e9


def _series(layout: str, m: int) -> tuple[np.ndarray, np.ndarray]:
    rows = [json.loads(line) for line in RAW.read_text().splitlines() if line.strip()]
    x, t = [], []
    for r in rows:
        if r["layout"] != layout or r["m"] != m:
            continue
        flops = 2.0 * r["m"] * r["n"] * r["k"]
        nbytes = 2.0 * (r["m"] * r["k"] + r["n"] * r["k"] + r["m"] * r["n"])
        if flops * H200_HBM / (nbytes * H200_PEAK) >= 1.5:  # compute-bound by the roofline
            x.append(math.ceil(r["m"] / 128) * math.ceil(r["n"] / 128) / r["sms"])
            t.append(r["us"])
    return np.array(x), np.array(t)


def _rms(x: np.ndarray, t: np.ndarray, loss: float) -> float:
    """Relative rms of the best ``t = t0 + c (x + loss (ceil(x) - x))`` for a fixed ``loss``."""
    a = np.stack([np.ones_like(x), x + loss * (np.ceil(x) - x)], axis=1)
    coef = np.linalg.lstsq(a, t, rcond=None)[0]
    return float(np.sqrt(np.mean((a @ coef / t - 1) ** 2)))


@pytest.mark.parametrize("layout,m", [("NT", 2048), ("TN", 4096)])
def test_profile_loss_explains_the_sweep_and_the_one_tile_model_does_not(layout, m):
    """The profile's share fits the series (rms <= 5%); the one-tile model (share 1) leaves at least twice that."""
    loss = resolve_profile("hgx-h200").compute.wave_loss[layout]
    x, t = _series(layout, m)
    assert len(x) >= 40
    assert _rms(x, t, loss) <= 0.05
    assert _rms(x, t, 1.0) >= 2 * _rms(x, t, loss)


def test_forward_layout_keeps_little_of_the_loss():
    """Forward GEMMs (NT) keep under a fifth of a partial wave's loss, weight-gradient GEMMs (TN, K = 2048) more;
    every shipped profile carries the same measured shares (one library)."""
    loss = resolve_profile("hgx-h200").compute.wave_loss
    assert loss["NT"] < 0.2 < loss["TN"] < 0.6
    for name in ("dgx-h100", "dgx-a100", "dgx-b200"):
        assert resolve_profile(name).compute.wave_loss == loss
    assert library_fill(288, 108, 1.0) == pytest.approx(wave_efficiency(288, 108))
