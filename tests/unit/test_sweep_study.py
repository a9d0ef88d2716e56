"""Study files and point expansion: schema rules, grid/zip/list order, --set rendering, stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clustersim.config.base import validate
from clustersim.errors import ClusterSimError
from clustersim.simulate.resolve import read_inputs, split_overrides
from clustersim.sweep.expand import expand, render_value
from clustersim.sweep.point import prepare_points
from clustersim.sweep.study import Study, load_study


def _study(**kw) -> Study:
    return validate(Study, {"name": "s", "scenario": "montecarlo-pi", **kw}, file="s.yaml")


def test_axes_expand_in_order_first_axis_outermost():
    s = _study(set={"simulation.fidelity": "analytical"}, axes=[
        {"grid": {"cluster.gpus": [1, 2], "simulation.seed": [0, 1]}},
        {"zip": {"job.iterations": [1, 2], "name": ["a", "b"]}},
        {"list": [{"cluster.p2p": False}, {"cluster.gpudirect_rdma": False, "cluster.nvls": None}]},
    ])
    pts = expand(s, extra=["cluster.profile=cannon-4xa100"])
    assert len(pts) == 4 * 2 * 2
    assert [p.index for p in pts] == list(range(16))
    first, last = pts[0], pts[-1]
    assert first.values == {"cluster.gpus": 1, "simulation.seed": 0, "job.iterations": 1, "name": "a", "cluster.p2p": False}
    assert last.values == {"cluster.gpus": 2, "simulation.seed": 1, "job.iterations": 2, "name": "b",
                           "cluster.gpudirect_rdma": False, "cluster.nvls": None}
    # the study's set first, then the axes, then the command line
    assert first.overrides[0] == "simulation.fidelity=analytical"
    assert first.overrides[-1] == "cluster.profile=cannon-4xa100"
    assert "cluster.nvls=null" in last.overrides
    # the last path of a grid varies fastest; list items alternate fastest of all
    assert [p.values["cluster.gpus"] for p in pts[:8]] == [1] * 8
    assert [p.values["simulation.seed"] for p in pts[:8]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert s.varied == ["cluster.gpus", "simulation.seed", "job.iterations", "name", "cluster.p2p",
                        "cluster.gpudirect_rdma", "cluster.nvls"]


def test_no_axes_is_one_point():
    pts = expand(_study())
    assert len(pts) == 1 and pts[0].values == {} and pts[0].overrides == []


@pytest.mark.parametrize("value", [8, 0.25, 1e-05, 1e13, "400", "dgx-h100", True, None, [1, 2], {"a": 1}, "a b: c"])
def test_rendered_values_read_back_as_the_same_value(value):
    text = render_value(value)
    assert "\n" not in text
    assert yaml.safe_load(text) == value


@pytest.mark.parametrize("axes,needle", [
    ([{"grid": {"a": [1]}, "zip": {"b": [1]}}], "exactly one of grid, zip or list"),
    ([{}], "exactly one of grid, zip or list"),
    ([{"zip": {"a": [1], "b": [1, 2]}}], "same number of values"),
    ([{"grid": {"a": []}}], "at least one value"),
    ([{"grid": {"a..b": [1]}}], "not a --set path"),
    ([{"list": []}], "at least one point"),
    ([{"grid": {"a": [1]}}, {"zip": {"a": [2]}}], "already varied by axes.0"),
    ([{"bogus": {"a": [1]}}], "unknown key"),
])
def test_bad_axes_raise_one_message(axes, needle):
    with pytest.raises(ClusterSimError) as exc:
        _study(axes=axes)
    assert needle in str(exc.value) and "s.yaml" in str(exc.value)


def test_bad_plot_kind_and_unknown_study_key():
    with pytest.raises(ClusterSimError, match="plots.0"):
        _study(plots=[{"kind": "pie"}])
    with pytest.raises(ClusterSimError, match="bogus: unknown key"):
        _study(bogus=1)


def test_shipped_study_found_by_bare_name():
    study, path = load_study("study-pi-scaling")
    assert path.name == "study-pi-scaling.yaml" and study.name == "pi-scaling"


def test_split_overrides_routes_file_prefixes():
    parts = split_overrides(["topology.node.nic_speed_Gbps=800", "profile.links.network.latency_us=5",
                             "cluster.topology=dgx-h100", "topologyx.a=1", "profile=oops"])
    assert parts == {"scenario": ["cluster.topology=dgx-h100", "topologyx.a=1", "profile=oops"],
                     "topology": ["node.nic_speed_Gbps=800"], "profile": ["links.network.latency_us=5"]}


def test_topology_and_profile_overrides_change_the_read_files():
    base = read_inputs(_scenario_file(), [])
    inp = read_inputs(_scenario_file(), ["topology.node.nic_speed_Gbps=200", "profile.links.network.latency_us=7.5"])
    assert base.topology.node.nic_speed_Gbps == 100 and inp.topology.node.nic_speed_Gbps == 200
    assert inp.profile.links["network"].latency_us == 7.5
    with pytest.raises(ClusterSimError, match=r"cluster.topology: .*cannon-4xa100.yaml: node.nic_speed_Gbps"):
        read_inputs(_scenario_file(), ["topology.node.nic_speed_Gbps=fast"])


def _scenario_file() -> Path:
    from clustersim.config.base import resolve_file

    return resolve_file("montecarlo-pi", "scenario")


def test_ids_are_stable_and_follow_content(tmp_path):
    study_file = tmp_path / "s.yaml"
    study_file.write_text("name: s\nscenario: montecarlo-pi\naxes:\n  - grid: {cluster.gpus: [1, 2]}\n")
    a = prepare_points(load_study(study_file)[0], study_file)
    b = prepare_points(load_study(study_file)[0], study_file)
    assert [p.id for p in a] == [p.id for p in b]
    assert len({p.id for p in a}) == 2 and all(len(p.id) == 16 for p in a)
    # the same content spelt another way (explicit default, other axis order) has the same id
    study_file.write_text("name: t\nscenario: montecarlo-pi\nset: {cluster.p2p: true}\n"
                          "axes:\n  - list: [{cluster.gpus: 2}, {cluster.gpus: 1}]\n")
    c = prepare_points(load_study(study_file)[0], study_file)
    assert [p.id for p in c] == [a[1].id, a[0].id]
    # a topology what-if is a different point
    d = prepare_points(load_study(study_file)[0], study_file, ["topology.node.nic_speed_Gbps=200"])
    assert {p.id for p in d}.isdisjoint({p.id for p in c})


def test_invalid_points_keep_their_error_and_all_invalid_raises(tmp_path):
    study_file = tmp_path / "s.yaml"
    study_file.write_text("name: s\nscenario: montecarlo-pi\naxes:\n  - list: [{cluster.gpus: 2}, {cluster.gpus: 0}]\n")
    pts = prepare_points(load_study(study_file)[0], study_file)
    assert pts[0].task is not None and pts[1].task is None
    assert "cluster.gpus" in pts[1].error
    study_file.write_text("name: s\nscenario: montecarlo-pi\naxes:\n  - grid: {cluster.gpuz: [1, 2]}\n")
    with pytest.raises(ClusterSimError, match=r"every point is invalid.*gpuz: unknown key"):
        prepare_points(load_study(study_file)[0], study_file)
    study_file.write_text("name: s\nscenario: no-such-scenario\n")
    with pytest.raises(ClusterSimError, match="scenario: unknown scenario"):
        prepare_points(load_study(study_file)[0], study_file)
