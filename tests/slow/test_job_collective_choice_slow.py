"""Every forced collective algorithm at both fidelities (moved from tests/unit/test_job_collective_choice.py)."""

from __future__ import annotations

import pytest

from clustersim.collectives import CollectiveModel
from clustersim.config.scenario import Scenario
from clustersim.simulate.resolve import resolve_scenario
from clustersim.simulate.run import run_scenario

pytestmark = pytest.mark.slow

SIZE = 64 * 2**20


def scenario(algorithm="auto", protocol="auto", nvls=True):
    return Scenario.model_validate({
        "name": "choice", "cluster": {"topology": "hgx-h200", "nvls": nvls},
        "job": {"phases": [{"name": "ar", "collective": {"op": "all_reduce", "size": SIZE,
                                                         "algorithm": algorithm, "protocol": protocol}}]}})


@pytest.fixture(scope="module")
def model():
    rs = resolve_scenario(scenario())
    return CollectiveModel(rs.cluster, rs.profile, nvls=True)


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_forced_algorithms_take_their_own_time(model, fidelity):
    times = {}
    for algo in ("auto", "ring", "tree", "NVLS"):
        times[algo] = run_scenario(scenario(algo), fidelity=fidelity).step_time_s
    for algo in ("ring", "tree", "nvls"):
        want = model.estimate("all_reduce", 8, SIZE, algo).time_s
        assert times[algo if algo != "nvls" else "NVLS"] == pytest.approx(want, rel=1e-12), algo
    assert model.estimate("all_reduce", 8, SIZE).algorithm != "ring"  # auto is not ring here ...
    assert times["ring"] != pytest.approx(times["auto"], rel=1e-3)     # ... so ring must not run at auto's time
    assert times["ring"] != pytest.approx(times["tree"], rel=1e-3)
