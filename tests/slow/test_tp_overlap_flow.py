"""Overlapped TP at flow fidelity: the same pricing as the closed form (tests/unit/test_tp_overlap_mechanism.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_flow_gain_matches_the_analytical_one():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from test_tp_overlap_mechanism import _step

    a = 1 - _step(True).step_time_s / _step(False).step_time_s
    f = 1 - _step(True, "flow").step_time_s / _step(False, "flow").step_time_s
    assert f == pytest.approx(a, abs=0.005)
    assert 0.0 < f < 0.14
