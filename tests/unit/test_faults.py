"""Faults in a simulated step: degraded and failed links, stragglers, a lost node (reliability.faults)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.reliability.faults import FaultyCluster, select_links
from clustersim.simulate.run import run_scenario

#: a 1 GiB all-reduce between rank 0 (h0.gpu0) and rank 8 (h1.gpu0) of 2 DGX H100 nodes: both
#: directions cross rail 0's NIC-leaf links, and nothing else runs
PAIR = {"name": "pair", "cluster": {"topology": "dgx-h100", "nodes": 2},
        "job": {"phases": [{"name": "r", "collective": {"op": "all_reduce", "size": "1GiB", "group": [0, 8]}}]}}


def run(doc, faults=None, fidelity="flow"):
    d = dict(doc) if faults is None else dict(doc, faults=faults)
    return run_scenario(Scenario.model_validate(d), fidelity=fidelity)


def degraded(f):
    return {"link_degraded": [{"link": "h0.nic0->leaf0", "fraction": f}, {"link": "leaf0->h0.nic0", "fraction": f}]}


def test_degraded_link_slows_a_bandwidth_bound_collective_by_one_over_f():
    healthy = run(PAIR)
    assert "faults" not in healthy.to_dict()
    res = {f: run(PAIR, degraded(f)).to_dict()["faults"] for f in (0.5, 0.2, 0.1)}
    for f, d in res.items():
        assert d["healthy_step_time_s"] == pytest.approx(healthy.step_time_s), f"{f=}, {d=}"
        # the healthy flow runs just under the 50 GB/s line rate (the profile's efficiency), so the
        # slowdown is 1/f times that efficiency: within 10 % of 1/f
        assert d["slowdown"] == pytest.approx(1 / f, rel=0.10), f"{f=}, {d=}"
        assert d["causes"][0]["kind"] == "link_degraded" and d["causes"][0]["busy_fraction"] > 0.9, f"{f=}, {d=}"
    # once the degraded link is the bottleneck, time goes exactly as 1/f
    assert res[0.1]["slowdown"] / res[0.2]["slowdown"] == pytest.approx(2.0, rel=0.02)


def test_link_down_reroutes_around_it(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=2)
    idx = select_links(c, "h0.nic0->leaf0", "f")
    fc = FaultyCluster.from_cluster(c, down=idx)
    r = fc.route(0, 8)
    assert idx[0] not in r.tolist() and idx[0] in c.route(0, 8).tolist()
    names = [fc.link_names[i] for i in r]
    assert names[0].startswith("h0.gpu0") and names[-1].endswith("->gpu0") and "h1." in names[-1]
    assert all(fc.link_bandwidth[r] > 0)
    assert fc.route(1, 9).tolist() == c.route(1, 9).tolist()  # other rails untouched
    d = run(PAIR, {"link_down": [{"link": "h0.nic0->leaf0"}]}).to_dict()["faults"]
    assert d["causes"][0]["rerouted_pairs"] >= 1 and d["slowdown"] >= 1.0 - 1e-9


def test_link_down_without_alternative_fails_with_the_link_named():
    with pytest.raises(ClusterSimError, match=r"link h0.nic0->leaf0 is down and no other path"):
        run(PAIR, {"link_down": [{"link": {"kind": "infiniband", "node": 0}}]})


def test_link_faults_need_flow_and_a_known_link():
    with pytest.raises(ClusterSimError, match="need fidelity flow"):
        run(PAIR, degraded(0.5), fidelity="analytical")
    with pytest.raises(ClusterSimError, match="no link named 'h0.nic0->leaf9'"):
        run(PAIR, {"link_down": [{"link": "h0.nic0->leaf9"}]})


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
@pytest.mark.parametrize("s", [1.3, 2.0])
def test_straggler_in_a_dp_group_slows_the_step_by_about_s(fidelity, s):
    doc = yaml.safe_load(open("scenarios/gpt-1b-ddp.yaml"))
    healthy = run(doc, fidelity=fidelity)
    gpu_work = healthy.breakdown["compute"] + healthy.breakdown["optimizer"]
    # rank 1 is the replica the reduced run does not simulate: it is folded onto rank 0
    d = run(doc, {"stragglers": [{"rank": 1, "slowdown": s}]}, fidelity=fidelity).to_dict()["faults"]
    expect = (healthy.step_time_s + (s - 1) * gpu_work) / healthy.step_time_s
    assert d["slowdown"] == pytest.approx(expect, rel=0.02)
    assert d["slowdown"] == pytest.approx(s, rel=0.05)
    assert d["causes"] == [{"kind": "straggler", "rank": 1, "slowdown": s}]


#: the FSDP2 host probe (validation/host7-fsdp2-hook_h100x2_2026-11-26/configs.txt h7-fsdp2): a 32-layer h 256 model whose step is its hosts'
HOST_BOUND = ["model.layers=32", "model.hidden=256", "model.heads=4", "model.ffn_hidden=1024", "model.seq_len=256",
              "training.micro_batch=1", "training.global_batch=4"]


def host_run(path, sets, stragglers=None, fidelity="analytical"):
    extra = [] if stragglers is None else ["faults.stragglers=" + json.dumps(stragglers)]
    return run_scenario(path, fidelity=fidelity, overrides=sets + extra)


def test_host_slowdown_must_be_positive_and_a_bare_straggler_changes_nothing():
    with pytest.raises(ClusterSimError, match="host_slowdown"):
        host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, [{"rank": 1, "host_slowdown": 0}])
    healthy = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND)
    bare = host_run("scenarios/ref-fsdp2.yaml", HOST_BOUND, [{"rank": 1}])
    assert bare.step_time_s == healthy.step_time_s


def test_node_lost_during_the_run_fails_after_it_is_reported():
    with pytest.raises(ClusterSimError, match=r"node 1 \(ranks 8..15\) is lost at 0.001 s"):
        run(PAIR, {"node_lost": {"node": 1, "at_s": 0.001}})
    d = run(PAIR, {"node_lost": {"node": 1, "at_s": 100.0}}).to_dict()["faults"]
    assert d["slowdown"] == pytest.approx(1.0) and d["causes"][0]["kind"] == "node_lost"
    with pytest.raises(ClusterSimError, match="hosts no rank"):
        run(PAIR, {"node_lost": {"node": 5, "at_s": 1.0}})


def test_cli_run_reports_faults_and_exits_2_without_a_path(tmp_path, cli):
    p = tmp_path / "pair.yaml"
    p.write_text(yaml.safe_dump(dict(PAIR, faults=degraded(0.5))))
    r = cli("run", str(p), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["faults"]["slowdown"] > 1.5
    r = cli("run", str(p))
    assert r.returncode == 0 and "slowdown" in r.stdout
    p.write_text(yaml.safe_dump(dict(PAIR, faults={"link_down": [{"link": {"kind": "infiniband", "node": 1}}]})))
    r = cli("run", str(p))
    assert r.returncode == 2 and "is down and no other path" in r.stderr and "Traceback" not in r.stderr
    p.write_text(yaml.safe_dump(dict(PAIR, faults={"link_down": [{"lnk": "x"}]})))
    r = cli("run", str(p))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_degrading_scales_only_the_named_links(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=2)
    idx = select_links(c, "h0.nic0->leaf0", "f")
    fc = FaultyCluster.from_cluster(c, fractions={idx[0]: 0.25})
    diff = np.flatnonzero(fc.link_bandwidth != c.link_bandwidth)
    assert diff.tolist() == idx and fc.link_bandwidth[idx[0]] == pytest.approx(0.25 * c.link_bandwidth[idx[0]])
