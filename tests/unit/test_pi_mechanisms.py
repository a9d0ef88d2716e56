"""What several GPUs cost a one-program job (issue 15, the Monte-Carlo pi study): the slowest GPU of n and the
first collective of a fresh communicator, both measured and held by the profile.

The H100 strong-scaling runs of the exercise's timed section (``profiles/measurements/h100x4/pi-strong.jsonl``, a copy of
``validation/probes/pi-timed-section/pi-h100x4``) are predicted here with the mechanisms measured on *another* GPU and with other
programs (``hgx-h200``: the pi kernel on 4 H200 at once, ``validation/probes/first-collective-cost/first_collective.py``): the test of the
method, where the H100's own values are those runs' and could not fail.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.profile import HostParams, Profile
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.job import expected_max_normal

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "profiles" / "measurements" / "h100x4" / "pi-strong.jsonl"


def _measured() -> dict[int, float]:
    runs: dict[tuple[int, int], float] = {}
    for line in DATA.read_text().splitlines():
        r = json.loads(line)
        runs[(r["world"], r["repeat"])] = r["run_time_s"]
    by: dict[int, list[float]] = {}
    for (w, _), t in runs.items():
        by.setdefault(w, []).append(t)
    return {w: statistics.median(v) for w, v in sorted(by.items())}


def _sim(gpus: int, *sets: str) -> dict:
    res = run_scenario(str(ROOT / "scenarios" / "montecarlo-pi-h100.yaml"), fidelity="analytical",
                       overrides=[f"cluster.gpus={gpus}", *sets])
    return {"t": res.step_time_s, "host": res.breakdown["host"], "compute": res.breakdown["compute"]}


def test_h200_mechanisms_predict_the_h100_strong_scaling():
    meas = _measured()
    assert set(meas) == {1, 2, 4}
    for n in (2, 4):
        sim = _sim(n, "cluster.profile=hgx-h200")
        # measured losses T(n) - T(1)/n: 9.1 ms at 2 GPUs, 17.7 ms at 4; predicted within 0.1% of T(n)
        assert sim["t"] == pytest.approx(meas[n], rel=1e-3), (n, sim["t"], meas[n])
        e_sim, e_meas = meas[1] / (n * sim["t"]), meas[1] / (n * meas[n])
        assert e_sim < 1.0 and abs(e_sim - e_meas) < 1e-3, f"{n=}"


def test_the_loss_is_the_slowest_gpu_and_the_first_collective():
    prof = load_model(Profile, ROOT / "profiles" / "dgx-h100.yaml")
    one, four = _sim(1), _sim(4)
    assert one["host"] == 0.0                      # one rank: no communicator to connect
    ideal = one["compute"] / 4
    # compute: the even share on the slowest of 4 GPUs (a kernel launch is not divided)
    assert four["compute"] == pytest.approx(ideal * (1 + prof.compute.device_spread * expected_max_normal(4)),
                                            rel=1e-4)
    assert four["host"] == pytest.approx(prof.host.first_collective_us_at(4) * 1e-6, rel=1e-9)


def test_a_profile_without_the_measurements_keeps_the_ideal_division():
    """The A100 study's profile (cannon-4xa100) measured neither: E = 1.000 there, as before."""
    a = run_scenario(str(ROOT / "scenarios" / "montecarlo-pi.yaml"), fidelity="analytical", overrides=["cluster.gpus=1"])
    b = run_scenario(str(ROOT / "scenarios" / "montecarlo-pi.yaml"), fidelity="analytical", overrides=["cluster.gpus=4"])
    assert a.step_time_s / (4 * b.step_time_s) == pytest.approx(1.0, abs=1e-5)


def test_expected_max_normal_is_the_order_statistic():
    import numpy as np

    rng = np.random.default_rng(15)
    for n in (2, 4, 8):
        mc = rng.standard_normal((200_000, n)).max(axis=1).mean()
        assert expected_max_normal(n) == pytest.approx(mc, abs=0.01), f"{n=}"


@pytest.mark.parametrize("bad, says", [({0: 10.0}, "keys are group sizes"), ({2: -1.0}, "values are microseconds"),
                                       ({}, "an empty mapping")])
def test_first_collective_mapping_is_checked(bad, says):
    with pytest.raises(ClusterSimError) as e:
        from clustersim.config.base import validate
        validate(HostParams, {"first_collective_us": bad}, file="p.yaml")
    assert says in str(e.value) and "first_collective_us" in str(e.value)
