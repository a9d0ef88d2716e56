"""The fitted link model as the simulator reads it: profile schema, precedence, physics, fidelities.

The shipped ``hgx-h200`` profile carries a ``link_model`` section fitted by
``profiles/make_profiles.py`` from the 2- and 4-rank H200 bench (NVLink only, no network).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from clustersim.collectives.flow import flow_simulation
from clustersim.collectives.linkmodel import from_profile
from clustersim.collectives.model import CollectiveModel
from clustersim.collectives.profiles import load_profile_for
from clustersim.config.base import validate
from clustersim.config.profile import Profile
from clustersim.config.topology import load_topology_data
from clustersim.errors import ClusterSimError
from clustersim.simulate.band import profile_at_bound
from clustersim.topology import load_cluster

ROOT = Path(__file__).resolve().parents[2]
GiB, MiB = 2**30, 2**20


@pytest.fixture(scope="module")
def h200(shared_cluster, shared_profile):
    c = shared_cluster("hgx-h200", nodes=2)
    return c, shared_profile(c.default_profile)


def _section(prof: Profile) -> dict:
    return prof.model_dump(mode="json", exclude_none=True)["link_model"]


@pytest.mark.parametrize(("edit", "where"), [
    (lambda s: s["links"]["nvlink"]["simple"].update(efficiency=1.3), "link_model.links.nvlink.simple.efficiency"),
    (lambda s: s["links"]["nvlink"].pop("ll128"), "ll128"),
    (lambda s: s["links"].update(pcie=copy.deepcopy(s["links"]["nvlink"])), "one intra-node class"),
    (lambda s: s["ops"]["all_reduce"].update(floor_us=-1.0), "link_model.ops.all_reduce.floor_us"),
    (lambda s: s["ops"].update(scatter={"floor_us": 1.0}), "link_model.ops.scatter"),
    (lambda s: s["provenance"].update(rows=0), "link_model.provenance.rows"),
])
def test_bad_link_model_is_a_user_error_with_the_field(h200, edit, where):
    data = h200[1].model_dump(mode="json", exclude_none=True)
    edit(data["link_model"])
    with pytest.raises(ClusterSimError, match="p.yaml") as exc:
        validate(Profile, data, file="p.yaml")
    assert where in str(exc.value)


def test_bad_link_model_exits_2_on_the_command_line(tmp_path, h200, cli):
    data = h200[1].model_dump(mode="json", exclude_none=True)
    data["link_model"]["links"]["nvlink"]["ll"]["latency_us"] = "fast"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    p = cli("collective", "all_reduce", "-t", "hgx-h200",
            "--gpus", "8", "--size", "1GiB", "--profile", str(path))
    assert p.returncode == 2, p.stderr
    assert "link_model.links.nvlink.ll.latency_us" in p.stderr and "Traceback" not in p.stderr


def test_precedence_entries_then_link_model_then_nccl(h200):
    c, prof = h200
    m = CollectiveModel(c, prof)
    assert m.estimate("all_reduce", 2, 64 * MiB).source == "profile"            # measured entry
    assert m.estimate("all_reduce", 8, 64 * MiB).source == "link_model"         # 8 ranks: not measured
    assert m.estimate("all_to_all", 8, 64 * MiB).source == "link_model"
    assert m.estimate("reduce", 8, 64 * MiB).source == "model"                  # no parameters for reduce
    assert m.estimate("all_reduce", [0, 8], 64 * MiB).source == "model"         # crosses the network
    assert m.estimate("all_reduce", 8, 64 * MiB, "halving_doubling").source == "model"
    assert CollectiveModel(c, prof, nvls=True).estimate("all_reduce", 8, 64 * MiB).source == "model"
    assert CollectiveModel(c, prof, p2p=False).estimate("all_reduce", 8, 64 * MiB).source == "model"  # PCIe


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all",
                                "send_recv"])
def test_simulator_evaluates_the_fitted_function(h200, op):
    """The time is the link model's prediction (the function the fit minimised) plus the kernel gap."""
    c, prof = h200
    m = CollectiveModel(c, prof)
    lm = from_profile(prof.link_model)
    for size in (4096, 3 * MiB, GiB):
        r = m.estimate(op, 8, size)
        want = lm.predict_us([{"op": op, "ranks": 8, "nodes": 1, "size_bytes": size}])[0] * 1e-6 + m.launch_s
        assert r.time_s == pytest.approx(want, rel=1e-9), f"{size=}"
        assert r.latency_s > 0 and r.bandwidth_time_s > 0, f"{size=}"


