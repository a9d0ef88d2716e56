"""Flow-fidelity collectives: agreement with the analytical model and contention."""

import numpy as np
import pytest

from clustersim.collectives.flow import flow_simulation
from clustersim.config.topology import TopologySpec
from clustersim.engine import Simulation
from clustersim.topology import Cluster

GiB = 2**30


def _run(sim, op, ranks, size, **kw):
    p = sim.collective(op, ranks, size, **kw)
    sim.env.run()
    return p.value


@pytest.mark.parametrize("op,algo", [("all_reduce", "ring"), ("all_reduce", "tree"), ("all_reduce", "auto"),
                                     ("all_reduce", "halving_doubling"), ("all_reduce", "hierarchical"),
                                     ("all_gather", "ring"), ("reduce_scatter", "ring"), ("broadcast", "ring"),
                                     ("all_to_all", "direct"), ("all_to_all", "pairwise"), ("scatter", "direct"),
                                     ("gather", "direct"), ("send_recv", "auto"), ("barrier", "auto")])
def test_flow_equals_analytical_uncontended_two_nodes(op, algo, shared_cluster, shared_profile):
    c = shared_cluster("dgx-h100-superpod", nodes=2)
    sim = flow_simulation(c, shared_profile(c.default_profile))
    r = _run(sim, op, 16, 256 * 2**20, algorithm=algo)
    a = sim.collectives.model.estimate(op, 16, 256 * 2**20, algorithm=algo)
    assert r.time_s == pytest.approx(a.time_s, rel=0.01)


