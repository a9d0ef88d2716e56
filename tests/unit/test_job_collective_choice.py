"""A generic job phase's ``algorithm``/``protocol``: honoured at both fidelities, unknown names exit 2."""

from __future__ import annotations


import pytest

from clustersim.collectives import CollectiveModel
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.resolve import resolve_scenario
from clustersim.simulate.run import run_scenario

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


def test_forced_protocol(model):
    t = run_scenario(scenario("ring", "ll"), fidelity="analytical").step_time_s
    assert t == pytest.approx(model.estimate("all_reduce", 8, SIZE, "ring", "ll").time_s, rel=1e-12)


@pytest.mark.parametrize("kw,field", [({"algorithm": "no_such_algo"}, "job.phases.0.collective.algorithm"),
                                      ({"protocol": "ll256"}, "job.phases.0.collective.protocol"),
                                      ({"algorithm": "direct"}, "job.phases.0.collective.algorithm"),
                                      ({"algorithm": "nvls", "nvls": False}, "job.phases.0.collective")])
def test_bad_choice_names_the_field(kw, field):
    with pytest.raises(ClusterSimError) as err:
        run_scenario(scenario(**kw), fidelity="analytical")
    assert err.value.field == field


def test_cli_exit_2_with_file_and_field(tmp_path, cli):
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\ncluster: {topology: hgx-h200}\njob:\n  phases:\n    - name: ar\n"
                 "      collective: {op: all_reduce, size: 1MiB, algorithm: no_such_algo}\n")
    r = cli("run", str(f))
    assert r.returncode == 2
    assert f"{f}: job.phases.0.collective.algorithm: all_reduce has no algorithm 'no_such_algo'" in r.stderr
    assert "Traceback" not in r.stderr
