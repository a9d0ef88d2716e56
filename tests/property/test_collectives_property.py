"""Property tests: closed forms, NCCL-model structure, flow == analytical uncontended, lower bounds."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.collectives import CollectiveModel
from clustersim.collectives import formulas as F
from clustersim.config.profile import Profile
from clustersim.config.topology import TopologySpec
from clustersim.collectives.flow import flow_simulation
from clustersim.topology import Cluster

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cluster(gpus: int, nodes: int, nvl_links: int, nic_gbps: float) -> Cluster:
    links = [{"src": "gpu0" if gpus == 1 else f"gpu[0-{gpus - 1}]", "dst": "cpu0", "kind": "pcie",
              "bandwidth_GBps": 64.0},
             {"src": "nic0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 64.0}]
    node = {"gpus": gpus, "cpus": 1, "nics": 1, "nic_speed_Gbps": nic_gbps, "links": links}
    if gpus > 1:
        node["nvswitches"] = 1
        links.append({"src": f"gpu[0-{gpus - 1}]", "dst": "nvswitch0", "kind": "nvlink", "count": nvl_links,
                      "bandwidth_GBps": 25.0})
    spec = TopologySpec.model_validate({"name": "prop", "gpu": "H100-SXM", "node": node,
                                        "cluster": {"nodes": nodes, "fabric": {"rail_optimized": False}}})
    return Cluster(spec, nodes=nodes)


def _profile(nvl_frac: float, nvl_lat: float, net_frac: float, net_lat: float, nvl_links: int, nic_gbps: float):
    return Profile.model_validate({
        "name": "prop",
        "links": {"nvlink": {"latency_us": nvl_lat, "bandwidth_GBps": nvl_frac * nvl_links * 25.0},
                  "network": {"latency_us": net_lat, "bandwidth_GBps": net_frac * nic_gbps / 8}},
        "compute": {"kernel_launch_us": 2.0}})


sizes = st.integers(min_value=2**20, max_value=2**33)


@SETTINGS
@given(n=st.integers(2, 64), S=sizes, a=st.floats(1e-7, 1e-4), B=st.floats(1e9, 1e12))
def test_closed_forms(n, S, a, B):
    assert F.ring_all_reduce_time(n, S, a, B) == pytest.approx(2 * (n - 1) * a + 2 * (n - 1) / n * S / B)
    assert F.ring_all_gather_time(n, S, a, B) == pytest.approx((n - 1) * a + (n - 1) / n * S / B)
    lg = math.log2(n)
    if lg.is_integer():
        assert F.halving_doubling_all_reduce_time(n, S, a, B) == pytest.approx(2 * lg * a + 2 * (n - 1) / n * S / B)
    assert F.tree_all_reduce_time(n, S, a, B) == pytest.approx(2 * math.ceil(lg) * a + S / B)
    # no algorithm beats the bandwidth lower bound
    for t in (F.ring_all_reduce_time(n, S, a, B), F.halving_doubling_all_reduce_time(n, S, a, B)):
        assert t >= F.all_reduce_lower_bound(n, S, B) * (1 - 1e-12)
    assert F.ring_all_gather_time(n, S, a, B) >= F.all_gather_lower_bound(n, S, B) * (1 - 1e-12)


@SETTINGS
@given(g=st.integers(2, 8), links=st.integers(2, 18), frac=st.floats(0.5, 1.0), lat=st.floats(0.5, 10.0),
       S=st.integers(2**26, 2**33))
def test_model_ring_matches_closed_form_single_node(g, links, frac, lat, S):
    c = _cluster(g, 1, links, 400)
    p = _profile(frac, lat, 0.9, 14.0, links, 400)
    m = CollectiveModel(c, p)
    ctx = m.context(m.ranks_of(g)).nccl
    nch, s = F.nccl_graphs(ctx)["ring"]
    B = nch * s * 1e9  # NCCL's ring bus bandwidth from the channel search
    base = F.BASE_LAT_US["ring"][2] * 1e-6 + 2e-6  # base latency + kernel gap
    r = m.estimate("all_reduce", g, S, algorithm="ring", protocol="simple")
    assert r.time_s == pytest.approx(base + F.ring_all_reduce_time(g, S, lat * 1e-6, B), rel=1e-9)
    r = m.estimate("all_gather", g, S, algorithm="ring", protocol="simple")
    assert r.time_s == pytest.approx(base + F.ring_all_gather_time(g, S, lat * 1e-6, B), rel=1e-9)
    r = m.estimate("reduce_scatter", g, S, algorithm="ring", protocol="simple")
    assert r.time_s == pytest.approx(base + F.ring_reduce_scatter_time(g, S, lat * 1e-6, B), rel=1e-9)
    # busbw never exceeds the per-GPU effective NVLink bandwidth (lower bound never beaten)
    for algo in ("ring", "tree", "halving_doubling", "auto"):
        rr = m.estimate("all_reduce", g, S, algorithm=algo)
        assert rr.busbw_GBps <= p.links["nvlink"].bandwidth_GBps * (1 + 1e-9)


@SETTINGS
@given(g=st.integers(1, 8), nodes=st.integers(1, 3), links=st.integers(2, 18), frac=st.floats(0.5, 1.0),
       net_frac=st.floats(0.5, 1.0), nic=st.sampled_from([100.0, 200.0, 400.0]), S=sizes,
       op_algo=st.sampled_from([("all_reduce", "ring"), ("all_reduce", "auto"), ("all_gather", "ring"),
                                ("reduce_scatter", "ring"), ("broadcast", "ring"), ("all_reduce", "hierarchical"),
                                ("all_to_all", "direct"), ("send_recv", "auto"), ("all_reduce", "halving_doubling")]))
def test_flow_equals_analytical_uncontended(g, nodes, links, frac, net_frac, nic, S, op_algo):
    op, algo = op_algo
    if g * nodes < 2:
        return
    if algo == "halving_doubling" and nodes > 1:
        return  # its partners share the node's single NIC (contention inside the algorithm)
    c = _cluster(g, nodes, links, nic)
    p = _profile(frac, 3.0, net_frac, 14.0, links, nic)
    sim = flow_simulation(c, p)
    proc = sim.collective(op, g * nodes, S, algorithm=algo)
    sim.env.run()
    a = sim.collectives.model.estimate(op, g * nodes, S, algorithm=algo)
    assert proc.value.time_s == pytest.approx(a.time_s, rel=0.01)