def test_simulation_records_link_use(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    sim = flow_simulation(c, None)
    _run(sim, "all_reduce", [0, 1], GiB, tag={"group": "dp"})
    top = sim.busiest_links(2)
    assert top and top[0]["kind"] == "nvlink"
    assert sim.link_bytes.sum() == pytest.approx(4 * GiB)  # 2 flows x 1 GiB x 2 links (GPU->NVS, NVS->GPU)
    assert sim.records[0]["tag"] == {"group": "dp"}


def _spec(nodes_per_leaf_over: float, gpus=1):
    return TopologySpec.model_validate({
        "name": "toy", "gpu": "H100-SXM",
        "node": {"gpus": gpus, "cpus": 1, "nics": 1, "nic_speed_Gbps": 400,
                 "links": [{"src": f"gpu[0-{gpus - 1}]" if gpus > 1 else "gpu0", "dst": "cpu0", "kind": "pcie",
                            "bandwidth_GBps": 63},
                           {"src": "nic0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 63}]},
        "cluster": {"nodes": 12, "fabric": {"switch_radix": 8, "rail_optimized": False, "tiers": 2,
                                             "oversubscription": nodes_per_leaf_over}}})


def test_two_collectives_sharing_a_bottleneck_each_get_half():
    c = Cluster(_spec(1.0, gpus=2), nodes=2)  # 2 GPUs per host share one NIC
    alone = flow_simulation(c, None)
    ra = _run(alone, "all_reduce", [0, 2], GiB, algorithm="ring")
    both = flow_simulation(c, None)
    pa = both.collective("all_reduce", [0, 2], GiB, algorithm="ring")
    pb = both.collective("all_reduce", [1, 3], GiB, algorithm="ring")
    both.env.run()
    nic = 50e9  # 400 Gb/s NIC shared by both groups: each gets half of it
    assert GiB / ra.bandwidth_time_s > nic / 2  # alone, a group runs faster than half the NIC
    for p in (pa, pb):
        assert p.value.time_s == pytest.approx(ra.latency_s + GiB / (nic / 2), rel=0.01), f"{p=}"


def test_oversubscribed_fat_tree_slows_inter_leaf_all_reduce_by_expected_factor():
    size = GiB
    times = {}
    for over in (1.0, 3.0):
        c = Cluster(_spec(over), nodes=12)
        sim = flow_simulation(c, None)
        procs = [sim.collective("all_reduce", [i, i + 6], size, algorithm="ring") for i in range(6)]
        sim.env.run()
        times[over] = [p.value for p in procs]
        ft = c.fabric
        assert ft.d == (4 if over == 1.0 else 6)
    base = times[1.0][0]
    # non-blocking: every pair runs at its uncontended rate
    for r in times[1.0]:
        assert r.time_s == pytest.approx(base.time_s, rel=0.01), f"{r=}"
    # 3:1 -> leaf 0 (hosts 0-5) has 2 uplink cables of 50 GB/s for 6 flows each way: 100/6 GB/s per flow
    rate = size / base.bandwidth_time_s
    expect = base.latency_s + size / min(rate, 2 * 50e9 / 6)
    for r in times[3.0]:
        assert r.time_s == pytest.approx(expect, rel=0.02), f"{r=}"
    assert times[3.0][0].time_s / base.time_s > 2.5


def test_degraded_link_slows_the_collective(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    cap = c.link_bandwidth.copy()
    idx = c.route(0, 1)[0]
    cap[idx] = 100e9
    sim = flow_simulation(c, None, link_capacity=cap)
    r = _run(sim, "all_reduce", [0, 1], GiB, algorithm="ring")
    a = sim.collectives.model.estimate("all_reduce", 2, GiB, algorithm="ring")
    assert r.time_s == pytest.approx(a.latency_s + GiB / 100e9, rel=0.01)


def test_1024_rank_ring_flow_counts_are_linear(shared_cluster, shared_profile):
    c = shared_cluster("dgx-h100-superpod", nodes=128)
    sim = flow_simulation(c, shared_profile(c.default_profile), nvls=False)
    r = _run(sim, "all_reduce", 1024, GiB, algorithm="ring")
    assert sim.net.flows_started == 8 * 1024  # 8 channel rings (one per NIC) x 1024 edges
    assert r.time_s > 0
    assert np.isfinite(sim.link_busy_time).all()


def test_bad_inputs_raise_when_the_collective_is_started(shared_cluster):
    from clustersim.errors import ClusterSimError

    c = shared_cluster("hgx-h200", gpus=2)
    sim = flow_simulation(c, None)
    with pytest.raises(ClusterSimError):
        sim.collective("all_reduce", [0, 5], 10)
    with pytest.raises(ClusterSimError):
        sim.collective("allreduce", [0, 1], 10)
    cap = c.link_bandwidth.copy()
    cap[0] = 0.0
    with pytest.raises(ClusterSimError):
        flow_simulation(c, None, link_capacity=cap)


def test_concurrent_collectives_on_disjoint_gpus_do_not_interfere(shared_cluster):
    c = shared_cluster("dgx-h100")
    sim = flow_simulation(c, None, nvls=False)
    ps = [sim.collective("all_reduce", [2 * i, 2 * i + 1], GiB, algorithm="ring") for i in range(4)]
    sim.env.run()
    a = sim.collectives.model.estimate("all_reduce", [0, 1], GiB, algorithm="ring")
    for p in ps:
        assert p.value.time_s == pytest.approx(a.time_s, rel=0.01), f"{p=}"


def test_the_engine_runs_collectives_only_through_the_algorithms_it_is_given(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    bare = Simulation(c)
    with pytest.raises(TypeError, match="without collective algorithms"):
        bare.collective("all_reduce", [0, 1], GiB)
    # a plain flow runs at the path's bottleneck capacity
    bare.start_flows([c.route(0, 1)], [GiB])
    bare.env.run()
    assert bare.env.now == pytest.approx(GiB / c.link_bandwidth[c.route(0, 1)].min(), rel=1e-12)
    # p2p off: the simulation runs on the model's cluster, whose routes stage through host memory
    staged = flow_simulation(c, None, p2p=False)
    assert staged.cluster is staged.collectives.model.cluster
    assert len(staged.cluster.route(0, 1)) > len(c.route(0, 1))