def test_forced_cells(h200):
    c, prof = h200
    m = CollectiveModel(c, prof)
    ring_ll = m.estimate("all_reduce", 8, GiB, "ring", "ll")
    assert (ring_ll.source, ring_ll.algorithm, ring_ll.protocol) == ("link_model", "ring", "ll")
    # LL reaches 0.39 of the line rate, Simple 0.82: LL is much slower at 1 GiB
    assert ring_ll.time_s > 1.8 * m.estimate("all_reduce", 8, GiB, "ring", "simple").time_s
    assert m.estimate("all_reduce", 8, GiB, "tree").algorithm == "tree"
    assert m.estimate("send_recv", 8, GiB, "p2p", "ll128").source == "model"   # no LL128 point-to-point path


def test_halving_nvlink_line_rate_moves_the_link_model(tmp_path):
    half = tmp_path / "h200-half.yaml"
    links = load_topology_data(ROOT / "topologies" / "hgx-h200.yaml")["node"]["links"]
    for link in links:
        if link["kind"] == "nvlink":
            link["bandwidth_GBps"] /= 2
    half.write_text(yaml.safe_dump({"extends": "hgx-h200", "name": "h200-half", "node": {"links": links}}))
    out = {}
    for topo in ("hgx-h200", str(half)):
        c = load_cluster(topo)
        r = CollectiveModel(c, load_profile_for(c, "hgx-h200")).estimate("all_reduce", 8, GiB)
        assert r.source == "link_model"
        out[topo] = r.time_s
    assert 1.8 <= out[str(half)] / out["hgx-h200"] <= 2.2


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all", "send_recv", "broadcast"])
def test_flow_agrees_with_analytical_uncontended(h200, op):
    c, prof = h200
    sim = flow_simulation(c, prof)
    proc = sim.collective(op, list(range(8)), 256 * MiB)
    sim.env.run()
    ana = sim.collectives.model.estimate(op, tuple(range(8)), 256 * MiB)
    assert ana.source == "link_model"
    assert proc.value.time_s == pytest.approx(ana.time_s, rel=1e-6)


def test_band_moves_the_link_model(h200):
    c, prof = h200
    f = prof.uncertainty.time_factor
    t = {side: CollectiveModel(c, p).estimate("all_reduce", 8, GiB).time_s
         for side, p in (("mid", prof), ("slow", profile_at_bound(prof, False)), ("fast", profile_at_bound(prof, True)))}
    assert t["fast"] < t["mid"] < t["slow"]
    assert t["slow"] / t["mid"] == pytest.approx(f, rel=0.02)


def test_startup_transient_read_from_the_profile_and_applied_to_ll128_and_simple_only(h200):
    """The shipped hgx-h200 link model carries a start-up depth per op and one time constant (learned on the 2- and
    4-rank bench); setting every depth to 0 in the section leaves LL calls as they were and makes long Simple calls
    faster by about depth x tau (2 / n of the depth on n ranks)."""
    c, prof = h200
    sec = _section(prof)
    lm = from_profile(prof.link_model)
    assert lm.startup_us == pytest.approx(sec["startup_us"]) and 50.0 < lm.startup_us < 5000.0
    depth = dict(zip(lm.ops, lm.startup_depth))
    assert depth["broadcast"] < 0.05 < depth["all_reduce"] < depth["all_gather"]   # one way: no transient (round 11)
    flat = copy.deepcopy(sec)
    for op in flat["ops"].values():
        op["startup_depth"] = 0.0
    lm0 = from_profile(validate(Profile, {**prof.model_dump(mode="json", exclude_none=True), "link_model": flat},
                                "test").link_model)
    for ranks in (2, 8):
        small = [m.estimate("all_reduce", ranks, 1, 64 * 1024, intra_line_GBps=450.0) for m in (lm, lm0)]
        assert small[0].protocol == "ll" and small[0].time_us == pytest.approx(small[1].time_us), f"{ranks=}"
        # Simple forced: NCCL's own choice at 4 GiB is Simple too, but the model's smooth minimum with LL128 there
        # would blur the difference
        big = [m.estimate("all_reduce", ranks, 1, 4 * GiB, intra_line_GBps=450.0, protocol="simple") for m in (lm, lm0)]
        lag = depth["all_reduce"] * 2 / ranks * lm.startup_us
        assert big[0].time_us - big[1].time_us == pytest.approx(lag, rel=0.02), f"{ranks=}"


def test_startup_depth_is_validated(h200):
    _, prof = h200
    doc = prof.model_dump(mode="json", exclude_none=True)
    doc["link_model"]["ops"]["all_reduce"]["startup_depth"] = 1.2
    with pytest.raises(ClusterSimError, match="startup_depth"):
        validate(Profile, doc, "p.yaml")
