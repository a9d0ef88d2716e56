"""Goodput under failures: the closed form (Daly's exact expectation, Young/Daly intervals)
against a seeded Monte-Carlo of the same process, and the published Llama 3 check."""

from __future__ import annotations

import math

import pytest

from clustersim.errors import ClusterSimError
from clustersim.reliability import goodput as gp

DAY, HOUR = gp.DAY, gp.HOUR

#: (work, delta, restart, system MTBF) in seconds: few and many segments, restart
#: cheap and dear, checkpoints small and large against the MTBF.
CASES = [
    dict(work_s=2 * DAY, delta_s=60.0, restart_s=600.0, mtbf_s=3 * HOUR),
    dict(work_s=1e5, delta_s=300.0, restart_s=3000.0, mtbf_s=2e4),
    dict(work_s=5000.0, delta_s=10.0, restart_s=0.0, mtbf_s=100.0),
    dict(work_s=10 * HOUR, delta_s=900.0, restart_s=1800.0, mtbf_s=2 * HOUR),
    dict(work_s=7 * DAY, delta_s=30.0, restart_s=120.0, mtbf_s=20 * HOUR),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("which", ["best", "young", "half_young"])
def test_monte_carlo_agrees_with_closed_form(case, which):
    young = gp.young_interval(case["delta_s"], case["mtbf_s"])
    tau = {"best": gp.best_interval(**case), "young": young, "half_young": young / 2}[which]
    closed = gp.goodput(interval_s=tau, **case)
    mc = gp.monte_carlo(interval_s=tau, trials=3000, seed=7, **case)
    assert mc.contains(closed), (closed, mc)
    # the interval is tight enough to mean something: under 2 % of the goodput wide
    assert mc.ci_high - mc.ci_low < 0.02 * closed


def test_monte_carlo_rejects_a_wrong_model():
    """The MC check has power: a closed form that forgot the restart cost falls outside the CI."""
    case = CASES[1]
    tau = gp.best_interval(**case)
    mc = gp.monte_carlo(interval_s=tau, trials=3000, seed=7, **case)
    wrong = gp.goodput(interval_s=tau, **{**case, "restart_s": 0.0})
    assert not mc.contains(wrong)


def test_no_failures_limit_is_checkpoint_overhead():
    g = gp.goodput(work_s=1000.0, interval_s=100.0, delta_s=5.0, restart_s=1e4, mtbf_s=1e18)
    assert g == pytest.approx(100.0 / 105.0, rel=1e-9)


def test_first_order_expansion_of_the_closed_form():
    """delta, tau, R << M: goodput ~ 1 - delta/tau - (tau/2 + R + delta)/M (Young's waste)."""
    d, m, r, tau = 10.0, 1e6, 100.0, 5000.0
    g = gp.goodput(work_s=1e9, interval_s=tau, delta_s=d, restart_s=r, mtbf_s=m)
    approx = 1 - d / tau - (tau / 2 + r + d) / m
    assert g == pytest.approx(approx, abs=2e-5)


@pytest.mark.parametrize("delta,m", [(60.0, 3 * HOUR), (300.0, 2e4), (10.0, 1e6)])
def test_best_interval_matches_daly_and_young(delta, m):
    best = gp.best_interval(work_s=1e9, delta_s=delta, restart_s=0.0, mtbf_s=m)
    assert best == pytest.approx(gp.daly_interval(delta, m), rel=0.01)
    x = delta / m  # Young is first order: off by about sqrt(delta/2M)/3 + delta/sqrt(2 delta M)
    assert best == pytest.approx(gp.young_interval(delta, m), rel=2 * math.sqrt(x) + 1e-3)
    # the optimum beats its neighbours
    g = lambda t: gp.goodput(work_s=1e9, interval_s=t, delta_s=delta, restart_s=0.0, mtbf_s=m)  # noqa: E731
    assert g(best) >= g(best * 0.8) and g(best) >= g(best * 1.25)


def test_system_mtbf_adds_rates():
    m = gp.system_mtbf_s(n_gpus=16384, mtbf_gpu_hours=1e5, n_nodes=2048, mtbf_node_hours=2e5)
    assert 1 / m == pytest.approx(16384 / (1e5 * HOUR) + 2048 / (2e5 * HOUR))


def test_bad_inputs_raise():
    with pytest.raises(ClusterSimError, match="mtbf_gpu_hours"):
        gp.system_mtbf_s(n_gpus=8, mtbf_gpu_hours=0.0)
    with pytest.raises(ClusterSimError, match="no failure rate"):
        gp.system_mtbf_s(n_gpus=8, mtbf_gpu_hours=None)
    with pytest.raises(ClusterSimError, match="interval_s"):
        gp.goodput(work_s=1.0, interval_s=-1.0, delta_s=0.0, restart_s=0.0, mtbf_s=1.0)
