"""Generic jobs: phases, groups, roofline compute and blocking collectives."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.execute import breakdown, execute_analytical
from clustersim.trace.chrome import trace_events
from clustersim.workload.compute import ComputeModel
from clustersim.workload.job import build_job, job_groups


class FakeCluster:
    n_gpus = 8
    gpus = [f"h{r // 4}.gpu{r % 4}" for r in range(8)]
    host_of = np.arange(8) // 4


CM = ComputeModel(peak_flops=1e14, hbm_bandwidth=1e12, kernel_launch_s=1e-6)


def job(phases, **kw):
    return Scenario.model_validate({"name": "j", "cluster": {"topology": "x"}, "job": {"phases": phases, **kw}})


def test_groups():
    h = FakeCluster.host_of
    assert job_groups("all", list(range(8)), h) == [list(range(8))]
    assert job_groups("node", list(range(8)), h) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert job_groups([3, 1], list(range(8)), h) == [[1, 3]]
    with pytest.raises(ClusterSimError):
        job_groups("tp", list(range(8)), h)


def test_strong_scaling_roofline_and_collective():
    sc = job([{"name": "work", "compute": {"flops": 8e14, "efficiency": 0.5, "divide_among_ranks": True}},
              {"name": "mem", "compute": {"bytes": 1e12}},
              {"name": "sum", "collective": {"op": "all_reduce", "size": "8B"}},
              {"name": "io", "host_seconds": 0.5}], iterations=2, samples_per_iteration=10)
    g, ranks = build_job(sc, FakeCluster, lambda d: CM, 0.75, FakeCluster.host_of)
    assert ranks == list(range(8))
    tl = execute_analytical(g, lambda c: 1e-3)
    per_iter = (8e14 / 8 / (1e14 * 0.5) + 1e-6) + (1.0 + 1e-6) + 1e-3 + 0.5
    assert tl.makespan == pytest.approx(2 * per_iter)
    bd = breakdown(g, tl, ranks, tl.makespan)
    assert bd["host"] == pytest.approx(1.0)
    assert bd["comm_dp"] == pytest.approx(2e-3)
    assert sum(bd.values()) == pytest.approx(tl.makespan)
    ev = trace_events(g, tl)
    assert {e["pid"] for e in ev if e["ph"] == "X"} == set(range(8))  # the all-reduce shows on every rank


def test_collective_waits_for_slowest_member():
    sc = job([{"name": "slow", "compute": {"seconds": 2.0}, "ranks": [0]},
              {"name": "fast", "compute": {"seconds": 1.0}, "ranks": [1]},
              {"name": "ar", "collective": {"op": "all_reduce", "size": 1024, "group": [0, 1]}},
              {"name": "after", "compute": {"seconds": 1.0}, "ranks": [1]}], ranks=2)
    g, _ = build_job(sc, FakeCluster, lambda d: CM, 0.75, FakeCluster.host_of)
    tl = execute_analytical(g, lambda c: 0.0)
    assert tl.makespan == pytest.approx(3.0)


def test_bad_phase_ranks():
    sc = job([{"name": "x", "compute": {"seconds": 1.0}, "ranks": [9]}])
    with pytest.raises(ClusterSimError):
        build_job(sc, FakeCluster, lambda d: CM, 0.75, FakeCluster.host_of)
