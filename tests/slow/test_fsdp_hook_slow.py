"""The FSDP2 optimizer host time of the shipped profiles is the fit of the measured windows (moved from
tests/unit/test_fsdp_hook.py): the fit builds the step of every measured configuration, seconds per GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clustersim.collectives import resolve_profile

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "profiles"))
import fsdp_hook  # noqa: E402  (profiles/fsdp_hook.py, the derivation make_profiles.py uses)


@pytest.mark.parametrize("name,gpu", [("dgx-h100", "H100"), ("hgx-h200", "H200")])
def test_optimizer_host_is_the_fit_of_the_measured_windows(name, gpu):
    prof = resolve_profile(name)
    fit = fsdp_hook.optimizer_host(fsdp_hook.OPTIMIZER_ROWS[gpu], gpu)
    assert prof.host.fsdp_optimizer_us.model_dump() == fit
    # AdamW over DTensor shards: a few ms plus ~40-60 us per parameter tensor on both hosts (6l)
    assert 1000 < fit["base_us"] < 8000 and 30 < fit["per_tensor_us"] < 80, fit
    pts = fsdp_hook.optimizer_windows(fsdp_hook.OPTIMIZER_ROWS[gpu], gpu)
    assert len(pts) >= 30 and len({n for n, _ in pts}) >= 4
