"""Llama 3's interruptions give its goodput, checked by 500 Monte-Carlo trials of a 54-day run (moved from
tests/unit/test_goodput.py)."""

from __future__ import annotations

import pytest

from clustersim.reliability import goodput as gp

pytestmark = pytest.mark.slow

DAY, HOUR = gp.DAY, gp.HOUR


def test_llama3_interruptions_imply_mtbf_and_goodput():
    """Llama 3 (Dubey et al. 2024, §3.3.4; published-runs.md §4): 419 unexpected interruptions
    in a 54-day snapshot on 16,384 H100s, and "effective training time" above 90 %."""
    n_gpus, days, interruptions = 16384, 54, 419
    mtbf_sys = days * DAY / interruptions            # 3.09 h between interruptions
    mtbf_gpu_h = n_gpus * mtbf_sys / HOUR             # implied per-GPU MTBF (all causes)
    assert mtbf_gpu_h == pytest.approx(50_677, rel=1e-3)
    m = gp.system_mtbf_s(n_gpus=n_gpus, mtbf_gpu_hours=mtbf_gpu_h)
    assert m == pytest.approx(mtbf_sys)
    # 405B: 405e9 params x 14 bytes (bf16 weights + fp32 master, m, v) at Tectonic's 2 TB/s,
    # restart + re-queue 10 minutes
    delta = 405e9 * 14 / 2e12
    case = dict(work_s=days * DAY, delta_s=delta, restart_s=600.0, mtbf_s=m)
    tau = gp.best_interval(**case)
    g = gp.goodput(interval_s=tau, **case)
    assert 0.90 < g < 0.97   # consistent with the reported > 90 % effective training time
    assert gp.monte_carlo(interval_s=tau, trials=500, seed=3, **case).contains(g)
